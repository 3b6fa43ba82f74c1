/* tests/c/gpu_runtime_smoke.c: the CUDA runtime and the RMSNorm GPU kernels, end to end,
 * on a machine with a GPU (not named test_*: CI, which has none, does not run it).
 *
 * Loads libcuda/NVRTC, builds each of the three kernels of csrc/ops/norm/rms_norm.cu (its
 * #include "x.cuh" lines spliced in, as the Python layer does) for many
 * (dtype, N, weight, aligned/misaligned) cases with the launch shapes rms_norm.cu's comment
 * prescribes, launches them on a created stream over poisoned outputs and compares with
 * tileops_cpu_rms_norm_reference; checks that the three kernels and both load paths agree
 * bit for bit for the same row threads, that a row's result does not depend on the batch
 * or the grid, that a second build is a memory hit, that building during stream capture
 * is refused cleanly, and the launch argument checks. Prints the runtime's counters.
 *
 *   gpu_runtime_smoke [--expect-disk] [--bench] [--source csrc/ops/norm/rms_norm.cu]
 *     --expect-disk  this run must compile nothing (every CUBIN from the disk cache)
 *     --bench        also time large shapes, L2-cold, against a device-to-device copy
 * Environment: TILEOPS_NVRTC_HINT (folder holding libnvrtc.so.13), TILEOPS_CACHE_DIR.
 * tests/gpu/run_c_smoke.sh builds it and runs it twice over one fresh cache folder. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/loader.h"
#include "runtime/devices.h"
#include "tileops/cpu.h"
#include "ops/norm/rms_norm.h"
#include "tileops/dtype.h"
#include "tileops/runtime.h"
#include "check.h"

static const tileops_cuda_api_t *A;
static char *g_src;
static size_t g_src_len;
static int g_sm_count, g_smem_optin, g_l2;
static CUstream g_stream;
static int g_expect_disk;

static void finish(void) {
    tileops_cuda_stats_t s;
    tileops_cuda_get_stats(&s);
    printf("stats: nvrtc_compiles=%lld disk_hits=%lld disk_rejects=%lld memory_hits=%lld "
           "modules_loaded=%lld launches=%lld\n",
           (long long)s.nvrtc_compiles, (long long)s.disk_hits, (long long)s.disk_rejects,
           (long long)s.memory_hits, (long long)s.modules_loaded, (long long)s.launches);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    fflush(stdout);
}

/* A driver failure leaves the context unusable: report and stop. */
#define CU(call)                                                                   \
    do {                                                                           \
        CUresult rc_ = (call);                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                 \
            const char *n_ = "?";                                                  \
            A->cuGetErrorName(rc_, &n_);                                           \
            printf("FAIL (line %d): %s returned %s\n", __LINE__, #call, n_);       \
            g_fail++;                                                              \
            finish();                                                              \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static const char *const KNAMES[3] = {"tileops_rms_norm", "tileops_rms_norm_on_chip",
                                      "tileops_rms_norm_streaming"};
static const char *const DNAMES[3] = {"f32", "f16", "bf16"};

static int esize(int dtype) { return dtype == TILEOPS_FLOAT32 ? 4 : 2; }
static int group_elems(int dtype) { return 16 / esize(dtype); }

/* ---- the launch rules of rms_norm.cu's comment ------------------------------------------- */

typedef struct spec {
    int kernel, dtype, has_w, vec, threads, rt;
    long long n;
} spec_t;

typedef struct launch_shape {
    unsigned grid, block, shared;
} launch_shape_t;

static int pow2ceil(long long v) {
    int p = 1;
    while (p < v && p < 1024)
        p *= 2;
    return p;
}

/* Recommended threads / row threads for (kernel, dtype, n). */
static void plan_threads(int kernel, int dtype, long long n, int *threads, int *rt) {
    long long ng = (n + group_elems(dtype) - 1) / group_elems(dtype);
    if (kernel == 0) {
        *rt = pow2ceil((ng + 3) / 4);
        *threads = *rt > 128 ? *rt : 128;
    } else if (kernel == 1) {
        *threads = *rt = ng > 4096 ? 1024 : 512;
    } else {
        *threads = *rt = 1024;
    }
}

static launch_shape_t plan_launch(const spec_t *s, long long rows) {
    launch_shape_t L;
    long long ng = (s->n + group_elems(s->dtype) - 1) / group_elems(s->dtype);
    long long grid;
    L.block = (unsigned)s->threads;
    L.shared = 0;
    if (s->kernel == 0) {
        long long rpb = s->threads / s->rt;
        grid = (rows + rpb - 1) / rpb;
    } else if (s->kernel == 1) {
        grid = rows; /* one row per block (measured faster than a persistent grid) */
        L.shared = (unsigned)(ng * 16);
    } else {
        grid = rows < g_sm_count ? rows : g_sm_count;
    }
    if (grid > 0x7fffffffLL)
        grid = 0x7fffffffLL;
    L.grid = (unsigned)grid;
    return L;
}

static spec_t make_spec(int kernel, int dtype, long long n, int has_w, int aligned) {
    spec_t s;
    s.kernel = kernel;
    s.dtype = dtype;
    s.n = n;
    s.has_w = has_w;
    s.vec = aligned ? group_elems(dtype) : 1;
    plan_threads(kernel, dtype, n, &s.threads, &s.rt);
    return s;
}

/* The -D options of a spec: opts[i] points at o[i]. */
static void spec_options(const spec_t *s, char o[7][48], const char *opts[7]) {
    snprintf(o[0], sizeof o[0], "-DTILEOPS_KERNEL=%d", s->kernel);
    snprintf(o[1], sizeof o[1], "-DTILEOPS_DTYPE=%d", s->dtype);
    snprintf(o[2], sizeof o[2], "-DTILEOPS_N=%lld", s->n);
    snprintf(o[3], sizeof o[3], "-DTILEOPS_HAS_WEIGHT=%d", s->has_w);
    snprintf(o[4], sizeof o[4], "-DTILEOPS_VEC=%d", s->vec);
    snprintf(o[5], sizeof o[5], "-DTILEOPS_THREADS=%d", s->threads);
    snprintf(o[6], sizeof o[6], "-DTILEOPS_ROW_THREADS=%d", s->rt);
    for (int i = 0; i < 7; i++)
        opts[i] = o[i];
}

static int build(const spec_t *s, tileops_build_info_t *info) {
    char o[7][48];
    const char *opts[7];
    spec_options(s, o, opts);
    int h = -1;
    tileops_build_info_t local;
    tileops_status_t st = tileops_cuda_build(0, g_src, g_src_len, KNAMES[s->kernel], opts, 7,
                                             "pppqqqf", (uintptr_t)g_stream, &h, &local);
    if (info)
        *info = local;
    if (st != TILEOPS_OK) {
        printf("FAIL build %s %s N=%lld: %s: %s\n", KNAMES[s->kernel], DNAMES[s->dtype], s->n,
               tileops_status_name(st), tileops_last_error());
        g_fail++;
        return -1;
    }
    if (g_expect_disk && local.nvrtc_ran) {
        printf("FAIL build %s %s N=%lld ran NVRTC, expected a disk hit\n", KNAMES[s->kernel],
               DNAMES[s->dtype], s->n);
        g_fail++;
    }
    return h;
}

static tileops_status_t launch(int h, const launch_shape_t *L, CUdeviceptr x, CUdeviceptr w,
                               CUdeviceptr y, long long rows, long long xs, long long ys,
                               float eps) {
    tileops_arg_t a[7];
    a[0].p = (uintptr_t)x;
    a[1].p = (uintptr_t)w;
    a[2].p = (uintptr_t)y;
    a[3].q = rows;
    a[4].q = xs;
    a[5].q = ys;
    a[6].f = eps;
    unsigned grid[3] = {L->grid, 1, 1}, block[3] = {L->block, 1, 1};
    tileops_status_t st = tileops_cuda_launch(h, grid, block, L->shared, (uintptr_t)g_stream, a, 7);
    if (st != TILEOPS_OK)
        printf("launch failed: %s\n", tileops_last_error());
    return st;
}

/* ---- host data ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static void put(void *p, long long i, int dtype, float v) {
    if (dtype == TILEOPS_FLOAT32)
        ((float *)p)[i] = v;
    else if (dtype == TILEOPS_FLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else
        ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
}

static double get(const void *p, long long i, int dtype) {
    if (dtype == TILEOPS_FLOAT32)
        return ((const float *)p)[i];
    if (dtype == TILEOPS_FLOAT16)
        return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
}

static int is_poison(const void *p, long long i, int dtype) {
    const unsigned char *b = (const unsigned char *)p + i * esize(dtype);
    for (int k = 0; k < esize(dtype); k++)
        if (b[k] != 0xff)
            return 0;
    return 1;
}

static CUdeviceptr dalloc(size_t bytes) {
    CUdeviceptr p = 0;
    CU(A->cuMemAlloc(&p, bytes ? bytes : 16));
    return p;
}

/* One buffer pair on host and device. */
typedef struct buf {
    void *h;
    CUdeviceptr d;
    size_t bytes;
} buf_t;

static buf_t buf_new(size_t bytes) {
    buf_t b;
    b.bytes = bytes ? bytes : 16;
    b.h = malloc(b.bytes);
    if (!b.h) {
        printf("FAIL out of host memory\n");
        exit(1);
    }
    b.d = dalloc(b.bytes);
    return b;
}
static void buf_free(buf_t *b) {
    free(b->h);
    CU(A->cuMemFree(b->d));
}

/* ---- correctness -------------------------------------------------------------------- */

static void tolerance(int dtype, double *atol, double *rtol) {
    if (dtype == TILEOPS_FLOAT32) {
        *atol = 1e-6;
        *rtol = 2e-5;
    } else if (dtype == TILEOPS_FLOAT16) {
        *atol = 1e-4;
        *rtol = 2e-3;
    } else {
        *atol = 1e-6;
        *rtol = 1.6e-2;
    }
}

/* Runs one case: rows x n, aligned (vector path, padded strides) or misaligned (scalar
 * path, odd offsets and strides). */
static void run_case(int kernel, int dtype, long long n, int has_w, int aligned, long long rows) {
    spec_t s = make_spec(kernel, dtype, n, has_w, aligned);
    int G = group_elems(dtype), es = esize(dtype);
    if (kernel == 1 && (n + G - 1) / G * 16 + 256 > g_smem_optin) {
        printf("skip %s %s N=%lld: the row does not fit in shared memory\n", KNAMES[kernel],
               DNAMES[dtype], n);
        return;
    }
    long long xoff = aligned ? 0 : 1, yoff = aligned ? 0 : 3, woff = aligned ? 0 : 1;
    long long xs = aligned ? (n + G - 1) / G * G : n + 1;
    long long ys = aligned ? (n + G - 1) / G * G + G : n + 3;
    size_t xel = (size_t)(xoff + rows * xs), yel = (size_t)(yoff + rows * ys);
    buf_t x = buf_new(xel * es), y = buf_new(yel * es), w = buf_new((size_t)(n + woff) * es);
    void *ref = malloc(yel * es);
    float eps = 1e-5f;

    for (size_t i = 0; i < xel; i++)
        put(x.h, (long long)i, dtype, (float)(urand() * 4.0 - 2.0));
    for (long long i = 0; i < n + woff; i++)
        put(w.h, i, dtype, (float)(urand() + 0.5));
    memset(y.h, 0xff, y.bytes);
    memset(ref, 0xff, yel * es);
    CU(A->cuMemcpyHtoD(x.d, x.h, x.bytes));
    CU(A->cuMemcpyHtoD(w.d, w.h, w.bytes));
    CU(A->cuMemsetD8Async(y.d, 0xff, y.bytes, g_stream));

    int h = build(&s, NULL);
    if (h < 0)
        goto out;
    launch_shape_t L = plan_launch(&s, rows);
    if (kernel == 1 && n % 2 == 1 && L.grid > 2)
        L.grid = 2; /* several rows per block: the prefetch of the next row, with a tail */
    tileops_status_t st = launch(h, &L, x.d + (CUdeviceptr)(xoff * es),
                                 has_w ? w.d + (CUdeviceptr)(woff * es) : 0,
                                 y.d + (CUdeviceptr)(yoff * es), rows, xs, ys, eps);
    CHECK(st == TILEOPS_OK, "launch %s", KNAMES[kernel]);
    CU(A->cuStreamSynchronize(g_stream));
    CU(A->cuMemcpyDtoH(y.h, y.d, y.bytes));

    tileops_rms_norm_args_t args;
    args.x = (char *)x.h + xoff * es;
    args.weight = has_w ? (char *)w.h + woff * es : NULL;
    args.y = (char *)ref + yoff * es;
    args.rows = rows;
    args.n = n;
    args.x_row_stride = xs;
    args.y_row_stride = ys;
    args.eps = eps;
    args.dtype = dtype;
    st = tileops_cpu_rms_norm_reference(&args);
    CHECK(st == TILEOPS_OK, "reference: %s", tileops_last_error());

    double atol, rtol, worst = 0.0;
    long long bad = 0, untouched = 0;
    for (long long i = 0; i < (long long)yel; i++) {
        long long r = (i - yoff) / ys, c = (i - yoff) % ys;
        int inside = i >= yoff && r < rows && c < n;
        if (!inside) {
            if (!is_poison(y.h, i, dtype))
                untouched++;
            continue;
        }
        double got = get(y.h, i, dtype), want = get(ref, i, dtype);
        tolerance(dtype, &atol, &rtol);
        double err = fabs(got - want);
        if (!(err <= atol + rtol * fabs(want))) {
            if (bad < 3)
                printf("  mismatch row %lld col %lld: got %.9g want %.9g\n", r, c, got, want);
            bad++;
        }
        if (want != 0.0 && err / fabs(want) > worst)
            worst = err / fabs(want);
    }
    CHECK(bad == 0 && untouched == 0,
          "%s %s N=%lld w=%d %s rows=%lld: %lld wrong, %lld written outside the rows",
          KNAMES[kernel], DNAMES[dtype], n, has_w, aligned ? "vec" : "scalar", rows, bad,
          untouched);
    if (bad == 0 && untouched == 0)
        printf("ok   %-26s %-4s N=%-7lld w=%d %-6s rows=%-4lld threads=%-4d rt=%-4d grid=%-6u "
               "shared=%-6u max rel err %.2e\n",
               KNAMES[kernel], DNAMES[dtype], n, has_w, aligned ? "vec" : "scalar", rows,
               s.threads, s.rt, L.grid, L.shared, worst);
out:
    free(ref);
    buf_free(&x);
    buf_free(&y);
    buf_free(&w);
}

/* The three kernels with the same row threads, both load paths, any grid, a row alone or
 * in a batch: all bit for bit the same. */
static void run_equivalence(int dtype, long long n, int has_w) {
    const long long rows = 37;
    const int T = 512;
    int G = group_elems(dtype), es = esize(dtype);
    long long xs = (n + G - 1) / G * G;
    size_t bytes = (size_t)(rows * xs * es);
    buf_t x = buf_new(bytes), w = buf_new((size_t)n * es), y = buf_new(bytes);
    void *first = malloc(bytes);
    for (long long i = 0; i < rows * xs; i++)
        put(x.h, i, dtype, (float)(urand() * 6.0 - 3.0));
    for (long long i = 0; i < n; i++)
        put(w.h, i, dtype, (float)(urand() + 0.5));
    CU(A->cuMemcpyHtoD(x.d, x.h, bytes));
    CU(A->cuMemcpyHtoD(w.d, w.h, w.bytes));

    struct {
        int kernel, vec;
        unsigned grid;
    } v[] = {
        {0, G, 0}, {0, 1, 0}, {0, G, 3}, {1, G, 0}, {1, 1, 0}, {1, G, 5}, {2, G, 0}, {2, 1, 0}, {2, G, 2},
    };
    int nv = (int)(sizeof v / sizeof v[0]);
    int same = 1;
    for (int i = 0; i < nv; i++) {
        spec_t s;
        s.kernel = v[i].kernel;
        s.dtype = dtype;
        s.n = n;
        s.has_w = has_w;
        s.vec = v[i].vec;
        s.threads = s.rt = T;
        int h = build(&s, NULL);
        if (h < 0) {
            same = 0;
            continue;
        }
        launch_shape_t L = plan_launch(&s, rows);
        if (v[i].grid)
            L.grid = v[i].grid;
        CU(A->cuMemsetD8Async(y.d, 0xff, bytes, g_stream));
        launch(h, &L, x.d, has_w ? w.d : 0, y.d, rows, xs, xs, 1e-6f);
        CU(A->cuStreamSynchronize(g_stream));
        CU(A->cuMemcpyDtoH(y.h, y.d, bytes));
        if (i == 0) {
            memcpy(first, y.h, bytes);
            /* row 17 alone (rows = 1, pointers moved) must equal row 17 of the batch */
            CU(A->cuMemsetD8Async(y.d, 0xff, bytes, g_stream));
            launch_shape_t L1 = plan_launch(&s, 1);
            launch(h, &L1, x.d + (CUdeviceptr)(17 * xs * es), has_w ? w.d : 0,
                   y.d + (CUdeviceptr)(17 * xs * es), 1, xs, xs, 1e-6f);
            CU(A->cuStreamSynchronize(g_stream));
            CU(A->cuMemcpyDtoH(y.h, y.d, bytes));
            CHECK(memcmp((char *)y.h + 17 * xs * es, (char *)first + 17 * xs * es,
                         (size_t)(n * es)) == 0,
                  "batch invariance %s N=%lld: row 17 alone differs from row 17 in a batch",
                  DNAMES[dtype], n);
        } else if (memcmp(first, y.h, bytes) != 0) {
            printf("  %s vec=%d grid=%u differs from %s vec=%d\n", KNAMES[v[i].kernel], v[i].vec,
                   L.grid, KNAMES[0], G);
            same = 0;
        }
    }
    CHECK(same, "bitwise equivalence of the kernels for %s N=%lld w=%d", DNAMES[dtype], n, has_w);
    if (same)
        printf("ok   bitwise: 3 kernels x {vec, scalar} x grids, threads=%d, %s N=%lld w=%d\n", T,
               DNAMES[dtype], n, has_w);
    free(first);
    buf_free(&x);
    buf_free(&w);
    buf_free(&y);
}

static void run_runtime_checks(void) {
    /* a second build of the same kernel in this process is a memory hit */
    spec_t s = make_spec(0, TILEOPS_FLOAT16, 4096, 1, 1);
    tileops_build_info_t a, b;
    int h1 = build(&s, &a), h2 = build(&s, &b);
    CHECK(h1 >= 0 && h1 == h2 && b.memory_hit == 1 && b.nvrtc_ran == 0 && b.disk_hit == 0,
          "second build: handle %d vs %d, memory_hit=%d", h1, h2, b.memory_hit);
    printf("info first build: nvrtc_ran=%d disk_hit=%d memory_hit=%d compile_ms=%.2f total_ms=%.2f\n",
           a.nvrtc_ran, a.disk_hit, a.memory_hit, a.compile_ms, a.total_ms);
    printf("info second build: memory_hit=%d total_ms=%.4f\n", b.memory_hit, b.total_ms);
    CHECK(tileops_cuda_kernel_device(h1) == 0, "kernel device");
    CHECK(tileops_cuda_kernel_arg_format(h1) && strcmp(tileops_cuda_kernel_arg_format(h1), "pppqqqf") == 0,
          "kernel arg format");

    /* launch argument checks */
    tileops_arg_t args[7];
    memset(args, 0, sizeof args);
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1}, empty[3] = {0, 1, 1};
    tileops_cuda_stats_t before, after;
    CHECK(tileops_cuda_launch(h1, grid, block, 0, (uintptr_t)g_stream, args, 6) ==
              TILEOPS_ERR_INVALID_ARGUMENT,
          "launch with 6 args for pppqqqf");
    CHECK(tileops_cuda_launch(1 << 30, grid, block, 0, (uintptr_t)g_stream, args, 7) ==
              TILEOPS_ERR_INVALID_ARGUMENT,
          "launch of a bad handle");
    tileops_cuda_get_stats(&before);
    CHECK(tileops_cuda_launch(h1, empty, block, 0, (uintptr_t)g_stream, args, 7) == TILEOPS_OK,
          "empty grid");
    tileops_cuda_get_stats(&after);
    CHECK(after.launches == before.launches, "an empty grid launches nothing");

    /* a compile error carries the kernel name, the options and the log (here the source's
     * #error about a missing define: which one it names first is the source's business) */
    int hb = -1;
    char o[3][40];
    const char *opts[3] = {o[0], o[1], o[2]};
    snprintf(o[0], sizeof o[0], "-DTILEOPS_DTYPE=0");
    snprintf(o[1], sizeof o[1], "-DTILEOPS_N=0");
    snprintf(o[2], sizeof o[2], "-DTILEOPS_KERNEL=0");
    tileops_status_t st = tileops_cuda_build(0, g_src, g_src_len, "tileops_rms_norm", opts, 3,
                                             "pppqqqf", 0, &hb, NULL);
    const char *msg = tileops_last_error();
    CHECK(st == TILEOPS_ERR_COMPILE && strstr(msg, "tileops_rms_norm") &&
              strstr(msg, "-DTILEOPS_N=0") && strstr(msg, "\nlog:\n") && strstr(msg, "#error"),
          "compile error message: %s: %.300s", tileops_status_name(st), msg);

    /* building during stream capture is refused; a kernel already built works */
    if (A->cuStreamBeginCapture && A->cuStreamEndCapture && A->cuGraphDestroy) {
        spec_t fresh = make_spec(0, TILEOPS_FLOAT32, 12347, 0, 1);
        CUgraph graph = NULL;
        int hf = -1, hk = -1;
        CU(A->cuStreamBeginCapture(g_stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
        char fo[7][48];
        const char *fopts[7];
        spec_options(&fresh, fo, fopts);
        tileops_cuda_stats_t s0, s1;
        tileops_cuda_get_stats(&s0);
        st = tileops_cuda_build(0, g_src, g_src_len, "tileops_rms_norm", fopts, 7, "pppqqqf",
                                (uintptr_t)g_stream, &hf, NULL);
        msg = tileops_last_error();
        tileops_cuda_get_stats(&s1);
        CHECK(st == TILEOPS_ERR_CAPTURING && hf == -1 &&
                  strstr(msg, "kernel tileops_rms_norm is not built for device 0") &&
                  s1.nvrtc_compiles == s0.nvrtc_compiles && s1.disk_hits == s0.disk_hits,
              "build during capture: %s: %s", tileops_status_name(st), msg);
        tileops_build_info_t info;
        memset(&info, 0, sizeof info);
        hk = build(&s, &info); /* already loaded: a memory hit, allowed */
        CHECK(hk == h1 && info.memory_hit, "memory hit during capture");
        CU(A->cuStreamEndCapture(g_stream, &graph));
        CHECK(graph != NULL, "capture ended with a graph");
        if (graph)
            CU(A->cuGraphDestroy(graph));
        hf = build(&fresh, NULL);
        CHECK(hf >= 0, "build after capture");
    } else {
        printf("skip capture test: the driver lacks cuStreamBeginCapture_v2\n");
    }
}

/* ---- timing ------------------------------------------------------------------------- */

static CUdeviceptr g_scrub, g_sweep_y;
static size_t g_scrub_bytes;
static int g_sweep; /* handle: a read sweep over the scrub buffer (see time_it) */

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median microseconds of `iters` runs. cold 0: back to back (warm); 1: after a 512 MiB
 * memset (L2 full of dirty lines of another buffer, which the timed run must write back);
 * 2: after a read sweep over 512 MiB (L2 full of clean lines of another buffer: the usual
 * meaning of L2-cold). handle < 0: a device-to-device copy of `copy_bytes` x -> y. */
static double time_it(int cold, int iters, int h, const launch_shape_t *L, CUdeviceptr x,
                      CUdeviceptr w, CUdeviceptr y, long long rows, long long n, size_t copy_bytes) {
    CUevent e0, e1;
    float t[64];
    CU(A->cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CU(A->cuEventCreate(&e1, CU_EVENT_DEFAULT));
    if (iters > 64)
        iters = 64;
    for (int i = -2; i < iters; i++) {
        if (cold == 1)
            CU(A->cuMemsetD8Async(g_scrub, (unsigned char)i, g_scrub_bytes, g_stream));
        if (cold == 2) {
            /* RMSNorm over the scrub buffer as fp16 rows of 4096 with y's row stride 0: it
             * reads 512 MiB and writes one 8 KiB row */
            spec_t sw = make_spec(0, TILEOPS_FLOAT16, 4096, 0, 1);
            long long rows = (long long)(g_scrub_bytes / 8192);
            launch_shape_t SL = plan_launch(&sw, rows);
            tileops_arg_t a[7];
            a[0].p = (uintptr_t)g_scrub;
            a[1].p = 0;
            a[2].p = (uintptr_t)g_sweep_y;
            a[3].q = rows;
            a[4].q = 4096;
            a[5].q = 0;
            a[6].f = 1e-6f;
            unsigned gd[3] = {SL.grid, 1, 1}, bd[3] = {SL.block, 1, 1};
            if (tileops_cuda_launch(g_sweep, gd, bd, 0, (uintptr_t)g_stream, a, 7) != TILEOPS_OK)
                printf("sweep launch failed: %s\n", tileops_last_error());
        }
        CU(A->cuEventRecord(e0, g_stream));
        if (h >= 0)
            launch(h, L, x, w, y, rows, n, n, 1e-6f);
        else
            CU(A->cuMemcpyDtoDAsync(y, x, copy_bytes, g_stream));
        CU(A->cuEventRecord(e1, g_stream));
        CU(A->cuEventSynchronize(e1));
        if (i >= 0)
            CU(A->cuEventElapsedTime(&t[i], e0, e1));
    }
    CU(A->cuEventDestroy(e0));
    CU(A->cuEventDestroy(e1));
    qsort(t, (size_t)iters, sizeof t[0], cmp_float);
    return 1000.0 * t[iters / 2];
}

typedef struct bench_case {
    int kernel, dtype;
    long long rows, n;
    int threads, rt; /* 0: the recommended ones */
    unsigned grid;   /* 0: the recommended one */
} bench_case_t;

static void run_bench(void) {
    static const bench_case_t cases[] = {
        /* the two targets: 2048x4096 fp16 <= 11 us cold; 16384x4096 <= 1.05x a copy */
        {0, 1, 2048, 4096, 0, 0, 0},        {0, 1, 2048, 4096, 256, 256, 0},
        {0, 1, 16384, 4096, 0, 0, 0},       {0, 1, 16384, 4096, 256, 256, 0},
        {0, 2, 8192, 8192, 0, 0, 0},        {0, 0, 8192, 4096, 0, 0, 0},
        {0, 0, 4096, 8192, 0, 0, 0},        {0, 1, 4096, 16384, 0, 0, 0},
        {1, 1, 4096, 16384, 512, 512, 0},   {0, 0, 1024, 16384, 0, 0, 0},
        {0, 1, 1024, 32768, 0, 0, 0},       {0, 0, 1024, 32768, 0, 0, 0},
        {1, 0, 1024, 32768, 1024, 1024, 0}, {1, 1, 512, 65536, 1024, 1024, 132},
        {1, 1, 512, 65536, 1024, 1024, 0},  {2, 1, 512, 65536, 1024, 1024, 0},
        {1, 0, 512, 57344, 1024, 1024, 0},  {2, 0, 512, 57344, 1024, 1024, 0},
        {1, 1, 1024, 100000, 1024, 1024, 0}, {2, 1, 1024, 100000, 1024, 1024, 0},
        {2, 0, 256, 262144, 1024, 1024, 0}, {2, 0, 64, 1048576, 1024, 1024, 0},
        {0, 1, 65536, 128, 0, 0, 0},        {0, 1, 1, 4096, 0, 0, 0},
        {0, 1, 32, 4096, 0, 0, 0},
    };
    g_expect_disk = 0; /* the bench variants were not built by the first run */
    g_scrub_bytes = (size_t)512 << 20;
    g_scrub = dalloc(g_scrub_bytes);
    g_sweep_y = dalloc(8192);
    CU(A->cuMemsetD8Async(g_scrub, 0x3c, g_scrub_bytes, g_stream));
    spec_t sw = make_spec(0, TILEOPS_FLOAT16, 4096, 0, 1);
    g_sweep = build(&sw, NULL);
    if (g_sweep < 0)
        return;
    printf("\nbench (median us; cold = L2 flushed before each run; GB/s counts x read + y "
           "written; copy = cuMemcpyDtoDAsync of x)\n");
    printf("cold = after a read sweep of 512 MiB (clean L2); dirty = after a 512 MiB memset "
           "(L2 full of dirty lines)\n");
    printf("%-27s %-4s %6s %8s %5s %5s %6s %8s %8s %8s %7s %8s %6s %9s %6s\n", "kernel", "type",
           "rows", "N", "thr", "rt", "grid", "cold_us", "dirty_us", "warm_us", "GB/s", "copy_us",
           "ratio", "copy_dirty", "ratio");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bench_case_t *b = &cases[c];
        spec_t s = make_spec(b->kernel, b->dtype, b->n, 1, 1);
        if (b->threads) {
            s.threads = b->threads;
            s.rt = b->rt;
        }
        int h = build(&s, NULL);
        if (h < 0)
            continue;
        size_t bytes = (size_t)(b->rows * b->n * esize(b->dtype));
        CUdeviceptr x = dalloc(bytes), y = dalloc(bytes), w = dalloc((size_t)b->n * esize(b->dtype));
        CU(A->cuMemsetD8Async(x, 0x3c, bytes, g_stream)); /* 1.0 in fp16, finite elsewhere */
        CU(A->cuMemsetD8Async(w, 0x3c, (size_t)b->n * esize(b->dtype), g_stream));
        launch_shape_t L = plan_launch(&s, b->rows);
        if (b->grid)
            L.grid = b->grid;
        double cold = time_it(2, 31, h, &L, x, w, y, b->rows, b->n, 0);
        double dirty = time_it(1, 31, h, &L, x, w, y, b->rows, b->n, 0);
        double warm = time_it(0, 31, h, &L, x, w, y, b->rows, b->n, 0);
        double copy = time_it(2, 31, -1, NULL, x, 0, y, 0, 0, bytes);
        double copy_dirty = time_it(1, 31, -1, NULL, x, 0, y, 0, 0, bytes);
        printf("%-27s %-4s %6lld %8lld %5d %5d %6u %8.2f %8.2f %8.2f %7.0f %8.2f %6.3f %9.2f %6.3f\n",
               KNAMES[b->kernel], DNAMES[b->dtype], b->rows, b->n, s.threads, s.rt, L.grid, cold,
               dirty, warm, 2.0 * (double)bytes / (cold * 1e3), copy, cold / copy, copy_dirty,
               dirty / copy_dirty);
        CU(A->cuMemFree(x));
        CU(A->cuMemFree(y));
        CU(A->cuMemFree(w));
    }
    CU(A->cuMemFree(g_scrub));
    CU(A->cuMemFree(g_sweep_y));
}

/* ---- main --------------------------------------------------------------------------- */

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) {
        s[n] = '\0';
        *len = (size_t)n;
    }
    return s;
}

/* A growable text buffer for splice(). */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} text_t;

static void text_add(text_t *t, const char *p, size_t n) {
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = 1;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}

/* Appends `path` to t with each `#include "name"` line replaced by that file of the same
 * folder (recursively, each file once), as tileops.runtime.source does: NVRTC then needs
 * no include path, and the text is the one the Python layer would build from. */
#define SPLICE_MAX_FILES 16
static int splice(const char *path, text_t *t, char seen[][512], int *nseen) {
    for (int i = 0; i < *nseen; i++)
        if (!strcmp(seen[i], path))
            return 1;
    if (*nseen >= SPLICE_MAX_FILES || strlen(path) >= 512)
        return 0;
    snprintf(seen[(*nseen)++], 512, "%s", path);
    size_t len = 0;
    char *src = read_file(path, &len);
    if (!src) {
        printf("FAIL cannot read %s\n", path);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    int ok = 1;
    for (char *line = src; ok && *line;) {
        char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line + 1) : strlen(line);
        char name[256];
        if (sscanf(line, " #include \"%255[^\"]\"", name) == 1) {
            char inc[1024];
            snprintf(inc, sizeof inc, "%.*s%s", dir_len, path, name);
            ok = splice(inc, t, seen, nseen);
            text_add(t, "\n", 1);
        } else {
            text_add(t, line, n);
        }
        line += n;
    }
    free(src);
    return ok && !t->failed;
}

static char *read_source(const char *path, size_t *len) {
    char seen[SPLICE_MAX_FILES][512];
    int nseen = 0;
    text_t t = {NULL, 0, 0, 0};
    if (!splice(path, &t, seen, &nseen)) {
        free(t.s);
        return NULL;
    }
    *len = t.len;
    return t.s;
}

int main(int argc, char **argv) {
    const char *source = "csrc/ops/norm/rms_norm.cu";
    int bench = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-disk"))
            g_expect_disk = 1;
        else if (!strcmp(argv[i], "--bench"))
            bench = 1;
        else if (!strcmp(argv[i], "--source") && i + 1 < argc)
            source = argv[++i];
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    g_src = read_source(source, &g_src_len);
    if (!g_src) {
        printf("FAIL cannot read %s (run from the repository root or pass --source)\n", source);
        return 1;
    }
    tileops_status_t st = tileops_cuda_load(getenv("TILEOPS_NVRTC_HINT"));
    if (st != TILEOPS_OK) {
        printf("FAIL tileops_cuda_load: %s: %s\n", tileops_status_name(st), tileops_last_error());
        return 1;
    }
    A = tileops_cuda_api();
    if (!A->cuMemAlloc || !A->cuMemFree || !A->cuMemcpyHtoD || !A->cuMemcpyDtoH ||
        !A->cuMemsetD8Async || !A->cuStreamCreate || !A->cuStreamSynchronize || !A->cuEventCreate ||
        !A->cuEventElapsedTime || !A->cuMemcpyDtoDAsync) {
        printf("FAIL the driver lacks a test helper entry point\n");
        return 1;
    }
    int count = 0, major = 0, minor = 0, nvm = 0, nvn = 0;
    CHECK(tileops_cuda_device_count(&count) == TILEOPS_OK && count > 0, "device count %d", count);
    CHECK(tileops_cuda_device_arch(0, &major, &minor) == TILEOPS_OK, "device arch");
    CHECK(tileops_nvrtc_version(&nvm, &nvn) == TILEOPS_OK, "nvrtc version");
    CHECK(tileops_cuda_device_attributes(0, &g_sm_count, &g_smem_optin, &g_l2) == TILEOPS_OK,
          "device attributes");
    printf("device 0: sm_%d%d, %d SMs, %d bytes shared/block opt-in, %d bytes L2; %d device(s); "
           "NVRTC %d.%d from %s; driver %d\n",
           major, minor, g_sm_count, g_smem_optin, g_l2, count, nvm, nvn, A->nvrtc_path,
           A->driver_version);

    /* a stream of our own, in device 0's primary context */
    CUcontext ctx;
    CHECK(tileops_cuda_device_context(0, &ctx) == TILEOPS_OK, "primary context");
    CU(A->cuCtxSetCurrent(ctx));
    CU(A->cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));

    run_runtime_checks();

    static const long long n_reg[] = {1, 7, 64, 100, 4095, 4096, 8192, 16384, 32768};
    static const long long n_chip[] = {1, 7, 4095, 4096, 32768, 65536};
    static const long long n_stream[] = {1, 7, 4096, 65536, 1000003};
    for (int dtype = 0; dtype < 3; dtype++) {
        for (int has_w = 0; has_w < 2; has_w++) {
            for (int aligned = 1; aligned >= 0; aligned--) {
                for (size_t i = 0; i < sizeof n_reg / sizeof n_reg[0]; i++)
                    run_case(0, dtype, n_reg[i], has_w, aligned, n_reg[i] > 4096 ? 9 : 67);
                for (size_t i = 0; i < sizeof n_chip / sizeof n_chip[0]; i++)
                    run_case(1, dtype, n_chip[i], has_w, aligned, n_chip[i] > 4096 ? 5 : 33);
                long long max_chip = (g_smem_optin - 256) / 16 * group_elems(dtype);
                run_case(1, dtype, max_chip, has_w, aligned, 3);
                for (size_t i = 0; i < sizeof n_stream / sizeof n_stream[0]; i++)
                    run_case(2, dtype, n_stream[i], has_w, aligned, n_stream[i] > 4096 ? 3 : 33);
            }
        }
        run_equivalence(dtype, 4096, 1);
        run_equivalence(dtype, 4093, 0);
    }
    if (g_expect_disk) {
        tileops_cuda_stats_t s;
        tileops_cuda_get_stats(&s);
        CHECK(s.nvrtc_compiles == 0 && s.disk_hits > 0,
              "second process: %lld NVRTC compiles, %lld disk hits (expected 0 and > 0)",
              (long long)s.nvrtc_compiles, (long long)s.disk_hits);
    }
    if (bench)
        run_bench();
    CU(A->cuStreamDestroy(g_stream));
    free(g_src);
    finish();
    return g_fail ? 1 : 0;
}

/* bench_cpu_norm_family.c: times the CPU kernels of the norm family's row ops (layer_norm,
 * fused_add_rms_norm, fused_add_layer_norm, gemma_rms_norm) through the kernel table, at the
 * shapes the project compares against torch. Not a test (the name does not start with
 * test_), so `make test-c` skips it.
 *
 * Build: like a C test (all of csrc/core, csrc/cpu, csrc/runtime and csrc/ops/<family>/), -O2.
 * Run:   bench [rows n ...]          (default: 1 32 256 4096 rows x 4096 3584 8192)
 *        BENCH_OPS=layer_norm,...    only these ops;  BENCH_DTYPES=float32,bfloat16
 *        BENCH_SIMD=avx2|scalar      a lower SIMD path
 * Each op gets weight (and bias where it takes one), out of place. Prints microseconds per
 * call, median and minimum, into outputs allocated anew each call ("new": what an op that
 * returns fresh tensors pays, as torch eager does) and into outputs reused ("reused"), and
 * the minor page faults per call into new outputs (glibc maps or trims their pages anew). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cpu/simd.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

static const char *const k_ops[] = {"layer_norm", "fused_add_rms_norm", "fused_add_layer_norm", "gemma_rms_norm"};

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int listed(const char *env, const char *name) {
    const char *list = getenv(env);
    if (list == NULL || *list == '\0')
        return 1;
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

typedef struct bench_case {
    int handle, residual, bias, dtype;
    int64_t rows, n;
    void *x, *res, *w, *b, *y, *res_out;
} bench_case_t;

static void call(const bench_case_t *c, void *y, void *res_out) {
    tileops_arg_t a[10];
    a[0].p = (uintptr_t)c->x;
    a[1].p = (uintptr_t)(c->residual ? c->res : NULL);
    a[2].p = (uintptr_t)c->w;
    a[3].p = (uintptr_t)(c->bias ? c->b : NULL);
    a[4].p = (uintptr_t)y;
    a[5].p = (uintptr_t)(c->residual ? res_out : NULL);
    a[6].q = c->rows;
    a[7].q = c->n;
    a[8].f = 1e-5f;
    a[9].i = c->dtype;
    tileops_status_t st = tileops_cpu_kernel_launch(c->handle, a, 10);
    if (st != TILEOPS_OK) {
        fprintf(stderr, "launch failed: %s\n", tileops_last_error());
        exit(1);
    }
}

/* Median of timed calls (about 0.3 s of them, 5 at least); *best gets the fastest (the
 * machine may be shared: the minimum shows the kernel when nothing else runs). */
static long minor_faults(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

/* Also *faults: minor page faults per timed call (new outputs fault in as first written). */
static double time_us(const bench_case_t *c, int fresh, double *best, double *faults) {
    const size_t bytes = (size_t)(c->rows * c->n) * tileops_dtype_size(c->dtype);
    enum { MAX_REPS = 2000 };
    static double t[MAX_REPS];
    int reps = 0;
    double start = now_us();
    for (int warm = 0; warm < 3; warm++)
        call(c, c->y, c->res_out);
    long faults0 = minor_faults();
    while (reps < MAX_REPS && (reps < 5 || now_us() - start < 3e5)) {
        void *y = c->y, *ro = c->res_out;
        if (fresh) { /* as torch's CPU allocator: malloc, first touch by the kernel, free */
            y = malloc(bytes);
            ro = c->residual ? malloc(bytes) : NULL;
        }
        double t0 = now_us();
        call(c, y, ro);
        t[reps++] = now_us() - t0;
        if (fresh) {
            free(y);
            free(ro);
        }
    }
    *faults = (double)(minor_faults() - faults0) / reps;
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *best = t[0];
    return t[reps / 2];
}

static void *filled(size_t bytes, int dt, size_t count, float lo, float hi, uint32_t seed) {
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        float v = lo + (hi - lo) * (float)(seed >> 8) * (1.0f / 16777216.0f);
        if (dt == TILEOPS_FLOAT32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = dt == TILEOPS_FLOAT16 ? tileops_f32_to_f16(v) : tileops_f32_to_bf16(v);
    }
    return p;
}

int main(int argc, char **argv) {
    static const int64_t defaults[] = {1, 4096, 32, 4096, 256, 4096, 4096, 4096, 1, 3584, 32, 3584,
                                       256, 3584, 4096, 3584, 1, 8192, 32, 8192, 256, 8192, 4096, 8192};
    int64_t shapes[64];
    int nshapes = 0;
    if (argc > 1) {
        for (int i = 1; i + 1 < argc && nshapes < 32; i += 2, nshapes++) {
            shapes[2 * nshapes] = atoll(argv[i]);
            shapes[2 * nshapes + 1] = atoll(argv[i + 1]);
        }
    } else {
        nshapes = (int)(sizeof defaults / sizeof defaults[0]) / 2;
        memcpy(shapes, defaults, sizeof defaults);
    }
    const char *simd = getenv("BENCH_SIMD");
    if (simd != NULL && tileops_cpu_simd_override(strcmp(simd, "scalar") == 0 ? TILEOPS_SIMD_SCALAR
                                                  : strcmp(simd, "avx2") == 0 ? TILEOPS_SIMD_AVX2
                                                                               : TILEOPS_SIMD_AVX512) != TILEOPS_OK) {
        fprintf(stderr, "BENCH_SIMD=%s: %s\n", simd, tileops_last_error());
        return 1;
    }
    printf("simd %s, %d threads; us per call: median (min)\n", tileops_cpu_simd_level(), tileops_cpu_num_threads());
    printf("%-22s %-9s %6s %6s %20s %20s %8s\n", "op", "dtype", "rows", "n", "new outputs", "reused outputs",
           "faults");
    for (int oi = 0; oi < 4; oi++) {
        if (!listed("BENCH_OPS", k_ops[oi]))
            continue;
        int handle;
        if (tileops_cpu_kernel_lookup(k_ops[oi], &handle) != TILEOPS_OK) {
            fprintf(stderr, "%s\n", tileops_last_error());
            return 1;
        }
        for (int dt = 0; dt < 3; dt++) {
            if (!listed("BENCH_DTYPES", tileops_dtype_name(dt)))
                continue;
            for (int s = 0; s < nshapes; s++) {
                bench_case_t c = {.handle = handle, .dtype = dt, .rows = shapes[2 * s], .n = shapes[2 * s + 1]};
                c.residual = strstr(k_ops[oi], "fused_add") != NULL;
                c.bias = strstr(k_ops[oi], "layer_norm") != NULL;
                const size_t count = (size_t)(c.rows * c.n), bytes = count * tileops_dtype_size(dt);
                const int gemma = strcmp(k_ops[oi], "gemma_rms_norm") == 0;
                c.x = filled(bytes, dt, count, -2.0f, 2.0f, 1);
                c.res = filled(bytes, dt, count, -1.0f, 1.0f, 2);
                c.w = filled((size_t)c.n * tileops_dtype_size(dt), dt, (size_t)c.n, gemma ? -0.5f : 0.5f,
                             gemma ? 0.5f : 1.5f, 3);
                c.b = filled((size_t)c.n * tileops_dtype_size(dt), dt, (size_t)c.n, -0.5f, 0.5f, 4);
                c.y = filled(bytes, dt, count, 0.0f, 0.0f, 5);
                c.res_out = filled(bytes, dt, count, 0.0f, 0.0f, 6);
                double best_new, best_reused, faults, faults_reused;
                double med_new = time_us(&c, 1, &best_new, &faults);
                double med_reused = time_us(&c, 0, &best_reused, &faults_reused);
                printf("%-22s %-9s %6lld %6lld %11.2f (%6.2f) %11.2f (%6.2f) %8.0f\n", k_ops[oi],
                       tileops_dtype_name(dt), (long long)c.rows, (long long)c.n, med_new, best_new, med_reused,
                       best_reused, faults);
                fflush(stdout);
                free(c.x), free(c.res), free(c.w), free(c.b), free(c.y), free(c.res_out);
            }
        }
    }
    return 0;
}

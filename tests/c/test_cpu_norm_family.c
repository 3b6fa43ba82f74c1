/* test_cpu_norm_family.c: checks the CPU kernels of the norm family's row ops (layer_norm,
 * fused_add_rms_norm, fused_add_layer_norm, gemma_rms_norm, and Hugging Face's rounding:
 * fused_add_rms_norm_cast, rms_norm_rows_cast; csrc/ops/norm/norm_rows.c),
 * reached through the kernel table as the binding reaches them.
 *
 * For every op x dtype x weight / bias presence x row length x row count: the fast kernel
 * against the double-precision reference; the fast kernel's bits against itself in place,
 * at 1 and 4 threads, row by row against the batch, and at every SIMD level this CPU has;
 * then bad arguments. Inputs come from a fixed xorshift generator, so a failure reproduces.
 * Prints one line per failed check and ends with "N passed, M failed". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/simd.h"
#include "ops/norm/norm_rows.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/status.h"

#if defined(__SANITIZE_ADDRESS__)
/* The out-of-memory check asks for a ~2^63-byte scratch: ASan must answer NULL, as malloc
 * does, instead of stopping the program. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

/* ---- the ops, as the test sees them ----------------------------------------------------- */

typedef struct op_info {
    const char *name;
    int residual, bias, weight_required, mean_subtract;
    float weight_offset;
    int cast; /* cast_before_weight: the normalised value rounded to the dtype, then weighted */
    int fast, ref; /* table handles */
} op_info_t;

static op_info_t g_ops[] = {
    {"layer_norm", 0, 1, 0, 1, 0.0f, 0, -1, -1},
    {"fused_add_rms_norm", 1, 0, 0, 0, 0.0f, 0, -1, -1},
    {"fused_add_layer_norm", 1, 1, 0, 1, 0.0f, 0, -1, -1},
    {"gemma_rms_norm", 0, 0, 1, 0, 1.0f, 0, -1, -1},
    {"fused_add_rms_norm_cast", 1, 0, 0, 0, 0.0f, 1, -1, -1},
    {"rms_norm_rows_cast", 0, 0, 0, 0, 0.0f, 1, -1, -1},
};
#define NUM_OPS (int)(sizeof g_ops / sizeof g_ops[0])

static const int64_t k_lengths[] = {1, 2, 7, 15, 16, 17, 63, 64, 65, 1000, 4096, 4097, 8192 + 3, 70000};
static const int64_t k_rows[] = {0, 1, 3, 64};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* ---- helpers ------------------------------------------------------------------------------ */

static uint64_t g_rng = 0x2545f4914f6cdd1dull;

static double urand(double lo, double hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

static double get(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT16)
        return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == TILEOPS_BFLOAT16)
        return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void put(void *p, int64_t i, int dt, float v) {
    if (dt == TILEOPS_FLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else if (dt == TILEOPS_BFLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* One unit in the last place of the dtype at |v| (subnormal spacing below the normals). */
static double ulp_of(double v, int dt) {
    const int mant = dt == TILEOPS_FLOAT32 ? 23 : dt == TILEOPS_FLOAT16 ? 10 : 7;
    const int emin = dt == TILEOPS_FLOAT16 ? -14 : -126;
    int e;
    (void)frexp(fabs(v), &e); /* |v| = m * 2^e, m in [0.5, 1) */
    e -= 1;
    if (v == 0.0 || e < emin)
        e = emin;
    return ldexp(1.0, e - mant);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL) {
        printf("FAIL: out of memory for %zu bytes in the test itself\n", bytes);
        exit(1);
    }
    return p;
}

static tileops_status_t launch(int handle, const void *x, const void *res, const void *w,
                               const void *b, void *y, void *res_out, int64_t rows, int64_t n,
                               float eps, int dt) {
    tileops_arg_t a[10];
    a[0].p = (uintptr_t)x;
    a[1].p = (uintptr_t)res;
    a[2].p = (uintptr_t)w;
    a[3].p = (uintptr_t)b;
    a[4].p = (uintptr_t)y;
    a[5].p = (uintptr_t)res_out;
    a[6].q = rows;
    a[7].q = n;
    a[8].f = eps;
    a[9].i = dt;
    return tileops_cpu_kernel_launch(handle, a, 10);
}

/* ---- fast against the reference -------------------------------------------------------- */

/* The bound on |fast - reference| for y, and why.
 * residual_out is the definition itself (an fp32 add rounded once), so it must match bits.
 * y: the reference is the double result rounded once; the fast kernel accumulates in fp32
 * (64 partial sums, blocks of 4096) and rounds a few times on the way: (h - mean) * rstd,
 * then one FMA with weight and bias. Its fp32 value is therefore within a few dozen fp32
 * ulps of the exact one, measured against the terms it is made of: |h - mean| * rstd * |w|
 * and |b|, plus the error the fp32 mean brings, mean(|h|) * rstd * |w|. We allow 2^-18 of
 * that (64 fp32 ulps; ~4x what the worst case here shows), plus one ulp of the dtype for the
 * final rounding. For a 16-bit dtype that is "within 1 ulp" wherever the output is not a
 * small difference of large terms (a bias cancelling the normalised value); for fp32 the
 * first term dominates: fp32 accumulation cannot match double to the ulp. */
#define TERM_TOL 0x1p-18

typedef struct stats {
    double worst;             /* max |fast - ref| / bound */
    long long exact, total;   /* y elements bit-identical to the reference */
} stats_t;

#define NUM_DTYPES 3 /* the float codes: float32, float16, bfloat16 */
static stats_t g_stats[NUM_OPS][NUM_DTYPES];

static void compare_to_reference(const op_info_t *op, int dt, const void *w, const void *b,
                                 const void *y, const void *y_ref, const void *h_src, int64_t rows,
                                 int64_t n, float eps, stats_t *st, const char *what) {
    const size_t es = tileops_dtype_size(dt);
    long long bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        const char *h = (const char *)h_src + (size_t)(r * n) * es;
        double mean = 0.0, mean_abs = 0.0, ss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            mean += op->mean_subtract ? get(h, i, dt) : 0.0;
            mean_abs += fabs(get(h, i, dt));
        }
        mean /= (double)n;
        mean_abs /= (double)n;
        for (int64_t i = 0; i < n; i++)
            ss += (get(h, i, dt) - mean) * (get(h, i, dt) - mean);
        const double rstd = 1.0 / sqrt(ss / (double)n + (double)eps);
        for (int64_t i = 0; i < n; i++) {
            const int64_t k = r * n + i;
            st->total++;
            if (memcmp((const char *)y + (size_t)k * es, (const char *)y_ref + (size_t)k * es, es) == 0) {
                st->exact++;
                continue;
            }
            double wv = w != NULL ? (double)(op->weight_offset + (float)get(w, i, dt)) : 1.0;
            double bv = b != NULL ? get(b, i, dt) : 0.0;
            double terms = (fabs(get(h, i, dt) - mean) + (op->mean_subtract ? mean_abs : 0.0)) * rstd * fabs(wv) + fabs(bv);
            double f = get(y, k, dt), ref = get(y_ref, k, dt);
            double bound = ulp_of(fmax(fabs(f), fabs(ref)), dt) + TERM_TOL * terms;
            if (op->cast && w != NULL) { /* the intermediate rounding may go either way: 1 ulp of t, weighted */
                const double t = fabs(get(h, i, dt) - mean) * rstd;
                bound += ulp_of(t * (1.0 + TERM_TOL), dt) * fabs(wv);
            }
            double err = fabs(f - ref);
            if (err / bound > st->worst)
                st->worst = err / bound;
            if (!(err <= bound) && bad++ < 3)
                printf("  %s %s %s n=%lld rows=%lld: y[%lld][%lld] = %.9g, reference %.9g, "
                       "|diff| %.3g > bound %.3g\n", op->name, tileops_dtype_name(dt), what,
                       (long long)n, (long long)rows, (long long)r, (long long)i, f, ref, err, bound);
        }
    }
    CHECK(bad == 0, "%s %s %s n=%lld rows=%lld: %lld elements of y outside the bound", op->name,
          tileops_dtype_name(dt), what, (long long)n, (long long)rows, bad);
}

static int same_bytes(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

/* One case: inputs, the reference, the fast kernel, and its invariances. */
static void run_case(int oi, int dt, int has_w, int has_b, int64_t n, int64_t rows, int detected) {
    const op_info_t *op = &g_ops[oi];
    const size_t es = tileops_dtype_size(dt);
    const size_t bytes = (size_t)(rows * n) * es, row_bytes = (size_t)n * es;
    const float eps = op->mean_subtract ? 1e-5f : 1e-6f;
    char *x = xmalloc(bytes), *res = xmalloc(bytes), *w = xmalloc(row_bytes), *b = xmalloc(row_bytes);
    char *y_ref = xmalloc(bytes), *ro_ref = xmalloc(bytes), *y = xmalloc(bytes), *ro = xmalloc(bytes);
    char *y2 = xmalloc(bytes), *ro2 = xmalloc(bytes);
    for (int64_t r = 0; r < rows; r++) {
        const double shift = urand(-1.0, 1.0);
        /* Row 1 is constant: zero variance, rstd = 1/sqrt(eps), y = bias. */
        const double c = urand(-2.0, 2.0);
        for (int64_t i = 0; i < n; i++) {
            put(x, r * n + i, dt, (float)(r == 1 ? c : urand(-2.0, 2.0) + shift));
            put(res, r * n + i, dt, (float)(r == 1 ? 0.0 : urand(-1.0, 1.0)));
        }
    }
    for (int64_t i = 0; i < n; i++) {
        put(w, i, dt, (float)(op->weight_offset != 0.0f ? urand(-0.5, 0.5) : urand(0.5, 1.5)));
        put(b, i, dt, (float)urand(-0.5, 0.5));
    }
    const void *W = has_w ? w : NULL, *B = has_b ? b : NULL;
    const void *R = op->residual ? res : NULL;
    void *RO_REF = op->residual ? ro_ref : NULL, *RO = op->residual ? ro : NULL, *RO2 = op->residual ? ro2 : NULL;
    char what[64];
    snprintf(what, sizeof what, "w=%d b=%d", has_w, has_b);

    tileops_status_t st = launch(op->ref, x, R, W, B, y_ref, RO_REF, rows, n, eps, dt);
    CHECK(st == TILEOPS_OK, "%s_reference %s: %s %s", op->name, what, tileops_status_name(st), tileops_last_error());
    tileops_cpu_set_num_threads(4);
    st = launch(op->fast, x, R, W, B, y, RO, rows, n, eps, dt);
    CHECK(st == TILEOPS_OK, "%s %s: %s %s", op->name, what, tileops_status_name(st), tileops_last_error());
    if (op->residual)
        CHECK(same_bytes(ro, ro_ref, bytes), "%s %s %s n=%lld rows=%lld: residual_out differs from the reference",
              op->name, tileops_dtype_name(dt), what, (long long)n, (long long)rows);
    compare_to_reference(op, dt, W, B, y, y_ref, op->residual ? ro_ref : x, rows, n, eps,
                         &g_stats[oi][dt], what);

    /* Thread count: one thread gives the same bits as four. */
    tileops_cpu_set_num_threads(1);
    memset(y2, 0xa5, bytes);
    memset(ro2, 0xa5, bytes);
    launch(op->fast, x, R, W, B, y2, RO2, rows, n, eps, dt);
    CHECK(same_bytes(y2, y, bytes) && (!op->residual || same_bytes(ro2, ro, bytes)),
          "%s %s %s n=%lld rows=%lld: 1 thread differs from 4", op->name, tileops_dtype_name(dt), what,
          (long long)n, (long long)rows);
    tileops_cpu_set_num_threads(4);

    /* In place: y = x, residual_out = residual. */
    memcpy(y2, x, bytes);
    memcpy(ro2, res, bytes);
    launch(op->fast, y2, op->residual ? ro2 : NULL, W, B, y2, RO2, rows, n, eps, dt);
    CHECK(same_bytes(y2, y, bytes) && (!op->residual || same_bytes(ro2, ro, bytes)),
          "%s %s %s n=%lld rows=%lld: in place differs from out of place", op->name,
          tileops_dtype_name(dt), what, (long long)n, (long long)rows);
    if (rows * n <= 70000) { /* and the reference in place (it is slow) */
        memcpy(y2, x, bytes);
        memcpy(ro2, res, bytes);
        launch(op->ref, y2, op->residual ? ro2 : NULL, W, B, y2, RO2, rows, n, eps, dt);
        CHECK(same_bytes(y2, y_ref, bytes) && (!op->residual || same_bytes(ro2, ro_ref, bytes)),
              "%s_reference %s %s n=%lld rows=%lld: in place differs from out of place", op->name,
              tileops_dtype_name(dt), what, (long long)n, (long long)rows);
    }

    /* Batch invariance: a row computed alone equals the same row inside the batch. */
    for (int64_t r = 0; r < rows; r += rows > 3 ? 31 : 1) {
        const size_t off = (size_t)r * row_bytes;
        launch(op->fast, x + off, op->residual ? res + off : NULL, W, B, y2, RO2, 1, n, eps, dt);
        CHECK(same_bytes(y2, y + off, row_bytes) && (!op->residual || same_bytes(ro2, ro + off, row_bytes)),
              "%s %s %s n=%lld: row %lld alone differs from row %lld of %lld", op->name,
              tileops_dtype_name(dt), what, (long long)n, (long long)r, (long long)r, (long long)rows);
    }

    /* Every SIMD level this CPU has gives the same bits. (The scalar code is slow on x86,
     * where it is a fallback: the largest batch leaves it out; its rows are covered alone.) */
    for (int level = TILEOPS_SIMD_SCALAR; level <= detected; level++) {
        if ((level == TILEOPS_SIMD_SCALAR && rows * n > ((int64_t)1 << 20)) ||
            tileops_cpu_simd_override(level) != TILEOPS_OK)
            continue;
        memset(y2, 0x5a, bytes);
        launch(op->fast, x, R, W, B, y2, RO2, rows, n, eps, dt);
        CHECK(same_bytes(y2, y, bytes) && (!op->residual || same_bytes(ro2, ro, bytes)),
              "%s %s %s n=%lld rows=%lld: SIMD level %d differs from the default (%d)", op->name,
              tileops_dtype_name(dt), what, (long long)n, (long long)rows, level, detected);
    }
    tileops_cpu_simd_override(-1);

    free(x), free(res), free(w), free(b), free(y_ref), free(ro_ref), free(y), free(ro), free(y2), free(ro2);
}

/* ---- bad arguments ---------------------------------------------------------------------- */

/* got is want, and the message holds both needles (the kernel's name, and what was wrong). */
static void expect(tileops_status_t got, tileops_status_t want, const char *needle1,
                   const char *needle2, const char *what) {
    const char *msg = tileops_last_error();
    CHECK(got == want && strstr(msg, needle1) != NULL && strstr(msg, needle2) != NULL,
          "%s: got %s '%s', want %s with '%s' and '%s'", what, tileops_status_name(got), msg,
          tileops_status_name(want), needle1, needle2);
}

static void test_bad_arguments(void) {
    float x[8] = {0}, r[8] = {0}, w[8] = {0}, b[8] = {0}, y[8], ro[8];
    for (int oi = 0; oi < NUM_OPS; oi++) {
        const op_info_t *op = &g_ops[oi];
        const void *R = op->residual ? r : NULL;
        void *RO = op->residual ? ro : NULL;
        const int handles[2] = {op->fast, op->ref};
        for (int k = 0; k < 2; k++) {
            const int h = handles[k];
            const char *name = tileops_cpu_kernel_get(h)->name;
            char label[96];
            snprintf(label, sizeof label, "%s bad arguments", name);
            expect(launch(h, x, R, w, NULL, y, RO, 1, 8, 1e-5f, TILEOPS_INT32), TILEOPS_ERR_INVALID_ARGUMENT,
                   name, "dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got 3 (int32)", label);
            expect(launch(h, x, R, w, NULL, y, RO, 1, 8, 1e-5f, 99), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "got 99 (unknown)", label);
            expect(launch(h, x, R, w, NULL, y, RO, 1, 8, 1e-5f, -1), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "got -1", label);
            expect(launch(h, x, R, w, NULL, y, RO, -1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "rows must be >= 0, got -1", label);
            expect(launch(h, x, R, w, NULL, y, RO, 1, 0, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "n must be >= 1, got 0", label);
            expect(launch(h, NULL, R, w, NULL, y, RO, 2, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "x must be non-NULL when rows > 0 (rows = 2)", label);
            expect(launch(h, x, R, w, NULL, NULL, RO, 2, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT, name,
                   "y must be non-NULL", label);
            expect(launch(h, x, R, w, NULL, y, RO, INT64_MAX / 2, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                   name, "must fit in int64", label);
            expect(launch(h, x, R, w, NULL, y, RO, (int64_t)1 << 40, (int64_t)1 << 40, 1e-5f, 1),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "must fit in int64", label);
            /* What C can check of a raw address: its alignment, and that the extent the
             * sizes give does not wrap around the address space. */
            expect(launch(h, (const char *)x + 1, R, w, NULL, y, RO, 1, 8, 1e-5f, 0),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "x (address", label);
            expect(launch(h, x, R, (const char *)w + 2, NULL, y, RO, 1, 8, 1e-5f, 0),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "weight (address", label);
            expect(launch(h, x, R, w, NULL, (void *)(UINTPTR_MAX - 15), RO, 1, 8, 1e-5f, 0),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "y (address", label);
            expect(launch(h, x, R, w, NULL, (void *)(UINTPTR_MAX - 15), RO, 1, 8, 1e-5f, 0),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "32 bytes) runs past the end of the address space", label);
            expect(launch(h, x, R, w, NULL, (char *)y + 2, RO, 1, 8, 1e-5f, 0),
                   TILEOPS_ERR_INVALID_ARGUMENT, name, "is not aligned to its element size", label);
            if (op->residual)
                expect(launch(h, x, R, w, NULL, y, (void *)(UINTPTR_MAX - 15), 1, 8, 1e-5f, 0),
                       TILEOPS_ERR_INVALID_ARGUMENT, name, "residual_out (address", label);
            if (op->bias)
                expect(launch(h, x, R, w, (const void *)(UINTPTR_MAX - 3), y, RO, 1, 8, 1e-5f, 0),
                       TILEOPS_ERR_INVALID_ARGUMENT, name, "bias (address", label);
            /* no rows: nothing is read, so absent pointers are fine */
            CHECK(launch(h, NULL, NULL, NULL, NULL, NULL, NULL, 0, 8, 1e-5f, 0) == TILEOPS_OK,
                  "%s with rows = 0 and no pointers: %s", name, tileops_last_error());
            if (op->residual) {
                expect(launch(h, x, NULL, w, NULL, y, ro, 1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                       name, "residual must be non-NULL when rows > 0", label);
                expect(launch(h, x, r, w, NULL, y, NULL, 1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                       name, "residual_out must be non-NULL when rows > 0", label);
            } else {
                expect(launch(h, x, r, w, NULL, y, NULL, 1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                       name, "residual must be 0 (the op takes none), got a pointer", label);
                expect(launch(h, x, NULL, w, NULL, y, ro, 0, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                       name, "residual_out must be 0", label);
            }
            if (!op->bias)
                expect(launch(h, x, R, w, b, y, RO, 1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT, name,
                       "bias must be 0 (the op takes none)", label);
            if (op->weight_required)
                expect(launch(h, x, R, NULL, NULL, y, RO, 1, 8, 1e-5f, 0), TILEOPS_ERR_INVALID_ARGUMENT,
                       name, "weight must be non-NULL when rows > 0", label);
        }
        /* A scratch that cannot be had: the fast kernel says so, having read nothing. The row
         * asks for ~2^63 bytes, more than any address space holds, so the allocation fails
         * whatever the machine's overcommit policy (a 4 TiB one succeeds on some hosts). */
        uint16_t hx[8] = {0}, hr[8] = {0}, hy[8], hro[8];
        const int64_t huge_n = INT64_MAX / 4;
        char needle[96];
        snprintf(needle, sizeof needle, "could not allocate the fp32 scratch row of n = %lld", (long long)huge_n);
        expect(launch(op->fast, hx, op->residual ? hr : NULL, op->weight_required ? hx : NULL, NULL, hy,
                      op->residual ? hro : NULL, 1, huge_n, 1e-5f, TILEOPS_BFLOAT16),
               TILEOPS_ERR_OUT_OF_MEMORY, op->name, needle, "fast kernel without its scratch");
    }
    /* The driver's own checks, below the table entries. */
    expect(tileops_norm_rows(NULL), TILEOPS_ERR_INVALID_ARGUMENT, "norm_rows", "args must be non-NULL",
           "norm_rows(NULL)");
    tileops_norm_rows_args_t a = {.kernel = "probe", .x = x, .residual = r, .y = y, .rows = 1, .n = 8,
                                  .eps = 1e-5f};
    expect(tileops_norm_rows(&a), TILEOPS_ERR_INVALID_ARGUMENT, "probe",
           "residual and residual_out must be both NULL or both non-NULL, got residual non-NULL and "
           "residual_out NULL", "driver residual without residual_out");
    expect(tileops_norm_rows_reference(&a), TILEOPS_ERR_INVALID_ARGUMENT, "probe",
           "both NULL or both non-NULL", "reference residual without residual_out");
}

static void test_table(void) {
    for (int oi = 0; oi < NUM_OPS; oi++) {
        char ref_name[64];
        snprintf(ref_name, sizeof ref_name, "%s_reference", g_ops[oi].name);
        tileops_status_t a = tileops_cpu_kernel_lookup(g_ops[oi].name, &g_ops[oi].fast);
        tileops_status_t b = tileops_cpu_kernel_lookup(ref_name, &g_ops[oi].ref);
        CHECK(a == TILEOPS_OK && b == TILEOPS_OK, "lookup %s / %s: %s", g_ops[oi].name, ref_name,
              tileops_last_error());
        if (a != TILEOPS_OK || b != TILEOPS_OK)
            exit(check_summary());
        CHECK(strcmp(tileops_cpu_kernel_get(g_ops[oi].fast)->arg_format, "ppppppqqfi") == 0 &&
                  strcmp(tileops_cpu_kernel_get(g_ops[oi].ref)->arg_format, "ppppppqqfi") == 0,
              "%s: arg format %s", g_ops[oi].name, tileops_cpu_kernel_get(g_ops[oi].fast)->arg_format);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* whatever a crash cuts short, what came before stays */
    const int detected = tileops_cpu_simd_detect();
    const int default_threads = tileops_cpu_num_threads();
    printf("SIMD: %s detected; levels 0..%d compared (AVX-512 %s)\n", tileops_cpu_simd_level(), detected,
           detected >= TILEOPS_SIMD_AVX512 ? "included" : "not on this CPU: not run");
    test_table();
    for (int oi = 0; oi < NUM_OPS; oi++)
        for (int dt = 0; dt < NUM_DTYPES; dt++)
            for (int has_w = g_ops[oi].weight_required; has_w <= 1; has_w++)
                for (int has_b = 0; has_b <= g_ops[oi].bias; has_b++)
                    for (int li = 0; li < COUNT(k_lengths); li++)
                        for (int ri = 0; ri < COUNT(k_rows); ri++)
                            run_case(oi, dt, has_w, has_b, k_lengths[li], k_rows[ri], detected);
    tileops_cpu_set_num_threads(default_threads);
    test_bad_arguments();
    printf("fast vs reference (y; residual_out is bit-exact): worst |diff| / bound, bit-identical share\n");
    for (int oi = 0; oi < NUM_OPS; oi++)
        for (int dt = 0; dt < NUM_DTYPES; dt++)
            printf("  %-22s %-9s %.3f  %6.2f%%\n", g_ops[oi].name, tileops_dtype_name(dt), g_stats[oi][dt].worst,
                   100.0 * (double)g_stats[oi][dt].exact / (double)(g_stats[oi][dt].total ? g_stats[oi][dt].total : 1));
    return check_summary();
}

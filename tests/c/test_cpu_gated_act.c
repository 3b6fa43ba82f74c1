/* test_cpu_gated_act.c: checks the CPU kernels of the activation family's gated ops
 * (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul; csrc/ops/activation/gated_act.c),
 * reached through the kernel table as the binding reaches them.
 *
 * 1. Accuracy of the fp32 functions: a dense sweep of a over [-16, 16] (b = 1, so y is the
 *    activation itself) against the double reference, the largest error in fp32 ulps of
 *    the reference printed and bounded, at every SIMD level this CPU has.
 * 2. Every op x dtype x half width x row count, with strided rows: the fast kernel against
 *    the reference, the same bits at every SIMD level and at 1 and 4 threads, and the
 *    elements between strided rows untouched.
 * 3. Special values (0, -0, +-inf, NaN, large |a|): the same result as the reference.
 * 4. The reference's tanh-free form of gelu_tanh against 0.5 a (1 + tanh(u)) where that
 *    form is well-conditioned; bad arguments.
 * Inputs come from a fixed xorshift generator, so a failure reproduces. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"
#include "ops/activation/gated_act.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "tileops/status.h"

static const char *const k_ops[3] = {"silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul"};
static int g_fast[3], g_ref[3];
static const int64_t k_halves[] = {1, 2, 7, 15, 16, 17, 63, 64, 65, 1001, 4096, 4097, 9000};
static const int64_t k_rows[] = {0, 1, 3, 5};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double urand(double lo, double hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

/* The spacing of the dtype at |v| (subnormal spacing below the normals). */
static double ulp_at(double v, int dt) {
    const int mant = dt == F32 ? 23 : dt == F16 ? 10 : 7;
    const int emin = dt == F16 ? -14 : -126;
    int e;
    (void)frexp(fabs(v), &e);
    e -= 1;
    if (v == 0.0 || e < emin)
        e = emin;
    return ldexp(1.0, e - mant);
}

static void *xcalloc(size_t bytes) {
    void *p = calloc(bytes > 0 ? bytes : 1, 1);
    if (p == NULL) {
        printf("FAIL: out of memory for %zu bytes in the test itself\n", bytes);
        exit(1);
    }
    return p;
}

static tileops_status_t launch(int handle, const void *x, void *y, int64_t rows, int64_t n, int64_t xs,
                               int64_t ys, int dt) {
    tileops_arg_t a[7];
    a[0].p = (uintptr_t)x;
    a[1].p = (uintptr_t)y;
    a[2].q = rows;
    a[3].q = n;
    a[4].q = xs;
    a[5].q = ys;
    a[6].i = dt;
    return tileops_cpu_kernel_launch(handle, a, 7);
}

static int same_bits(const void *p, const void *q, size_t bytes) { return memcmp(p, q, bytes) == 0; }

/* A result equals the reference's: the same value, or both NaN. */
static int same_value(double f, double r) { return (f != f && r != r) || f == r; }

/* ---- 1. accuracy of the fp32 functions --------------------------------------------------- */

/* The bound on the fp32 error, in fp32 ulps of the reference: exp (~1 ulp), 1 + e, the
 * division (silu, gelu_tanh, whose v is formed in float-float); gelu: exp, the erfc
 * polynomial (< 2 ulp), t, the products. */
static double f32_bound(int op, double a) {
    (void)a;
    return op == 1 ? 6.0 : 4.0;
}

/* |fast - reference| within the bound. Below UNDERFLOW_EDGE a result's intermediates (exp of
 * the tail) may be subnormal and carry absolute, not relative, error: there the check is
 * absolute, 64 subnormal spacings times max(1, |a|) (the factor a multiplies exp's error
 * by). Away from it, f32_bound ulps of the reference (+ extra for a product with b). */
#define UNDERFLOW_EDGE 0x1p-120
static int f32_close(int op, double a, double f, double ref, double extra) {
    const double d = fabs(f - ref);
    if (fabs(ref) < UNDERFLOW_EDGE)
        return d <= 64.0 * 0x1p-149 * (fabs(a) > 1.0 ? fabs(a) : 1.0) + UNDERFLOW_EDGE * 0x1p-23 * f32_bound(op, a);
    return d <= (f32_bound(op, a) + extra) * ulp_at(ref, F32);
}

#define SWEEP 200001 /* a = -16 .. 16 in steps of 1.6e-4, plus random points */

static void sweep(int level) {
    const int64_t n = SWEEP;
    float *x = xcalloc((size_t)(2 * n) * sizeof(float));
    float *yf = xcalloc((size_t)n * sizeof(float)), *yr = xcalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        x[i] = i % 2 ? (float)(-16.0 + 32.0 * (double)i / (double)(n - 1)) : (float)urand(-16.0, 16.0);
        x[n + i] = 1.0f;
    }
    for (int op = 0; op < 3; op++) {
        CHECK(launch(g_fast[op], x, yf, 1, n, 2 * n, n, F32) == TILEOPS_OK, "%s: fast sweep", k_ops[op]);
        CHECK(launch(g_ref[op], x, yr, 1, n, 2 * n, n, F32) == TILEOPS_OK, "%s: reference sweep", k_ops[op]);
        double worst = 0.0, worst_core = 0.0, at = 0.0;
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            const double a = x[i], err = fabs((double)yf[i] - (double)yr[i]) / ulp_at(yr[i], F32);
            const double bound = f32_bound(op, a);
            if (!f32_close(op, a, yf[i], yr[i], 0.0) && bad++ < 5)
                printf("FAIL %s (level %d): a = %.9g: fast %.9g, reference %.9g (%.2f ulp > %.2f)\n", k_ops[op],
                       level, a, yf[i], yr[i], err, bound);
            if (fabs((double)yr[i]) < UNDERFLOW_EDGE)
                continue;
            if (err > worst) {
                worst = err;
                at = a;
            }
            if (fabs(a) <= 4.0 && err > worst_core)
                worst_core = err;
        }
        CHECK(bad == 0, "%s: %d sweep points over their bound", k_ops[op], bad);
        if (level == tileops_cpu_simd_detect())
            printf("  %-18s fp32 max error %.2f ulp over |a| <= 4, %.2f ulp over |a| <= 16 (at a = %.6g; "
                   "results above 2^-120)\n",
                   k_ops[op], worst_core, worst, at);
    }
    free(x);
    free(yf);
    free(yr);
}

/* ---- 2. shapes, dtypes, strides, levels, threads ---------------------------------------- */

static void shapes(void) {
    const int top = tileops_cpu_simd_detect();
    for (int op = 0; op < 3; op++)
        for (int dt = 0; dt < 3; dt++)
            for (int hi = 0; hi < COUNT(k_halves); hi++)
                for (int ri = 0; ri < COUNT(k_rows); ri++) {
                    const int64_t n = k_halves[hi], rows = k_rows[ri], es = dt == F32 ? 4 : 2;
                    const int64_t xs = 2 * n + (ri % 2 ? 3 : 0), ys = n + (ri % 2 ? 5 : 0);
                    const size_t xb = (size_t)((rows > 0 ? rows : 1) * xs * es), yb = (size_t)((rows > 0 ? rows : 1) * ys * es);
                    void *x = xcalloc(xb), *y = xcalloc(yb), *yr = xcalloc(yb), *y2 = xcalloc(yb);
                    for (int64_t r = 0; r < rows; r++)
                        for (int64_t i = 0; i < 2 * n; i++)
                            vec16_store1(x, r * xs + i, dt, (float)urand(-6.0, 6.0));
                    memset(y, 0x5a, yb);
                    memset(yr, 0x5a, yb);
                    CHECK(launch(g_fast[op], x, y, rows, n, xs, ys, dt) == TILEOPS_OK, "%s fast", k_ops[op]);
                    CHECK(launch(g_ref[op], x, yr, rows, n, xs, ys, dt) == TILEOPS_OK, "%s ref", k_ops[op]);
                    int bad = 0;
                    for (int64_t r = 0; r < rows; r++)
                        for (int64_t i = 0; i < ys; i++) {
                            const int64_t k = r * ys + i;
                            if (i >= n) { /* between rows: untouched */
                                bad += ((unsigned char *)y)[k * es] != 0x5a;
                                continue;
                            }
                            const double f = vec16_load1(y, k, dt), ref = vec16_load1(yr, k, dt);
                            /* 16-bit: the fp32 value is within a few fp32 ulps of the exact
                             * one, so it rounds to the reference's value or (at a tie's edge)
                             * its neighbour. fp32: f32_bound, + 1 for the product with b. */
                            const double g = vec16_load1(x, r * xs + i, dt);
                            bad += dt == F32 ? !f32_close(op, g, f, ref, 1.0) : !(fabs(f - ref) <= ulp_at(ref, dt));
                        }
                    CHECK(bad == 0, "%s dtype %d n %lld rows %lld: %d elements off", k_ops[op], dt, (long long)n,
                          (long long)rows, bad);
                    /* every level and thread count: the same bits */
                    for (int level = 0; level <= top; level++) {
                        if (tileops_cpu_simd_override(level) != TILEOPS_OK)
                            continue;
                        memset(y2, 0x5a, yb);
                        (void)launch(g_fast[op], x, y2, rows, n, xs, ys, dt);
                        CHECK(same_bits(y, y2, yb), "%s dtype %d n %lld rows %lld: level %d differs", k_ops[op],
                              dt, (long long)n, (long long)rows, level);
                    }
                    tileops_cpu_simd_override(-1);
                    tileops_cpu_set_num_threads(1);
                    memset(y2, 0x5a, yb);
                    (void)launch(g_fast[op], x, y2, rows, n, xs, ys, dt);
                    CHECK(same_bits(y, y2, yb), "%s dtype %d n %lld rows %lld: 1 thread differs", k_ops[op], dt,
                          (long long)n, (long long)rows);
                    tileops_cpu_set_num_threads(4);
                    free(x);
                    free(y);
                    free(yr);
                    free(y2);
                }
}

/* ---- 3. special values ------------------------------------------------------------------- */

static void specials(void) {
    static const float a[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e30f, 3e38f, -3e38f,
                              100.0f, -100.0f, 88.0f, -88.0f, 89.5f, -89.5f, 20.0f, -20.0f, 14.5f, -14.5f,
                              1e-30f, -1e-30f, 1e-40f, -1e-40f, 0.5f, -0.5f, 3.0f, -3.0f, 10.0f};
    static const float b[] = {1.0f, 2.0f, -0.0f, INFINITY, NAN};
    enum { NA = sizeof a / sizeof a[0], NB = sizeof b / sizeof b[0], N = NA * NB };
    float x[2 * N], y[N], yr[N];
    for (int i = 0; i < NA; i++)
        for (int j = 0; j < NB; j++) {
            x[i * NB + j] = a[i];
            x[N + i * NB + j] = b[j];
        }
    const int top = tileops_cpu_simd_detect();
    for (int op = 0; op < 3; op++) {
        CHECK(launch(g_ref[op], x, yr, 1, N, 2 * N, N, F32) == TILEOPS_OK, "%s ref specials", k_ops[op]);
        for (int level = 0; level <= top; level++) {
            if (tileops_cpu_simd_override(level) != TILEOPS_OK)
                continue;
            CHECK(launch(g_fast[op], x, y, 1, N, 2 * N, N, F32) == TILEOPS_OK, "%s fast specials", k_ops[op]);
            for (int k = 0; k < N; k++) {
                /* equal or within the sweep's bound; where the activation is below fp32's
                 * range (a <= -14) times b = inf, the fast kernel's 0 * inf is NaN while the
                 * double reference's tiny value gives inf: both are accepted there. */
                const int ok = same_value(y[k], yr[k]) || f32_close(op, x[k], y[k], yr[k], 1.0) ||
                               (isinf(x[N + k]) && x[k] <= -14.0f && isnan(y[k]));
                CHECK(ok, "%s level %d: a = %g, b = %g: fast %g, reference %g", k_ops[op], level, x[k], x[N + k],
                      y[k], yr[k]);
            }
        }
        tileops_cpu_simd_override(-1);
    }
    /* the limits, spelled out: act(+inf) = +inf, act(0) = 0, act(NaN) = NaN, and act(-inf)
     * is NaN (-inf * 0, as the formulas and torch give it); a large negative a gives -0 */
    for (int op = 0; op < 3; op++) {
        float xi[8] = {INFINITY, 0.0f, NAN, -INFINITY, 1.0f, 1.0f, 1.0f, 1.0f}, yo[4];
        CHECK(launch(g_fast[op], xi, yo, 1, 4, 8, 4, F32) == TILEOPS_OK, "%s limits", k_ops[op]);
        CHECK(yo[0] == INFINITY && yo[1] == 0.0f && isnan(yo[2]) && isnan(yo[3]),
              "%s limits: got %g %g %g %g", k_ops[op], yo[0], yo[1], yo[2], yo[3]);
        float xl[2] = {-1000.0f, 1.0f}, yl[1];
        (void)launch(g_fast[op], xl, yl, 1, 1, 2, 1, F32);
        CHECK(yl[0] == 0.0f && signbit(yl[0]), "%s(-1000) = %g, expected -0", k_ops[op], yl[0]);
    }
}

/* ---- 3b. exp's whole range: every level the same bits ------------------------------------ */

/* a dense walk of a over [-120, 100] (2^18 + 1 points, so every exponent of exp(a) and of
 * exp(-a^2 / 2) is met, results below fp32's normal range included: each level scales by 2^k
 * its own way and must round once, as the others do) */
static void exp_range(void) {
    const int64_t n = ((int64_t)1 << 18) + 1;
    float *x = xcalloc((size_t)(2 * n) * sizeof(float)), *y = xcalloc((size_t)n * sizeof(float));
    float *y0 = xcalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        x[i] = (float)(-120.0 + 220.0 * (double)i / (double)(n - 1));
        x[n + i] = 1.0f;
    }
    const int top = tileops_cpu_simd_detect();
    for (int op = 0; op < 3; op++) {
        CHECK(tileops_cpu_simd_override(0) == TILEOPS_OK, "scalar level");
        CHECK(launch(g_fast[op], x, y0, 1, n, 2 * n, n, F32) == TILEOPS_OK, "%s exp range", k_ops[op]);
        int subnormal = 0;
        for (int64_t i = 0; i < n; i++)
            subnormal += y0[i] != 0.0f && fabsf(y0[i]) < FLT_MIN;
        CHECK(subnormal > 100, "%s exp range: %d results below the normal range, expected many", k_ops[op],
              subnormal);
        for (int level = 1; level <= top; level++) {
            if (tileops_cpu_simd_override(level) != TILEOPS_OK)
                continue;
            CHECK(launch(g_fast[op], x, y, 1, n, 2 * n, n, F32) == TILEOPS_OK, "%s exp range", k_ops[op]);
            int64_t first = -1;
            for (int64_t i = 0; i < n && first < 0; i++)
                if (!same_bits(&y[i], &y0[i], sizeof(float)))
                    first = i;
            CHECK(first < 0, "%s level %d: a = %.9g gives %.9g, the scalar level %.9g", k_ops[op], level,
                  first < 0 ? 0.0 : (double)x[first], first < 0 ? 0.0 : (double)y[first],
                  first < 0 ? 0.0 : (double)y0[first]);
        }
        tileops_cpu_simd_override(-1);
    }
    free(x);
    free(y);
    free(y0);
}

/* ---- 4. the tanh form; bad arguments ------------------------------------------------------ */

static void tanh_form(void) {
    const int64_t n = 2001;
    double *x = xcalloc((size_t)(2 * n) * sizeof(double));
    float *xf = xcalloc((size_t)(2 * n) * sizeof(float)), *yr = xcalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        xf[i] = (float)(-3.0 + 6.0 * (double)i / (double)(n - 1));
        xf[n + i] = 1.0f;
    }
    (void)launch(g_ref[2], xf, yr, 1, n, 2 * n, n, F32);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const double a = xf[i], u = 0.7978845608028654 * (a + 0.044715 * a * a * a);
        const double lit = 0.5 * a * (1.0 + tanh(u));
        bad += !(fabs((double)yr[i] - lit) <= ulp_at(lit, F32) + 1e-12);
    }
    CHECK(bad == 0, "gelu_tanh reference: %d points off 0.5 a (1 + tanh(u))", bad);
    free(x);
    free(xf);
    free(yr);
}

static void bad_arguments(void) {
    float x[8] = {0}, y[4];
    const int h = g_fast[0], r = g_ref[0];
    for (int k = 0; k < 2; k++) {
        const int hd = k ? r : h;
        CHECK(launch(hd, x, y, 1, 0, 0, 0, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "n = 0");
        CHECK(launch(hd, x, y, -1, 2, 4, 2, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "rows < 0");
        CHECK(launch(hd, x, y, 2, 2, 3, 2, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "x_stride < 2n");
        CHECK(launch(hd, x, y, 2, 2, 4, 1, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "y_stride < n");
        CHECK(launch(hd, NULL, y, 1, 2, 4, 2, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "x NULL");
        CHECK(launch(hd, x, NULL, 1, 2, 4, 2, F32) == TILEOPS_ERR_INVALID_ARGUMENT, "y NULL");
        CHECK(launch(hd, NULL, NULL, 0, 2, 4, 2, F32) == TILEOPS_OK, "rows = 0 with NULLs");
        CHECK(launch(hd, x, y, 1, 2, 4, 2, 7) == TILEOPS_ERR_INVALID_ARGUMENT, "dtype 7");
        CHECK(launch(hd, x, y, (int64_t)1 << 40, (int64_t)1 << 20, (int64_t)1 << 21, (int64_t)1 << 20, F32) ==
                  TILEOPS_ERR_INVALID_ARGUMENT,
              "extent overflow");
        CHECK(launch(hd, x, y, 1, INT64_MAX / 2, INT64_MAX, INT64_MAX / 2, F32) == TILEOPS_ERR_INVALID_ARGUMENT,
              "n overflow");
    }
    CHECK(strstr(tileops_last_error(), "silu_and_mul") != NULL, "message names the kernel: %s",
          tileops_last_error());
}

/* ---- 6. cast_before_mul ("<op>_cast"): act(a) rounded to the dtype, then the product ------ */

/* Against its reference (act in double rounded once to the dtype, times b rounded once): the
 * fast act is within a few fp32 ulps, so its rounding lands on the reference's or (at a tie's
 * edge) its neighbour; each way the product stays within that ulp times |b| plus one ulp of
 * y. And the two entries differ from the plain ones where the intermediate rounding shows
 * (the plain result rounds once), and every SIMD level gives the same bits. */
static void cast_entries(void) {
    const int top = tileops_cpu_simd_detect();
    for (int op = 0; op < 3; op++) {
        char name[64], ref_name[80];
        snprintf(name, sizeof name, "%s_cast", k_ops[op]);
        snprintf(ref_name, sizeof ref_name, "%s_cast_reference", k_ops[op]);
        int hf, hr;
        CHECK(tileops_cpu_kernel_lookup(name, &hf) == TILEOPS_OK && tileops_cpu_kernel_lookup(ref_name, &hr) == TILEOPS_OK,
              "lookup %s", name);
        for (int dt = 0; dt < 3; dt++) {
            const int64_t n = 1001, rows = 3, es = dt == F32 ? 4 : 2;
            const size_t xb = (size_t)(rows * 2 * n * es), yb = (size_t)(rows * n * es);
            void *x = xcalloc(xb), *y = xcalloc(yb), *yr = xcalloc(yb), *yp = xcalloc(yb), *y2 = xcalloc(yb);
            for (int64_t k = 0; k < rows * 2 * n; k++)
                vec16_store1(x, k, dt, (float)urand(-6.0, 6.0));
            CHECK(launch(hf, x, y, rows, n, 2 * n, n, dt) == TILEOPS_OK, "%s: %s", name, tileops_last_error());
            CHECK(launch(hr, x, yr, rows, n, 2 * n, n, dt) == TILEOPS_OK, "%s_reference", name);
            CHECK(launch(g_fast[op], x, yp, rows, n, 2 * n, n, dt) == TILEOPS_OK, "%s", k_ops[op]);
            int bad = 0, differ = 0;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t i = 0; i < n; i++) {
                    const int64_t k = r * n + i;
                    const double b = vec16_load1(x, r * 2 * n + n + i, dt);
                    const double f = vec16_load1(y, k, dt), ref = vec16_load1(yr, k, dt);
                    const double act = ref / (b != 0.0 ? b : 1.0);
                    const double bound = dt == F32 ? 8.0 * ulp_at(ref, F32) + 1e-30
                                                   : ulp_at(act, dt) * fabs(b) + ulp_at(ref, dt);
                    bad += !(fabs(f - ref) <= bound);
                    differ += memcmp((char *)y + k * es, (char *)yp + k * es, (size_t)es) != 0;
                }
            CHECK(bad == 0, "%s dtype %d: %d elements off the reference", name, dt, bad);
            if (dt == F32)
                CHECK(differ == 0 && same_bits(y, yp, yb), "%s float32: the cast is a no-op, got %d differences",
                      name, differ);
            else
                CHECK(differ > 0, "%s dtype %d: no element shows the intermediate rounding", name, dt);
            for (int level = 0; level <= top; level++) {
                if (tileops_cpu_simd_override(level) != TILEOPS_OK)
                    continue;
                memset(y2, 0x5a, yb);
                (void)launch(hf, x, y2, rows, n, 2 * n, n, dt);
                CHECK(same_bits(y, y2, yb), "%s dtype %d: level %d differs", name, dt, level);
            }
            tileops_cpu_simd_override(-1);
            free(x), free(y), free(yr), free(yp), free(y2);
        }
    }
}

int main(void) {
    for (int op = 0; op < 3; op++) {
        char name[64];
        snprintf(name, sizeof name, "%s_reference", k_ops[op]);
        CHECK(tileops_cpu_kernel_lookup(k_ops[op], &g_fast[op]) == TILEOPS_OK, "lookup %s", k_ops[op]);
        CHECK(tileops_cpu_kernel_lookup(name, &g_ref[op]) == TILEOPS_OK, "lookup %s", name);
    }
    printf("gated activations, SIMD level %s\n", tileops_cpu_simd_level());
    tileops_cpu_set_num_threads(4);
    for (int level = 0; level <= tileops_cpu_simd_detect(); level++) {
        if (tileops_cpu_simd_override(level) == TILEOPS_OK)
            sweep(level);
    }
    tileops_cpu_simd_override(-1);
    shapes();
    specials();
    exp_range();
    tanh_form();
    bad_arguments();
    cast_entries();
    return check_summary();
}

/* merge_attn_states.c: the CPU kernels "merge_attn_states" (fast: AVX-512, AVX2 or scalar
 * at run time, rows spread over the core's pool) and "merge_attn_states_reference" (plain
 * double-precision loops, one thread) of MergeAttnStatesFwdOp.
 *
 * For each row r (a (token, head) pair) with la = lse_a[r], lb = lse_b[r] (natural-log
 * logsumexp values, float32) and the rows a = o_a[r], b = o_b[r] of D elements:
 *   either lse NaN                 o[r] = NaN, lse[r] = NaN
 *   (+inf counts as -inf: an empty partial, as FlashAttention marks a row with no key)
 *   both -inf                      o[r] = 0, lse[r] = -inf
 *   la = -inf (a empty)            o[r] = b, lse[r] = lb   (a's values do not matter)
 *   lb = -inf                      o[r] = a, lse[r] = la
 *   else, m = max(la, lb), wa = e^(la - m), wb = e^(lb - m), s = wa + wb:
 *       o[r] = (wa / s) a + (wb / s) b,   lse[r] = m + ln s
 * The fast kernel takes the weights in double, rounds pa = wa / s and pb = wb / s to
 * float and computes fma(pa, a, pb b) in fp32 (the same bits at every instruction set),
 * rounded once to the dtype; the reference is double throughout, rounded once.
 *
 * Arguments ("ppppppqqi"): o_a, lse_a, o_b, lse_b, o, lse; rows, D (>= 0); dtype (float32,
 * float16, bfloat16: o_a's, o_b's and o's; the lse are float32). All contiguous. o may be
 * o_a or o_b itself (in place; lse likewise lse_a or lse_b); no other overlap. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define MERGE_ARG_FORMAT "ppppppqqi"

/* A worker takes at least this many elements of o: fewer cost more to wake it. */
#define MERGE_MIN_ELEMS_PER_THREAD 32768

typedef struct merge_args {
    const char *kernel;
    const void *o_a, *o_b;
    const float *lse_a, *lse_b;
    void *o;
    float *lse;
    int64_t rows, D;
    int dtype;
} merge_args_t;

/* o = pa a + pb b over a row of D elements (a, b, o may be one another) */
typedef void (*merge_row_fn)(const void *a, const void *b, void *o, int64_t D, float pa, float pb, int dt);

#define VEC16_SELF "ops/attention/merge_attn_states.c"
#include "cpu/dispatch_levels.h"

static merge_row_fn row_fn_for(int level) {
    return VEC16_AT_LEVEL(level, merge_row);
}

typedef struct merge_job {
    const merge_args_t *a;
    merge_row_fn row; /* NULL: the reference */
} merge_job_t;

/* What a row is, from its two lse values: the cases of the file comment. */
enum { ROW_NAN, ROW_ZERO, ROW_B, ROW_A, ROW_MIX };

static int row_case(double la, double lb) {
    if (isnan(la) || isnan(lb))
        return ROW_NAN;
    const int ea = isinf(la), eb = isinf(lb);
    return ea && eb ? ROW_ZERO : ea ? ROW_B : eb ? ROW_A : ROW_MIX;
}

/* the row of D elements at o: all `v` (NaN or 0) */
static void fill_row(void *o, int64_t D, int dt, float v) {
    for (int64_t i = 0; i < D; i++)
        vec16_store1(o, i, dt, v);
}

static void merge_range(void *ctx, int64_t r0, int64_t r1) {
    const merge_job_t *j = ctx;
    const merge_args_t *a = j->a;
    const int64_t D = a->D, row = D * (int64_t)tileops_dtype_size(a->dtype);
    for (int64_t r = r0; r < r1; r++) {
        /* D = 0: no element of o (the pointers may be NULL), each row's lse still merges */
        const char *ra = D ? (const char *)a->o_a + r * row : NULL, *rb = D ? (const char *)a->o_b + r * row : NULL;
        char *ro = D ? (char *)a->o + r * row : NULL;
        const double la = a->lse_a[r], lb = a->lse_b[r];
        switch (row_case(la, lb)) {
        case ROW_NAN:
            fill_row(ro, D, a->dtype, NAN);
            a->lse[r] = NAN;
            continue;
        case ROW_ZERO:
            fill_row(ro, D, a->dtype, 0.0f);
            a->lse[r] = -INFINITY;
            continue;
        case ROW_B:
            if (D)
                memmove(ro, rb, (size_t)row);
            a->lse[r] = (float)lb;
            continue;
        case ROW_A:
            if (D)
                memmove(ro, ra, (size_t)row);
            a->lse[r] = (float)la;
            continue;
        default:
            break;
        }
        const double m = la > lb ? la : lb, wa = exp(la - m), wb = exp(lb - m), s = wa + wb;
        a->lse[r] = (float)(m + log(s));
        if (D == 0)
            continue;
        if (j->row != NULL) {
            j->row(ra, rb, ro, D, (float)(wa / s), (float)(wb / s), a->dtype);
            continue;
        }
        for (int64_t i = 0; i < D; i++) {
            const double x = vec16_load1(ra, i, a->dtype), y = vec16_load1(rb, i, a->dtype);
            vec16_store_rounded(ro, i, a->dtype, (wa * x + wb * y) / s);
        }
    }
}

static tileops_status_t check_args(const merge_args_t *a) {
    const char *k = a->kernel;
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, a->dtype,
                            tileops_dtype_name(a->dtype));
    if (a->rows < 0 || a->D < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: rows >= 0 and D >= 0, got %lld, %lld", k,
                            (long long)a->rows, (long long)a->D);
    if (a->D > INT64_MAX / 4 || (a->D > 0 && a->rows > INT64_MAX / 4 / a->D))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the rows' bytes must fit int64", k);
    if (a->rows == 0)
        return TILEOPS_OK;
    /* o_a, o_b and o hold no element where D = 0: NULL there (an empty tensor's pointer) */
    const int o_null = a->D > 0 && (a->o_a == NULL || a->o_b == NULL || a->o == NULL);
    const char *null_arg = !o_null ? (a->lse_a == NULL ? "lse_a" : a->lse_b == NULL ? "lse_b"
                                      : a->lse == NULL ? "lse" : NULL)
                           : a->o_a == NULL ? "o_a" : a->o_b == NULL ? "o_b" : "o";
    if (null_arg != NULL)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, null_arg, "%s: %s must be non-NULL when rows > 0%s, "
                                "got NULL", k, null_arg, o_null ? " and D > 0" : "");
    return TILEOPS_OK;
}

static tileops_status_t merge_call(const tileops_arg_t *g, int reference) {
    merge_args_t a = {
        .kernel = reference ? "merge_attn_states_reference" : "merge_attn_states",
        .o_a = (const void *)g[0].p, .lse_a = (const float *)g[1].p, .o_b = (const void *)g[2].p,
        .lse_b = (const float *)g[3].p, .o = (void *)g[4].p, .lse = (float *)g[5].p,
        .rows = g[6].q, .D = g[7].q, .dtype = g[8].i,
    };
    tileops_status_t st = check_args(&a);
    if (st != TILEOPS_OK || a.rows == 0)
        return st;
    merge_job_t job = {.a = &a, .row = reference ? NULL : row_fn_for(tileops_cpu_simd_active())};
    if (reference) {
        merge_range(&job, 0, a.rows);
        return TILEOPS_OK;
    }
    const int64_t per_row = a.D > 0 ? a.D : 1;
    tileops_cpu_parallel_for(a.rows, (MERGE_MIN_ELEMS_PER_THREAD + per_row - 1) / per_row, merge_range, &job);
    return TILEOPS_OK;
}

static tileops_status_t merge_fast(const tileops_arg_t *g) { return merge_call(g, 0); }
static tileops_status_t merge_ref(const tileops_arg_t *g) { return merge_call(g, 1); }

static const tileops_cpu_kernel_t merge_kernel = {"merge_attn_states", MERGE_ARG_FORMAT, merge_fast};
static const tileops_cpu_kernel_t merge_reference_kernel = {"merge_attn_states_reference", MERGE_ARG_FORMAT,
                                                            merge_ref};
TILEOPS_CPU_KERNEL(merge_kernel)
TILEOPS_CPU_KERNEL(merge_reference_kernel)

#else /* ---- VEC16_ISA: the row of one instruction set (this file includes itself) ---- */

#include "cpu/vec16.h"

/* o = fma(pa, a, pb * b), 16 elements at a time */
static AI TGT void ISA(merge_impl)(const void *a, const void *b, void *o, int64_t D, float pa, float pb, int dt) {
    const VF va = ISA(vset1)(pa), vb = ISA(vset1)(pb);
    int64_t i = 0;
    for (; i + 16 <= D; i += 16)
        (void)ISA(vstore_n)(o, i, dt, ISA(vfma)(va, ISA(vload)(a, i, dt), ISA(vmul)(vb, ISA(vload)(b, i, dt))), 16);
    if (i < D) {
        const int m = (int)(D - i);
        (void)ISA(vstore_n)(o, i, dt, ISA(vfma)(va, ISA(vload_n)(a, i, dt, m), ISA(vmul)(vb, ISA(vload_n)(b, i, dt, m))),
                            m);
    }
}

#define MERGE_ROW(DT, DTN)                                                                           \
    static TGT void ISA(merge_row_##DTN)(const void *a, const void *b, void *o, int64_t D, float pa, float pb, \
                                         int dt) {                                                   \
        (void)dt;                                                                                    \
        ISA(merge_impl)(a, b, o, D, pa, pb, DT);                                                     \
    }
MERGE_ROW(F32, f32)
MERGE_ROW(F16, f16)
MERGE_ROW(BF16, bf16)

/* the dtype's copy (the loop then carries no dtype test) */
static TGT void ISA(merge_row)(const void *a, const void *b, void *o, int64_t D, float pa, float pb, int dt) {
    (dt == F16 ? ISA(merge_row_f16) : dt == BF16 ? ISA(merge_row_bf16) : ISA(merge_row_f32))(a, b, o, D, pa, pb, dt);
}

#undef MERGE_ROW
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

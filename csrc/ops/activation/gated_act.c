/* gated_act.c: the CPU driver of the activation family's gated ops (gated_act.h) - the
 * double-precision reference first, then the fast kernel (AVX-512, AVX2 or scalar, chosen
 * at run time), one tested against the other in tests/c/test_cpu_gated_act.c.
 *
 * The fast kernel's fp32 functions, written once over cpu/vec16.h's 16-lane vector and
 * compiled once per instruction set (this file includes itself), so every level gives the
 * same bits (exp(x) is vec16.h's vexp, < 1.1 ulp):
 *   silu       a / (1 + exp(-a)), formed as a e / (1 + e), e = exp(a), for a < 0
 *   gelu_tanh  a / (1 + exp(-v)) (the same), v = a (c1 + c2 a^2) = 2u: the same function as
 *            0.5 a (1 + tanh(u)) (1 + tanh(u) = 2 / (1 + exp(-2u))) without its cancellation
 *            for a < 0, so no tanh is needed. v is formed in float-float (vh + vl) and exp
 *            takes the correction, else v's rounding (~2 ulp) times |v| would reach the
 *            result in the negative tail.
 *   gelu       a Phi(a), Phi(a) = 0.5 erfc(|z|) for a < 0 and 1 - 0.5 erfc(|z|) for a >= 0,
 *            z = a / sqrt 2: no cancellation on either side. erfc(z) = exp(-z^2) R(t),
 *            t = 2 / (2 + z), R a degree-10 polynomial fitted to erfc(z) exp(z^2) over
 *            z in [0, 10] (relative error < 2 ulp as evaluated); z^2 = a^2 / 2 is split
 *            into hi + lo by an FMA and exp(-hi - lo) = exp(-hi) (1 - lo), so the rounding
 *            of z^2 costs nothing in the tail. |a| is clamped to 20 (erfc(14) is 0 in fp32).
 * Measured against the double reference (tests/c/test_cpu_gated_act.c, a in [-16, 16],
 * results above 2^-120, on AVX2 and scalar here): silu <= 3 fp32 ulps, gelu <= 5,
 * gelu_tanh <= 3.
 *
 * Work is spread over the pool in units of one row's chunk of GATED_CHUNK outputs, so one
 * long row (a decode step) uses every thread too. (This relies on IEEE evaluation in the
 * written order: never build with -ffast-math.) */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>

#include "ops/activation/gated_act.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "cpu/args.h"
#include "cpu/memory.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

/* Outputs per unit of work (a multiple of 64), and the fewest a thread gets. The gated
 * functions cost 0.4-1.2 ns an output a thread (AVX-512 SiLU to AVX2 GeLU), so a
 * thread's 4096 outputs repay its hand-off many times; small units split one row (a
 * decode step) evenly (measured, one row of 14336 / 18944 / 28672 outputs on this 2-core
 * VM: units of 4096 and at least 16384 a thread left it on one thread, 1.5-1.7x slower). */
#define GATED_CHUNK 1024
#define GATED_MIN_ELEMS 4096

/* An output at least this big that is not yet in memory gets huge pages. */
#define GATED_HUGE_MIN_BYTES ((int64_t)4 << 20)

/* ---- reference ------------------------------------------------------------------------ */

static double act_reference(int act, double a) {
    switch (act) {
    case TILEOPS_ACT_SILU:
        return a / (1.0 + exp(-a));
    case TILEOPS_ACT_GELU:
        return 0.5 * a * erfc(-a * 0.70710678118654752440);
    default: {
        /* 0.5 a (1 + tanh(u)), as a / (1 + exp(-2u)): equal, and accurate in double for
         * a < 0 too (the test checks it against the tanh form where that one is). */
        const double u = 0.79788456080286535588 * (a + 0.044715 * a * a * a);
        return a / (1.0 + exp(-2.0 * u));
    }
    }
}

static tileops_status_t check_args(const tileops_gated_act_args_t *a);

tileops_status_t tileops_gated_act_reference(const tileops_gated_act_args_t *a) {
    tileops_status_t st = check_args(a);
    if (st != TILEOPS_OK)
        return st;
    const int dt = a->dtype;
    for (int64_t r = 0; r < a->rows; r++) {
        const int64_t xo = r * a->x_stride, yo = r * a->y_stride;
        for (int64_t i = 0; i < a->n; i++) {
            double g = vec16_load1(a->x, xo + i, dt), u = vec16_load1(a->x, xo + a->n + i, dt);
            double v = act_reference(a->act, g);
            if (a->cast_before_mul) { /* act(a) rounded to the dtype once (through y[i]), then the product */
                vec16_store_rounded(a->y, yo + i, dt, v);
                v = vec16_load1(a->y, yo + i, dt);
            }
            vec16_store_rounded(a->y, yo + i, dt, v * u);
        }
    }
    return TILEOPS_OK;
}

/* ---- the fast kernel ------------------------------------------------------------------- */

/* y[0..m) = act(a) * b for m outputs of one row: a at x, b at x + n (elements of dt). */
typedef void (*span_fn)(const void *x, void *y, int64_t n, int64_t m);

typedef struct gated_spans {
    span_fn span[3][3][2]; /* [act][dtype][cast_before_mul] */
} gated_spans_t;

#define VEC16_SELF "ops/activation/gated_act.c"
#include "cpu/dispatch_levels.h"

static const gated_spans_t *spans_for(int level) {
    return VEC16_AT_LEVEL(level, spans);
}

typedef struct gated_job {
    const tileops_gated_act_args_t *a;
    span_fn span;
    int64_t chunks;    /* units per row */
    int64_t elem;      /* bytes per element */
} gated_job_t;

static void gated_range(void *ctx, int64_t u0, int64_t u1) {
    const gated_job_t *j = ctx;
    const tileops_gated_act_args_t *a = j->a;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / j->chunks, i = (u % j->chunks) * GATED_CHUNK;
        const int64_t m = a->n - i < GATED_CHUNK ? a->n - i : GATED_CHUNK;
        j->span((const char *)a->x + (r * a->x_stride + i) * j->elem,
                (char *)a->y + (r * a->y_stride + i) * j->elem, a->n, m);
    }
}

tileops_status_t tileops_gated_act(const tileops_gated_act_args_t *a) {
    tileops_status_t st = check_args(a);
    if (st != TILEOPS_OK || a->rows == 0)
        return st;
    const int64_t elem = (int64_t)tileops_dtype_size(a->dtype);
    gated_job_t job = {
        .a = a,
        .span = spans_for(tileops_cpu_simd_active())->span[a->act][a->dtype][a->cast_before_mul != 0],
        .chunks = (a->n + GATED_CHUNK - 1) / GATED_CHUNK,
        .elem = elem,
    };
    /* A large new contiguous output gets huge pages before its first write (cpu/memory.h). */
    const int64_t y_bytes = a->rows * a->n * elem;
    if (a->y_stride == a->n && y_bytes >= GATED_HUGE_MIN_BYTES)
        (void)tileops_cpu_fresh_output(a->y, y_bytes, GATED_HUGE_MIN_BYTES);
    const int64_t unit = a->n < GATED_CHUNK ? a->n : GATED_CHUNK;
    tileops_cpu_parallel_for(a->rows * job.chunks, (GATED_MIN_ELEMS + unit - 1) / unit, gated_range, &job);
    return TILEOPS_OK;
}

/* ---- argument checks and the table entries --------------------------------------------- */

static tileops_status_t check_args(const tileops_gated_act_args_t *a) {
    if (a == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "gated_act: args must be non-NULL, got NULL");
    const char *k = a->kernel != NULL ? a->kernel : "gated_act";
    tileops_status_t st = tileops_check_float_rows(k, a->dtype, a->rows);
    if (st != TILEOPS_OK)
        return st;
    if (a->act < TILEOPS_ACT_SILU || a->act > TILEOPS_ACT_GELU_TANH)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: act must be 0 (silu), 1 (gelu) or 2 (gelu_tanh), got %d", k, a->act);
    if (a->n < 1 || a->n > INT64_MAX / 8)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: n must be in [1, 2^60), got %lld", k,
                            (long long)a->n);
    if (a->x_stride < 2 * a->n || a->y_stride < a->n)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: strides must be x_stride >= 2n and y_stride >= n (n = %lld), got "
                            "x_stride = %lld, y_stride = %lld",
                            k, (long long)a->n, (long long)a->x_stride, (long long)a->y_stride);
    if (a->rows == 0) /* nothing is read or written */
        return TILEOPS_OK;
    if ((st = tileops_check_x_y(k, a->rows, a->x, a->y)) != TILEOPS_OK)
        return st;
    /* Byte offsets up to the end of the last row of x (the larger extent) must fit int64. */
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype), last = a->rows - 1;
    if (last > (INT64_MAX / es - 2 * a->n) / a->x_stride)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: the extent of x, ((rows - 1) * x_stride + 2n) * %lld bytes, must fit "
                            "in int64, got rows = %lld, n = %lld, x_stride = %lld",
                            k, (long long)es, (long long)a->rows, (long long)a->n, (long long)a->x_stride);
    if (last > (INT64_MAX / es - a->n) / a->y_stride)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: the extent of y, ((rows - 1) * y_stride + n) * %lld bytes, must fit "
                            "in int64, got rows = %lld, n = %lld, y_stride = %lld",
                            k, (long long)es, (long long)a->rows, (long long)a->n, (long long)a->y_stride);
    return TILEOPS_OK;
}

tileops_status_t tileops_gated_act_call(int act, int cast_before_mul, const char *name, const tileops_arg_t *args,
                                        int reference) {
    tileops_gated_act_args_t a = {
        .kernel = name,
        .x = (const void *)args[0].p,
        .y = (void *)args[1].p,
        .rows = args[2].q,
        .n = args[3].q,
        .x_stride = args[4].q,
        .y_stride = args[5].q,
        .dtype = args[6].i,
        .act = act,
        .cast_before_mul = cast_before_mul,
    };
    return reference ? tileops_gated_act_reference(&a) : tileops_gated_act(&a);
}

#else /* ---- VEC16_ISA: the spans of one instruction set (this file includes itself) ---- */

#include "cpu/vec16.h"

#if VEC16_ISA == VEC16_SCALAR && VEC16_X86
/* The cold fallback on x86 (fmaf a library call): one out-of-line copy per function. */
#define STEP OUTLINE
#else
#define STEP AI
#endif

/* x / (1 + exp(-v)) for v = vh + vl (vl: a correction far below vh's ulp), as x e / (1 + e)
 * with e = exp(-|v|) = exp(-|vh|) (1 -+ vl) where v < 0: exp never overflows, so a result in
 * fp32's range never flushes to 0 (silu(-89.5) is -1.2e-37, not 0). */
static AI TGT VF ISA(vsigmul)(VF x, VF vh, VF vl, int has_vl) {
    const VF zero = ISA(vzero)();
    VF e = ISA(vexp)(ISA(vmin)(vh, ISA(vsub)(zero, vh)));
    /* without a correction (SiLU: vl = 0) the step is fma(e, +-0, e), which is e for every
     * e exp gives (finite and >= +0, or NaN): left out, the same bits */
    if (has_vl)
        e = ISA(vfma)(e, ISA(vsel_neg)(vh, vl, ISA(vsub)(zero, vl)), e);
    VF num = ISA(vsel_neg)(vh, ISA(vmul)(x, e), x);
    return ISA(vdiv)(num, ISA(vadd)(ISA(vset1)(1.0f), e));
}

/* v = a (c1 + c2 a^2) as vh + *vl, c1 = 2 sqrt(2 / pi), c2 = 0.044715 c1, in float-float
 * (constants split in two floats, exact products by FMA, an exact two-sum): relative error
 * ~2^-44, so the |v| exp multiplies it by stays far below an ulp. */
static AI TGT VF ISA(vtanh_arg)(VF a, VF *vl) {
    const VF c1h = ISA(vset1)(1.5957692f), c1l = ISA(vset1)(-4.534068e-08f);
    const VF c2h = ISA(vset1)(0.071354814f), c2l = ISA(vset1)(2.3988325e-09f);
    VF a2h = ISA(vmul)(a, a), a2l = ISA(vfms)(a, a, a2h);
    VF ph = ISA(vmul)(c2h, a2h);
    VF pl = ISA(vfms)(c2h, a2h, ph);
    pl = ISA(vadd)(pl, ISA(vfma)(c2h, a2l, ISA(vmul)(c2l, a2h)));
    VF th = ISA(vadd)(c1h, ph), bb = ISA(vsub)(th, c1h); /* two-sum c1h + ph = th + tl */
    VF tl = ISA(vadd)(ISA(vsub)(c1h, ISA(vsub)(th, bb)), ISA(vsub)(ph, bb));
    tl = ISA(vadd)(tl, ISA(vadd)(pl, c1l));
    VF vh = ISA(vmul)(a, th);
    *vl = ISA(vfma)(a, tl, ISA(vfms)(a, th, vh));
    return vh;
}

static STEP TGT VF ISA(vgelu)(VF a) {
    static const float c[11] = {8.578265806e-06f, 2.818439603e-01f, 2.852924764e-01f, 2.234304249e-01f,
                                2.851417363e-01f, -2.515510917e-01f, 6.837153435e-01f, -9.664225578e-01f,
                                6.407496929e-01f, -2.099794745e-01f, 2.777090482e-02f};
    const VF half = ISA(vset1)(0.5f);
    VF m = ISA(vmin)(ISA(vmax)(a, ISA(vsub)(ISA(vzero)(), a)), ISA(vset1)(20.0f)); /* |a| <= 20 */
    VF z = ISA(vmul)(m, ISA(vset1)(0.707106781f));
    VF sq = ISA(vmul)(m, m);
    const VF nhalf = ISA(vset1)(-0.5f);
    VF nlo = ISA(vmul)(ISA(vfms)(m, m, sq), nhalf); /* -(z^2 - hi), exactly */
    VF e = ISA(vexp)(ISA(vmul)(sq, nhalf));          /* exp(-hi) */
    e = ISA(vfma)(nlo, e, e);                        /* exp(-z^2) */
    VF t = ISA(vdiv)(ISA(vset1)(2.0f), ISA(vadd)(ISA(vset1)(2.0f), z));
    VF s = ISA(vmul)(ISA(vmul)(e, ISA(vpoly)(t, c, 10)), half);                 /* erfc(|z|) / 2 */
    return ISA(vmul)(a, ISA(vsel_neg)(a, s, ISA(vsub)(ISA(vset1)(1.0f), s)));
}

static AI TGT VF ISA(vact)(VF a, int act) {
    if (act == TILEOPS_ACT_SILU)
        return ISA(vsigmul)(a, a, ISA(vzero)(), 0);
    if (act == TILEOPS_ACT_GELU)
        return ISA(vgelu)(a);
    /* |a| <= 20 for v (v(20) = 602: the sigmoid is 0 or 1 from there, and a^2 stays finite) */
    const VF lim = ISA(vset1)(20.0f);
    VF vl, vh = ISA(vtanh_arg)(ISA(vmin)(ISA(vmax)(a, ISA(vsub)(ISA(vzero)(), lim)), lim), &vl);
    return ISA(vsigmul)(a, vh, vl, 1);
}

/* act(a), rounded to dt where cast */
static AI TGT VF ISA(vact_cast)(VF g, int act, int dt, int cast) {
    VF v = ISA(vact)(g, act);
    return cast ? ISA(vround)(v, dt) : v;
}

static AI TGT void ISA(span_impl)(const void *x, void *y, int64_t n, int64_t m, int act, int dt, int cast) {
    int64_t i = 0;
    for (; i + 16 <= m; i += 16) {
        VF g = ISA(vload)(x, i, dt), u = ISA(vload)(x, n + i, dt);
        (void)ISA(vstore_n)(y, i, dt, ISA(vmul)(ISA(vact_cast)(g, act, dt, cast), u), 16);
    }
    if (i < m) {
        const int t = (int)(m - i);
        VF g = ISA(vload_n)(x, i, dt, t), u = ISA(vload_n)(x, n + i, dt, t);
        (void)ISA(vstore_n)(y, i, dt, ISA(vmul)(ISA(vact_cast)(g, act, dt, cast), u), t);
    }
}

/* One copy per (activation, dtype, cast), so the loop carries no tests. */
#define GATED_SPAN(ACT, DT, DTN, C)                                                            \
    static TGT void ISA(span_##ACT##_##DTN##_##C)(const void *x, void *y, int64_t n, int64_t m) { \
        ISA(span_impl)(x, y, n, m, ACT, DT, C);                                                \
    }
#define GATED_SPANS2(ACT, DT, DTN) GATED_SPAN(ACT, DT, DTN, 0) GATED_SPAN(ACT, DT, DTN, 1)
/* float32 has no cast copy: rounding act(a) to float32 changes nothing */
#define GATED_SPANS(ACT) GATED_SPAN(ACT, F32, f32, 0) GATED_SPANS2(ACT, F16, f16) GATED_SPANS2(ACT, BF16, bf16)
GATED_SPANS(TILEOPS_ACT_SILU)
GATED_SPANS(TILEOPS_ACT_GELU)
GATED_SPANS(TILEOPS_ACT_GELU_TANH)

#define GATED_PAIR(ACT, DTN) {ISA(span_##ACT##_##DTN##_0), ISA(span_##ACT##_##DTN##_1)}
#define GATED_ROW(ACT) {{ISA(span_##ACT##_f32_0), ISA(span_##ACT##_f32_0)}, GATED_PAIR(ACT, f16), GATED_PAIR(ACT, bf16)}
static const gated_spans_t ISA(spans) = {
    .span = {GATED_ROW(TILEOPS_ACT_SILU), GATED_ROW(TILEOPS_ACT_GELU), GATED_ROW(TILEOPS_ACT_GELU_TANH)},
};

#undef GATED_ROW
#undef GATED_PAIR
#undef GATED_SPANS2
#undef GATED_SPANS
#undef GATED_SPAN
#undef STEP
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

/* ops/activation/gated_act.cuh: the GPU kernel of the activation family's gated ops
 * (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul), specialised by -D defines and by the
 * op's own small file (csrc/ops/activation/<op>.cu: it sets TILEOPS_ACT and the kernel's
 * name, then includes this). C-style CUDA C compiled at run time by NVRTC with no builtin
 * headers; ../common/rows_common.cuh (16-byte groups, conversions) is spliced in by the
 * runtime.
 *
 * For each of `rows` contiguous rows of x (2N elements: a = x[0:N], b = x[N:2N]) and of y
 * (N elements), all of one dtype: y = act(a) * b, in fp32, rounded once to the dtype:
 *   TILEOPS_ACT 0  silu       a / (1 + exp(-a))
 *               1  gelu       a Phi(a), Phi = 0.5 erfc(|z|) (a < 0) or 1 - 0.5 erfc(|z|),
 *                             z = a / sqrt 2, erfc(z) = exp(-z^2) R(z), R of degree 8 in
 *                             t = 1 / (1 + k |a|) (dev/probes/gelu_erf_fit.py fits it; the
 *                             CPU kernel's R is of degree 10 in 2 / (2 + z))
 *               2  gelu_tanh  a / (1 + exp(-v)), v = a (c1 + c2 a^2) = 2u: the same function
 *                             as 0.5 a (1 + tanh(u)), without its cancellation for a < 0
 * The sigmoid is formed as a e / (1 + e), e = exp(v) for v < 0, so exp never overflows.
 * exp is ex2.approx.ftz (2 ulp) of x log2 e, the division div.full (2 ulp): a few fp32 ulps
 * plus the rounding of exp's argument times its size (|x| <= ~100), far inside the
 * fp32 tolerance (1e-5) and invisible after rounding to a 16-bit dtype.
 *
 * ==== Parameters (arg_format "ppq") ======================================================
 *   (const void *x, void *y, long long rows). x and y contiguous; y must not overlap x.
 *
 * ==== Defines ===========================================================================
 *   From the launch side (src/tileops/kernels/activation/cuda_gated.py):
 *   TILEOPS_DTYPE    0 float32, 1 float16, 2 bfloat16.
 *   TILEOPS_N        the half width N >= 1 (y's row length).
 *   TILEOPS_VEC      G = 16 / element size (16-byte loads and stores: x and y 16-byte
 *                    aligned and N * E a multiple of 16, so b's rows are aligned too) or 1.
 *   TILEOPS_THREADS  threads per block (a multiple of 32, <= 1024).
 *   TILEOPS_UNROLL   U, 16-byte groups of y per thread per step (1..8, default 1).
 *   TILEOPS_GATED_ELEMS  (default 0) 1: a thread per element instead of per 16-byte group
 *                    (element loads and stores, one copy of act's code instead of G: the
 *                    erf kernel's fp16 code 1.7 KB instead of 5.8). The launch rule's
 *                    build for the erf GELU's small calls (cuda_gated.py: up to 65536
 *                    outputs), whose code is fetched from DRAM L2-cold, line by line
 *                    (H200, 1 x 14336 fp16, session 22: 4.74 us L2-cold and 1.30 hot
 *                    against the group build's 5.15 and 1.50). The same arithmetic
 *                    element by element, so the same bits; grid.x = ceil(rows N /
 *                    THREADS), then grid-stride (slow past a few rows: not a large
 *                    call's build).
 *   TILEOPS_CAST_BEFORE_MUL  (default 0) 1: act(a) rounded to the dtype before the product
 *                    (torch eager's arithmetic in the dtype, as Hugging Face's MLP computes
 *                    act_fn(gate) * up), the product rounded again.
 *   From the op's file: TILEOPS_ACT (above), TILEOPS_GATED_KERNEL (the extern "C" name).
 *
 * ==== Launch =============================================================================
 *   U threads' worth of 16-byte groups of y per thread (G outputs each; a row's last group
 *   may be partial), block b covering groups [b T U, (b + 1) T U) for T threads, then
 *   grid-stride: group q is row q / NG, group q % NG; any grid.x >= 1 covers all rows. */
#if !defined(TILEOPS_ACT) || !defined(TILEOPS_GATED_KERNEL)
#error "an op's .cu defines TILEOPS_ACT and TILEOPS_GATED_KERNEL before including gated_act.cuh"
#endif
#if TILEOPS_ACT < 0 || TILEOPS_ACT > 2
#error "TILEOPS_ACT must be 0 (silu), 1 (gelu) or 2 (gelu_tanh)"
#endif

#ifndef TILEOPS_CAST_BEFORE_MUL
#define TILEOPS_CAST_BEFORE_MUL 0
#endif
#ifndef TILEOPS_GATED_ELEMS
#define TILEOPS_GATED_ELEMS 0
#endif

#include "../common/rows_common.cuh"

#ifndef TILEOPS_UNROLL
#define TILEOPS_UNROLL 1
#endif
#if TILEOPS_UNROLL < 1 || TILEOPS_UNROLL > 8
#error "TILEOPS_UNROLL must be 1..8"
#endif

/* ---- fp32 functions -------------------------------------------------------------------- */

/* TILEOPS_GATED_PLAIN 1 (a reference build: the GPU test compares its bits with the
 * shipped build's, dev/time_gated.py --defines times it) keeps the arithmetic below as first
 * written; 0, the default, takes the rewrites below, which give the same bits with fewer
 * instructions (gelu_and_mul 360 -> 296 a group of 8 fp16 outputs, silu_and_mul 216 -> 152;
 * dev/probes/gated_code_size.py):
 * - a / b as div.full.f32 computes it for the divisors here (1 + e in [1, 2], 2 + z in [2,
 *   16.2]): div.full scales a divisor only outside [2^-126, 2^126], so inside it its value
 *   is a times the approximate reciprocal of b (MUFU.RCP), one rounding, without its range
 *   checks (6 % faster at 4096 x 14336 on the H200, session 27);
 * - the sigmoid's exp(-|v|) without a correction term: it was always 0, and e + (+-0) e is
 *   e for every e that ex2 gives (in [0, 1], or NaN). */
#ifndef TILEOPS_GATED_PLAIN
#define TILEOPS_GATED_PLAIN 0
#endif
TILEOPS_DEV float tileops_div(float a, float b) {
    float r;
#if TILEOPS_GATED_PLAIN
    asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
    return tileops_mul(a, r);
#endif
}
/* exp(-|v|) */
TILEOPS_DEV float tileops_exp_neg_abs(float v) {
    float e = tileops_ex2(tileops_mul(-tileops_absf(v), 1.44269504f));
#if TILEOPS_GATED_PLAIN
    e = tileops_fma(v < 0.0f ? 0.0f : -0.0f, e, e);
#endif
    return e;
}
/* x / (1 + exp(-v)), as x e / (1 + e) with e = exp(-|v|) where v < 0 */
TILEOPS_DEV float tileops_sigmul(float x, float v) {
    const float e = tileops_exp_neg_abs(v);
    return tileops_div(v < 0.0f ? tileops_mul(x, e) : x, tileops_add(1.0f, e));
}

/* erfc(z) exp(z^2) ~ R(t), t = 1 / (1 + k |a|), z = |a| / sqrt 2: R's coefficients halved
 * (so e R(t) is erfc(z) / 2 itself), t^8's first. dev/probes/gelu_erf_fit.py fits them over
 * |a| in [0, 13.3] (past 13.22 exp(-z^2) < 2^-126 and ex2.approx.ftz gives 0, so R's value
 * beyond never shows): 0.53 ulp relative as fitted; the kernel's float32 steps, emulated
 * there, are 7.9 ulps of a Phi(a) at most for |a| <= 4 (the degree-10 polynomial it replaced, in
 * 2 / (2 + z): 6.9), 59 in the tail (60), both from ex2's argument's rounding, not from R.
 * Against that form, 4 fewer instructions an element (2 Horner steps, z's product: t's
 * denominator is one FMA of |a|, and s's halving), 3 more in a 16-bit build (no
 * correction for sq's rounding, below): fp16 34 -> 27, float32 38 -> 34 (a group's code
 * over its outputs, dev/probes/gated_code_size.py). Rounded to fp16 / bf16, 2M products
 * y = gelu(a) b (a ~ 3 N(0, 1)) hold 181 / 90 outputs off the correctly rounded one (the
 * degree-10 form 158 / 68; a Phi(a) alone: 5 of every 16-bit a, as before) */
#define GATED_ERF_K 0.295f

TILEOPS_DEV float tileops_act(float a) {
#if TILEOPS_ACT == 0
    return tileops_sigmul(a, a);
#elif TILEOPS_ACT == 1
    const float m = tileops_minf(tileops_absf(a), 20.0f); /* erfc(20 / sqrt 2) is 0 in fp32 */
    const float sq = tileops_mul(m, m);
    const float e = tileops_ex2(tileops_mul(sq, -0.5f * 1.44269504f)); /* exp(-z^2) but sq's error */
    const float d = tileops_fma(m, GATED_ERF_K, 1.0f);   /* in [1, 6.9] */
#if TILEOPS_GATED_PLAIN
    const float t = tileops_div(1.0f, d);
#else
    float t;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(d));
#endif
    float p = 3.972066194e-02f;
    p = tileops_fma(p, t, -1.847593337e-01f);
    p = tileops_fma(p, t, 2.736063302e-01f);
    p = tileops_fma(p, t, -1.198069826e-01f);
    p = tileops_fma(p, t, 1.680299938e-01f);
    p = tileops_fma(p, t, 8.406279981e-02f);
    p = tileops_fma(p, t, 1.218597293e-01f);
    p = tileops_fma(p, t, 1.172686815e-01f);
    p = tileops_fma(p, t, 1.812405935e-05f);
#if TILEOPS_DTYPE == 0
    /* erfc(|z|) / 2: exp(-z^2) = exp(-sq / 2) (1 - lo), lo = (m^2 - sq) / 2 (exact) */
    const float lo = tileops_mul(tileops_fma(m, m, -sq), 0.5f), s0 = tileops_mul(e, p);
    const float s = tileops_fma(-lo, s0, s0);
#else
    /* a 16-bit result: sq's rounding (m^2 2^-25 relative in e, as large as the rounding of
     * ex2's argument) changes no rounded output (dev/probes/gelu_erf_fit.py --bits16) */
    const float s = tileops_mul(e, p);
#endif
    /* the sign bit decides, as on the CPU (-0 and NaN included: the product keeps a NaN) */
    return tileops_mul(a, (tileops_as_uint(a) >> 31) ? s : tileops_add(1.0f, -s));
#else
    const float c = tileops_minf(tileops_maxf(a, -20.0f), 20.0f); /* v(20) = 602: the sigmoid is 0 or 1 */
    const float v = tileops_mul(c, tileops_fma(0.0713548162f, tileops_mul(c, c), 1.59576912f));
    return tileops_sigmul(a, v);
#endif
}

/* ---- the kernel ------------------------------------------------------------------------ */

#if TILEOPS_GATED_ELEMS
/* v rounded to the dtype and back, as the group path's unpack(pack(.)): the element
 * store's and load's conversions (rows_common.cuh) on a register */
TILEOPS_DEV float tileops_round_to_dtype(float v) {
    union { float f; unsigned short h; } e;
    tileops_st_elem((char *)&e, 0, v);
    return tileops_ld_elem((const char *)&e, 0);
}

extern "C" __global__ void TILEOPS_BOUNDS
TILEOPS_GATED_KERNEL(const void *x, void *y, long long rows) {
    TILEOPS_PDL_PROLOGUE();
    const long long total = rows * (long long)TILEOPS_N, step = (long long)tileops_nctaid() * TILEOPS_THREADS;
    for (long long i = (long long)tileops_ctaid() * TILEOPS_THREADS + tileops_tid(); i < total; i += step) {
        const long long r = i / TILEOPS_N, c = i - r * TILEOPS_N;
        const char *xa = (const char *)x + r * (2LL * TILEOPS_N * TILEOPS_E);
        const float a = tileops_ld_elem(xa, c), b = tileops_ld_elem(xa, TILEOPS_N + c);
#if TILEOPS_CAST_BEFORE_MUL
        const float f = tileops_round_to_dtype(tileops_act(a));
#else
        const float f = tileops_act(a);
#endif
        tileops_st_elem((char *)y + r * ((long long)TILEOPS_N * TILEOPS_E), c, tileops_mul(f, b));
    }
}
#else
extern "C" __global__ void TILEOPS_BOUNDS
TILEOPS_GATED_KERNEL(const void *x, void *y, long long rows) {
    TILEOPS_PDL_PROLOGUE();
    /* a thread's U groups are THREADS apart (each load instruction of a warp covers
     * consecutive groups); all 2U loads are issued before the first store, which the
     * compiler could not do itself: y may not overlap x, but it cannot know that. Group
     * indices are 32-bit (the launch keeps rows x NG below 2^31): the row of a group is a
     * 32-bit division by the constant NG (a multiply-high and a shift), not a 64-bit one
     * (some 25 instructions a thread, a fifth of silu's per group) */
    const unsigned total = (unsigned)rows * (unsigned)TILEOPS_NG;
    const unsigned step = tileops_nctaid() * (TILEOPS_THREADS * TILEOPS_UNROLL);
    for (unsigned q0 = tileops_ctaid() * (TILEOPS_THREADS * TILEOPS_UNROLL) + tileops_tid(); q0 < total; q0 += step) {
        struct tileops_v4 va[TILEOPS_UNROLL], vb[TILEOPS_UNROLL];
#pragma unroll
        for (int u = 0; u < TILEOPS_UNROLL; u++) {
            const unsigned q = q0 + (unsigned)u * TILEOPS_THREADS;
            if (q < total) {
                const unsigned r = q / TILEOPS_NG, g = q - r * TILEOPS_NG;
                const char *xa = (const char *)x + (long long)r * (2LL * TILEOPS_N * TILEOPS_E);
                va[u] = tileops_ld_group(xa, g, 1);
                vb[u] = tileops_ld_group(xa + (long long)TILEOPS_N * TILEOPS_E, g, 1);
            }
        }
#pragma unroll
        for (int u = 0; u < TILEOPS_UNROLL; u++) {
            const unsigned q = q0 + (unsigned)u * TILEOPS_THREADS;
            if (q < total) {
                const unsigned r = q / TILEOPS_NG, g = q - r * TILEOPS_NG;
                float fa[TILEOPS_G], fb[TILEOPS_G], fy[TILEOPS_G];
                tileops_unpack(va[u], fa);
                tileops_unpack(vb[u], fb);
#if TILEOPS_CAST_BEFORE_MUL
#pragma unroll
                for (int k = 0; k < TILEOPS_G; k++)
                    fa[k] = tileops_act(fa[k]);
                tileops_unpack(tileops_pack(fa), fa); /* act(a) rounded to the dtype */
#pragma unroll
                for (int k = 0; k < TILEOPS_G; k++)
                    fy[k] = tileops_mul(fa[k], fb[k]);
#else
#pragma unroll
                for (int k = 0; k < TILEOPS_G; k++)
                    fy[k] = tileops_mul(tileops_act(fa[k]), fb[k]);
#endif
                tileops_st_group((char *)y + (long long)r * ((long long)TILEOPS_N * TILEOPS_E), g, tileops_pack(fy), 0);
            }
        }
    }
}
#endif

/* ops/positional/tables.cuh: the double-precision arithmetic of the positional tables
 * (RopeCosSinCacheFwdOp, SinusoidalFwdOp, AlibiFwdOp), one text for both sides: the C
 * kernels #include it, the CUDA C kernels have it spliced in (tileops.runtime.source).
 *
 *   tileops_inv_freq(i, width, base)     1 / base^(2i / width), in double (libm / CUDA pow)
 *   tileops_rope_scaled(inv, type, ...)  Hugging Face's rope_type "default", "linear"
 *                                        (inv / factor) and "llama3" (the band rule of
 *                                        Llama-3.1) applied to one inverse frequency
 *   tileops_sincos(x, &s, &c)            sin x and cos x for 0 <= x < 2^50, in double, with
 *                                        only +, *, fma and bit reads: the C scalar path, the
 *                                        AVX2 / AVX-512 paths (angle_table.c, the same
 *                                        operations in the same order) and the CUDA kernels
 *                                        give the same bits for the same x
 *   tileops_alibi_slope(h, heads)        Press et al.'s slope of head h (0-based)
 *
 * sincos: x = k pi/2 + r, k = nearest integer to x * 2/pi (the 1.5 * 2^52 trick; its low
 * bits are k mod 4), r = x - k pi/2 with pi/2 split in three doubles (P1 + P2 + P3, 159
 * bits) through fma: x - k P1 is exact (both are multiples of 2^-52 and the difference is
 * below 1 for k < 2^51), the two later steps round once each relative to r. Then the
 * Taylor series of sin r to r^17 and of cos r to r^18 (|r| <= pi/4: truncation below
 * 1e-19 relative), Horner with fma, and the quadrant of k. The result is within ~1 ulp
 * (double) of sin x and cos x; rounded to float32 it is the correctly rounded value
 * except when the true value lies within ~2^-52 relative of a float32 rounding boundary.
 *
 * Every product and sum whose rounding matters is spelled with POS_MUL / POS_ADD /
 * POS_SUB: plain operators in C (the core is compiled -std=c11, where GCC does not
 * contract a * b + c), __dmul_rn / __dadd_rn / __dsub_rn in CUDA, which NVRTC never fuses
 * into an fma (its default --fmad=true would fuse a plain x * y + z). */
#ifndef TILEOPS_POSITIONAL_TABLES_CUH
#define TILEOPS_POSITIONAL_TABLES_CUH

#ifdef __CUDACC__
#define POS_FN static __device__ __forceinline__
#define POS_MUL(a, b) __dmul_rn((a), (b))
#define POS_ADD(a, b) __dadd_rn((a), (b))
#define POS_SUB(a, b) __dsub_rn((a), (b))
#define POS_BITS(d) ((unsigned long long)__double_as_longlong(d))
#define POS_UNROLL _Pragma("unroll")
#else
#include <math.h>
#include <string.h>
#define POS_FN static inline
#define POS_MUL(a, b) ((a) * (b))
#define POS_ADD(a, b) ((a) + (b))
#define POS_SUB(a, b) ((a) - (b))
static inline unsigned long long tileops_pos_bits(double d) {
    unsigned long long b;
    memcpy(&b, &d, sizeof b);
    return b;
}
#define POS_BITS(d) tileops_pos_bits(d)
#define POS_UNROLL _Pragma("GCC unroll 16")
#endif

/* rope_type codes (the op layer maps the names) */
#define TILEOPS_ROPE_DEFAULT 0
#define TILEOPS_ROPE_LINEAR 1
#define TILEOPS_ROPE_LLAMA3 2

/* the largest angle tileops_sincos takes (and the kernels accept): 2^50 */
#define TILEOPS_MAX_ANGLE 1125899906842624.0

#define POS_TWO_OVER_PI 0.6366197723675814
#define POS_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */
#define POS_PIO2_1 1.5707963267948966
#define POS_PIO2_2 6.123233995736766e-17
#define POS_PIO2_3 -1.4973849048591698e-33
/* the Taylor coefficients, highest first: (-1)^k / (2k + 1)!, k = 8..1, and
 * (-1)^k / (2k)!, k = 9..1 (Horner order) */
#define POS_SIN_COEFS                                                                            \
    2.8114572543455206e-15, -7.647163731819816e-13, 1.6059043836821613e-10, -2.505210838544172e-08, \
        2.7557319223985893e-06, -0.0001984126984126984, 0.008333333333333333, -0.16666666666666666
#define POS_COS_COEFS                                                                           \
    -1.5619206968586225e-16, 4.779477332387385e-14, -1.1470745597729725e-11, 2.08767569878681e-09, \
        -2.755731922398589e-07, 2.48015873015873e-05, -0.001388888888888889, 0.041666666666666664, -0.5
#define POS_N_SIN 8
#define POS_N_COS 9

/* 1 / base^(2i / width): the formula of Hugging Face's and vLLM's rope init
 * (1.0 / (base ** (arange(0, dim, 2) / dim))), and of the Transformer's sinusoids. */
POS_FN double tileops_inv_freq(long long i, long long width, double base) {
    return 1.0 / pow(base, (double)(2 * i) / (double)width);
}

/* One inverse frequency under a rope_type (Hugging Face's ROPE_INIT_FUNCTIONS):
 *   default  inv
 *   linear   inv / factor (vLLM divides the positions instead: the same angle up to one
 *            rounding in double)
 *   llama3   wavelength w = 2 pi / inv against orig / low (long) and orig / high (short):
 *            w < orig / high: inv; w > orig / low: inv / factor; between:
 *            (1 - s) inv / factor + s inv, s = (orig / w - low) / (high - low)
 *            (s = 0 when low == high, as vLLM takes it) */
POS_FN double tileops_rope_scaled(double inv, int type, double factor, double low, double high, double orig) {
    if (type == TILEOPS_ROPE_LINEAR)
        return inv / factor;
    if (type != TILEOPS_ROPE_LLAMA3)
        return inv;
    const double wavelen = 2.0 * 3.141592653589793 / inv;
    if (wavelen < orig / high)
        return inv;
    if (wavelen > orig / low)
        return inv / factor;
    const double smooth = low == high ? 0.0 : (orig / wavelen - low) / (high - low);
    return POS_ADD(POS_MUL(1.0 - smooth, inv) / factor, POS_MUL(smooth, inv));
}

/* sin x and cos x, 0 <= x < 2^50 (see the top of this file) */
POS_FN void tileops_sincos(double x, double *s, double *c) {
    const double t = POS_ADD(POS_MUL(x, POS_TWO_OVER_PI), POS_ROUND_MAGIC);
    const unsigned long long q = POS_BITS(t);
    const double k = POS_SUB(t, POS_ROUND_MAGIC);
    double r = fma(-k, POS_PIO2_1, x);
    r = fma(-k, POS_PIO2_2, r);
    r = fma(-k, POS_PIO2_3, r);
    const double z = POS_MUL(r, r);
    const double sin_coefs[POS_N_SIN] = {POS_SIN_COEFS}, cos_coefs[POS_N_COS] = {POS_COS_COEFS};
    double ps = sin_coefs[0], pc = cos_coefs[0];
    POS_UNROLL
    for (int j = 1; j < POS_N_SIN; j++)
        ps = fma(ps, z, sin_coefs[j]);
    POS_UNROLL
    for (int j = 1; j < POS_N_COS; j++)
        pc = fma(pc, z, cos_coefs[j]);
    const double sr = fma(POS_MUL(r, z), ps, r);
    const double cr = fma(z, pc, 1.0);
    /* x = r + k pi/2: sin x = sr, cr, -sr, -cr and cos x = cr, -sr, -cr, sr for k mod 4 = 0..3 */
    const double a = (q & 1) ? cr : sr, b = (q & 1) ? sr : cr;
    *s = (q & 2) ? -a : a;
    *c = ((q + 1) & 2) ? -b : b;
}

/* The ALiBi slope of head h of `heads` (Press et al., and BLOOM's build_alibi_tensor):
 * with c the largest power of two <= heads, heads h < c take 2^(-8 (h + 1) / c), the
 * others the odd-numbered slopes of 2c heads, 2^(-8 (2 (h - c) + 1) / (2c)). */
POS_FN double tileops_alibi_slope(long long h, long long heads) {
    long long c = 1;
    while (c <= heads / 2)
        c *= 2;
    if (h < c)
        return exp2(-8.0 * (double)(h + 1) / (double)c);
    return exp2(-4.0 * (double)(2 * (h - c) + 1) / (double)c);
}

#endif /* TILEOPS_POSITIONAL_TABLES_CUH */

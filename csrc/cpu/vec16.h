/* cpu/vec16.h: private to the core - the 16-lane fp32 vector the CPU kernels of the op
 * families write their loops over, one text for every instruction set (the norm family's
 * rows, the activation family's gated kernels).
 *
 * Included in two ways. Without VEC16_ISA defined: the shared part (the ISA codes,
 * VEC16_X86, F32 / F16 / BF16, AI, the scalar conversions vec16_load1 / vec16_store1 and
 * vec16_store_rounded, which rounds a double once to the dtype).
 * With VEC16_ISA set to VEC16_SCALAR, VEC16_AVX2 or VEC16_AVX512 (a kernel file that
 * includes itself once per instruction set through cpu/dispatch_levels.h): the vector VF of
 * that set and its operations, named ISA(name) (name_scalar, name_avx2, name_avx512),
 * every function target-attributed with TGT. A 16-lane vector is one __m512, two __m256,
 * or 16 floats; the three give the same bits for the same operations (explicit FMA only,
 * IEEE division, no contraction).
 *   vzero vset1 vadd vsub vmul vfma vdiv        arithmetic (vdiv: IEEE division)
 *   vfms(a, b, c)                               a b - c, rounded once (fma(a, b, -c))
 *   vmin vmax                                   b where a lane is unordered (x86's rule)
 *   vsel_neg(v, neg, pos)                       neg where v's sign bit is set, else pos
 *   vzero_lt(v, x, c)                           +0 where x < c (ordered: not for a NaN), else v
 *   vldexp(v, kf)                               v * 2^kf, kf integral in [-252, 254]
 *   vload(p, i, dt) / vload_n(.., m)            16 (m) elements of dtype dt at p[i..], in fp32
 *                                               (lanes m.. read as +0, touching no memory)
 *   vstore_n(p, i, dt, v, m)                    lanes 0..m-1 rounded to dt (nearest even);
 *                                               returns what was stored, in fp32
 *   vround(v, dt)                               v rounded to dt (vstore_n's value), in fp32,
 *                                               through no memory
 *   vkeep_n(v, m) / vfill_n(v, m, c)            lanes m.. set to +0 / to c
 *   vfold(o0, o1, o2, o3)                       the sum of 64 partials, folded pairwise
 *   vfirst_eq(v, c) / vfirst_nan(v)             the first lane equal to c's (-0 == +0) / that
 *                                               is NaN, or -1
 * and, written once over these for every set:
 *   vpoly(t, c, deg)                            c[0] + t (c[1] + ... c[deg]) by FMAs
 *   vexp(x)                                     exp, < 1.1 ulp (below); NaN stays NaN
 * The including file #undefs VF, ISA, TGT and ISA_NAME after its pass.
 *
 * vexp: x = k ln2 + r (k = nearest integer to x log2 e, r by two FMAs against a split ln2),
 * exp(r) = 1 + r + r^2 P(r) with P a degree-5 fit over |r| <= ln2 / 2 (< 1.1 ulp), times 2^k
 * in two exact steps (a subnormal result rounds once); 0 below -104 without the steps
 * (exp(-inf) = 0); x clamped to at most 89: +inf above 88.73; the clamp keeps a NaN
 * (x86's min returns its second operand for an unordered lane, and x is that operand). */
#ifndef VEC16_ISA
#ifndef TILEOPS_CPU_VEC16_H
#define TILEOPS_CPU_VEC16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tileops/dtype.h"
#include "cpu/simd.h"

#if defined(__x86_64__) || defined(__i386__)
#define VEC16_X86 1
#include <immintrin.h>
#else
#define VEC16_X86 0
#endif

#define VEC16_SCALAR 0
#define VEC16_AVX2 1
#define VEC16_AVX512 2

#define F32 TILEOPS_FLOAT32
#define F16 TILEOPS_FLOAT16
#define BF16 TILEOPS_BFLOAT16

/* Forced inline so each caller's constant dtype and flags fold away. */
#define AI __attribute__((always_inline)) inline
/* The opposite: one out-of-line copy, its dtype and flags tested at run time. GCC would
 * still clone it per constant argument unless told noclone, which clang does not know
 * (and does not need). */
#if defined(__clang__)
#define OUTLINE __attribute__((noinline))
#else
#define OUTLINE __attribute__((noinline, noclone))
#endif

#define VEC16_CAT2(a, b) a##_##b
#define VEC16_CAT(a, b) VEC16_CAT2(a, b)

static inline float vec16_load1(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT16)
        return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == TILEOPS_BFLOAT16)
        return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static inline void vec16_store1(void *p, int64_t i, int dt, float v) {
    if (dt == TILEOPS_FLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else if (dt == TILEOPS_BFLOAT16)
        ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

/* The float next to d towards zero, with its last bit set when d is not exact ("round to
 * odd"): rounding that to a 16-bit type rounds d itself correctly, since a float carries
 * enough extra bits that the two roundings never make a wrong tie. */
static inline float vec16_float_odd(double d) {
    float f = (float)d;
    if (d != d || (double)f == d)
        return f;
    if (fabs((double)f) > fabs(d))
        f = nextafterf(f, 0.0f);
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits |= 1u;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* p[i] = d correctly rounded to dt (the references' one rounding of a double result). */
static inline void vec16_store_rounded(void *p, int64_t i, int dt, double v) {
    if (dt == F32)
        ((float *)p)[i] = (float)v;
    else
        vec16_store1(p, i, dt, vec16_float_odd(v));
}

#endif /* TILEOPS_CPU_VEC16_H */
#else /* ---- VEC16_ISA: one instruction set's vector ---------------------------------- */

#if VEC16_ISA == VEC16_AVX512
/* ---- AVX-512: a 16-lane vector is one __m512 ------------------------------------------- */
#define ISA_NAME avx512
#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define ISA(name) VEC16_CAT(name, ISA_NAME)
typedef __m512 vf_avx512;
#define VF vf_avx512

static AI TGT VF ISA(vzero)(void) { return _mm512_setzero_ps(); }
static AI TGT VF ISA(vset1)(float f) { return _mm512_set1_ps(f); }
static AI TGT VF ISA(vadd)(VF a, VF b) { return _mm512_add_ps(a, b); }
static AI TGT VF ISA(vsub)(VF a, VF b) { return _mm512_sub_ps(a, b); }
static AI TGT VF ISA(vmul)(VF a, VF b) { return _mm512_mul_ps(a, b); }
static AI TGT VF ISA(vfma)(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
static AI TGT VF ISA(vfms)(VF a, VF b, VF c) { return _mm512_fmsub_ps(a, b, c); }
/* Division rounds correctly (IEEE); min / max return b when a lane is unordered, as the
 * x86 instructions do (the scalar code too). */
static AI TGT VF ISA(vdiv)(VF a, VF b) { return _mm512_div_ps(a, b); }
static AI TGT VF ISA(vmin)(VF a, VF b) { return _mm512_min_ps(a, b); }
static AI TGT VF ISA(vmax)(VF a, VF b) { return _mm512_max_ps(a, b); }
/* neg where v's sign bit is set (-0 and NaNs included), else pos. */
static AI TGT VF ISA(vsel_neg)(VF v, VF neg, VF pos) {
    __mmask16 m = _mm512_test_epi32_mask(_mm512_castps_si512(v), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_mask_blend_ps(m, pos, neg);
}
static AI TGT VF ISA(vzero_lt)(VF v, VF x, float c) {
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, _mm512_set1_ps(c), _CMP_LT_OQ), _mm512_setzero_ps());
}
/* v * 2^k for k = kf, an integral float in [-252, 254], rounded once: VSCALEFPS, one
 * instruction where AVX2 and the scalar code take two exact power-of-two factors (the same
 * bits: the exact product rounded once, a result below the normal range included). */
static AI TGT VF ISA(vldexp)(VF v, VF kf) { return _mm512_scalef_ps(v, kf); }

static AI TGT __mmask16 ISA(first)(int m) { return (__mmask16)((1u << m) - 1u); }

static AI TGT VF ISA(widen)(__m256i h, int dt) {
    if (dt == F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The bf16 bits of each lane, in its high 16 bits (the low 16 to be dropped): rounded to
 * nearest even by integer arithmetic, a NaN keeping its top bits with the quiet bit set. */
static AI TGT __m512i ISA(bf16_bits16)(VF v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
}

/* Rounds to nearest even by integer arithmetic, as tileops_f32_to_bf16 does; a NaN keeps
 * its top bits and gets the quiet bit. Where the CPU has AVX512_BF16 (cpu/simd.h's
 * tileops_cpu_bf16_cvt), VCVTNEPS2BF16 does the same in one instruction for every input
 * but a subnormal (it reads those as 0; a normal input never rounds to a subnormal bf16,
 * whose exponent range is fp32's): a vector holding one takes the integer path. Written
 * as asm so no other code of this target may use the instruction on a CPU without it. */
static AI TGT __m256i ISA(narrow)(VF v, int dt) {
    if (dt == F16)
        return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512i u = _mm512_castps_si512(v);
    if (atomic_load_explicit(&tileops_cpu_bf16_cvt, memory_order_relaxed)) {
        const __mmask16 exp0 = _mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000));
        if (_mm512_mask_test_epi32_mask(exp0, u, _mm512_set1_epi32(0x007fffff)) == 0) {
            __m256i h;
            __asm__("vcvtneps2bf16 %1, %0" : "=v"(h) : "v"(v));
            return h;
        }
    }
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(ISA(bf16_bits16)(v), 16));
}

static AI TGT VF ISA(vload)(const void *p, int64_t i, int dt) {
    if (dt == F32)
        return _mm512_loadu_ps((const float *)p + i);
    return ISA(widen)(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)), dt);
}

/* Lanes m.. read as +0 and touch no memory. */
static AI TGT VF ISA(vload_n)(const void *p, int64_t i, int dt, int m) {
    if (dt == F32)
        return _mm512_maskz_loadu_ps(ISA(first)(m), (const float *)p + i);
    return ISA(widen)(_mm256_maskz_loadu_epi16(ISA(first)(m), (const uint16_t *)p + i), dt);
}

/* Stores lanes 0..m-1 (m = 16: all) rounded to dt; returns what was stored, in fp32. */
static AI TGT VF ISA(vstore_n)(void *p, int64_t i, int dt, VF v, int m) {
    if (dt == F32) {
        if (m == 16)
            _mm512_storeu_ps((float *)p + i, v);
        else
            _mm512_mask_storeu_ps((float *)p + i, ISA(first)(m), v);
        return v;
    }
    __m256i h = ISA(narrow)(v, dt);
    if (m == 16)
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + i), h);
    else
        _mm256_mask_storeu_epi16((uint16_t *)p + i, ISA(first)(m), h);
    return ISA(widen)(h, dt);
}

/* narrow then widen, the bf16 case without the 16-bit pack: the same rounding, and the
 * low half cleared in place of the two shifts */
static AI TGT VF ISA(vround)(VF v, int dt) {
    if (dt == F32)
        return v;
    if (dt == F16)
        return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return _mm512_castsi512_ps(_mm512_and_si512(ISA(bf16_bits16)(v), _mm512_set1_epi32((int)0xffff0000u)));
}

/* Lanes m.. set to +0. */
static AI TGT VF ISA(vkeep_n)(VF v, int m) { return _mm512_maskz_mov_ps(ISA(first)(m), v); }
static AI TGT VF ISA(vfill_n)(VF v, int m, float c) { return _mm512_mask_blend_ps(ISA(first)(m), _mm512_set1_ps(c), v); }

/* The fold of the 64 partials held 16 per vector: p[j] += p[j + s] for s = 32 .. 1. */
static AI TGT float ISA(vfold)(VF o0, VF o1, VF o2, VF o3) {
    __m512 s = _mm512_add_ps(_mm512_add_ps(o0, o2), _mm512_add_ps(o1, o3));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

static AI TGT int ISA(vfirst_eq)(VF v, VF c) {
    unsigned m = (unsigned)_mm512_cmp_ps_mask(v, c, _CMP_EQ_OQ);
    return m ? __builtin_ctz(m) : -1;
}
static AI TGT int ISA(vfirst_nan)(VF v) {
    unsigned m = (unsigned)_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return m ? __builtin_ctz(m) : -1;
}

#elif VEC16_ISA == VEC16_AVX2
/* ---- AVX2 + FMA + F16C: a 16-lane vector is two __m256 (lanes 0-7, 8-15) --------------- */
#define ISA_NAME avx2
#define TGT __attribute__((target("avx2,fma,f16c")))
#define ISA(name) VEC16_CAT(name, ISA_NAME)
typedef struct {
    __m256 lo, hi;
} vf_avx2;
#define VF vf_avx2

static AI TGT VF ISA(vzero)(void) { return (VF){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static AI TGT VF ISA(vset1)(float f) { return (VF){_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
static AI TGT VF ISA(vadd)(VF a, VF b) {
    return (VF){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vsub)(VF a, VF b) {
    return (VF){_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vmul)(VF a, VF b) {
    return (VF){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vfma)(VF a, VF b, VF c) {
    return (VF){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
static AI TGT VF ISA(vfms)(VF a, VF b, VF c) {
    return (VF){_mm256_fmsub_ps(a.lo, b.lo, c.lo), _mm256_fmsub_ps(a.hi, b.hi, c.hi)};
}
static AI TGT VF ISA(vdiv)(VF a, VF b) {
    return (VF){_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vmin)(VF a, VF b) {
    return (VF){_mm256_min_ps(a.lo, b.lo), _mm256_min_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vmax)(VF a, VF b) {
    return (VF){_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)};
}
static AI TGT VF ISA(vsel_neg)(VF v, VF neg, VF pos) {
    return (VF){_mm256_blendv_ps(pos.lo, neg.lo, v.lo), _mm256_blendv_ps(pos.hi, neg.hi, v.hi)};
}
static AI TGT VF ISA(vzero_lt)(VF v, VF x, float c) {
    const __m256 cv = _mm256_set1_ps(c);
    return (VF){_mm256_andnot_ps(_mm256_cmp_ps(x.lo, cv, _CMP_LT_OQ), v.lo),
                _mm256_andnot_ps(_mm256_cmp_ps(x.hi, cv, _CMP_LT_OQ), v.hi)};
}
static AI TGT __m256 ISA(ldexp8)(__m256 v, __m256 kf) {
    __m256i k = _mm256_cvtps_epi32(kf), k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, s1), s2);
}
static AI TGT VF ISA(vldexp)(VF v, VF kf) { return (VF){ISA(ldexp8)(v.lo, kf.lo), ISA(ldexp8)(v.hi, kf.hi)}; }

static AI TGT __m256 ISA(widen8)(__m128i h, int dt) {
    if (dt == F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The bf16 bits of each lane in its high 16 bits (the low 16 to be dropped): rounded to
 * nearest even by integer arithmetic (as tileops_f32_to_bf16); with nan, a NaN keeps its
 * top bits with the quiet bit set (blended in); without, no lane may be NaN. */
static AI TGT __m256i ISA(bf16_hi8)(__m256 v, int nan) {
    __m256i u = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    if (!nan)
        return r;
    __m256i m = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), m);
}

/* Whether a lane of a or of b is NaN: one compare tests both (a blend costs three
 * micro-ops a half on recent Intel cores: 16 lanes test once, and blend only with a NaN). */
static AI TGT int ISA(any_nan2)(__m256 a, __m256 b) {
    __m256 m = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
    return !_mm256_testz_ps(m, m);
}

/* The fp32 values bf16_hi16's halves stand for (their low halves cleared) */
static AI TGT VF ISA(bf16_kept)(__m256i lo, __m256i hi) {
    const __m256i keep = _mm256_set1_epi32((int)0xffff0000u);
    return (VF){_mm256_castsi256_ps(_mm256_and_si256(lo, keep)), _mm256_castsi256_ps(_mm256_and_si256(hi, keep))};
}

/* bf16_hi8 of both halves */
static AI TGT void ISA(bf16_hi16)(VF v, __m256i *lo, __m256i *hi) {
    const int nan = ISA(any_nan2)(v.lo, v.hi);
    *lo = ISA(bf16_hi8)(v.lo, nan);
    *hi = ISA(bf16_hi8)(v.hi, nan);
}

static AI TGT __m128i ISA(narrow8)(__m256 v, int dt) {
    if (dt == F16)
        return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256i r = _mm256_srli_epi32(ISA(bf16_hi8)(v, 1), 16);
    /* every lane is in [0, 0xffff]: unsigned saturation is a plain narrowing */
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static AI TGT VF ISA(vload)(const void *p, int64_t i, int dt) {
    if (dt == F32)
        return (VF){_mm256_loadu_ps((const float *)p + i), _mm256_loadu_ps((const float *)p + i + 8)};
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i));
    return (VF){ISA(widen8)(_mm256_castsi256_si128(h), dt), ISA(widen8)(_mm256_extracti128_si256(h, 1), dt)};
}

/* AVX2 has no 16-bit masked moves: partial vectors go through a zeroed copy. */
static AI TGT VF ISA(vload_n)(const void *p, int64_t i, int dt, int m) {
    const size_t es = dt == F32 ? 4 : 2;
    _Alignas(32) unsigned char buf[64] = {0};
    memcpy(buf, (const char *)p + (size_t)i * es, (size_t)m * es);
    return ISA(vload)(buf, 0, dt);
}

static AI TGT VF ISA(vstore_n)(void *p, int64_t i, int dt, VF v, int m) {
    const size_t es = dt == F32 ? 4 : 2;
    _Alignas(32) unsigned char buf[64];
    unsigned char *dst = m == 16 ? (unsigned char *)p + (size_t)i * es : buf;
    if (dt == F32) {
        _mm256_storeu_ps((float *)dst, v.lo);
        _mm256_storeu_ps((float *)dst + 8, v.hi);
    } else if (dt == BF16) {
        /* both halves packed at once (packus interleaves the 128-bit lanes; the permute
         * restores the order), and the stored values widened from the 32-bit lanes */
        __m256i lo, hi;
        ISA(bf16_hi16)(v, &lo, &hi);
        _mm256_storeu_si256((__m256i *)dst, _mm256_permute4x64_epi64(
                                                _mm256_packus_epi32(_mm256_srli_epi32(lo, 16), _mm256_srli_epi32(hi, 16)),
                                                0xD8));
        v = ISA(bf16_kept)(lo, hi);
    } else {
        __m128i lo = ISA(narrow8)(v.lo, dt), hi = ISA(narrow8)(v.hi, dt);
        _mm_storeu_si128((__m128i *)dst, lo);
        _mm_storeu_si128((__m128i *)dst + 1, hi);
        v = (VF){ISA(widen8)(lo, dt), ISA(widen8)(hi, dt)};
    }
    if (m < 16)
        memcpy((unsigned char *)p + (size_t)i * es, buf, (size_t)m * es);
    return v;
}

static AI TGT VF ISA(vround)(VF v, int dt) {
    if (dt == F32)
        return v;
    if (dt == F16) /* (the rounding mode a literal: clang takes no variable there) */
        return (VF){_mm256_cvtph_ps(_mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
                    _mm256_cvtph_ps(_mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))};
    __m256i lo, hi;
    ISA(bf16_hi16)(v, &lo, &hi);
    return ISA(bf16_kept)(lo, hi);
}

static AI TGT VF ISA(vkeep_n)(VF v, int m) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(m), lane);
    __m256i hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(m - 8), lane);
    return (VF){_mm256_and_ps(v.lo, _mm256_castsi256_ps(lo)), _mm256_and_ps(v.hi, _mm256_castsi256_ps(hi))};
}
static AI TGT VF ISA(vfill_n)(VF v, int m, float c) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(m), lane));
    __m256 hi = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(m - 8), lane));
    const __m256 cv = _mm256_set1_ps(c);
    return (VF){_mm256_blendv_ps(cv, v.lo, lo), _mm256_blendv_ps(cv, v.hi, hi)};
}

static AI TGT float ISA(vfold)(VF o0, VF o1, VF o2, VF o3) {
    VF s = ISA(vadd)(ISA(vadd)(o0, o2), ISA(vadd)(o1, o3));
    __m256 h = _mm256_add_ps(s.lo, s.hi);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

static AI TGT int ISA(vfirst_eq)(VF v, VF c) {
    unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v.lo, c.lo, _CMP_EQ_OQ)) |
                 (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v.hi, c.hi, _CMP_EQ_OQ)) << 8;
    return m ? __builtin_ctz(m) : -1;
}
static AI TGT int ISA(vfirst_nan)(VF v) {
    unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v.lo, v.lo, _CMP_UNORD_Q)) |
                 (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(v.hi, v.hi, _CMP_UNORD_Q)) << 8;
    return m ? __builtin_ctz(m) : -1;
}

#else
/* ---- scalar: a 16-lane vector is 16 floats; the same operations, lane by lane ---------- */
#define ISA_NAME scalar
#define TGT
#define ISA(name) VEC16_CAT(name, ISA_NAME)
typedef struct {
    float f[16];
} vf_scalar;
#define VF vf_scalar

static AI VF ISA(vzero)(void) { return (VF){{0}}; }
static AI VF ISA(vset1)(float c) {
    VF r;
    for (int k = 0; k < 16; k++)
        r.f[k] = c;
    return r;
}
static AI VF ISA(vadd)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] += b.f[k];
    return a;
}
static AI VF ISA(vsub)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] -= b.f[k];
    return a;
}
static AI VF ISA(vmul)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] *= b.f[k];
    return a;
}
/* fmaf: one rounding, as the vector FMA. */
static AI VF ISA(vfma)(VF a, VF b, VF c) {
    for (int k = 0; k < 16; k++)
        c.f[k] = fmaf(a.f[k], b.f[k], c.f[k]);
    return c;
}
static AI VF ISA(vfms)(VF a, VF b, VF c) {
    for (int k = 0; k < 16; k++)
        c.f[k] = fmaf(a.f[k], b.f[k], -c.f[k]);
    return c;
}
static AI VF ISA(vdiv)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] /= b.f[k];
    return a;
}
static AI VF ISA(vmin)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] = a.f[k] < b.f[k] ? a.f[k] : b.f[k];
    return a;
}
static AI VF ISA(vmax)(VF a, VF b) {
    for (int k = 0; k < 16; k++)
        a.f[k] = a.f[k] > b.f[k] ? a.f[k] : b.f[k];
    return a;
}
static AI VF ISA(vsel_neg)(VF v, VF neg, VF pos) {
    for (int k = 0; k < 16; k++)
        pos.f[k] = signbit(v.f[k]) ? neg.f[k] : pos.f[k];
    return pos;
}
static AI VF ISA(vzero_lt)(VF v, VF x, float c) {
    for (int k = 0; k < 16; k++)
        v.f[k] = x.f[k] < c ? 0.0f : v.f[k];
    return v;
}
static AI float ISA(pow2i)(int32_t k) {
    uint32_t u = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static AI VF ISA(vldexp)(VF v, VF kf) {
    for (int k = 0; k < 16; k++) {
        /* a NaN kf (v is NaN then too) converts to nothing defined: take 0 */
        int32_t e = kf.f[k] == kf.f[k] ? (int32_t)kf.f[k] : 0, e1 = e >> 1;
        v.f[k] = v.f[k] * ISA(pow2i)(e1) * ISA(pow2i)(e - e1);
    }
    return v;
}
static AI VF ISA(vload_n)(const void *p, int64_t i, int dt, int m) {
    VF r = {{0}};
    for (int k = 0; k < m; k++)
        r.f[k] = vec16_load1(p, i + k, dt);
    return r;
}
static AI VF ISA(vload)(const void *p, int64_t i, int dt) { return ISA(vload_n)(p, i, dt, 16); }
static AI VF ISA(vstore_n)(void *p, int64_t i, int dt, VF v, int m) {
    for (int k = 0; k < m; k++) {
        vec16_store1(p, i + k, dt, v.f[k]);
        v.f[k] = vec16_load1(p, i + k, dt);
    }
    return v;
}
static AI VF ISA(vround)(VF v, int dt) {
    uint16_t h[16];
    return dt == F32 ? v : ISA(vstore_n)(h, 0, dt, v, 16);
}
static AI VF ISA(vkeep_n)(VF v, int m) {
    for (int k = m; k < 16; k++)
        v.f[k] = 0.0f;
    return v;
}
static AI VF ISA(vfill_n)(VF v, int m, float c) {
    for (int k = m; k < 16; k++)
        v.f[k] = c;
    return v;
}
static AI float ISA(vfold)(VF o0, VF o1, VF o2, VF o3) {
    VF s = ISA(vadd)(ISA(vadd)(o0, o2), ISA(vadd)(o1, o3));
    for (int w = 8; w >= 1; w /= 2)
        for (int k = 0; k < w; k++)
            s.f[k] += s.f[k + w];
    return s.f[0];
}
static AI int ISA(vfirst_eq)(VF v, VF c) {
    for (int k = 0; k < 16; k++)
        if (v.f[k] == c.f[k])
            return k;
    return -1;
}
static AI int ISA(vfirst_nan)(VF v) {
    for (int k = 0; k < 16; k++)
        if (v.f[k] != v.f[k])
            return k;
    return -1;
}
#endif

/* ---- functions written once over the vector (every set) ----------------------------- */
#if VEC16_ISA == VEC16_SCALAR && VEC16_X86
/* The cold fallback on x86 (fmaf a library call): one out-of-line copy per function. */
#define VEC16_STEP static OUTLINE __attribute__((unused))
#else
#define VEC16_STEP static AI
#endif

/* Horner's rule by FMA: c[0] + t (c[1] + t (... c[deg])). */
static AI TGT VF ISA(vpoly)(VF t, const float *c, int deg) {
    VF p = ISA(vset1)(c[deg]);
#if VEC16_ISA != VEC16_SCALAR /* straight-line FMAs (GCC kept a loop over the coefficients) */
#pragma GCC unroll 16
#endif
    for (int k = deg - 1; k >= 0; k--)
        p = ISA(vfma)(p, t, ISA(vset1)(c[k]));
    return p;
}

VEC16_STEP TGT VF ISA(vexp)(VF x0) {
    static const float c[6] = {0.5f, 0.16666666f, 0.041666463f, 0.008333569f, 0.0013935078f,
                               0.00019741055f};
    /* below -104 the result is 0 (the least x whose exp is not: -103.972076): such a lane
     * (-inf, a masked logit's) is worked as 0 and its 1 replaced by 0 at the end, for the
     * steps on it would underflow, and x86 takes a microcode assist for each underflowing
     * lane (softmax of logits 90 % -inf ran 5.8x torch's time before) */
    const VF x = ISA(vmin)(ISA(vset1)(89.0f), ISA(vzero_lt)(x0, x0, -104.0f)); /* x last: a NaN stays */
    const VF magic = ISA(vset1)(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    VF kf = ISA(vsub)(ISA(vfma)(x, ISA(vset1)(1.44269504f), magic), magic);
    VF r = ISA(vfma)(kf, ISA(vset1)(-0.693145752f), x);  /* ln2 hi: 12 bits, k r exact */
    r = ISA(vfma)(kf, ISA(vset1)(-1.42860677e-06f), r);  /* ln2 - ln2 hi */
    VF e = ISA(vfma)(ISA(vmul)(r, r), ISA(vpoly)(r, c, 5), r);
    return ISA(vzero_lt)(ISA(vldexp)(ISA(vadd)(e, ISA(vset1)(1.0f)), kf), x0, -104.0f);
}
#undef VEC16_STEP

#endif /* VEC16_ISA */

/* rms_norm.c: RMSNorm on the CPU - the fast kernels (AVX-512, AVX2, scalar, chosen at run
 * time) and the double-precision reference they are tested against, registered in the
 * CPU kernel table as "rms_norm" and "rms_norm_reference".
 *
 * One arithmetic for every path. A row's sum of squares is a fixed tree: element i
 * goes by FMA into partial sum i % 64 inside blocks of NORM_BLOCK elements, each
 * block's 64 partials are added into 64 running totals, and those are folded pairwise
 * (p[j] += p[j + s] for s = 32, 16, ..., 1). 64 lanes are four AVX-512 or eight AVX2
 * registers, so both vector paths add the same numbers in the same order (the scalar
 * fallback keeps the order but does not fuse; see sumsq_scalar_impl). The output is
 * (x * scale) * w with two fp32 roundings. Hence a row's result depends on that row
 * only - not on the thread count, on how many rows a call has, on the variant, or on
 * AVX-512 versus AVX2 - and a variant that cannot get its scratch memory can fall back
 * to another without anyone seeing a difference.
 *
 * (This relies on IEEE evaluation in the written order: never build the core with
 * -ffast-math or -fassociative-math.)
 *
 * On a CPU the three variants of rms_norm.h differ only in memory traffic: ROW reads the row
 * twice in its own dtype (the second time from L1/L2); ON_CHIP keeps the fp32 row in a
 * per-thread scratch for the second pass (half types; fp32 rows are their own scratch);
 * STREAMING writes y with non-temporal stores and does not prefetch the next row, for
 * rows that cannot stay in the caches between the two passes.
 *
 * The file is built with the project's plain flags; the vector code is enabled per
 * function with target attributes and entered only after a CPU check. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/kernel_table.h"
#include "cpu/memory.h"
#include "cpu/simd.h"
#include "ops/norm/rms_norm.h"

/* F32 / F16 / BF16, AI, vec16_load1 / vec16_store1 and <immintrin.h> on x86 */
#include "cpu/vec16.h"
#define NORM_X86 VEC16_X86

/* Elements per reduction block. Blocking keeps each partial's chain of FMAs short
 * (64 per block) so the rounding error of the sum grows with n / NORM_BLOCK, not n / 64,
 * for very long rows. A multiple of 64, so blocks start on a partial-0 element. */
#define NORM_BLOCK 4096

/* A thread gets at least this many elements of work: below it, waking a worker costs
 * more than the rows it would take (a 1 x 4096 call is a few hundred ns of work). */
#ifndef NORM_MIN_ELEMS_PER_THREAD
#define NORM_MIN_ELEMS_PER_THREAD 32768
#endif

/* Outputs at least this big are written with non-temporal stores by ROW and ON_CHIP
 * (STREAMING always uses them): such an output cannot stay in the caches anyway,
 * and bypassing them saves the read-for-ownership of every line of y. Unless the
 * output's pages are not in memory yet (see fresh_output). */
#ifndef NORM_NT_MIN_BYTES
#define NORM_NT_MIN_BYTES ((int64_t)8 << 20)
#endif

/* While a row is written, ROW and ON_CHIP prefetch the next row of x into L2, so its
 * first pass runs from cache instead of stalling on memory (worth ~10% at 2048 x 4096
 * fp32 here). The tuning constants can be overridden with -D for experiments. */
#ifndef NORM_PREFETCH
#define NORM_PREFETCH 1
#endif

/* Rows up to this long use a stack scratch in ON_CHIP (16 KiB); longer ones allocate. */
#define NORM_STACK_SCRATCH 4096

typedef struct norm_job {
    const char *x;
    const char *w;
    char *y;
    int64_t n;
    int64_t x_stride; /* in bytes */
    int64_t y_stride; /* in bytes */
    float eps;
    int dtype;
    int variant;
    int level;
    int nt;       /* non-temporal stores for y */
    int prefetch; /* fetch the next row of x into L2 during the second pass */
} norm_job_t;

/* ---- shared scalar pieces ------------------------------------------------------------ */

/* has_w: no weight, the weight in the rows' dtype, or its fp32 copy (wide[], n <= NORM_WIDE_MAX) */
enum { W_NONE = 0, W_DT = 1, W_WIDE = 2 };
#define NORM_WIDE_MAX 4096
#define W_DTYPE(has_w, dt) ((has_w) == W_WIDE ? F32 : (dt))

static inline int w_mode(const norm_job_t *j, int64_t r0, int64_t r1) {
    if (j->w == NULL)
        return W_NONE;
    return j->dtype != F32 && j->n <= NORM_WIDE_MAX && r1 - r0 >= 2 ? W_WIDE : W_DT;
}

/* The scale is formed in double from the fp32 sum: it costs nothing per row and keeps
 * the division and square root from adding fp32 error of their own. */
static inline float rms_scale(float sumsq, int64_t n, float eps) {
    double ms = (double)sumsq / (double)n + (double)eps;
    return (float)(1.0 / sqrt(ms));
}

/* p[j] += p[j + s] for s = 32 .. 1: the fixed tree every path ends with. */
static float fold64(float *p) {
    for (int s = 32; s >= 1; s /= 2)
        for (int j = 0; j < s; j++)
            p[j] += p[j + s];
    return p[0];
}

/* ---- scalar path ----------------------------------------------------------------------- */

/* The same partials and tree as the vector paths, but with a separate multiply and add:
 * the scalar path runs on CPUs without FMA, where fmaf() is a slow library routine,
 * and a plain 64-wide loop lets the compiler vectorise with the baseline ISA. Its
 * results can therefore differ from the vector paths' in the last bit; within the path,
 * the order is as fixed as theirs. */
static AI float sumsq_scalar_impl(const void *x, int64_t n, int dt, float *scr) {
    float outer[64] = {0};
    for (int64_t b = 0; b < n; b += NORM_BLOCK) {
        int64_t e = n - b < NORM_BLOCK ? n : b + NORM_BLOCK;
        float inner[64] = {0};
        for (int64_t i = b; i < e; i += 64) {
            float v[64];
            int m = e - i < 64 ? (int)(e - i) : 64;
            for (int k = 0; k < m; k++)
                v[k] = vec16_load1(x, i + k, dt);
            for (int k = m; k < 64; k++)
                v[k] = 0.0f;
            if (scr != NULL)
                memcpy(scr + i, v, (size_t)m * sizeof(float));
            for (int k = 0; k < 64; k++)
                inner[k] += v[k] * v[k];
        }
        for (int j = 0; j < 64; j++)
            outer[j] += inner[j];
    }
    return fold64(outer);
}

/* y[i] = (src[i] * s) * w[i] for i in [b, e), element by element: the scalar path's whole
 * output, and the AVX2 path's head and tail (which thus compute exactly what a vector lane
 * would). */
static AI void apply_range(const void *src, int sdt, const void *w, void *y, int dt, int64_t b,
                           int64_t e, float s, int has_w) {
    for (int64_t i = b; i < e; i++) {
        float v = vec16_load1(src, i, sdt) * s;
        if (has_w)
            v *= vec16_load1(w, i, W_DTYPE(has_w, dt));
        vec16_store1(y, i, dt, v);
    }
}

/* The same signature as the vector paths' apply, for NORM_ROWS; nt and next go unused. */
static AI void apply_scalar_impl(const void *src, int sdt, const void *w, void *y, int dt,
                                 int64_t n, float s, int nt, int has_w, const char *next) {
    (void)nt;
    (void)next;
    apply_range(src, sdt, w, y, dt, 0, n, s, has_w);
}

/* The row loop every path shares, in the body of a rows_*_impl(j, r0, r1, scr, dt, has_w):
 * where has_w is W_WIDE, first the weight's fp32 copy (SUMSQ over the weight writes it into
 * its scratch; the sum goes unused), which APPLY then reads in place of j->w; then for each
 * row its sum of squares (kept in scr when there is one), then its output from scr or from
 * x again. SUMSQ and APPLY are called with a constant scratch (NULL or not) and source
 * dtype in each branch, so each inlines into a copy without tests in its loops. */
#define NORM_ROWS(SUMSQ, APPLY)                                                                \
    float wide[NORM_WIDE_MAX];                                                                 \
    const void *wp = j->w;                                                                     \
    if (has_w == W_WIDE) {                                                                     \
        (void)SUMSQ(j->w, j->n, dt, wide);                                                     \
        wp = wide;                                                                             \
    }                                                                                          \
    for (int64_t r = r0; r < r1; r++) {                                                        \
        const char *xr = j->x + r * j->x_stride;                                               \
        char *yr = j->y + r * j->y_stride;                                                     \
        const char *next = r + 1 < r1 && j->prefetch ? xr + j->x_stride : NULL;                \
        if (scr != NULL) {                                                                     \
            float s = rms_scale(SUMSQ(xr, j->n, dt, scr), j->n, j->eps);                       \
            APPLY(scr, F32, wp, yr, dt, j->n, s, j->nt, has_w, next);                          \
        } else {                                                                               \
            float s = rms_scale(SUMSQ(xr, j->n, dt, NULL), j->n, j->eps);                      \
            APPLY(xr, dt, wp, yr, dt, j->n, s, j->nt, has_w, next);                            \
        }                                                                                      \
    }

/* One specialised copy of IMPL per (dtype, weight mode), so the inner loops carry no
 * tests. A 16-bit weight is widened once per range into an fp32 copy (W_WIDE) where the
 * range has rows enough to repay it: each row then reads the weight without converting
 * it, the same values (widening is exact), so the same bits. */
#define NORM_SPECIALISE(IMPL, j, r0, r1, scr)                                                  \
    switch ((j)->dtype * 3 + w_mode(j, r0, r1)) {                                              \
    case F32 * 3 + W_NONE: IMPL(j, r0, r1, scr, F32, W_NONE); break;                           \
    case F32 * 3 + W_DT: IMPL(j, r0, r1, scr, F32, W_DT); break;                               \
    case F16 * 3 + W_NONE: IMPL(j, r0, r1, scr, F16, W_NONE); break;                           \
    case F16 * 3 + W_DT: IMPL(j, r0, r1, scr, F16, W_DT); break;                               \
    case F16 * 3 + W_WIDE: IMPL(j, r0, r1, scr, F16, W_WIDE); break;                           \
    case BF16 * 3 + W_NONE: IMPL(j, r0, r1, scr, BF16, W_NONE); break;                         \
    case BF16 * 3 + W_DT: IMPL(j, r0, r1, scr, BF16, W_DT); break;                             \
    default: IMPL(j, r0, r1, scr, BF16, W_WIDE); break;                                        \
    }

static AI void rows_scalar_impl(const norm_job_t *j, int64_t r0, int64_t r1, float *scr, int dt,
                                int has_w) {
    NORM_ROWS(sumsq_scalar_impl, apply_scalar_impl)
}

static void rows_scalar(const norm_job_t *j, int64_t r0, int64_t r1, float *scr) {
    NORM_SPECIALISE(rows_scalar_impl, j, r0, r1, scr)
}

#if NORM_X86
/* ---- AVX-512 path ---------------------------------------------------------------------- */

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

static AI T512 __m512 widen16_512(__m256i h, int dt) {
    if (dt == F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static AI T512 __m512 ld_512(const void *p, int64_t i, int dt) {
    if (dt == F32)
        return _mm512_loadu_ps((const float *)p + i);
    return widen16_512(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)), dt);
}

/* 32 elements at once. bf16 widens with one word permute per 16 elements, placing each
 * value in the high half of a zeroed 32-bit lane, which is exactly its fp32 pattern. */
static AI T512 void ld2_512(const void *p, int64_t i, int dt, __m512 *lo, __m512 *hi) {
    if (dt == BF16) {
        const __m512i idx_lo = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0,
                                                7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
        const __m512i idx_hi = _mm512_set_epi16(31, 0, 30, 0, 29, 0, 28, 0, 27, 0, 26, 0, 25, 0, 24, 0,
                                                23, 0, 22, 0, 21, 0, 20, 0, 19, 0, 18, 0, 17, 0, 16, 0);
        __m512i v = _mm512_loadu_si512((const uint16_t *)p + i);
        *lo = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, idx_lo, v));
        *hi = _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, idx_hi, v));
    } else {
        *lo = ld_512(p, i, dt);
        *hi = ld_512(p, i + 16, dt);
    }
}

/* Masked-off lanes read as +0, which leaves a sum of squares unchanged. */
static AI T512 __m512 ldm_512(const void *p, int64_t i, int dt, __mmask16 m) {
    if (dt == F32)
        return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    return widen16_512(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i), dt);
}

/* fp32 patterns whose high halves are the bf16 results, rounded to nearest even by
 * integer arithmetic. (AVX512_BF16's converts read subnormals as 0, which the scalar
 * conversion does not: bf16_cvt2_512 uses them only where no lane is one.) A NaN keeps
 * its top bits and gets the quiet bit. */
static AI T512 __m512i bf16_round_512(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
}

static AI T512 __m256i narrow16_512(__m512 v, int dt) {
    if (dt == F16)
        return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bf16_round_512(v), 16));
}

/* mode 0: plain store, 1: non-temporal (the address is then 64-byte aligned). */
static AI T512 void st_512(void *p, int64_t i, int dt, __m512 v, int mode) {
    if (dt == F32) {
        if (mode)
            _mm512_stream_ps((float *)p + i, v);
        else
            _mm512_storeu_ps((float *)p + i, v);
        return;
    }
    __m256i h = narrow16_512(v, dt);
    __m256i *q = (__m256i *)((uint16_t *)p + i);
    if (mode)
        _mm256_stream_si256(q, h);
    else
        _mm256_storeu_si256(q, h);
}

/* lo and hi rounded to bf16 into *h (lo's words first) by AVX512_BF16's VCVTNE2PS2BF16,
 * where the CPU has it (cpu/simd.h) and neither holds a subnormal, the one input it rounds
 * otherwise than bf16_round_512 (it reads them as 0); returns 0, *h unset, elsewhere. Asm,
 * as cpu/vec16.h's narrow: no other code of this target may use the instruction. */
static AI T512 int bf16_cvt2_512(__m512 lo, __m512 hi, __m512i *h) {
    if (!atomic_load_explicit(&tileops_cpu_bf16_cvt, memory_order_relaxed))
        return 0;
    const __m512i ex = _mm512_set1_epi32(0x7f800000), man = _mm512_set1_epi32(0x007fffff);
    const __m512i ul = _mm512_castps_si512(lo), uh = _mm512_castps_si512(hi);
    if (_mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(ul, ex), ul, man) |
        _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(uh, ex), uh, man))
        return 0;
    __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(*h) : "v"(hi), "v"(lo));
    return 1;
}

/* 32 elements at once: one 64-byte store for the 16-bit types (a whole line for the
 * non-temporal path), and bf16 narrows with one two-source convert (bf16_cvt2_512) or
 * a single two-source word permute. */
static AI T512 void st2_512(void *p, int64_t i, int dt, __m512 lo, __m512 hi, int mode) {
    if (dt == F32) {
        st_512(p, i, dt, lo, mode);
        st_512(p, i + 16, dt, hi, mode);
        return;
    }
    __m512i h;
    if (dt == F16) {
        h = _mm512_inserti64x4(_mm512_castsi256_si512(narrow16_512(lo, dt)), narrow16_512(hi, dt), 1);
    } else if (bf16_cvt2_512(lo, hi, &h)) {
    } else {
        const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,
                                             31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
        h = _mm512_permutex2var_epi16(bf16_round_512(lo), odd, bf16_round_512(hi));
    }
    if (mode)
        _mm512_stream_si512((void *)((uint16_t *)p + i), h);
    else
        _mm512_storeu_si512((void *)((uint16_t *)p + i), h);
}

static AI T512 void stm_512(void *p, int64_t i, int dt, __m512 v, __mmask16 m) {
    if (dt == F32)
        _mm512_mask_storeu_ps((float *)p + i, m, v);
    else
        _mm256_mask_storeu_epi16((uint16_t *)p + i, m, narrow16_512(v, dt));
}

static AI T512 __mmask16 mask_first(int64_t k) {
    return k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << k) - 1u);
}

static AI T512 float sumsq_512(const void *x, int64_t n, int dt, float *scr) {
    __m512 o0 = _mm512_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
    for (int64_t b = 0; b < n; b += NORM_BLOCK) {
        int64_t e = n - b < NORM_BLOCK ? n : b + NORM_BLOCK;
        /* Four accumulators: four FMA chains in flight cover the FMA latency. */
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        int64_t i = b;
        for (; i + 64 <= e; i += 64) {
            __m512 v0, v1, v2, v3;
            ld2_512(x, i, dt, &v0, &v1);
            ld2_512(x, i + 32, dt, &v2, &v3);
            if (scr != NULL) {
                _mm512_storeu_ps(scr + i, v0);
                _mm512_storeu_ps(scr + i + 16, v1);
                _mm512_storeu_ps(scr + i + 32, v2);
                _mm512_storeu_ps(scr + i + 48, v3);
            }
            a0 = _mm512_fmadd_ps(v0, v0, a0);
            a1 = _mm512_fmadd_ps(v1, v1, a1);
            a2 = _mm512_fmadd_ps(v2, v2, a2);
            a3 = _mm512_fmadd_ps(v3, v3, a3);
        }
        if (i < e) {
            int64_t r = e - i; /* 1..63: same lanes as a full step, the rest zero */
#define NORM_TAIL512(K, A)                                                                     \
    if (r > 16 * (K)) {                                                                        \
        __mmask16 m_ = mask_first(r - 16 * (K));                                               \
        __m512 v_ = ldm_512(x, i + 16 * (K), dt, m_);                                          \
        if (scr != NULL)                                                                       \
            _mm512_mask_storeu_ps(scr + i + 16 * (K), m_, v_);                                 \
        A = _mm512_fmadd_ps(v_, v_, A);                                                        \
    }
            NORM_TAIL512(0, a0)
            NORM_TAIL512(1, a1)
            NORM_TAIL512(2, a2)
            NORM_TAIL512(3, a3)
#undef NORM_TAIL512
        }
        o0 = _mm512_add_ps(o0, a0);
        o1 = _mm512_add_ps(o1, a1);
        o2 = _mm512_add_ps(o2, a2);
        o3 = _mm512_add_ps(o3, a3);
    }
    /* fold64 on registers: o0..o3 hold partials 0-15, 16-31, 32-47, 48-63. */
    __m512 s = _mm512_add_ps(_mm512_add_ps(o0, o2), _mm512_add_ps(o1, o3));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

static AI T512 void norm2_512(const void *src, int sdt, const void *w, int dt, int64_t i,
                              __m512 vs, int has_w, __m512 *lo, __m512 *hi) {
    ld2_512(src, i, sdt, lo, hi);
    *lo = _mm512_mul_ps(*lo, vs);
    *hi = _mm512_mul_ps(*hi, vs);
    if (has_w) {
        __m512 wl, wh;
        ld2_512(w, i, W_DTYPE(has_w, dt), &wl, &wh);
        *lo = _mm512_mul_ps(*lo, wl);
        *hi = _mm512_mul_ps(*hi, wh);
    }
}

static AI T512 void normm_512(const void *src, int sdt, const void *w, void *y, int dt,
                              int64_t i, __m512 vs, int has_w, __mmask16 m) {
    __m512 v = _mm512_mul_ps(ldm_512(src, i, sdt, m), vs);
    if (has_w)
        v = _mm512_mul_ps(v, ldm_512(w, i, W_DTYPE(has_w, dt), m));
    stm_512(y, i, dt, v, m);
}

/* The last < 32 elements (or a head before alignment): masked, 16 at a time. */
static AI T512 void apply_part_512(const void *src, int sdt, const void *w, void *y, int dt,
                                   int64_t b, int64_t e, __m512 vs, int has_w) {
    for (int64_t i = b; i < e; i += 16)
        normm_512(src, sdt, w, y, dt, i, vs, has_w, mask_first(e - i));
}

/* next: the following row of x, prefetched into L2 while this one is written, so its
 * first pass does not wait on memory; NULL for none. */
static AI T512 void apply_512(const void *src, int sdt, const void *w, void *y, int dt,
                              int64_t n, float s, int nt, int has_w, const char *next) {
    __m512 vs = _mm512_set1_ps(s);
    int64_t i = 0;
    size_t es = dt == F32 ? 4 : 2;
    uintptr_t addr = (uintptr_t)y;
    __m512 v0, v1, v2, v3;
    if (nt && addr % es == 0) {
        /* Plain stores up to the first cache-line boundary, then whole lines. */
        int64_t head = (int64_t)(((64 - addr % 64) % 64) / es);
        if (head > n)
            head = n;
        apply_part_512(src, sdt, w, y, dt, 0, head, vs, has_w);
        for (i = head; i + 32 <= n; i += 32) {
            if (next != NULL)
                for (size_t k = 0; k < 32 * es; k += 64)
                    _mm_prefetch(next + (size_t)i * es + k, _MM_HINT_T1);
            norm2_512(src, sdt, w, dt, i, vs, has_w, &v0, &v1);
            st2_512(y, i, dt, v0, v1, 1);
        }
    }
    for (; i + 64 <= n; i += 64) {
        if (next != NULL)
            for (size_t k = 0; k < 64 * es; k += 64)
                _mm_prefetch(next + (size_t)i * es + k, _MM_HINT_T1);
        norm2_512(src, sdt, w, dt, i, vs, has_w, &v0, &v1);
        norm2_512(src, sdt, w, dt, i + 32, vs, has_w, &v2, &v3);
        st2_512(y, i, dt, v0, v1, 0);
        st2_512(y, i + 32, dt, v2, v3, 0);
    }
    for (; i + 32 <= n; i += 32) {
        norm2_512(src, sdt, w, dt, i, vs, has_w, &v0, &v1);
        st2_512(y, i, dt, v0, v1, 0);
    }
    apply_part_512(src, sdt, w, y, dt, i, n, vs, has_w);
}

static AI T512 void rows_512_impl(const norm_job_t *j, int64_t r0, int64_t r1, float *scr,
                                  int dt, int has_w) {
    NORM_ROWS(sumsq_512, apply_512)
    if (j->nt) /* non-temporal stores are weakly ordered: publish them before returning */
        _mm_sfence();
}

static T512 void rows_512(const norm_job_t *j, int64_t r0, int64_t r1, float *scr) {
    NORM_SPECIALISE(rows_512_impl, j, r0, r1, scr)
}

/* ---- AVX2 path ------------------------------------------------------------------------- */

#define T256 __attribute__((target("avx2,fma,f16c")))

static AI T256 __m256 ld_256(const void *p, int64_t i, int dt) {
    if (dt == F32)
        return _mm256_loadu_ps((const float *)p + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (dt == F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Rounded to nearest even by integer arithmetic, with no NaN rule: every NaN this kernel
 * stores is quiet with its low 16 bits zero (x and the weight are of this 16-bit type, the
 * scale is made from them, and a product of NaNs keeps one operand's NaN, quieted; one made
 * afresh is 0xffc00000), so the rounding add cannot carry out of the low half and the top
 * half is the NaN rule's (u | quiet bit) >> 16. */
static AI T256 __m128i bf16_narrow_256(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    /* Every lane is now in [0, 0xffff], so unsigned saturation is a plain narrowing. */
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static AI T256 __m128i narrow16_256(__m256 v, int dt) {
    if (dt == F16)
        return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return bf16_narrow_256(v);
}

static AI T256 void st_256(void *p, int64_t i, int dt, __m256 v) {
    if (dt == F32)
        _mm256_storeu_ps((float *)p + i, v);
    else
        _mm_storeu_si128((__m128i *)((uint16_t *)p + i), narrow16_256(v, dt));
}

/* 16 elements at once, so the 16-bit types also go out in 32-byte stores: 16-byte
 * non-temporal stores measured twice as slow for a large output. mode 1: non-temporal
 * (the address is then 32-byte aligned). */
static AI T256 void st2_256(void *p, int64_t i, int dt, __m256 lo, __m256 hi, int mode) {
    if (dt == F32) {
        if (mode) {
            _mm256_stream_ps((float *)p + i, lo);
            _mm256_stream_ps((float *)p + i + 8, hi);
        } else {
            _mm256_storeu_ps((float *)p + i, lo);
            _mm256_storeu_ps((float *)p + i + 8, hi);
        }
        return;
    }
    __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(narrow16_256(lo, dt)),
                                        narrow16_256(hi, dt), 1);
    __m256i *q = (__m256i *)((uint16_t *)p + i);
    if (mode)
        _mm256_stream_si256(q, h);
    else
        _mm256_storeu_si256(q, h);
}

static AI T256 float sumsq_256(const void *x, int64_t n, int dt, float *scr) {
    __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0, o4 = o0, o5 = o0, o6 = o0,
           o7 = o0;
    for (int64_t b = 0; b < n; b += NORM_BLOCK) {
        int64_t e = n - b < NORM_BLOCK ? n : b + NORM_BLOCK;
        /* Eight 8-lane accumulators: the same 64 partials as the AVX-512 path, and
         * enough independent chains for two FMA pipes. */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
               a6 = a0, a7 = a0;
        int64_t i = b;
#define NORM_STEP256(K, A, V)                                                                  \
    do {                                                                                       \
        __m256 v_ = (V);                                                                       \
        A = _mm256_fmadd_ps(v_, v_, A);                                                        \
        if (scr != NULL)                                                                       \
            _mm256_storeu_ps(scr + i + 8 * (K), v_);                                           \
    } while (0)
#define NORM_ROUND256(LOAD)                                                                    \
    do {                                                                                       \
        NORM_STEP256(0, a0, LOAD(0));                                                          \
        NORM_STEP256(1, a1, LOAD(1));                                                          \
        NORM_STEP256(2, a2, LOAD(2));                                                          \
        NORM_STEP256(3, a3, LOAD(3));                                                          \
        NORM_STEP256(4, a4, LOAD(4));                                                          \
        NORM_STEP256(5, a5, LOAD(5));                                                          \
        NORM_STEP256(6, a6, LOAD(6));                                                          \
        NORM_STEP256(7, a7, LOAD(7));                                                          \
    } while (0)
#define NORM_LD_X(K) ld_256(x, i + 8 * (K), dt)
#define NORM_LD_TAIL(K) _mm256_load_ps(tail + 8 * (K))
        for (; i + 64 <= e; i += 64)
            NORM_ROUND256(NORM_LD_X);
        if (i < e) {
            /* The last < 64 elements go through a zero-padded copy: zeros add nothing,
             * so the lanes match a full step. The scratch gets only the real ones. */
            _Alignas(32) float tail[64];
            int64_t r = e - i;
            for (int64_t k = 0; k < 64; k++)
                tail[k] = k < r ? vec16_load1(x, i + k, dt) : 0.0f;
            float *keep = scr;
            scr = NULL;
            NORM_ROUND256(NORM_LD_TAIL);
            scr = keep;
            if (scr != NULL)
                memcpy(scr + i, tail, (size_t)r * sizeof(float));
        }
#undef NORM_LD_TAIL
#undef NORM_LD_X
#undef NORM_ROUND256
#undef NORM_STEP256
        o0 = _mm256_add_ps(o0, a0);
        o1 = _mm256_add_ps(o1, a1);
        o2 = _mm256_add_ps(o2, a2);
        o3 = _mm256_add_ps(o3, a3);
        o4 = _mm256_add_ps(o4, a4);
        o5 = _mm256_add_ps(o5, a5);
        o6 = _mm256_add_ps(o6, a6);
        o7 = _mm256_add_ps(o7, a7);
    }
    /* fold64: o_k holds partials 8k..8k+7. */
    o0 = _mm256_add_ps(o0, o4);
    o1 = _mm256_add_ps(o1, o5);
    o2 = _mm256_add_ps(o2, o6);
    o3 = _mm256_add_ps(o3, o7);
    o0 = _mm256_add_ps(o0, o2);
    o1 = _mm256_add_ps(o1, o3);
    o0 = _mm256_add_ps(o0, o1);
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(o0), _mm256_extractf128_ps(o0, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

static AI T256 __m256 norm_256(const void *src, int sdt, const void *w, int dt, int64_t i,
                               __m256 vs, int has_w) {
    __m256 v = _mm256_mul_ps(ld_256(src, i, sdt), vs);
    if (has_w)
        v = _mm256_mul_ps(v, ld_256(w, i, W_DTYPE(has_w, dt)));
    return v;
}

static AI T256 void apply_256(const void *src, int sdt, const void *w, void *y, int dt,
                              int64_t n, float s, int nt, int has_w, const char *next) {
    __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    size_t es = dt == F32 ? 4 : 2;
    uintptr_t addr = (uintptr_t)y;
    if (nt && addr % es == 0) {
        int64_t head = (int64_t)(((64 - addr % 64) % 64) / es);
        if (head > n)
            head = n;
        apply_range(src, sdt, w, y, dt, 0, head, s, has_w);
        for (i = head; i + 16 <= n; i += 16) {
            if (next != NULL)
                for (size_t k = 0; k < 16 * es; k += 64)
                    _mm_prefetch(next + (size_t)i * es + k, _MM_HINT_T1);
            st2_256(y, i, dt, norm_256(src, sdt, w, dt, i, vs, has_w),
                    norm_256(src, sdt, w, dt, i + 8, vs, has_w), 1);
        }
    }
    for (; i + 32 <= n; i += 32) {
        if (next != NULL)
            for (size_t k = 0; k < 32 * es; k += 64)
                _mm_prefetch(next + (size_t)i * es + k, _MM_HINT_T1);
        __m256 v0 = norm_256(src, sdt, w, dt, i, vs, has_w);
        __m256 v1 = norm_256(src, sdt, w, dt, i + 8, vs, has_w);
        __m256 v2 = norm_256(src, sdt, w, dt, i + 16, vs, has_w);
        __m256 v3 = norm_256(src, sdt, w, dt, i + 24, vs, has_w);
        st2_256(y, i, dt, v0, v1, 0);
        st2_256(y, i + 16, dt, v2, v3, 0);
    }
    for (; i + 8 <= n; i += 8)
        st_256(y, i, dt, norm_256(src, sdt, w, dt, i, vs, has_w));
    apply_range(src, sdt, w, y, dt, i, n, s, has_w);
}

static AI T256 void rows_256_impl(const norm_job_t *j, int64_t r0, int64_t r1, float *scr,
                                  int dt, int has_w) {
    NORM_ROWS(sumsq_256, apply_256)
    if (j->nt)
        _mm_sfence();
}

static T256 void rows_256(const norm_job_t *j, int64_t r0, int64_t r1, float *scr) {
    NORM_SPECIALISE(rows_256_impl, j, r0, r1, scr)
}
#endif /* NORM_X86 */

/* ---- entry points ---------------------------------------------------------------------- */

static tileops_status_t check_args(const tileops_rms_norm_args_t *a) {
    if (a == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "rms_norm: args must be non-NULL, got NULL");
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d",
                            a->dtype);
    if (a->rows < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "rms_norm: rows must be >= 0, got %lld",
                            (long long)a->rows);
    if (a->n < 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "rms_norm: n must be >= 1, got %lld",
                            (long long)a->n);
    if (a->rows == 0) /* nothing is read or written, so pointers and strides do not matter */
        return TILEOPS_OK;
    if (a->x == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: x must be non-NULL when rows > 0 (rows = %lld), got NULL",
                            (long long)a->rows);
    if (a->y == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: y must be non-NULL when rows > 0 (rows = %lld), got NULL",
                            (long long)a->rows);
    if (a->x_row_stride < a->n)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: x_row_stride must be >= n (%lld), got %lld",
                            (long long)a->n, (long long)a->x_row_stride);
    if (a->y_row_stride < a->n)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: y_row_stride must be >= n (%lld), got %lld",
                            (long long)a->n, (long long)a->y_row_stride);
    /* Byte offsets of the last row must be representable. */
    size_t es = tileops_dtype_size(a->dtype);
    int64_t big = a->x_row_stride > a->y_row_stride ? a->x_row_stride : a->y_row_stride;
    if (big > INT64_MAX / (int64_t)es / a->rows)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: rows * row_stride must fit in int64 bytes, got rows = %lld, "
                            "row_stride = %lld",
                            (long long)a->rows, (long long)big);
    /* The extents that follow from the sizes: what C can check of a raw address
     * (cpu/memory.h); that the memory is there is the Python layer's to check. */
    const int64_t e = (int64_t)es;
    const struct {
        const char *name;
        const void *p;
        int64_t bytes;
    } bufs[] = {{"x", a->x, ((a->rows - 1) * a->x_row_stride + a->n) * e},
                {"weight", a->weight, a->n * e},
                {"y", a->y, ((a->rows - 1) * a->y_row_stride + a->n) * e}};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        const char *problem =
            bufs[i].p == NULL ? NULL : tileops_cpu_extent_problem(bufs[i].p, bufs[i].bytes, e);
        if (problem != NULL)
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                                "rms_norm: %s (address %p, %lld bytes) %s", bufs[i].name, bufs[i].p,
                                (long long)bufs[i].bytes, problem);
    }
    return TILEOPS_OK;
}

static void norm_range(void *ctx, int64_t r0, int64_t r1) {
    const norm_job_t *j = ctx;
    float *scr = NULL;
    float *heap = NULL;
    _Alignas(64) float stack_scr[NORM_STACK_SCRATCH];
    if (j->variant == TILEOPS_RMS_NORM_ON_CHIP && j->dtype != F32) {
        if (j->n <= NORM_STACK_SCRATCH) {
            scr = stack_scr;
        } else if ((uint64_t)j->n <= (SIZE_MAX - 64) / sizeof(float)) {
            size_t bytes = ((size_t)j->n * sizeof(float) + 63) & ~(size_t)63;
            heap = aligned_alloc(64, bytes);
            /* Without memory, fall back to re-reading x (the ROW scheme): the
             * arithmetic is the same, so the output is too. */
            scr = heap;
        }
    }
    switch (j->level) {
#if NORM_X86
    case TILEOPS_SIMD_AVX512: rows_512(j, r0, r1, scr); break;
    case TILEOPS_SIMD_AVX2: rows_256(j, r0, r1, scr); break;
#endif
    default: rows_scalar(j, r0, r1, scr); break;
    }
    free(heap);
}

/* Whether an output's pages are new, not in memory yet (probed at the first, middle and
 * last byte of its extent with mincore; where it cannot tell, it says no). If so, asks for
 * transparent huge pages (MADV_HUGEPAGE) over the extent's 2 MiB-aligned interior before
 * the first write faults them in.
 *
 * A new output of 32 MiB or more is a fresh mapping each call (glibc serves it with mmap).
 * Its pages fault in as they are first written and the kernel zeroes each one through the
 * caches: one fault per 4 KiB, and non-temporal stores would then write every line to
 * memory a second time, so the caller uses plain stores into a fresh output. The huge-page
 * advice is what torch's CPU allocator gives with THP_MEM_ALLOC_ENABLE=1; it moves no data,
 * and where the kernel has no huge page to give (or THP is off) the faults take small pages.
 * Neither changes the result, only the time. Measured on a 2-core EPYC (THP "madvise"),
 * into a new fp32 output, separate builds alternating, ms: 2048 x 4096 13.1-15.5 with
 * non-temporal stores, 11.7-13.6 with plain ones, 4.4-5.8 with huge pages as well;
 * 512 x 65536 51-52 -> 17-18 and 64 x 524288 59-61 -> 19-21 with huge pages. Into a
 * reused output non-temporal stores stay faster (0.85-1.4 against 2.2-2.3 at 2048 x 4096);
 * STREAMING keeps them for a new output too (64 x 524288: 44-48 against 51 without). */
static int fresh_output(void *y, int64_t rows, int64_t n, int64_t y_row_stride, int64_t es) {
    if (y_row_stride > (INT64_MAX / es - n) / rows)
        return 0;
    return tileops_cpu_fresh_output(y, ((rows - 1) * y_row_stride + n) * es, 0);
}

tileops_status_t tileops_cpu_rms_norm(const tileops_rms_norm_args_t *args, int variant) {
    tileops_status_t st = check_args(args);
    if (st != TILEOPS_OK)
        return st;
    if (variant < TILEOPS_RMS_NORM_ROW || variant > TILEOPS_RMS_NORM_STREAMING)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "rms_norm: variant must be 0 (ROW), 1 (ON_CHIP) or 2 (STREAMING), got %d",
                            variant);
    if (args->rows == 0)
        return TILEOPS_OK;
    int64_t es = (int64_t)tileops_dtype_size(args->dtype);
    norm_job_t job = {
        .x = args->x,
        .w = args->weight,
        .y = args->y,
        .n = args->n,
        .x_stride = args->x_row_stride * es,
        .y_stride = args->y_row_stride * es,
        .eps = args->eps,
        .dtype = args->dtype,
        .variant = variant,
        .level = tileops_cpu_simd_active(),
    };
    int64_t out_bytes = args->rows > INT64_MAX / es / args->n ? INT64_MAX : args->rows * args->n * es;
    int large = out_bytes >= NORM_NT_MIN_BYTES;
    /* a large output not yet in memory: huge pages for its first touch, plain stores */
    int fresh = large && fresh_output(args->y, args->rows, args->n, args->y_row_stride, es);
    job.nt = variant == TILEOPS_RMS_NORM_STREAMING || (large && !fresh);
    /* A STREAMING row does not fit in the caches: fetching the next one early would only
     * evict the current row before its second pass. */
    job.prefetch = NORM_PREFETCH && variant != TILEOPS_RMS_NORM_STREAMING;
    /* fp16 rows that come from cache run faster through the AVX2 code on the CPUs
     * tileops_cpu_simd_f16_prefers_avx2 marks; a large output from memory does not (2048 x 4096: 0.9 ms AVX2
     * vs 0.75 ms AVX-512). Both paths give the same bits, so this size-dependent choice
     * keeps batch invariance. A forced level (tests) is taken literally. */
    if (job.level == TILEOPS_SIMD_AVX512 && job.dtype == F16 && !large &&
        variant != TILEOPS_RMS_NORM_STREAMING &&
        !tileops_cpu_simd_overridden() && tileops_cpu_simd_f16_prefers_avx2())
        job.level = TILEOPS_SIMD_AVX2;
    int64_t min_rows = (NORM_MIN_ELEMS_PER_THREAD + args->n - 1) / args->n;
    tileops_cpu_parallel_for(args->rows, min_rows, norm_range, &job);
    return TILEOPS_OK;
}

/* ---- reference ------------------------------------------------------------------------- */

/* Rounds a double to the float nearest it towards zero, with the last bit set when
 * inexact ("round to odd"). Rounding that float to a 16-bit type then gives the correctly
 * rounded result of the double itself: a float has enough extra bits that the two
 * roundings cannot combine into a wrong tie. */
static float round_to_odd(double d) {
    float f = (float)d;
    if (d == d && (double)f != d) {
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        if (fabs((double)f) > fabs(d))
            u -= 1; /* one step towards zero, also from infinity to FLT_MAX */
        u |= 1u;
        memcpy(&f, &u, sizeof f);
    }
    return f;
}

static void store_double(void *p, int64_t i, int dt, double v) {
    if (dt == F16)
        ((uint16_t *)p)[i] = tileops_f32_to_f16(round_to_odd(v));
    else if (dt == BF16)
        ((uint16_t *)p)[i] = tileops_f32_to_bf16(round_to_odd(v));
    else
        ((float *)p)[i] = (float)v;
}

tileops_status_t tileops_cpu_rms_norm_reference(const tileops_rms_norm_args_t *args) {
    tileops_status_t st = check_args(args);
    if (st != TILEOPS_OK)
        return st;
    int dt = args->dtype;
    int64_t es = (int64_t)tileops_dtype_size(dt);
    int64_t n = args->n;
    for (int64_t r = 0; r < args->rows; r++) {
        const char *x = (const char *)args->x + r * args->x_row_stride * es;
        char *y = (char *)args->y + r * args->y_row_stride * es;
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double v = vec16_load1(x, i, dt);
            ss += v * v;
        }
        double scale = 1.0 / sqrt(ss / (double)n + (double)args->eps);
        for (int64_t i = 0; i < n; i++) {
            double v = (double)vec16_load1(x, i, dt) * scale;
            if (args->weight != NULL)
                v *= vec16_load1(args->weight, i, dt);
            store_double(y, i, dt, v);
        }
    }
    return TILEOPS_OK;
}

/* ---- kernel table ---------------------------------------------------------------------- */

/* (x, weight, y, rows, n, x_row_stride, y_row_stride, eps, dtype, variant) */
#define RMS_NORM_FORMAT "pppqqqqfii"

static void unpack(const tileops_arg_t *a, tileops_rms_norm_args_t *r) {
    r->x = (const void *)a[0].p;
    r->weight = (const void *)a[1].p;
    r->y = (void *)a[2].p;
    r->rows = a[3].q;
    r->n = a[4].q;
    r->x_row_stride = a[5].q;
    r->y_row_stride = a[6].q;
    r->eps = a[7].f;
    r->dtype = a[8].i;
}

static tileops_status_t rms_norm_entry(const tileops_arg_t *a) {
    tileops_rms_norm_args_t r;
    unpack(a, &r);
    return tileops_cpu_rms_norm(&r, a[9].i);
}

/* Same arguments as "rms_norm" so a test swaps one name for the other; the variant is
 * ignored. */
static tileops_status_t rms_norm_reference_entry(const tileops_arg_t *a) {
    tileops_rms_norm_args_t r;
    unpack(a, &r);
    return tileops_cpu_rms_norm_reference(&r);
}

static const tileops_cpu_kernel_t rms_norm_kernel = {"rms_norm", RMS_NORM_FORMAT, rms_norm_entry};
static const tileops_cpu_kernel_t rms_norm_reference_kernel = {"rms_norm_reference",
                                                               RMS_NORM_FORMAT,
                                                               rms_norm_reference_entry};
TILEOPS_CPU_KERNEL(rms_norm_kernel)
TILEOPS_CPU_KERNEL(rms_norm_reference_kernel)

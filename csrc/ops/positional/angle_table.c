/* angle_table.c: the driver of the sine / cosine tables (angle_table.h): the argument
 * checks, the inverse frequencies (once per call), the rows spread over the core's pool,
 * and tileops_sincos (tables.cuh) four or eight angles at a time with AVX2 or AVX-512: the
 * same operations in the same order as the scalar text, so every level gives the same
 * bits (tests/c/test_cpu_positional.c). The vector text is written once, at the end of
 * this file, which includes itself once per instruction set (TABLE_ISA 1: AVX2 + FMA,
 * 2: AVX-512). */
#ifndef TABLE_ISA /* ---- the first pass: everything but the vector text ---- */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/cpu.h"
#include "cpu/simd.h"
#include "ops/positional/angle_table.h"
#include "ops/positional/tables.cuh"

#if defined(__x86_64__) || defined(__i386__)
#define TABLE_X86 1
#include <immintrin.h>
#else
#define TABLE_X86 0
#endif

/* angles per step of a row: a multiple of 8 (the widest vector) */
#define TABLE_CHUNK 64
/* a worker takes at least this many angles: fewer cost more to wake it */
#define TABLE_MIN_ANGLES_PER_THREAD 8192

/* s[k], c[k] = sin x[k], cos x[k] rounded to float32, k < n (n a multiple of 8) */
typedef void (*sincos_fn)(const double *x, int n, float *s, float *c);

static void sincos_scalar(const double *x, int n, float *s, float *c) {
    for (int k = 0; k < n; k++) {
        double sd, cd;
        tileops_sincos(x[k], &sd, &cd);
        s[k] = (float)sd;
        c[k] = (float)cd;
    }
}

#if TABLE_X86
#define TABLE_ISA 1
#include "angle_table.c"
#undef TABLE_ISA
#define TABLE_ISA 2
#include "angle_table.c"
#undef TABLE_ISA
#endif

static void sincos_reference(const double *x, int n, float *s, float *c) {
    for (int k = 0; k < n; k++) {
        s[k] = (float)sin(x[k]);
        c[k] = (float)cos(x[k]);
    }
}

static sincos_fn sincos_for(int level) {
#if TABLE_X86
    if (level == TILEOPS_SIMD_AVX512)
        return sincos_avx512;
    if (level == TILEOPS_SIMD_AVX2)
        return sincos_avx2;
#endif
    (void)level;
    return sincos_scalar;
}

typedef struct table_job {
    const tileops_angle_table_args_t *a;
    const double *inv;
    int64_t n; /* pairs per row */
    sincos_fn sincos;
} table_job_t;

static void table_rows(void *ctx, int64_t p0, int64_t p1) {
    const table_job_t *j = ctx;
    const tileops_angle_table_args_t *a = j->a;
    const int64_t n = j->n, W = a->width;
    double x[TABLE_CHUNK];
    float s[TABLE_CHUNK], c[TABLE_CHUNK];
    for (int64_t p = p0; p < p1; p++) {
        float *o = a->out + p * W;
        const double pd = (double)p;
        for (int64_t i0 = 0; i0 < n; i0 += TABLE_CHUNK) {
            const int m = n - i0 < TABLE_CHUNK ? (int)(n - i0) : TABLE_CHUNK, m8 = (m + 7) & ~7;
            for (int k = 0; k < m; k++)
                x[k] = POS_MUL(pd, j->inv[i0 + k]);
            for (int k = m; k < m8; k++)
                x[k] = 0.0;
            j->sincos(x, m8, s, c);
            if (a->layout == TILEOPS_TABLE_ROPE) {
                memcpy(o + i0, c, (size_t)m * sizeof(float));
                memcpy(o + n + i0, s, (size_t)m * sizeof(float));
                continue;
            }
            for (int k = 0; k < m; k++) {
                const int64_t ch = 2 * (i0 + k);
                o[ch] = s[k];
                if (ch + 1 < W)
                    o[ch + 1] = c[k];
            }
        }
    }
}

static int finite_positive(double v) { return isfinite(v) && v > 0.0; }

static tileops_status_t check_args(const tileops_angle_table_args_t *a) {
    const char *k = a->kernel;
    if (a->layout != TILEOPS_TABLE_ROPE && a->layout != TILEOPS_TABLE_SINUSOIDAL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: layout must be 0 (rope) or 1 (sinusoidal), got %d", k,
                            a->layout);
    if (a->rows < 0 || a->width < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: rows and width must be >= 0, got %lld, %lld", k,
                            (long long)a->rows, (long long)a->width);
    if (a->layout == TILEOPS_TABLE_ROPE && (a->width < 2 || a->width % 2))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: width (rotary_dim) must be even and >= 2, got %lld", k,
                            (long long)a->width);
    if (a->width > 0 && a->rows > INT64_MAX / 4 / a->width)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the table's bytes must fit int64 (rows %lld, width %lld)",
                            k, (long long)a->rows, (long long)a->width);
    if (!(isfinite(a->base) && a->base >= 1.0))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: base must be finite and >= 1, got %g", k, a->base);
    const int type = a->layout == TILEOPS_TABLE_ROPE ? a->rope_type : TILEOPS_ROPE_DEFAULT;
    if (type != TILEOPS_ROPE_DEFAULT && type != TILEOPS_ROPE_LINEAR && type != TILEOPS_ROPE_LLAMA3)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: rope_type must be 0 (default), 1 (linear) or 2 (llama3), got %d", k, a->rope_type);
    if (type != TILEOPS_ROPE_DEFAULT && !finite_positive(a->factor))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: factor must be finite and > 0, got %g", k, a->factor);
    if (type == TILEOPS_ROPE_LLAMA3 &&
        !(finite_positive(a->low) && finite_positive(a->high) && a->low <= a->high && finite_positive(a->orig)))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: llama3 needs finite 0 < low_freq_factor <= high_freq_factor and "
                            "original_max_position_embeddings > 0, got %g, %g, %g", k, a->low, a->high, a->orig);
    if (a->rows == 0 || a->width == 0)
        return TILEOPS_OK;
    if (a->out == NULL || (uintptr_t)a->out % sizeof(float))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: out must be non-NULL and 4-byte aligned when rows and width are > 0, got %p", k,
                            (void *)a->out);
    return TILEOPS_OK;
}

tileops_status_t tileops_angle_table(const tileops_angle_table_args_t *a, int reference) {
    tileops_status_t st = check_args(a);
    if (st != TILEOPS_OK || a->rows == 0 || a->width == 0)
        return st;
    const int64_t n = a->layout == TILEOPS_TABLE_ROPE ? a->width / 2 : (a->width + 1) / 2;
    double *inv = malloc((size_t)n * sizeof(double));
    if (inv == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for %lld inverse frequencies", a->kernel,
                            (long long)n);
    const int type = a->layout == TILEOPS_TABLE_ROPE ? a->rope_type : TILEOPS_ROPE_DEFAULT;
    double most = 0.0;
    for (int64_t i = 0; i < n; i++) {
        inv[i] = tileops_rope_scaled(tileops_inv_freq(i, a->width, a->base), type, a->factor, a->low, a->high,
                                     a->orig);
        most = inv[i] > most ? inv[i] : most;
    }
    /* every angle is below 2^50 (tileops_sincos's range) before anything is written */
    if (!(POS_MUL((double)(a->rows - 1), most) < TILEOPS_MAX_ANGLE)) {
        free(inv);
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: the largest angle, (rows - 1) * max inverse frequency = %lld * %g, must be below 2^50",
                            a->kernel, (long long)(a->rows - 1), most);
    }
    table_job_t job = {.a = a, .inv = inv, .n = n,
                       .sincos = reference ? sincos_reference : sincos_for(tileops_cpu_simd_active())};
    if (reference) {
        table_rows(&job, 0, a->rows);
    } else {
        const int64_t min_rows = (TABLE_MIN_ANGLES_PER_THREAD + n - 1) / n;
        tileops_cpu_parallel_for(a->rows, min_rows, table_rows, &job);
    }
    free(inv);
    return TILEOPS_OK;
}

#else /* ---- TABLE_ISA: tileops_sincos on a vector of doubles, one instruction set ---- */

#if TABLE_ISA == 1
#define VD __m256d
#define VI __m256i
#define VW 4
#define VTGT __attribute__((target("avx2,fma")))
#define VNAME sincos_avx2
#define d_set1 _mm256_set1_pd
#define d_load _mm256_loadu_pd
#define d_add _mm256_add_pd
#define d_sub _mm256_sub_pd
#define d_mul _mm256_mul_pd
#define d_fma _mm256_fmadd_pd
#define d_fnma _mm256_fnmadd_pd
#define d_bits _mm256_castpd_si256
#define d_from_bits _mm256_castsi256_pd
#define i_set1 _mm256_set1_epi64x
#define i_and _mm256_and_si256
#define i_add _mm256_add_epi64
#define i_xor _mm256_xor_si256
#define i_shl62(v) _mm256_slli_epi64((v), 62)
/* where q & 1: b, else a */
#define d_select_odd(q, a, b) _mm256_blendv_pd((a), (b), d_from_bits(_mm256_cmpeq_epi64(i_and((q), one), one)))
#define f_store(p, v) _mm_storeu_ps((p), _mm256_cvtpd_ps(v))
#else
#define VD __m512d
#define VI __m512i
#define VW 8
#define VTGT __attribute__((target("avx512f")))
#define VNAME sincos_avx512
#define d_set1 _mm512_set1_pd
#define d_load _mm512_loadu_pd
#define d_add _mm512_add_pd
#define d_sub _mm512_sub_pd
#define d_mul _mm512_mul_pd
#define d_fma _mm512_fmadd_pd
#define d_fnma _mm512_fnmadd_pd
#define d_bits _mm512_castpd_si512
#define d_from_bits _mm512_castsi512_pd
#define i_set1 _mm512_set1_epi64
#define i_and _mm512_and_si512
#define i_add _mm512_add_epi64
#define i_xor _mm512_xor_si512
#define i_shl62(v) _mm512_slli_epi64((v), 62)
#define d_select_odd(q, a, b) _mm512_mask_blend_pd(_mm512_test_epi64_mask((q), one), (a), (b))
#define f_store(p, v) _mm256_storeu_ps((p), _mm512_cvtpd_ps(v))
#endif

/* tileops_sincos (tables.cuh), VW lanes at a time: the same operations in the same order */
VTGT static void VNAME(const double *x, int n, float *s, float *c) {
    static const double sin_coefs[POS_N_SIN] = {POS_SIN_COEFS}, cos_coefs[POS_N_COS] = {POS_COS_COEFS};
    const VI one = i_set1(1), two = i_set1(2);
    for (int k = 0; k < n; k += VW) {
        const VD xv = d_load(x + k);
        const VD t = d_add(d_mul(xv, d_set1(POS_TWO_OVER_PI)), d_set1(POS_ROUND_MAGIC));
        const VI q = d_bits(t);
        const VD kd = d_sub(t, d_set1(POS_ROUND_MAGIC));
        VD r = d_fnma(kd, d_set1(POS_PIO2_1), xv);
        r = d_fnma(kd, d_set1(POS_PIO2_2), r);
        r = d_fnma(kd, d_set1(POS_PIO2_3), r);
        const VD z = d_mul(r, r);
        VD ps = d_set1(sin_coefs[0]), pc = d_set1(cos_coefs[0]);
        for (int j = 1; j < POS_N_SIN; j++)
            ps = d_fma(ps, z, d_set1(sin_coefs[j]));
        for (int j = 1; j < POS_N_COS; j++)
            pc = d_fma(pc, z, d_set1(cos_coefs[j]));
        const VD sr = d_fma(d_mul(r, z), ps, r);
        const VD cr = d_fma(z, pc, d_set1(1.0));
        const VD a = d_select_odd(q, sr, cr), b = d_select_odd(q, cr, sr);
        /* the sign bit: set for sin where q & 2, for cos where (q + 1) & 2 */
        f_store(s + k, d_from_bits(i_xor(d_bits(a), i_shl62(i_and(q, two)))));
        f_store(c + k, d_from_bits(i_xor(d_bits(b), i_shl62(i_and(i_add(q, one), two)))));
    }
}

#undef VD
#undef VI
#undef VW
#undef VTGT
#undef VNAME
#undef d_set1
#undef d_load
#undef d_add
#undef d_sub
#undef d_mul
#undef d_fma
#undef d_fnma
#undef d_bits
#undef d_from_bits
#undef i_set1
#undef i_and
#undef i_add
#undef i_xor
#undef i_shl62
#undef d_select_odd
#undef f_store

#endif /* TABLE_ISA */

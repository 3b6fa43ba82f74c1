/* sampling_best.c: the best element of each row, the one scan of the CPU kernels of
 * argmax.c (the values) and sample_from_probs.c (the ratios p / q), declared in
 * sampling_cpu.h. The vector scan is written once over cpu/vec16.h and compiled once per
 * instruction set (cpu/dispatch_levels.h); the level is chosen at run time.
 *
 * A row's best (sampling_rank: the largest key, then the lowest index):
 *   q NULL: the first NaN of the row, else the first element equal to its maximum;
 *   q given: the first ratio equal to the largest ratio > 0 (an IEEE float32 division; a
 *   NaN, zero or negative ratio never wins); none when no ratio is > 0.
 * Work: chunks of SAMPLING_BEST_CHUNK elements of a row over the pool (a decode step's one
 * row uses every thread); a chunk's best is found by a second pass over the chunk in cache
 * for the first element equal to its maximum; the row's is the best of its chunks
 * (sampling_reduce_rows), which is exact: the result depends on the row (and q) only. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <stdint.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define SAMPLING_BEST_CHUNK 16384

/* element by element, one row */
static uint64_t reference_row(const sampling_best_args_t *a, int64_t r) {
    uint64_t best = 0;
    for (int64_t i = 0; i < a->V; i++) {
        const float v = vec16_load1(a->p, r * a->V + i, a->dt);
        uint64_t k;
        if (a->q == NULL) {
            k = sampling_rank(sampling_key(v), i);
        } else {
            const float ratio = v / a->q[r * a->V + i];
            k = ratio > 0.0f ? sampling_rank(sampling_key(ratio), i) : 0;
        }
        best = k > best ? k : best;
    }
    return best;
}

#define VEC16_SELF "ops/sampling/sampling_best.c"
#include "cpu/dispatch_levels.h"

tileops_status_t sampling_best_rows(const char *k, const sampling_best_args_t *a, int64_t B, int reference,
                                    int64_t *token) {
    if (reference) {
        for (int64_t r = 0; r < B; r++) {
            const uint64_t best = reference_row(a, r);
            token[r] = best == 0 ? -1 : sampling_rank_index(best);
        }
        return TILEOPS_OK;
    }
    const int level = tileops_cpu_simd_active();
    return sampling_reduce_rows(k, VEC16_AT_LEVEL(level, chunk), a, B, a->V, SAMPLING_BEST_CHUNK, token);
}

#else /* ---- VEC16_ISA: one instruction set's chunk (this file includes itself) --------- */

#include "cpu/vec16.h"

/* 16 (c) elements from i: the values, or (ratio) p / q, whose lanes past c are 0 / 0 = NaN */
static AI TGT VF ISA(elems_n)(const void *p, const float *q, int64_t i, int dt, int c, int ratio) {
    if (!ratio)
        return c == 16 ? ISA(vload)(p, i, dt) : ISA(vload_n)(p, i, dt, c);
    if (c == 16)
        return ISA(vdiv)(ISA(vload)(p, i, dt), ISA(vload)(q, i, F32));
    return ISA(vdiv)(ISA(vload_n)(p, i, dt, c), ISA(vload_n)(q, i, F32, c));
}

/* The best rank among the n elements from p (and q) whose row index starts at i0; 0 for
 * none. The values: a NaN is the best at once, the maximum starts from -inf (lanes past c
 * filled with it); the ratios: NaN lanes are passed over (vmax keeps its second operand),
 * the maximum starts from +0 and must end above it. */
static AI TGT uint64_t ISA(best_impl)(const void *p, const float *q, int64_t i0, int64_t n, int dt, int ratio) {
    VF mx = ratio ? ISA(vzero)() : ISA(vset1)(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        VF v = ISA(elems_n)(p, q, i, dt, c, ratio);
        if (!ratio) {
            const int nan = ISA(vfirst_nan)(v); /* lanes past c read as 0: never NaN */
            if (nan >= 0)
                return sampling_rank(0xffffffffu, i0 + i + nan);
            if (c < 16)
                v = ISA(vfill_n)(v, c, -INFINITY);
        }
        mx = ISA(vmax)(v, mx);
    }
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, mx, 16);
    float m = ratio ? 0.0f : -INFINITY;
    for (int k = 0; k < 16; k++)
        m = lanes[k] > m ? lanes[k] : m;
    if (ratio && !(m > 0.0f))
        return 0;
    const VF mv = ISA(vset1)(m);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        const int l = ISA(vfirst_eq)(ISA(elems_n)(p, q, i, dt, c, ratio), mv);
        if (l >= 0 && l < c)
            return sampling_rank(sampling_key(m), i0 + i + l);
    }
    return 0; /* not reached: the maximum is one of the elements */
}

/* chunk (r, i0, n) of the values (values_<dtype>) or of the ratios (ratios_<dtype>) */
#define SAMPLING_BEST_FN(DT, DTN)                                                                                 \
    static TGT uint64_t ISA(values_##DTN)(const sampling_best_args_t *a, int64_t r, int64_t i0, int64_t n) {       \
        const int64_t o = r * a->V + i0;                                                                          \
        return ISA(best_impl)((const char *)a->p + (size_t)o * (DT == F32 ? 4 : 2), NULL, i0, n, DT, 0);           \
    }                                                                                                             \
    static TGT uint64_t ISA(ratios_##DTN)(const sampling_best_args_t *a, int64_t r, int64_t i0, int64_t n) {       \
        const int64_t o = r * a->V + i0;                                                                          \
        return ISA(best_impl)((const char *)a->p + (size_t)o * (DT == F32 ? 4 : 2), a->q + o, i0, n, DT, 1);       \
    }
SAMPLING_BEST_FN(F32, f32)
SAMPLING_BEST_FN(F16, f16)
SAMPLING_BEST_FN(BF16, bf16)

static uint64_t ISA(chunk)(const void *ctx, int64_t r, int64_t i0, int64_t n) {
    const sampling_best_args_t *a = ctx;
    if (a->q == NULL)
        return a->dt == F32 ? ISA(values_f32)(a, r, i0, n) : a->dt == F16 ? ISA(values_f16)(a, r, i0, n)
                                                                           : ISA(values_bf16)(a, r, i0, n);
    return a->dt == F32 ? ISA(ratios_f32)(a, r, i0, n) : a->dt == F16 ? ISA(ratios_f16)(a, r, i0, n)
                                                                       : ISA(ratios_bf16)(a, r, i0, n);
}

#undef SAMPLING_BEST_FN
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

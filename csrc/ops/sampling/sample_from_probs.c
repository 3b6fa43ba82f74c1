/* sample_from_probs.c: the CPU kernels "sample_from_probs" (AVX-512, AVX2 or scalar, chosen
 * at run time) and "sample_from_probs_reference" (element by element, one thread) of
 * SampleFromProbsFwdOp, vLLM's draw of a token with exponential noise q the caller gives:
 *   token[r] = argmax over i of probs[r, i] / q[r, i] (an IEEE float32 division), the
 *   lowest index on ties, over the ratios > 0 only (a NaN, zero or negative ratio never
 *   wins); -1 for a row without one (probabilities all zero, negative or NaN).
 *
 * Arguments ("pppqqi"): probs [B, V] (float32, float16, bfloat16), q [B, V] float32, token
 * [B] int64, B, V, probs' dtype. Contiguous.
 *
 * Work: as argmax.c: chunks of SAMPLE_CHUNK elements over the pool; a chunk's best is the
 * first element equal to the maximum ratio (kept from 0 up, NaN lanes passed over), found
 * by a second pass; the row's the best of its chunks by rank, which is exact: the result
 * depends on q and the row only. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <stdint.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define SAMPLE_ARG_FORMAT "pppqqi"
#define SAMPLE_CHUNK 16384

typedef struct sample_args {
    const void *p;
    const float *q;
    int64_t V;
    int dt;
} sample_args_t;

static uint64_t reference_chunk(const void *ctx, int64_t r, int64_t i0, int64_t n) {
    const sample_args_t *a = ctx;
    uint64_t best = 0;
    for (int64_t i = i0; i < i0 + n; i++) {
        const float ratio = vec16_load1(a->p, r * a->V + i, a->dt) / a->q[r * a->V + i];
        const uint64_t k = ratio > 0.0f ? sampling_rank(sampling_key(ratio), i) : 0;
        best = k > best ? k : best;
    }
    return best;
}

#define VEC16_SELF "ops/sampling/sample_from_probs.c"
#include "cpu/dispatch_levels.h"

static sampling_chunk_fn chunk_for(int level) {
    return VEC16_AT_LEVEL(level, chunk);
}

static tileops_status_t sample_call(const tileops_arg_t *g, int reference) {
    const char *k = reference ? "sample_from_probs_reference" : "sample_from_probs";
    sample_args_t a = {.p = (const void *)g[0].p, .q = (const float *)g[1].p, .V = g[4].q, .dt = g[5].i};
    int64_t *token = (int64_t *)g[2].p, B = g[3].q;
    tileops_status_t st = sampling_check_rows(k, a.dt, B, a.V);
    if (st == TILEOPS_OK) {
        const int64_t e = (int64_t)tileops_dtype_size(a.dt);
        const sampling_buf_t bufs[] = {
            {"probs", a.p, B * a.V * e, e, 0}, {"q", a.q, B * a.V * 4, 4, 0}, {"token", token, B * 8, 8, 0}};
        st = sampling_check_bufs(k, B, bufs, 3);
    }
    if (st != TILEOPS_OK || B == 0)
        return st;
    if (reference) {
        for (int64_t r = 0; r < B; r++) {
            const uint64_t best = reference_chunk(&a, r, 0, a.V);
            token[r] = best == 0 ? -1 : sampling_rank_index(best);
        }
        return TILEOPS_OK;
    }
    return sampling_reduce_rows(k, chunk_for(tileops_cpu_simd_active()), &a, B, a.V, SAMPLE_CHUNK, token);
}

static tileops_status_t sample_fast(const tileops_arg_t *g) { return sample_call(g, 0); }
static tileops_status_t sample_ref(const tileops_arg_t *g) { return sample_call(g, 1); }

static const tileops_cpu_kernel_t sample_kernel = {"sample_from_probs", SAMPLE_ARG_FORMAT, sample_fast};
static const tileops_cpu_kernel_t sample_reference_kernel = {"sample_from_probs_reference", SAMPLE_ARG_FORMAT,
                                                             sample_ref};
TILEOPS_CPU_KERNEL(sample_kernel)
TILEOPS_CPU_KERNEL(sample_reference_kernel)

#else /* ---- VEC16_ISA: one instruction set's chunk (this file includes itself) --------- */

#include "cpu/vec16.h"

/* ratios of 16 (c) elements; lanes past c are 0 / 0 = NaN, passed over like any NaN */
static AI TGT VF ISA(ratio_n)(const void *p, const float *q, int64_t i, int dt, int c) {
    if (c == 16)
        return ISA(vdiv)(ISA(vload)(p, i, dt), ISA(vload)(q, i, F32));
    return ISA(vdiv)(ISA(vload_n)(p, i, dt, c), ISA(vload_n)(q, i, F32, c));
}

static TGT uint64_t ISA(chunk_impl)(const void *p, const float *q, int64_t i0, int64_t n, int dt) {
    VF mx = ISA(vzero)();
    for (int64_t i = 0; i < n; i += 16)
        mx = ISA(vmax)(ISA(ratio_n)(p, q, i, dt, n - i < 16 ? (int)(n - i) : 16), mx); /* a NaN lane keeps mx */
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, mx, 16);
    float m = 0.0f;
    for (int k = 0; k < 16; k++)
        m = lanes[k] > m ? lanes[k] : m;
    if (!(m > 0.0f))
        return 0;
    const VF mv = ISA(vset1)(m);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        const int l = ISA(vfirst_eq)(ISA(ratio_n)(p, q, i, dt, c), mv);
        if (l >= 0 && l < c)
            return sampling_rank(sampling_key(m), i0 + i + l);
    }
    return 0; /* not reached: the maximum is one of the ratios */
}

#define SAMPLE_CHUNK_FN(DT, DTN)                                                                                  \
    static TGT uint64_t ISA(chunk_##DTN)(const sample_args_t *a, int64_t r, int64_t i0, int64_t n) {               \
        const int64_t o = r * a->V + i0;                                                                          \
        return ISA(chunk_impl)((const char *)a->p + (size_t)o * (DT == F32 ? 4 : 2), a->q + o, i0, n, DT);         \
    }
SAMPLE_CHUNK_FN(F32, f32)
SAMPLE_CHUNK_FN(F16, f16)
SAMPLE_CHUNK_FN(BF16, bf16)

static uint64_t ISA(chunk)(const void *ctx, int64_t r, int64_t i0, int64_t n) {
    const sample_args_t *a = ctx;
    return a->dt == F32 ? ISA(chunk_f32)(a, r, i0, n) : a->dt == F16 ? ISA(chunk_f16)(a, r, i0, n)
                                                                     : ISA(chunk_bf16)(a, r, i0, n);
}

#undef SAMPLE_CHUNK_FN
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

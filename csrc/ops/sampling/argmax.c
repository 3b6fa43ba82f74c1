/* argmax.c: the CPU kernels "argmax" (AVX-512, AVX2 or scalar, chosen at run time) and
 * "argmax_reference" (element by element, one thread) of ArgmaxFwdOp:
 *   token[r] = argmax(logits[r, :]) as torch.argmax gives it: the lowest index of the
 *   maximum, a NaN the maximum (the first NaN, when the row has one); -0.0 equals 0.0.
 *
 * Arguments ("ppqqi"): logits [B, V] contiguous, token [B] int64, B, V, the logits' dtype.
 *
 * Work: chunks of ARGMAX_CHUNK elements of a row over the pool (a decode step's one row
 * uses every thread); a chunk's best is its first NaN or else the first element equal to
 * its (NaN-free) maximum, found by a second pass over the chunk in cache; the row's is the
 * best of its chunks by rank (sampling_cpu.h), which is exact. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <stdint.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define ARGMAX_ARG_FORMAT "ppqqi"
#define ARGMAX_CHUNK 16384

typedef struct argmax_args {
    const void *x;
    int64_t V;
    int dt;
} argmax_args_t;

static uint64_t reference_chunk(const void *ctx, int64_t r, int64_t i0, int64_t n) {
    const argmax_args_t *a = ctx;
    uint64_t best = 0;
    for (int64_t i = i0; i < i0 + n; i++) {
        const uint64_t k = sampling_rank(sampling_key(vec16_load1(a->x, r * a->V + i, a->dt)), i);
        best = k > best ? k : best;
    }
    return best;
}

#define VEC16_SELF "ops/sampling/argmax.c"
#include "cpu/dispatch_levels.h"

static sampling_chunk_fn chunk_for(int level) {
    return VEC16_AT_LEVEL(level, chunk);
}

static tileops_status_t argmax_call(const tileops_arg_t *g, int reference) {
    const char *k = reference ? "argmax_reference" : "argmax";
    argmax_args_t a = {.x = (const void *)g[0].p, .V = g[3].q, .dt = g[4].i};
    int64_t *token = (int64_t *)g[1].p, B = g[2].q;
    tileops_status_t st = sampling_check_rows(k, a.dt, B, a.V);
    if (st == TILEOPS_OK) {
        const int64_t e = (int64_t)tileops_dtype_size(a.dt);
        const sampling_buf_t bufs[] = {{"logits", a.x, B * a.V * e, e, 0}, {"token", token, B * 8, 8, 0}};
        st = sampling_check_bufs(k, B, bufs, 2);
    }
    if (st != TILEOPS_OK || B == 0)
        return st;
    if (reference) {
        for (int64_t r = 0; r < B; r++)
            token[r] = sampling_rank_index(reference_chunk(&a, r, 0, a.V));
        return TILEOPS_OK;
    }
    return sampling_reduce_rows(k, chunk_for(tileops_cpu_simd_active()), &a, B, a.V, ARGMAX_CHUNK, token);
}

static tileops_status_t argmax_fast(const tileops_arg_t *g) { return argmax_call(g, 0); }
static tileops_status_t argmax_ref(const tileops_arg_t *g) { return argmax_call(g, 1); }

static const tileops_cpu_kernel_t argmax_kernel = {"argmax", ARGMAX_ARG_FORMAT, argmax_fast};
static const tileops_cpu_kernel_t argmax_reference_kernel = {"argmax_reference", ARGMAX_ARG_FORMAT, argmax_ref};
TILEOPS_CPU_KERNEL(argmax_kernel)
TILEOPS_CPU_KERNEL(argmax_reference_kernel)

#else /* ---- VEC16_ISA: one instruction set's chunk (this file includes itself) --------- */

#include "cpu/vec16.h"

static AI TGT VF ISA(load_n)(const void *x, int64_t i, int dt, int m) {
    return m == 16 ? ISA(vload)(x, i, dt) : ISA(vload_n)(x, i, dt, m);
}

static TGT uint64_t ISA(chunk_impl)(const void *x, int64_t i0, int64_t n, int dt) {
    VF mx = ISA(vset1)(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        VF v = ISA(load_n)(x, i, dt, c);
        const int nan = ISA(vfirst_nan)(v); /* lanes past c read as 0: never NaN */
        if (nan >= 0)
            return sampling_rank(0xffffffffu, i0 + i + nan);
        mx = ISA(vmax)(c == 16 ? v : ISA(vfill_n)(v, c, -INFINITY), mx);
    }
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, mx, 16);
    float m = lanes[0];
    for (int k = 1; k < 16; k++)
        m = lanes[k] > m ? lanes[k] : m;
    const VF mv = ISA(vset1)(m);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        const int l = ISA(vfirst_eq)(ISA(load_n)(x, i, dt, c), mv);
        if (l >= 0 && l < c)
            return sampling_rank(sampling_key(m), i0 + i + l);
    }
    return 0; /* not reached: the maximum is one of the elements */
}

#define ARGMAX_CHUNK_FN(DT, DTN)                                                                   \
    static TGT uint64_t ISA(chunk_##DTN)(const argmax_args_t *a, int64_t r, int64_t i0, int64_t n) { \
        return ISA(chunk_impl)((const char *)a->x + (size_t)(r * a->V + i0) * (DT == F32 ? 4 : 2), i0, n, DT); \
    }
ARGMAX_CHUNK_FN(F32, f32)
ARGMAX_CHUNK_FN(F16, f16)
ARGMAX_CHUNK_FN(BF16, bf16)

static uint64_t ISA(chunk)(const void *ctx, int64_t r, int64_t i0, int64_t n) {
    const argmax_args_t *a = ctx;
    return a->dt == F32 ? ISA(chunk_f32)(a, r, i0, n) : a->dt == F16 ? ISA(chunk_f16)(a, r, i0, n)
                                                                     : ISA(chunk_bf16)(a, r, i0, n);
}

#undef ARGMAX_CHUNK_FN
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

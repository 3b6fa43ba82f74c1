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
 * Work: as argmax.c, sampling_best_rows (sampling_best.c, q given): chunks over the pool;
 * a chunk's best is the first element equal to the maximum ratio (kept from 0 up, NaN
 * lanes passed over), found by a second pass; the row's the best of its chunks by rank,
 * which is exact: the result depends on q and the row only. */
#include <stdint.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

#define SAMPLE_ARG_FORMAT "pppqqi"

static tileops_status_t sample_call(const tileops_arg_t *g, int reference) {
    const char *k = reference ? "sample_from_probs_reference" : "sample_from_probs";
    const sampling_best_args_t a = {.p = (const void *)g[0].p, .q = (const float *)g[1].p, .V = g[4].q, .dt = g[5].i};
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
    return sampling_best_rows(k, &a, B, reference, token);
}

static tileops_status_t sample_fast(const tileops_arg_t *g) { return sample_call(g, 0); }
static tileops_status_t sample_ref(const tileops_arg_t *g) { return sample_call(g, 1); }

static const tileops_cpu_kernel_t sample_kernel = {"sample_from_probs", SAMPLE_ARG_FORMAT, sample_fast};
static const tileops_cpu_kernel_t sample_reference_kernel = {"sample_from_probs_reference", SAMPLE_ARG_FORMAT,
                                                             sample_ref};
TILEOPS_CPU_KERNEL(sample_kernel)
TILEOPS_CPU_KERNEL(sample_reference_kernel)

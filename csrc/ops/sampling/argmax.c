/* argmax.c: the CPU kernels "argmax" (AVX-512, AVX2 or scalar, chosen at run time) and
 * "argmax_reference" (element by element, one thread) of ArgmaxFwdOp:
 *   token[r] = argmax(logits[r, :]) as torch.argmax gives it: the lowest index of the
 *   maximum, a NaN the maximum (the first NaN, when the row has one); -0.0 equals 0.0.
 *
 * Arguments ("ppqqi"): logits [B, V] contiguous, token [B] int64, B, V, the logits' dtype.
 *
 * Work: sampling_best_rows (sampling_best.c, q NULL): chunks of a row over the pool (a
 * decode step's one row uses every thread); a chunk's best is its first NaN or else the
 * first element equal to its (NaN-free) maximum, found by a second pass over the chunk in
 * cache; the row's is the best of its chunks by rank (sampling_cpu.h), which is exact. */
#include <stdint.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

#define ARGMAX_ARG_FORMAT "ppqqi"

static tileops_status_t argmax_call(const tileops_arg_t *g, int reference) {
    const char *k = reference ? "argmax_reference" : "argmax";
    const sampling_best_args_t a = {.p = (const void *)g[0].p, .q = NULL, .V = g[3].q, .dt = g[4].i};
    int64_t *token = (int64_t *)g[1].p, B = g[2].q;
    tileops_status_t st = sampling_check_rows(k, a.dt, B, a.V);
    if (st == TILEOPS_OK) {
        const int64_t e = (int64_t)tileops_dtype_size(a.dt);
        const sampling_buf_t bufs[] = {{"logits", a.p, B * a.V * e, e, 0}, {"token", token, B * 8, 8, 0}};
        st = sampling_check_bufs(k, B, bufs, 2);
    }
    if (st != TILEOPS_OK || B == 0)
        return st;
    return sampling_best_rows(k, &a, B, reference, token);
}

static tileops_status_t argmax_fast(const tileops_arg_t *g) { return argmax_call(g, 0); }
static tileops_status_t argmax_ref(const tileops_arg_t *g) { return argmax_call(g, 1); }

static const tileops_cpu_kernel_t argmax_kernel = {"argmax", ARGMAX_ARG_FORMAT, argmax_fast};
static const tileops_cpu_kernel_t argmax_reference_kernel = {"argmax_reference", ARGMAX_ARG_FORMAT, argmax_ref};
TILEOPS_CPU_KERNEL(argmax_kernel)
TILEOPS_CPU_KERNEL(argmax_reference_kernel)

/* ops/sampling/argmax.cu: the GPU kernel of ArgmaxFwdOp, C-style CUDA C compiled at run time
 * by NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh
 * spliced in by the runtime):
 *   token[r] = argmax(logits[r, :]) as torch.argmax gives it: the lowest index of the
 *   maximum, a NaN the maximum (the first NaN), -0.0 equal to 0.0.
 * Each element's rank (smp_rank: its ordered key, then its index reversed) is compared as
 * one integer; the best of a thread, of a CTA (a butterfly and the warps in order) and of
 * the cluster's CTAs is the row's argmax, exactly, whatever the split.
 *
 * ==== Parameters (arg_format "pp") ========================================================
 *   (const void *logits, long long *token): logits contiguous [rows, V]; grid.x = rows x
 *   TILEOPS_CLUSTER, block TILEOPS_THREADS (a row over a cluster: sampling_common.cuh). */
#include "sampling_common.cuh"

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_argmax(const void *x, long long *token) {
    __shared__ smp_u64 red[TILEOPS_WARPS];
    __shared__ smp_u64 slot;
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), n = smp_chunk_count(c0);
    const long long no = (n + 7) / 8, o0 = c0 / 8;
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    smp_u64 best = 0;
    SMP_BATCH_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMP_BATCH) {
        struct tileops_v4 w[SMP_BATCH][SMP_WORDS];
        const int full = smp_batch_full(o0, no, j0, SMP_BATCH, tid);
        if (full) {
#pragma unroll
            for (int b = 0; b < SMP_BATCH; b++)
                smp_ld_raw(xrow, o0 + (long long)(j0 + b) * TILEOPS_THREADS + tid, TILEOPS_E, w[b]);
        }
#pragma unroll
        for (int b = 0; b < SMP_BATCH; b++) {
            const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
            if (o < no) {
                float f[8];
                smp_batch_octet(xrow, o0, no, j0, b, tid, full, w[b], 0.0f, f);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const long long e = 8 * (o0 + o) + k;
                    const smp_u64 r = e < TILEOPS_N ? smp_rank(smp_key(f[k]), e) : 0;
                    best = r > best ? r : best;
                }
            }
        }
    }
    best = smp_cluster_max_u64(smp_block_max_u64(best, red, tid), &slot, tid);
    smp_cluster_arrive();
    if (tid == 0 && smp_rank_in_cluster() == 0)
        token[row] = smp_rank_index(best);
    smp_cluster_wait();
}

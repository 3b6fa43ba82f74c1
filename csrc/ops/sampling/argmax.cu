/* ops/sampling/argmax.cu: the GPU kernel of ArgmaxFwdOp, C-style CUDA C compiled at run time
 * by NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh
 * spliced in by the runtime):
 *   token[r] = argmax(logits[r, :]) as torch.argmax gives it: the lowest index of the
 *   maximum, a NaN the maximum (the first NaN), -0.0 equal to 0.0.
 * Each thread scans its elements in increasing index order keeping the largest value and
 * its index (sampling_common.cuh: a strict comparison, a tie keeps the earlier element;
 * the maximum NaN-sticky, a thread whose best is NaN reads its elements again for the
 * first NaN); its (key, index) rank (smp_rank) is compared as one integer with the other
 * threads' (a butterfly and the warps in order) and the cluster's CTAs': the row's argmax,
 * exactly, whatever the split.
 *
 * ==== Parameters (arg_format "pp") ========================================================
 *   (const void *logits, long long *token): logits contiguous [rows, V]; grid.x = rows x
 *   TILEOPS_CLUSTER, block TILEOPS_THREADS (a row over a cluster: sampling_common.cuh). */
#include "sampling_common.cuh"

/* octets per batch: SMP_BATCH (64 bytes of loads in flight per thread), or TILEOPS_BATCH
 * when defined (a lab knob: dev/time_argmax.py --batch) */
#ifdef TILEOPS_BATCH
#define AM_BATCH TILEOPS_BATCH
#else
#define AM_BATCH SMP_BATCH
#endif
/* A partial batch (one past the CTA's last octet: at B = 32 x 128256, clusters of 8 x 256
 * threads, a CTA's last 44 threads in their second batch) issues its whole octets' loads
 * together, as a full batch does, where they were loaded and folded one at a time, a memory
 * latency each. 16-bit dtypes: bf16 B = 32 4.52 -> 4.29 us hot, 10.56 -> 9.95 L2-cold (H100,
 * session 45); a float32 batch is 2 octets, its partial one a single load either way (4.83 ->
 * 4.89 with the extra checks), so float32 keeps the octet-at-a-time path, and so does a
 * lab batch above the default (TILEOPS_BATCH: 128 bytes spill in a 1024-thread CTA's 64
 * registers with it). */
#define AM_PARTIAL_LOADS (SMP_WORDS == 1 && AM_BATCH <= SMP_BATCH)
#if TILEOPS_OPT <= 4 * AM_BATCH
#define AM_UNROLL _Pragma("unroll")
#else
#define AM_UNROLL _Pragma("unroll 1")
#endif

/* Batch j0's octets (their words w when full or whole, else loaded; past the CTA's
 * elements -inf, never larger) into the thread's best (*at: the best's offset in the batch) */
TILEOPS_DEV void am_batch(const char *xrow, long long o0, long long no, int j0, unsigned tid, int full,
                          struct tileops_v4 (*w)[SMP_WORDS], float *best, int *at) {
#pragma unroll
    for (int b = 0; b < AM_BATCH; b++) {
        float f[8];
        /* a partial batch's whole octets from their words too (smp_ld_partial; 16-bit) */
        const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
        const int whole = full || (AM_PARTIAL_LOADS && smp_octet_whole(o0, no, o));
        smp_batch_octet(xrow, o0, no, j0, b, tid, whole, w[b], SMP_NINF, f);
        smp_best_octet(f, 8 * b * TILEOPS_THREADS, 1, best, at);
    }
}

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_argmax(const void *x, long long *token) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ smp_u64 red[TILEOPS_WARPS];
    __shared__ smp_u64 slots[TILEOPS_CLUSTER];
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), n = smp_chunk_count(c0);
    const long long no = (n + 7) / 8, o0 = c0 / 8;
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    float best = SMP_NINF;
    long long idx = 8 * (o0 + tid); /* the thread's first element until one is larger */
    const char *xt = xrow + idx * TILEOPS_E;
    AM_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += AM_BATCH) {
        const float before = best;
        int at = 0;
        struct tileops_v4 w[AM_BATCH][SMP_WORDS];
        if (smp_batch_full(o0, no, j0, AM_BATCH, tid)) { /* one branch per batch, not per octet */
            const char *xb = xt + (long long)j0 * TILEOPS_THREADS * 8 * TILEOPS_E;
#pragma unroll
            for (int b = 0; b < AM_BATCH; b++)
                smp_ld_raw(xb, b * TILEOPS_THREADS, TILEOPS_E, w[b]);
            am_batch(xrow, o0, no, j0, tid, 1, w, &best, &at);
        } else {
#if AM_PARTIAL_LOADS
            smp_ld_partial(xt, o0, no, j0, AM_BATCH, tid, w);
#endif
            am_batch(xrow, o0, no, j0, tid, 0, w, &best, &at);
        }
        if (best > before)
            idx = 8 * (o0 + (long long)j0 * TILEOPS_THREADS + tid) + at;
    }
    if (best != best)
        idx = smp_first_nan(xrow, o0, no, tid);
    smp_u64 rank = tid < no ? smp_rank(smp_key(best), idx) : 0;
    rank = smp_cluster_max_u64(smp_block_max_u64(rank, red, tid), slots, tid);
    if (tid == 0 && smp_rank_in_cluster() == 0)
        token[row] = smp_rank_index(rank);
}

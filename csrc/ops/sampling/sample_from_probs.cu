/* ops/sampling/sample_from_probs.cu: the GPU kernel of SampleFromProbsFwdOp (vLLM's draw
 * with the caller's exponential noise), C-style CUDA C compiled at run time by NVRTC with no
 * builtin headers (sampling_common.cuh and ../common/rows_common.cuh spliced in):
 *   token[r] = the lowest index of the largest probs[r, i] / q[r, i] (an IEEE float32
 *   division) among the ratios > 0; -1 where there is none (all zero, negative or NaN).
 *   A zero probability's ratio is taken as -1 / |q| (sfp_ratio: never > 0 either).
 * As argmax.cu: each thread's largest ratio, starting from +0 (a ratio not > 0, NaN
 * included, is never larger), the earliest on a tie; its rank (smp_rank; 0 for none)
 * compared as one integer over the CTA and the cluster: the same token as the CPU kernel
 * (the same divisions, an exact maximum), whatever the split or the batch.
 *
 * ==== Parameters (arg_format "ppp") =======================================================
 *   (const void *probs, const float *q, long long *token): contiguous [rows, V]; grid.x =
 *   rows x TILEOPS_CLUSTER, block TILEOPS_THREADS. TILEOPS_VEC (G of probs' dtype) needs q's
 *   rows 16-byte aligned too. */
#include "sampling_common.cuh"

/* octets per batch: 4 or 3 loads of 16 bytes in flight (the IEEE division's registers
 * leave no room for more under the 64-register cap) */
#define SFP_BATCH (TILEOPS_E == 4 ? 1 : 2)

/* q's elements 8o .. 8o + 7 (float32); past V: 1 */
TILEOPS_DEV void sfp_ld8_q(const float *qrow, long long o, float *f) {
    const long long e = 8 * o;
#if TILEOPS_VEC != 1
    if (e + 8 <= TILEOPS_N) {
        struct tileops_v4 a = tileops_ld16_nc((const char *)(qrow + e)), b = tileops_ld16_nc((const char *)(qrow + e + 4));
#pragma unroll
        for (int k = 0; k < 4; k++) {
            f[k] = tileops_as_float(a.a[k]);
            f[4 + k] = tileops_as_float(b.a[k]);
        }
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; k++)
        f[k] = e + k < TILEOPS_N ? qrow[e + k] : 1.0f;
}

/* p / q (IEEE), or -1 / |q| where p is a zero of either sign: either ratio is never > 0
 * (a zero's is +-0, or NaN over a q of 0; -1 / |q| is negative, -0 or NaN), so neither is
 * ever the draw. div.rn takes its slow path (FCHK) for a zero dividend, and after a top-k /
 * top-p mask most of a row's probabilities are 0: -1 / |q| takes q's fast path. */
TILEOPS_DEV float sfp_ratio(float p, float q) {
    const int z = p == 0.0f;
    return smp_div(z ? -1.0f : p, z ? tileops_as_float(tileops_as_uint(q) & 0x7fffffffu) : q);
}

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_sample_from_probs(const void *probs, const float *q,
                                                                                    long long *token) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ smp_u64 red[TILEOPS_WARPS];
    __shared__ smp_u64 slots[TILEOPS_CLUSTER];
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), n = smp_chunk_count(c0);
    const long long no = (n + 7) / 8, o0 = c0 / 8;
    const char *prow = (const char *)probs + row * (long long)TILEOPS_N * TILEOPS_E;
    const float *qrow = q + row * (long long)TILEOPS_N;
    float best = 0.0f;
    long long idx = -1; /* none > 0 yet */
    /* batches of SFP_BATCH octets: q's float32 words and probs' in flight together */
#pragma unroll 1
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SFP_BATCH) {
        struct tileops_v4 w[SFP_BATCH][SMP_WORDS], wq[SFP_BATCH][2];
        const int full = smp_batch_full(o0, no, j0, SFP_BATCH, tid);
        if (full) {
#pragma unroll
            for (int b = 0; b < SFP_BATCH; b++) {
                const long long o = o0 + (long long)(j0 + b) * TILEOPS_THREADS + tid;
                smp_ld_raw((const char *)qrow, o, 4, wq[b]);
                smp_ld_raw(prow, o, TILEOPS_E, w[b]);
            }
        }
        const float before = best;
        int at = 0;
#pragma unroll
        for (int b = 0; b < SFP_BATCH; b++) {
            const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
            if (o < no) {
                float p[8], d[8], ratio[8];
                smp_batch_octet(prow, o0, no, j0, b, tid, full, w[b], 0.0f, p);
                if (full) {
#pragma unroll
                    for (int k = 0; k < 8; k++)
                        d[k] = tileops_as_float(wq[b][k >> 2].a[k & 3]);
                } else {
                    sfp_ld8_q(qrow, o0 + o, d);
                }
#pragma unroll
                for (int k = 0; k < 8; k++)
                    ratio[k] = sfp_ratio(p[k], d[k]);
                smp_best_octet(ratio, 8 * b * TILEOPS_THREADS, 0, &best, &at);
            }
        }
        if (best > before)
            idx = 8 * (o0 + (long long)j0 * TILEOPS_THREADS + tid) + at;
    }
    smp_u64 rank = idx < 0 ? 0 : smp_rank(smp_key(best), idx);
    rank = smp_cluster_max_u64(smp_block_max_u64(rank, red, tid), slots, tid);
    if (tid == 0 && smp_rank_in_cluster() == 0)
        token[row] = rank == 0 ? -1 : smp_rank_index(rank);
}

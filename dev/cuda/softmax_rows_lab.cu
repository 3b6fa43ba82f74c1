/* dev/cuda/softmax_rows_lab.cu: a lab kernel appended to the shipped softmax source
 * (dev/time_softmax.py --rows builds csrc/ops/sampling/softmax.cu's spliced text followed by
 * this file, with the shipped build's defines; it uses that file's helpers and adds no
 * include). Not a build the launch rules select.
 *
 * tileops_softmax_rows: one CTA of 2 x TILEOPS_THREADS threads per row (grid-stride over
 * rows), the row's CLUSTER chunks taken two at a time, one by each half of the block, in
 * exactly the slots, order and arithmetic of the cluster kernel's CTA of that chunk:
 *   pass 1: the maximum (exact in any order), the row read from memory;
 *   pass 2: each chunk's sum of exp(z - M), a thread adding its slots in increasing order
 *           from 0, reduced over the half by tileops_row_sum(.., TILEOPS_THREADS) (the
 *           cluster CTA's tree); the chunk sums combined in rank order (smx_combine's);
 *   pass 3: probs = exp(z - M) / S, written; the row read again.
 * So a row's bits are the cluster kernel's: the two could be chosen by the batch size
 * without breaking batch invariance. Passes 2 and 3 re-read the row, from L2 while the
 * rows in flight (one a CTA, one CTA an SM: 132 x 256 KB of bf16 logits at 128256) fit.
 * Prediction (session 11): at B >= 128 one CTA streaming each row keeps bytes moving where
 * the cluster kernel's 1024 short CTAs (2.6 waves) idle through two exchanges a wave, and
 * lands near 1.25x the copy (41.8 -> ~32 µs at 128 x 128256 bf16 -> fp32); at small B the
 * cluster kernel stays faster (a row over one SM).
 *
 * Parameters: (const void *logits, const float *temperature /+ 0 without TILEOPS_TEMP +/,
 * void *probs, long long rows); block 2 x TILEOPS_THREADS, no dynamic shared memory.
 * Needs TILEOPS_CLUSTER even (the real vocabularies' 8). */
#if TILEOPS_CLUSTER % 2
#error "softmax_rows_lab.cu needs an even TILEOPS_CLUSTER"
#endif
#define SR_THREADS (2 * TILEOPS_THREADS)

/* the octets of chunk c of a row (0 past the row) */
TILEOPS_DEV int sr_octets(int c) {
    const long long n = (long long)TILEOPS_N - (long long)c * TILEOPS_CHUNK;
    return (int)(((n < 0 ? 0 : n < TILEOPS_CHUNK ? n : TILEOPS_CHUNK) + 7) / 8);
}

/* One pass over chunk c of a row by the half's thread t, its slots in increasing order:
 * SR_MAX returns max(acc, z) over them; SR_SUM returns the sum of exp(z - M) from acc
 * (pads add +0); SR_WRITE writes probs = exp(z - M) / S of its octets (returns acc). */
enum { SR_MAX, SR_SUM, SR_WRITE };
TILEOPS_DEV float sr_chunk(int pass, const char *xrow, char *yrow, int c, unsigned t, struct smx_tdiv tt, float M, float S,
                           float acc) {
    const long long o0 = (long long)c * (TILEOPS_CHUNK / 8);
    const int no = sr_octets(c);
    const char *xt = xrow + (o0 + t) * (8 * TILEOPS_E);
    SMX_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMX_BATCH) {
        struct tileops_v4 w[SMX_BATCH][SMP_WORDS];
        int whole[SMX_BATCH];
        smx_issue(xt, o0, no, j0, t, w, whole);
#pragma unroll
        for (int b = 0; b < SMX_BATCH; b++) {
            const int o = (j0 + b) * TILEOPS_THREADS + (int)t;
            if (j0 + b >= TILEOPS_OPT || (pass == SR_WRITE && o >= no))
                continue;
            float z[8];
            smx_z8(xrow, o0, no, o, whole[b], w[b], tt, z);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                if (pass == SR_MAX)
                    acc = smp_max(acc, z[k]);
                else if (pass == SR_SUM)
                    acc = tileops_add(acc, smp_exp(tileops_add(z[k], -M)));
                else
                    z[k] = smp_div(smp_exp(tileops_add(z[k], -M)), S);
            }
            if (pass == SR_WRITE)
                smx_st8(yrow, o0 + o, z);
        }
    }
    return acc;
}

extern "C" __global__ void __launch_bounds__(SR_THREADS, 1)
    tileops_softmax_rows(const void *x, const float *temperature, void *y, long long rows) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ float red[SR_THREADS / 32];
    __shared__ float csum[TILEOPS_CLUSTER];
    const unsigned tid = tileops_tid();
    const unsigned half = tid / TILEOPS_THREADS, t = tid % TILEOPS_THREADS;
    for (long long row = tileops_ctaid(); row < rows; row += tileops_nctaid()) {
        const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
        char *yrow = (char *)y + row * (long long)TILEOPS_N * SMX_OE;
#if TILEOPS_TEMP
        const struct smx_tdiv tt = smx_tdiv_of(temperature[row]);
#else
        const struct smx_tdiv tt = {1.0f, 1.0f, 0};
        (void)temperature;
#endif
        /* pass 1: M, the row's maximum over both halves */
        float m = SMP_NINF;
        for (int c = (int)half; c < TILEOPS_CLUSTER; c += 2)
            m = sr_chunk(SR_MAX, xrow, yrow, c, t, tt, 0.0f, 0.0f, m);
#pragma unroll
        for (int off = 16; off >= 1; off >>= 1)
            m = smp_max(m, tileops_shfl_xor(m, off));
        if ((tid & 31u) == 0)
            red[tid >> 5] = m;
        tileops_barrier();
        float M = red[0];
        for (int w = 1; w < SR_THREADS / 32; w++)
            M = smp_max(M, red[w]);
        tileops_barrier();
        /* pass 2: each chunk's sum as its cluster CTA forms it (the half's tree), then S */
        for (int c = (int)half; c < TILEOPS_CLUSTER; c += 2) {
            const float s = tileops_row_sum(sr_chunk(SR_SUM, xrow, yrow, c, t, tt, M, 0.0f, 0.0f), red, tid,
                                            TILEOPS_THREADS);
            if (t == 0)
                csum[c] = s;
            tileops_barrier(); /* red is reused by the next chunk's sum */
        }
        float S = csum[0];
#pragma unroll
        for (int r = 1; r < TILEOPS_CLUSTER; r++)
            S = tileops_add(S, csum[r]);
        /* pass 3: the probabilities */
        for (int c = (int)half; c < TILEOPS_CLUSTER; c += 2)
            (void)sr_chunk(SR_WRITE, xrow, yrow, c, t, tt, M, S, 0.0f);
        tileops_barrier(); /* csum and red are rewritten by the next row */
    }
}

/* dev/cuda/softmax_regs_lab.cu: a lab kernel appended to the shipped softmax source
 * (dev/time_softmax.py --regs builds csrc/ops/sampling/softmax.cu's spliced text followed by
 * this file, with the shipped build's defines but TILEOPS_STAGE 0; it uses that file's
 * helpers and adds no include). Not a build the launch rules select.
 *
 * tileops_softmax_regs: the shipped cluster kernel (a row over a cluster of CTAs, read once)
 * with the row's chunk kept in registers instead of shared memory: each thread keeps the raw
 * 16-byte words of its OPT octets (16 registers for a 16-bit row at OPT 4) from pass 1, and
 * passes 2 and 3 convert them again and take exp(z - M) again, where the shipped kernel
 * stores z to shared memory, reads it back, stores e and reads e (Nsight, session 12, B =
 * 128 x 128256 bf16: 40.9 µs, stalls on MIO throttle and short scoreboard, i.e. on that
 * round trip). The same values in the same order (ex2.approx is deterministic, the sum
 * order the shipped one): the op's bits. No temperature (its IEEE divisions would be
 * repeated too: the shipped kernel stays the better one there) and no dynamic shared
 * memory; the cluster exchange is the shipped one.
 *
 * Prediction: fewer issue slots and no MIO stalls, at the same occupancy (40 registers then
 * 512 x 3 threads an SM as now, but limited by registers instead of shared memory) ->
 * toward the copy at B >= 32; the second exp costs MUFU time that the first pass hides. */
#if TILEOPS_TEMP || TILEOPS_STAGE
#error "softmax_regs_lab.cu is built without a temperature and with TILEOPS_STAGE 0"
#endif

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_softmax_regs(const void *x, const float *temperature,
                                                                               void *y) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ float red[TILEOPS_WARPS];
    __shared__ float slots[2][TILEOPS_CLUSTER];
    __shared__ __attribute__((aligned(8))) smp_u64 bars[2];
    (void)temperature;
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), o0 = c0 / 8;
    const int no = (int)((smp_chunk_count(c0) + 7) / 8);
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    char *yrow = (char *)y + row * (long long)TILEOPS_N * SMX_OE;
    const char *xt = xrow + (o0 + tid) * (8 * TILEOPS_E);
#if TILEOPS_CLUSTER > 1
    if (tid == 0) {
        smx_mbar_init(&bars[0]);
        smx_mbar_init(&bars[1]);
        smx_mbar_publish();
    }
    smx_cluster_arrive_relaxed();
#endif
    const float t = 1.0f;
    /* pass 1: every word loaded (batches of SMX_BATCH octets in flight), the maximum */
    struct tileops_v4 w[TILEOPS_OPT][SMP_WORDS];
    int whole[TILEOPS_OPT];
    float m = SMP_NINF;
#pragma unroll
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMX_BATCH) {
        struct tileops_v4 wb[SMX_BATCH][SMP_WORDS];
        int hb[SMX_BATCH];
        smx_issue(xt, o0, no, j0, tid, wb, hb);
#pragma unroll
        for (int b = 0; b < SMX_BATCH; b++) {
            if (j0 + b < TILEOPS_OPT) {
                const int o = (j0 + b) * TILEOPS_THREADS + (int)tid;
                whole[j0 + b] = hb[b];
#pragma unroll
                for (int h = 0; h < SMP_WORDS; h++)
                    w[j0 + b][h] = wb[b][h];
                float z[8];
                smx_z8(xrow, o0, no, o, hb[b], wb[b], t, z);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    m = smp_max(m, z[k]);
            }
        }
    }
    m = smp_block_max(m, red, tid);
#if TILEOPS_CLUSTER > 1
    smp_cluster_wait();
#endif
    const float M = smx_combine(m, slots[0], &bars[0], tid, 0);
    /* pass 2: the sum of exp(z - M), z converted again from the kept words */
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
        float z[8];
        smx_z8(xrow, o0, no, o, whole[j], w[j], t, z);
#pragma unroll
        for (int k = 0; k < 8; k++)
            s = tileops_add(s, smp_exp(tileops_add(z[k], -M)));
    }
    s = smp_block_sum(s, red, tid);
    const float S = smx_combine(s, slots[1], &bars[1], tid, 1);
#if TILEOPS_CLUSTER > 1
    smx_cluster_arrive_relaxed();
#endif
    /* pass 3: probs = exp(z - M) / S, written */
#pragma unroll
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
        if (o < no) {
            float p[8];
            smx_z8(xrow, o0, no, o, whole[j], w[j], t, p);
#pragma unroll
            for (int k = 0; k < 8; k++)
                p[k] = smp_div(smp_exp(tileops_add(p[k], -M)), S);
            smx_st8(yrow, o0 + o, p);
        }
    }
    smp_cluster_wait();
}

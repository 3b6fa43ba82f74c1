#line 2 "softmax_tma_lab.cu" /* messages name this file's lines (appended to softmax.cu's text) */
/* dev/cuda/softmax_tma_lab.cu: a lab kernel appended to the shipped softmax source
 * (dev/time_softmax.py --tma builds csrc/ops/sampling/softmax.cu's spliced text followed by
 * this file, with the shipped build's defines; it uses that file's helpers and adds no
 * include). Not a build the launch rules select.
 *
 * tileops_softmax_tma: persistent clusters, the next row's chunk fetched by the TMA
 * bulk-copy engine while the CTA works on this one. Only the registers build (TILEOPS_STAGE
 * 2: 16-bit logits, no temperature) on 16-byte aligned rows.
 * Why: at B = 128 x 128256 bf16 -> float32 the shipped kernel takes 41.9 µs against a
 * 24.9 µs copy of its bytes, DRAM 42 % busy (Nsight): each short-lived CTA loads its 32 KB
 * chunk, then idles through two cluster exchanges and the exp pass while no bytes move.
 * Here cluster c (of nclusters = nctaid / CLUSTER) takes the rows c, c + nclusters, ...;
 * its CTA of rank q the chunk q of each (the shipped split), and while it exchanges,
 * exponentiates and writes row r the copy engine brings its chunk of the next row.
 *
 * ==== A row =================================================================================
 * The chunk's bytes (CHUNK x E; smp_chunk_count x E for a short last chunk) sit in the
 * CTA's one shared buffer, put there by one cp.async.bulk (thread 0) completing on the
 * mbarrier bars[2] (its arrive.expect_tx of the bytes; a CTA past the row's end expects 0
 * and copies nothing). Per row (the CTA's k-th, parity = k & 1):
 *   wait for bars[2]'s phase (try_wait.parity); each thread reads its slots' 16-byte words
 *   from the buffer into kept[j][h], slot o = j THREADS + tid exactly as the shipped
 *   kernel's (o < no: the octet's words; a pad: SMX_FILLW, what smx_ld16_if gives it;
 *   every octet in the chunk is whole: V x E % 16 == 0 is required, so SMX_ALLFULL); a CTA
 *   barrier (the buffer is free); thread 0: fence.proxy.async (the generic reads, ordered
 *   before it by the barrier, ordered before the async proxy's writes), then the bulk copy
 *   of its chunk of the cluster's next row (if any) into the same buffer; then the shipped
 *   stage 2 passes on kept: pass 1 the maximum, smp_block_max, the cluster's maximum M;
 *   pass 2 the sum of exp(z - M), smp_block_sum, the cluster's sum S; pass 3
 *   probs = smp_div(smp_exp(z - M), S), smx_st8. The same helpers (smx_z8, smp_max,
 *   smp_exp, tileops_add, the block reductions, the rank-order combine) on the same words
 *   in the same order: the shipped kernel's bits (dev/time_softmax.py --tma checks them with
 *   torch.equal). Before passes 2 and 3 the kept words get + 0 from a volatile shared load
 *   (smt_launder): without it ptxas keeps pass 1's unpacked floats (two registers a word)
 *   alive across the loop's exchanges and spills.
 *
 * ==== The exchanges, once per row ===========================================================
 * The shipped ones (smx_send: st.async of the CTA's partial into slot[rank] of every CTA,
 * counted by the receiver's mbarrier, 4 x CLUSTER bytes expected by its own arrive), one
 * slot array and one mbarrier per exchange (bars[0]: max, bars[1]: sum), reused by every
 * row, row k waiting on the phase of parity k & 1 (each completes one phase a row). A
 * single buffer is safe with no cluster barrier per row: CTA A sends into B's slots of an
 * exchange for row k + 1 only after B has read them for row k, because every exchange is
 * all-to-all and the two alternate:
 *   max(k + 1) leaves A after A received every CTA's sum(k), B's included; B sent sum(k)
 *     after it read its max slots of row k (its sum is computed from their M);
 *   sum(k + 1) leaves A after A received B's max(k + 1); B sent that after a CTA barrier
 *     (its next row's) that follows every B thread's read of its sum slots of row k.
 * (B's reads precede its send: by data, or by bar.sync to thread 0; the st.async's
 * complete_tx releases at cluster scope, A's try_wait acquires at cluster scope.) The same
 * chain keeps B's mbarrier from counting a next row's bytes in the current phase: they
 * arrive only after B waited that phase out; arriving before B's own arrive.expect_tx for
 * the next phase they leave tx-count negative, which completes nothing while B's arrival is
 * pending, and B's own st.async comes after that arrival. The mbarriers are made by thread
 * 0 (fence.mbarrier_init.release.cluster, a relaxed cluster arrive); the cluster barrier is
 * waited for before the first row's first send, as the shipped kernel does. After its last
 * row's sum is received a CTA arrives at the cluster barrier again, and it waits for that
 * barrier before it exits: every write into a CTA's shared memory (an exchange's) has landed
 * before that CTA's last sum phase completes, so none lands after its exit. A cluster with
 * no row arrives and waits once. The last row fetches nothing: no copy is in flight at exit.
 *
 * ==== Parameters (arg_format "pppq") ========================================================
 *   (const void *logits, const float *temperature /+ unused: 0 +/, void *probs, long long
 *   rows); contiguous [rows, V], logits 16-byte aligned (a trap otherwise); grid.x =
 *   nclusters x TILEOPS_CLUSTER (any nclusters >= 1: the clusters past the rows do nothing),
 *   block TILEOPS_THREADS, dynamic shared memory SMT_BUF = CHUNK x E rounded up to 16 bytes
 *   (32064 at 128256, 38016 at 152064). __launch_bounds__(THREADS, SMT_MIN_BLOCKS),
 *   -DSMT_MIN_BLOCKS, by default the shipped plan's TILEOPS_MIN_BLOCKS (3 CTAs an SM at
 *   128256: 40 registers; 2 at 152064: 56; no spill in either, sm_90a). Clusters beyond
 *   those co-resident (about 132 x MIN_BLOCKS / 8, less the GPCs' leftovers) wait for a
 *   whole cluster to finish all its rows: a second wave. */
#if TILEOPS_STAGE != 2
#error "softmax_tma_lab.cu is a lab of the registers build: TILEOPS_STAGE 2 (16-bit logits, no temperature)"
#endif
#if TILEOPS_CLUSTER < 2
#error "softmax_tma_lab.cu needs a cluster (TILEOPS_CLUSTER > 1: sm_90 or later)"
#endif
#if TILEOPS_VEC == 1 || (TILEOPS_N * TILEOPS_E) % 16 != 0
#error "softmax_tma_lab.cu: the bulk copies need 16-byte aligned rows (TILEOPS_VEC == G, V x E a multiple of 16)"
#endif
#if (TILEOPS_CHUNK * TILEOPS_E) % 16 != 0
#error "softmax_tma_lab.cu: a chunk's byte start (rank x CHUNK x E) must be a multiple of 16"
#endif
#if !SMX_ALLFULL
#error "softmax_tma_lab.cu: every octet of the row must be whole (V a multiple of 8, vector path)"
#endif
#define SMT_BUF (((TILEOPS_CHUNK * TILEOPS_E + 15) / 16) * 16) /* the chunk's buffer, bytes */
#if SMT_BUF >= (1 << 20)
#error "softmax_tma_lab.cu: a chunk's bytes exceed an mbarrier's tx-count (2^20 - 1)"
#endif
#ifndef SMT_MIN_BLOCKS
#define SMT_MIN_BLOCKS TILEOPS_MIN_BLOCKS /* the shipped plan's CTAs per SM */
#endif
#if SMT_MIN_BLOCKS
#define SMT_BOUNDS __launch_bounds__(TILEOPS_THREADS, SMT_MIN_BLOCKS)
#else
#define SMT_BOUNDS __launch_bounds__(TILEOPS_THREADS)
#endif

extern __shared__ __attribute__((aligned(16))) unsigned char smt_buf[];

/* the phase of parity `parity` of the mbarrier complete: acquire at CTA scope (the bulk
 * copy's bytes) or at cluster scope (the other CTAs' st.async) */
TILEOPS_DEV void smt_wait(smp_u64 *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(smp_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
TILEOPS_DEV void smt_wait_cluster(smp_u64 *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(smp_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
/* generic-proxy accesses of shared memory ordered with the async proxy's (the bulk copy) */
TILEOPS_DEV void smt_fence_proxy(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
/* `bytes` (a multiple of 16, 16-byte aligned ends) from global src into the CTA's shared
 * buffer at dst, counted by bar's current phase (one thread calls it; 0 bytes: the arrive
 * alone completes the phase) */
TILEOPS_DEV void smt_fetch(unsigned dst, const char *src, unsigned bytes, smp_u64 *bar) {
    const unsigned b = smp_smem_addr(bar);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(bytes) : "memory");
    if (bytes)
        asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %1; "
                     "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [g], %2, [%3]; }" ::"r"(
                         dst),
                     "l"(src), "r"(bytes), "r"(b)
                     : "memory");
}
/* the 16 bytes at shared address a when `pred`, else the fill (smx_ld16_if's words) */
TILEOPS_DEV struct tileops_v4 smt_ld16_if(unsigned a, int pred) {
    struct tileops_v4 v;
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = SMX_FILLW;
    asm volatile("{ .reg .pred q; setp.ne.s32 q, %4, 0; @q ld.shared.v4.u32 {%0, %1, %2, %3}, [%5]; }"
                 : "+r"(v.a[0]), "+r"(v.a[1]), "+r"(v.a[2]), "+r"(v.a[3])
                 : "r"(pred), "r"(a)
                 : "memory");
    return v;
}
/* The kept words made opaque to ptxas for the next pass: + a shared word that holds 0, read
 * by a volatile load at the pass's start (after its exchange's wait: it cannot move above).
 * Else ptxas keeps pass 1's unpacked floats (two registers a word) alive into passes 2 and 3
 * of the loop, or hoists a register 0's adds, and spills (12-20 bytes). The same bits. */
TILEOPS_DEV void smt_launder(struct tileops_v4 (*kept)[SMP_WORDS], const unsigned *zero_word) {
    unsigned zero;
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(zero) : "r"(smp_smem_addr(zero_word)) : "memory");
#pragma unroll
    for (int j = 0; j < TILEOPS_OPT; j++)
#pragma unroll
        for (int h = 0; h < SMP_WORDS; h++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                kept[j][h].a[k] += zero;
}
/* smx_combine with the wait on the phase of parity `parity` (a row's) */
TILEOPS_DEV float smt_combine(float v, float *slot, smp_u64 *bar, unsigned tid, int sum, unsigned parity) {
    if (tid == 0)
        smx_send(v, slot, bar, smp_rank_in_cluster());
    smt_wait_cluster(bar, parity);
    float a = slot[0];
#pragma unroll
    for (int r = 1; r < TILEOPS_CLUSTER; r++)
        a = sum ? tileops_add(a, slot[r]) : smp_max(a, slot[r]);
    return a;
}

extern "C" __global__ void SMT_BOUNDS SMP_CLUSTER_DIMS
    tileops_softmax_tma(const void *x, const float *temperature, void *y, long long rows) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ float red[TILEOPS_WARPS];
    __shared__ float slots[2][TILEOPS_CLUSTER];
    __shared__ __attribute__((aligned(8))) smp_u64 bars[3]; /* the max's, the sum's exchange; the copy's */
    __shared__ unsigned zero_word;                          /* 0: smt_launder's */
    (void)temperature;
    if ((unsigned long long)x & 15ull) /* the bulk copies' sources must be 16-byte aligned */
        asm volatile("trap;");
    const unsigned tid = tileops_tid();
    const long long c0 = smp_chunk_first(), o0 = c0 / 8; /* o0: the chunk's first octet */
#if TILEOPS_N == TILEOPS_CLUSTER * TILEOPS_CHUNK
    const long long n = TILEOPS_CHUNK; /* every chunk whole (128256, 152064): the pads known at compile time */
#else
    const long long n = smp_chunk_count(c0);
#endif
    const int no = (int)((n + 7) / 8); /* the chunk's octets */
    const unsigned nbytes = (unsigned)(n * TILEOPS_E), buf = smp_smem_addr(smt_buf);
    const unsigned ncl = tileops_nctaid() / TILEOPS_CLUSTER, row0 = tileops_ctaid() / TILEOPS_CLUSTER;
    /* the rows as 32 bits (a row count past 2^31 - 1 is not a tensor that fits): one register fewer */
    const unsigned nrows = rows <= 0 ? 0u : rows < 0x7fffffffLL ? (unsigned)rows : 0x7fffffffu;
    const long long xstride = (long long)TILEOPS_N * TILEOPS_E;
    const char *xc = (const char *)x + c0 * TILEOPS_E; /* the chunk of row 0 */
    if (tid == 0) {
        zero_word = 0u; /* read after the first row's barrier */
        smx_mbar_init(&bars[0]);
        smx_mbar_init(&bars[1]);
        smx_mbar_init(&bars[2]);
        smx_mbar_publish();
        smt_fence_proxy(); /* the copy's mbarrier made, for the async proxy */
        if (row0 < nrows)
            smt_fetch(buf, xc + row0 * xstride, nbytes, &bars[2]);
    }
    tileops_barrier(); /* the mbarriers made before any thread waits on one (session 22's first run:
                        * without it the other warps' first try_wait read an unmade mbarrier) */
    smx_cluster_arrive_relaxed(); /* waited for before the first send */
    unsigned parity = 0; /* of the row's phase of each mbarrier */
    for (unsigned row = row0; row < nrows; row += ncl, parity ^= 1u) {
        const char *xrow = (const char *)x; /* unused: every octet whole (SMX_ALLFULL) */
        char *yrow = (char *)y + row * (long long)TILEOPS_N * SMX_OE;
        /* the chunk, from the buffer: kept words as the shipped kernel's loads give them */
        smt_wait(&bars[2], parity);
        struct tileops_v4 kept[TILEOPS_OPT][SMP_WORDS];
#pragma unroll
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const int o = j * TILEOPS_THREADS + (int)tid;
#pragma unroll
            for (int h = 0; h < SMP_WORDS; h++)
                kept[j][h] = smt_ld16_if(buf + 16u * (unsigned)(o * SMP_WORDS + h), o < no);
        }
        tileops_barrier(); /* every thread has its words: the buffer is free */
        if (tid == 0 && row + ncl < nrows) {
            smt_fence_proxy(); /* the CTA's reads (before the barrier) ordered before the copy's writes */
            smt_fetch(buf, xc + (row + ncl) * xstride, nbytes, &bars[2]);
        }
        /* pass 1: the maximum */
        float m = SMP_NINF;
#pragma unroll
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const int o = j * TILEOPS_THREADS + (int)tid;
            float z[8];
            smx_z8(xrow, o0, no, o, smx_whole(o0, no, o), kept[j], 1.0f, z);
#pragma unroll
            for (int k = 0; k < 8; k++)
                m = smp_max(m, z[k]);
        }
        m = smp_block_max(m, red, tid);
        if (row == row0)
            smp_cluster_wait(); /* every CTA's mbarriers are made */
        const float M = smt_combine(m, slots[0], &bars[0], tid, 0, parity);
        smt_launder(kept, &zero_word);
        /* pass 2: the sum of exp(z - M) (a pad adds +0) */
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const int o = j * TILEOPS_THREADS + (int)tid;
            float z[8];
            smx_z8(xrow, o0, no, o, smx_whole(o0, no, o), kept[j], 1.0f, z);
#pragma unroll
            for (int k = 0; k < 8; k++)
                s = tileops_add(s, smp_exp(tileops_add(z[k], -M)));
        }
        s = smp_block_sum(s, red, tid);
        const float S = smt_combine(s, slots[1], &bars[1], tid, 1, parity);
        if (row + ncl >= nrows)
            smx_cluster_arrive_relaxed(); /* the last row's sums received: the others may exit after their wait */
        smt_launder(kept, &zero_word);
        /* pass 3: probs = exp(z - M) / S */
#pragma unroll
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const int o = j * TILEOPS_THREADS + (int)tid;
            if (o < no) {
                float p[8];
                smx_z8(xrow, o0, no, o, smx_whole(o0, no, o), kept[j], 1.0f, p);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    p[k] = smp_div(smp_exp(tileops_add(p[k], -M)), S);
                smx_st8(yrow, o0 + o, p);
            }
        }
    }
    smp_cluster_wait();
}

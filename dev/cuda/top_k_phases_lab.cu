/* dev/cuda/top_k_phases_lab.cu: a lab kernel appended to the shipped top-k source
 * (dev/time_top_k.py --phases builds csrc/ops/sampling/top_k.cu's spliced text followed by
 * this file, with the shipped build's defines; it uses that file's helpers). Not a build the
 * launch rules select.
 *
 * tileops_top_k_phases: tileops_top_k's steps, in its order and with its results, with the
 * SM's cycle counter read by thread 0 of each CTA at the phases' ends (a CTA barrier before
 * each mark that follows a loop, so a mark is the CTA's, not thread 0's), written to
 * phases[row][rank][TKP_SLOTS] at the end:
 *   0 start (after the PDL prologue), 1 sel and the sums cleared,
 *   2 + 4p .. 5 + 4p pass p: cleared, counted, summed over the cluster, picked (p < 3),
 *   14 the collection (either way: slots taken, or the exchange and the ordered tiles),
 *   15 the last cluster barrier, 16 sorted and written (rank 0), 17 / 18 %globaltimer (ns)
 *   at 0 and at the CTA's last mark, 19 the cycle counter at that mark, 20 %smid, 21 1 when
 *   the collection took the ordered path.
 * Marks of steps a build skips (pass 2 of a 16-bit row) repeat the last one.
 *
 * A thread's first octets are kept in registers as the shipped kernel keeps them
 * (sampling_common.cuh SMP_KEEP; session 18's -DTKP_REGS=1, variant cCr, shipped in
 * session 19; -DSMP_KEEP=0: variant cCnl loads each pass).
 *
 * (Session 18's -DTKP_RS=1, variants cCs / cCrs, the histograms summed by reduce-scatter
 * and gather, measured no gain: 13.26 against 13.41 µs bf16 top-50 B = 1, float32 16.86
 * against 16.72; commit 0b73e5f has it.)
 *
 * Parameters: tileops_top_k's, then long long *phases. */
#define TKP_SLOTS 24
#if TILEOPS_KP > SMP_SEL_THREADS
#error "top_k_phases_lab.cu: the register sort's k <= 1024"
#endif

TILEOPS_DEV long long tkp_clock(void) {
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    return c;
}
TILEOPS_DEV long long tkp_gtime(void) {
    long long c;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(c));
    return c;
}
#define TKP_MARK(i)                                                                                                    \
    do {                                                                                                               \
        if (tid == 0)                                                                                                  \
            ph[i] = tkp_clock();                                                                                       \
    } while (0)

#define TKP_SUM(cnt, tot, tid, pending) smp_histogram_sum(cnt, 0, 0, tot, 0, tid, pending)

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_top_k_phases(const void *x, void *values,
                                                                                long long *indices, long long *phases) {
    TILEOPS_PDL_PROLOGUE();
    extern __shared__ __attribute__((aligned(16))) smp_u64 sel[];
    __shared__ __attribute__((aligned(16))) unsigned cnt[SMP_BINS];
#if TILEOPS_CLUSTER > 1
    __shared__ unsigned tot[SMP_BINS];
#else
    unsigned *const tot = 0;
#endif
    __shared__ smp_u64 red[SMP_RED];
    __shared__ smp_u64 slot, all[TILEOPS_CLUSTER];
    __shared__ unsigned taken;
    __shared__ struct smp_pick out;
    __shared__ long long ph[TKP_SLOTS]; /* thread 0's marks (shared: no registers held) */
    const unsigned tid = tileops_tid();
    if (tid == 0)
        ph[17] = tkp_gtime();
    TKP_MARK(0);
    const long long row = smp_row();
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    int o0, no;
    smp_sel_chunk(&o0, &no);
    const unsigned rank = smp_rank_in_cluster();
    const int rank0 = rank == 0;
    int pending = 0;
    if (rank0) {
        for (int i = (int)tid; i < TILEOPS_KP; i += SMP_SEL_THREADS)
            sel[i] = 0;
        if (tid == 0)
            taken = 0;
    }
    smp_sums_init(tot, 0, tid, &pending);
    struct smp_kept kp;
    smp_keep_load(xrow, o0, no, tid, &kp);
    TKP_MARK(1);

    /* smp_select, marked */
    unsigned prefix = 0, chosen = 0;
    smp_u64 gt = 0, lgt = 0, local = 0, equal = 0;
#pragma unroll
    for (int p = 0; p < 3; p++) {
        if (p >= SMP_PASSES) {
            TKP_MARK(2 + 4 * p);
            TKP_MARK(3 + 4 * p);
            TKP_MARK(4 + 4 * p);
            TKP_MARK(5 + 4 * p);
            continue;
        }
        const int shift = SMP_SHIFT(p);
        const unsigned digit_mask = (1u << SMP_WIDTH(p)) - 1u;
        for (int b = (int)tid; b < SMP_BINS; b += SMP_SEL_THREADS)
            cnt[b] = 0;
        tileops_barrier();
        TKP_MARK(2 + 4 * p);
        SMP_SEL_UNROLL
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const long long o = (long long)j * SMP_SEL_THREADS + tid;
            if (o < no) {
                unsigned key[8], bits[8];
                float f[8];
                smp_keys8_kept(xrow, o0, o, j, &kp, key, f, bits);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    if (8 * (o0 + o) + e < TILEOPS_N && (key[e] & chosen) == prefix)
                        smp_red_add_u32(&cnt[(key[e] >> shift) & digit_mask], 1u);
            }
        }
        tileops_barrier();
        TKP_MARK(3 + 4 * p);
        const struct smp_bins bn = TKP_SUM(cnt, tot, tid, &pending);
        TKP_MARK(4 + 4 * p);
        const struct smp_pick pk = smp_pick_count(bn, cnt, TILEOPS_K - gt, red, &out, tid);
        TKP_MARK(5 + 4 * p);
        gt += pk.above;
        lgt += pk.local_above;
        prefix |= (unsigned)pk.digit << shift;
        chosen |= digit_mask << shift;
        local = (lgt << 32) | pk.local_count;
        equal = pk.count;
    }
    const unsigned t = prefix;
    const smp_u64 above = gt, need = TILEOPS_K - above;
    const int ordered = above + equal > TILEOPS_KP;

    if (!ordered) {
        (void)slot, (void)all;
        SMP_SEL_UNROLL
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const long long o = (long long)j * SMP_SEL_THREADS + tid;
            if (o < no) {
                unsigned key[8], bits[8];
                float f[8];
                smp_keys8_kept(xrow, o0, o, j, &kp, key, f, bits);
                unsigned n = 0;
#pragma unroll
                for (int e = 0; e < 8; e++)
                    n += key[e] >= t;
                if (n) {
                    unsigned at = smp_take_rank0(&taken, n);
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        if (key[e] >= t)
                            smp_put_rank0(&sel[at++], smp_rank(key[e], 8 * (o0 + o) + e));
                }
            }
        }
    } else {
        smp_u64 base = 0;
#if TILEOPS_CLUSTER > 1
        smp_u64 largest;
        smp_sel_exchange(local, &slot, all, tid, &pending, &base, &largest);
#else
        (void)slot, (void)all, (void)local;
#endif
        SMP_SEL_UNROLL
        for (int j = 0; j < TILEOPS_OPT; j++) {
            const long long o = (long long)j * SMP_SEL_THREADS + tid;
            unsigned key[8], bits[8];
            float f[8];
            smp_u64 mine = 0;
            if (o < no) {
                smp_keys8_kept(xrow, o0, o, j, &kp, key, f, bits);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    mine += key[e] > t ? (1ull << 32) : key[e] == t && 8 * (o0 + o) + e < TILEOPS_N ? 1ull : 0ull;
            }
            smp_u64 total;
            smp_u64 at = base + smp_block_scan_u64(mine, red, tid, &total);
            base += total;
            if (o < no) {
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    const long long i = 8 * (o0 + o) + e;
                    if (key[e] > t) {
                        smp_put_rank0(&sel[at >> 32], smp_rank(key[e], i));
                        at += 1ull << 32;
                    } else if (key[e] == t && i < TILEOPS_N) {
                        const smp_u64 r = at & 0xffffffffull;
                        if (r < need)
                            smp_put_rank0(&sel[above + r], smp_rank(key[e], i));
                        at += 1;
                    }
                }
            }
        }
    }
    tileops_barrier();
    TKP_MARK(14);
    smp_cluster_settle(&pending);
    smp_cluster_arrive();
    smp_cluster_wait();
    TKP_MARK(15);
    if (rank0) {
        tileops_barrier();
    }
    if (rank0 && tid < TK_SORT_THREADS) {
        const int i = (int)tid;
        smp_u64 v = i < TILEOPS_KP ? sel[i] : 0;
        int flip = 0;
        for (int size = 2; size <= TILEOPS_KP; size <<= 1) {
            for (int stride = size >> 1; stride > 0; stride >>= 1) {
                smp_u64 w;
                if (stride >= 32) {
                    smp_u64 *buf = flip ? (smp_u64 *)cnt : sel;
                    buf[i] = v;
                    tk_sort_barrier();
                    w = buf[i ^ stride];
                    flip ^= 1;
                } else
                    w = smp_shfl_xor_u64(v, stride);
                v = (((i & stride) == 0) == ((i & size) == 0)) ? (v > w ? v : w) : (v < w ? v : w);
            }
        }
        if (i < TILEOPS_K)
            tk_put(xrow, row, i, v, values, indices);
        tk_sort_barrier();
    }
    TKP_MARK(16);
    if (tid == 0) {
        ph[18] = tkp_gtime();
        ph[19] = ph[16];
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        ph[20] = sm;
        ph[21] = ordered;
        for (int q = 22; q < TKP_SLOTS; q++)
            ph[q] = 0;
        long long *dst = phases + (row * TILEOPS_CLUSTER + rank) * TKP_SLOTS;
        for (int q = 0; q < TKP_SLOTS; q++)
            dst[q] = ph[q];
    }
}

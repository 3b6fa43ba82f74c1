/* ops/sampling/top_k_top_p_mask.cu: the GPU kernel of TopKTopPMaskFwdOp (vLLM's
 * apply_top_k_top_p without its sort), C-style CUDA C compiled at run time by NVRTC with no
 * builtin headers (sampling_common.cuh and ../common/rows_common.cuh spliced in):
 *   top-k (1 <= k[r] < V): elements below the k-th largest value are masked (every element
 *   equal to it kept); top-p (p[r] < 1, on what top-k kept, when the row's maximum m is
 *   finite): in the order larger value first, equal values by lower index first, an
 *   element is kept when the probability mass before it is < p (the first always);
 *   masked elements become -inf, kept ones keep their bits; a row with a NaN is all NaN.
 * A row over a cluster of TILEOPS_CLUSTER CTAs of 1024 threads (1: one CTA), each over its
 * chunk of the row, the same steps as the CPU kernel (top_k_top_p_mask.c), every sum and
 * histogram over the cluster (sampling_common.cuh: integer counts and masses, so the same
 * result whatever the cluster's size):
 *   1. m = max, and whether the row has a NaN (then: NaN written, done);
 *   2. top-k: the k-th largest key T by radix selection (smp_select);
 *   3. top-p: integer weights W = floor(exp(x - m) 2^40) (exact sums in any order),
 *      Z = sum W over keys >= T, P = ceil(p Z) in double; the edge by a radix search over
 *      the keys >= T with each digit's count and mass (smp_pick_mass; Z the first pass's
 *      total, p <= 0 the largest key, no pass): the lowest kept key K,
 *      the mass G above it; of the elements equal to K the first ceil((P - G) / W_K) by
 *      index are kept (all when W_K is 0);
 *   4. one pass writes -inf over the masked elements (in place: only those; out of place:
 *      every element), ranking the elements equal to K in index order (a block scan per
 *      tile, after the counts of the chunks of the ranks below) only when some of them are
 *      masked.
 * exp here is ex2.approx (the CPU kernel's is its own): the edge can differ from the CPU's
 * only where the mass before an element is within rounding of p Z.
 *
 * ==== Parameters (arg_format "pppp") ======================================================
 *   (const void *logits, const void *k /+ 0 without +/, const float *p /+ 0 without +/,
 *    void *out /+ the logits themselves: in place +/): contiguous [rows, V] and [rows];
 *   grid.x = rows x CLUSTER, block 1024, dynamic shared memory SMP_SUMS bytes when
 *   CLUSTER > 1 (the cluster's sums of the histograms), else none.
 *
 * ==== Defines (besides sampling_common.cuh's, with TILEOPS_THREADS 1024) ===================
 *   TILEOPS_HAS_K, TILEOPS_HAS_P 0 or 1; TILEOPS_K64 1 for int64 k, 0 for int32. */
/* words kept in registers at most 3 octets a thread (clusters of 8): at 4 (clusters of 4)
 * the mask was 2-4 µs slower L2-cold with them (H200, session 19: top_k_keep.json) */
#define SMP_KEEP_OPT 3
#include "sampling_common.cuh"

#if !defined(TILEOPS_HAS_K) || !defined(TILEOPS_HAS_P) || !defined(TILEOPS_K64)
#error "top_k_top_p_mask.cu needs -DTILEOPS_HAS_K, -DTILEOPS_HAS_P, -DTILEOPS_K64"
#endif
#if TILEOPS_THREADS != SMP_SEL_THREADS
#error "top_k_top_p_mask.cu: CTAs of 1024 threads"
#endif

#if TILEOPS_E == 4
#define TKP_NAN 0x7fc00000u
#define TKP_NINF 0xff800000u
#elif TILEOPS_DTYPE == 1
#define TKP_NAN 0x7e00u
#define TKP_NINF 0xfc00u
#else
#define TKP_NAN 0x7fc0u
#define TKP_NINF 0xff80u
#endif

/* element i of an output row */
TILEOPS_DEV void tkp_put(char *row, long long i, unsigned bits) {
#if TILEOPS_E == 4
    ((unsigned *)row)[i] = bits;
#else
    ((unsigned short *)row)[i] = (unsigned short)bits;
#endif
}

/* the key, in the row's keys' width (smp_key, smp_key16), of its finite maximum m, whose
 * float32 key is mkey (m converts exactly: it is one of the row's values) */
TILEOPS_DEV unsigned tkp_key_of_max(float m, unsigned mkey) {
#if TILEOPS_E == 4
    (void)m;
    return mkey;
#elif TILEOPS_DTYPE == 1
    (void)mkey;
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(m));
    return smp_key16(h);
#else
    (void)mkey;
    return smp_key16(tileops_as_uint(m) >> 16);
#endif
}

/* the float of an ordered key (smp_key's inverse; 0x80000000: +0.0) */
TILEOPS_DEV float tkp_unkey(unsigned k) { return tileops_as_float(k & 0x80000000u ? k & 0x7fffffffu : ~k); }

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_top_k_top_p_mask(const void *x, const void *kk,
                                                                                    const float *pp, void *y) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ unsigned cnt[SMP_BINS];
    __shared__ unsigned mass_lo[SMP_BINS], mass_hi[SMP_BINS];
#if TILEOPS_CLUSTER > 1
    extern __shared__ __attribute__((aligned(16))) smp_u64 sums[]; /* SMP_SUMS bytes: masses, then counts */
    smp_u64 *const totw = sums;
    unsigned *const tot = (unsigned *)(sums + SMP_BINS);
#else
    smp_u64 *const totw = 0;
    unsigned *const tot = 0;
#endif
    __shared__ smp_u64 red[SMP_RED];
    __shared__ float fred[TILEOPS_WARPS];
    __shared__ smp_u64 slot[2], all[TILEOPS_CLUSTER]; /* one word per exchange; the gathered */
    __shared__ struct smp_pick out;
    __shared__ int lowest;
    const unsigned tid = tileops_tid();
    const long long row = smp_row();
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    char *yrow = (char *)y + row * (long long)TILEOPS_N * TILEOPS_E;
    const int in_place = x == y;
    int o0, no; /* octets (V < 2^32) */
    smp_sel_chunk(&o0, &no);
    int pending = 0;
    smp_u64 before, largest;
    smp_sums_init(tot, totw, tid, &pending);
    struct smp_kept kp; /* the words of the thread's first octets, loaded once for the nine passes (SMP_KEEP) */
    smp_keep_load(xrow, o0, no, tid, &kp);

    /* 1. the maximum, and NaN */
    float m = SMP_NINF;
    unsigned nan = 0;
    SMP_SEL_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        if (o < no) {
            unsigned key[8], bits[8];
            float f[8];
            smp_keys8_kept(xrow, o0, o, j, &kp, key, f, bits);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                m = smp_max(m, f[e]);
                nan |= f[e] != f[e];
            }
        }
    }
    m = smp_block_max(m, fred, tid);
    const int has_nan = smp_block_sum_u64(nan, red, tid) != 0;
    /* over the cluster, one word a CTA: the key of its maximum, and 2^40 when it has a NaN
     * (the sum counts those; without one the largest word is the row's maximum's key) */
    const smp_u64 word = smp_sel_exchange((smp_u64)smp_key(m) | ((smp_u64)has_nan << 40), &slot[0], all, tid, &pending,
                                          &before, &largest);
    if (word >> 40) {
        for (long long i = 8 * o0 + tid; i < 8 * (o0 + no) && i < TILEOPS_N; i += SMP_SEL_THREADS)
            tkp_put(yrow, i, TKP_NAN);
        smp_cluster_settle(&pending);
        return;
    }
    const unsigned mkey = (unsigned)largest;
    m = tkp_unkey(mkey);

    /* 2. top-k */
    unsigned tk = 0;
#if TILEOPS_HAS_K
#if TILEOPS_K64
    const long long k = ((const long long *)kk)[row];
#else
    const long long k = ((const int *)kk)[row];
#endif
    if (k >= 1 && k < TILEOPS_N) {
        smp_u64 above, equal, local;
        tk = smp_select(xrow, o0, no, &kp, (smp_u64)k, cnt, tot, red, &out, tid, &above, &equal, &local, &pending);
    }
#else
    (void)kk;
#endif

    /* 3. top-p */
    int top_p = 0;
    unsigned kb = 0;
    smp_u64 take = 0;
    int rank_ties = 0;       /* some elements equal to kb masked: rank them by index */
    smp_u64 local_b = ~0ull; /* this CTA's keys equal to kb (~0: not counted) */
#if TILEOPS_HAS_P
    const float p = pp[row];
    top_p = p < 1.0f && m != SMP_NINF && m != tileops_as_float(0x7f800000u);
    if (top_p) {
        if (!(p > 0.0f)) { /* p <= 0: the largest alone (m's key: m is at or above tk), its first element */
            kb = tkp_key_of_max(m, mkey);
            take = 1;
            rank_ties = 1;
        } else {
            unsigned prefix = 0, chosen = 0;
            smp_u64 g = 0, bound = 0; /* ceil(p Z), set by the first pass (Z: the mass of the keys >= tk) */
            struct smp_pick pk;
            for (int pass = 0; pass < SMP_PASSES; pass++) {
                const int shift = SMP_SHIFT(pass);
                const unsigned digit_mask = (1u << SMP_WIDTH(pass)) - 1u;
                const struct smp_bins bn = smp_histogram(xrow, o0, no, &kp, tk, chosen, prefix, shift, digit_mask,
                                                         cnt, mass_lo, mass_hi, tot, totw, m, tid, &pending);
                pk = smp_pick_mass(bn, cnt, g, p, &bound, red, &out, &lowest, tid);
                g = pk.above;
                prefix |= (unsigned)pk.digit << shift;
                chosen |= digit_mask << shift;
            }
            kb = prefix;
            local_b = pk.local_count;
            const smp_u64 wb = pk.mass / pk.count;
            take = wb == 0 ? pk.count : (bound - g + wb - 1) / wb;
            rank_ties = take < pk.count;
        }
    }
#else
    (void)pp;
#endif

    /* 4. the write */
    smp_u64 base = 0; /* elements equal to kb in the chunks of the ranks below, and the tiles before */
#if TILEOPS_CLUSTER > 1
    if (rank_ties) { /* uniform over the cluster; counted here only after p <= 0 (the low word: keys equal to kb) */
        if (local_b == ~0ull)
            local_b = smp_count_around(xrow, o0, no, &kp, kb, red, tid) & 0xffffffffull;
        smp_sel_exchange(local_b, &slot[1], all, tid, &pending, &base, &largest);
    }
#endif
    SMP_SEL_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        unsigned key[8], bits[8];
        float f[8];
        smp_u64 at = 0;
        if (o < no)
            smp_keys8_kept(xrow, o0, o, j, &kp, key, f, bits);
        if (rank_ties) { /* uniform over the CTA: every thread takes part in the scan */
            smp_u64 mine = 0, total;
            if (o < no) {
#pragma unroll
                for (int e = 0; e < 8; e++)
                    mine += 8 * (o0 + o) + e < TILEOPS_N && key[e] == kb;
            }
            at = base + smp_block_scan_u64(mine, red, tid, &total);
            base += total;
        }
        if (o < no) {
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const long long i = 8 * (o0 + o) + e;
                if (i >= TILEOPS_N)
                    continue;
                int keep = key[e] >= tk;
                if (keep && top_p) {
                    if (key[e] == kb)
                        keep = !rank_ties || at++ < take;
                    else
                        keep = key[e] > kb;
                }
                if (!keep)
                    tkp_put(yrow, i, TKP_NINF);
                else if (!in_place)
                    tkp_put(yrow, i, bits[e]);
            }
        }
    }
    smp_cluster_settle(&pending); /* no CTA exits while another may read its shared memory */
}

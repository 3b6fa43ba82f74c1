/* ops/sampling/top_k.cu: the GPU kernel of TopKFwdOp, C-style CUDA C compiled at run time by
 * NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh spliced
 * in by the runtime):
 *   the k largest of each row, largest first, equal values by lower index first, NaN the
 *   largest, -0.0 equal to 0.0; values copied bit for bit.
 * A row over a cluster of TILEOPS_CLUSTER CTAs of 1024 threads (1: one CTA), no full sort:
 *   1. the k-th largest key T by radix selection (smp_select: 3 passes over a float32
 *      row's keys, 2 over a 16-bit one's, every CTA over its chunk, the histograms summed
 *      over the cluster), and how many keys are above it (a thread's first octets'
 *      words loaded once and kept in registers for every pass: SMP_KEEP);
 *   2. every element at or above T, as ranks (key, index reversed), into the shared memory
 *      of the cluster's CTA of rank 0 at slots taken from its counter, when they fit the
 *      sort (which then ranks the ties by index); else, in index order (a CTA's chunk after
 *      the chunks of the ranks below it: their counts above and equal to T, read off the
 *      selection's histograms, exchanged; tiles of the chunk, a block scan per tile), every
 *      element above T and the first k - (those) equal to T;
 *   3. there, a bitonic sort of those ranks, largest first (pow2ceil(k) of them, padded
 *      with 0; up to 1024, one a thread in registers, exchanged by shuffles below a warp's
 *      width and through shared memory above);
 *   4. values and indices written.
 * The same result as the CPU kernel (the same order, an exact selection), whatever the
 * cluster's size.
 *
 * ==== Parameters (arg_format "ppp") =======================================================
 *   (const void *logits, void *values /+ 0 when TILEOPS_VALUES 0 +/, long long *indices):
 *   logits contiguous [rows, V], values and indices [rows, K]; grid.x = rows x CLUSTER,
 *   block 1024, dynamic shared memory TILEOPS_KP x 8 bytes.
 *
 * ==== Defines (besides sampling_common.cuh's, with TILEOPS_THREADS 1024) ==================
 *   TILEOPS_K = k (1 <= k <= V); TILEOPS_KP = pow2ceil(k); TILEOPS_VALUES 1 to write values. */
#include "sampling_common.cuh"

#if !defined(TILEOPS_K) || !defined(TILEOPS_KP) || !defined(TILEOPS_VALUES)
#error "top_k.cu needs -DTILEOPS_K, -DTILEOPS_KP, -DTILEOPS_VALUES"
#endif
#if TILEOPS_K < 1 || TILEOPS_K > TILEOPS_N || TILEOPS_KP < TILEOPS_K || TILEOPS_KP & (TILEOPS_KP - 1)
#error "TILEOPS_K must be in [1, V] and TILEOPS_KP the power of two at or above it"
#endif
#if TILEOPS_THREADS != SMP_SEL_THREADS
#error "top_k.cu: CTAs of 1024 threads"
#endif

/* the threads of the register sort (KP <= 1024): the warps holding ranks, and their barrier */
#define TK_SORT_THREADS (TILEOPS_KP < 32 ? 32 : TILEOPS_KP)
TILEOPS_DEV void tk_sort_barrier(void) {
#if TK_SORT_THREADS >= SMP_SEL_THREADS
    tileops_barrier();
#else
    asm volatile("bar.sync 1, %0;" ::"n"(TK_SORT_THREADS) : "memory");
#endif
}

/* the i-th largest of the row (its rank r): index, and value copied bit for bit */
TILEOPS_DEV void tk_put(const char *xrow, long long row, int i, smp_u64 r, void *values, long long *indices) {
    const long long e = smp_rank_index(r);
    indices[row * TILEOPS_K + i] = e;
#if TILEOPS_VALUES
#if TILEOPS_E == 4
    ((unsigned *)values)[row * TILEOPS_K + i] = ((const unsigned *)xrow)[e];
#else
    ((unsigned short *)values)[row * TILEOPS_K + i] = ((const unsigned short *)xrow)[e];
#endif
#else
    (void)xrow, (void)values;
#endif
}

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_top_k(const void *x, void *values,
                                                                         long long *indices) {
    TILEOPS_PDL_PROLOGUE();
    extern __shared__ __attribute__((aligned(16))) smp_u64 sel[];
    __shared__ __attribute__((aligned(16))) unsigned cnt[SMP_BINS]; /* then, in rank 0, the sort's second buffer */
#if TILEOPS_CLUSTER > 1
    __shared__ unsigned tot[SMP_BINS];
#else
    unsigned *const tot = 0;
#endif
    __shared__ smp_u64 red[SMP_RED];
    __shared__ smp_u64 slot, all[TILEOPS_CLUSTER];
    __shared__ unsigned taken; /* rank 0's: the slots of sel given out */
    __shared__ struct smp_pick out;
    const unsigned tid = tileops_tid();
    const long long row = smp_row();
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    int o0, no; /* octets (V < 2^32) */
    smp_sel_chunk(&o0, &no);
    const int rank0 = smp_rank_in_cluster() == 0;
    int pending = 0;
    /* rank 0's sel (the sort pads with 0) and counter, ordered before the others' writes by
     * the selection's cluster barriers */
    if (rank0) {
        for (int i = (int)tid; i < TILEOPS_KP; i += SMP_SEL_THREADS)
            sel[i] = 0;
        if (tid == 0)
            taken = 0;
    }
    smp_sums_init(tot, 0, tid, &pending);
    struct smp_kept kp; /* the words of the thread's first octets, loaded once (SMP_KEEP) */
    smp_keep_load(xrow, o0, no, tid, &kp);

    smp_u64 above, equal, local;
    const unsigned t =
        smp_select(xrow, o0, no, &kp, TILEOPS_K, cnt, tot, red, &out, tid, &above, &equal, &local, &pending);
    const smp_u64 need = TILEOPS_K - above; /* of the keys equal to t, the first `need` */

    if (above + equal <= TILEOPS_KP) {
        /* every key >= t fits the sort (which ranks the ties by index): no order needed here,
         * a thread takes slots of rank 0's sel for its keys of an octet at once */
        (void)need, (void)slot, (void)all, (void)local;
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
                    n += key[e] >= t; /* keys past V are 0 < t */
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
        /* more keys equal to t than the sort holds: in index order, every key above t and the
         * first `need` equal to it. base: (above t) << 32 | (equal to t), in the chunks of the
         * ranks below and the tiles before */
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
    /* every rank's writes to sel visible to rank 0; then only rank 0 goes on (no CTA reads
     * another's shared memory after this barrier) */
    smp_cluster_settle(&pending);
    smp_cluster_arrive();
    smp_cluster_wait();
    if (!rank0)
        return;
    tileops_barrier();

#if TILEOPS_KP <= SMP_SEL_THREADS
    /* bitonic sort, largest first, a rank per thread of the warps that hold one (the others
     * leave: the sort of 64 took 2 µs in 1024 threads, H200): strides below 32 by shuffles,
     * the others through shared memory, sel and cnt's words in turn (one barrier of the
     * sorting warps a stage: a buffer is written again only after the next stage's barrier,
     * when every read of it is done) */
    if (tid >= TK_SORT_THREADS)
        return;
    {
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
                /* the pair's lower index keeps the larger in a descending block */
                v = (((i & stride) == 0) == ((i & size) == 0)) ? (v > w ? v : w) : (v < w ? v : w);
            }
        }
        if (i < TILEOPS_K)
            tk_put(xrow, row, i, v, values, indices);
    }
#else
    /* bitonic sort, largest first, in shared memory */
    for (int size = 2; size <= TILEOPS_KP; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int i = (int)tid; i < TILEOPS_KP / 2; i += SMP_SEL_THREADS) {
                const int a = 2 * stride * (i / stride) + (i % stride), b = a + stride;
                const smp_u64 u = sel[a], v = sel[b];
                if ((u < v) == ((a & size) == 0)) {
                    sel[a] = v;
                    sel[b] = u;
                }
            }
            tileops_barrier();
        }
    }

    for (int i = (int)tid; i < TILEOPS_K; i += SMP_SEL_THREADS)
        tk_put(xrow, row, i, sel[i], values, indices);
#endif
}

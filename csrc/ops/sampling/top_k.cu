/* ops/sampling/top_k.cu: the GPU kernel of TopKFwdOp, C-style CUDA C compiled at run time by
 * NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh spliced
 * in by the runtime):
 *   the k largest of each row, largest first, equal values by lower index first, NaN the
 *   largest, -0.0 equal to 0.0; values copied bit for bit.
 * One CTA of 1024 threads per row, no full sort:
 *   1. the k-th largest key T by radix selection (smp_select: 3 passes over a float32
 *      row's keys, 2 over a 16-bit one's), and how many keys are above it;
 *   2. in index order (tiles of the row, a block scan per tile), every element above T and
 *      the first k - (those) equal to T, as ranks (key, index reversed) in shared memory;
 *   3. a bitonic sort of those ranks, largest first (pow2ceil(k) of them, padded with 0);
 *   4. values and indices written.
 * The same result as the CPU kernel (the same order, an exact selection).
 *
 * ==== Parameters (arg_format "ppp") =======================================================
 *   (const void *logits, void *values /+ 0 when TILEOPS_VALUES 0 +/, long long *indices):
 *   logits contiguous [rows, V], values and indices [rows, K]; grid.x = rows, block 1024,
 *   dynamic shared memory TILEOPS_KP x 8 bytes.
 *
 * ==== Defines (besides sampling_common.cuh's, with TILEOPS_CLUSTER 1, TILEOPS_THREADS
 * 1024, TILEOPS_CHUNK >= V) =====================================================================
 *   TILEOPS_K = k (1 <= k <= V); TILEOPS_KP = pow2ceil(k); TILEOPS_VALUES 1 to write values. */
#include "sampling_common.cuh"

#if !defined(TILEOPS_K) || !defined(TILEOPS_KP) || !defined(TILEOPS_VALUES)
#error "top_k.cu needs -DTILEOPS_K, -DTILEOPS_KP, -DTILEOPS_VALUES"
#endif
#if TILEOPS_K < 1 || TILEOPS_K > TILEOPS_N || TILEOPS_KP < TILEOPS_K || TILEOPS_KP & (TILEOPS_KP - 1)
#error "TILEOPS_K must be in [1, V] and TILEOPS_KP the power of two at or above it"
#endif
#if TILEOPS_CLUSTER != 1 || TILEOPS_THREADS != SMP_SEL_THREADS || TILEOPS_CHUNK < TILEOPS_N
#error "top_k.cu: one CTA of 1024 threads per row (TILEOPS_CLUSTER 1, TILEOPS_CHUNK >= V)"
#endif

extern "C" __global__ void TILEOPS_BOUNDS tileops_top_k(const void *x, void *values, long long *indices) {
    TILEOPS_PDL_PROLOGUE();
    extern __shared__ __attribute__((aligned(16))) smp_u64 sel[];
    __shared__ unsigned cnt[SMP_BINS];
    __shared__ smp_u64 red[TILEOPS_WARPS];
    __shared__ struct smp_pick out;
    const unsigned tid = tileops_tid();
    const long long row = smp_row();
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;

    smp_u64 above;
    const unsigned t = smp_select(xrow, TILEOPS_K, cnt, red, &out, tid, &above);
    const smp_u64 need = TILEOPS_K - above; /* of the keys equal to t, the first `need` */

    for (int i = (int)tid; i < TILEOPS_KP; i += SMP_SEL_THREADS)
        sel[i] = 0;
    tileops_barrier();
    smp_u64 base = 0; /* (above t) << 32 | (equal to t), in the tiles before */
    SMP_SEL_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        unsigned key[8], bits[8];
        float f[8];
        smp_u64 mine = 0;
        if (o < SMP_NO) {
            smp_keys8(xrow, o, key, f, bits);
#pragma unroll
            for (int e = 0; e < 8; e++)
                mine += key[e] > t ? (1ull << 32) : key[e] == t && 8 * o + e < TILEOPS_N ? 1ull : 0ull;
        }
        smp_u64 total;
        smp_u64 at = base + smp_block_scan_u64(mine, red, tid, &total);
        base += total;
        if (o < SMP_NO) {
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const long long i = 8 * o + e;
                if (key[e] > t) {
                    sel[at >> 32] = smp_rank(key[e], i);
                    at += 1ull << 32;
                } else if (key[e] == t && i < TILEOPS_N) {
                    const smp_u64 r = at & 0xffffffffull;
                    if (r < need)
                        sel[above + r] = smp_rank(key[e], i);
                    at += 1;
                }
            }
        }
    }
    tileops_barrier();

    /* bitonic sort, largest first */
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

    for (int i = (int)tid; i < TILEOPS_K; i += SMP_SEL_THREADS) {
        const long long e = smp_rank_index(sel[i]);
        indices[row * TILEOPS_K + i] = e;
#if TILEOPS_VALUES
#if TILEOPS_E == 4
        ((unsigned *)values)[row * TILEOPS_K + i] = ((const unsigned *)xrow)[e];
#else
        ((unsigned short *)values)[row * TILEOPS_K + i] = ((const unsigned short *)xrow)[e];
#endif
#else
        (void)values;
#endif
    }
}

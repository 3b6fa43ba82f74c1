/* ops/embedding/embedding.cu: the GPU kernel of EmbeddingFwdOp, y[i, :] = weight[ids[i], :],
 * C-style CUDA C compiled at run time by NVRTC with no builtin headers;
 * ../common/rows_common.cuh (16-byte groups and their loads and stores) is spliced in by
 * the runtime. An id outside [0, V) reads no row: its output row is NaN (checking ids
 * costs the host a synchronisation, so the GPU path documents this outcome instead).
 *
 * ==== Parameters (arg_format "pppqq") ====================================================
 *   (const void *ids, const void *weight, void *y, long long n, long long V): n ids, the
 *   table [V, H], y [n, H], contiguous; y does not overlap the table.
 *
 * ==== Defines =============================================================================
 *   TILEOPS_DTYPE 0 float32, 1 float16, 2 bfloat16;  TILEOPS_N = H (row length);
 *   TILEOPS_VEC G = 16 / E (rows of whole 16-byte groups, pointers 16-byte aligned) or 1;
 *   TILEOPS_THREADS the block size;  TILEOPS_ID64 1 for int64 ids, 0 for int32;
 *   TILEOPS_UNROLL U groups per thread per step (1..8, default 1).
 *
 * ==== Launch ================================================================================
 *   U 16-byte groups of y per thread (NG groups per row, the last may be partial), block b
 *   starting at group b THREADS U, grid-stride over the n * NG groups: any grid.x >= 1
 *   covers every row. */
#include "../common/rows_common.cuh"

#ifndef TILEOPS_ID64
#error "embedding.cu needs -DTILEOPS_ID64"
#endif
#ifndef TILEOPS_UNROLL
#define TILEOPS_UNROLL 1
#endif
#if TILEOPS_UNROLL < 1 || TILEOPS_UNROLL > 8
#error "TILEOPS_UNROLL must be 1..8"
#endif

extern "C" __global__ void TILEOPS_BOUNDS tileops_embedding(const void *ids, const void *weight, void *y, long long n,
                                                            long long V) {
    TILEOPS_PDL_PROLOGUE();
    /* a thread's U groups are THREADS apart (each load instruction of a warp covers
     * consecutive groups): U id loads, then U row loads, then U stores, so a thread has
     * U groups in flight behind its one id latency */
    const long long total = n * (long long)TILEOPS_NG;
    const long long step = (long long)tileops_nctaid() * (TILEOPS_THREADS * TILEOPS_UNROLL);
    for (long long w0 = (long long)tileops_ctaid() * (TILEOPS_THREADS * TILEOPS_UNROLL) + tileops_tid(); w0 < total;
         w0 += step) {
        long long id[TILEOPS_UNROLL];
        struct tileops_v4 v[TILEOPS_UNROLL];
#pragma unroll
        for (int u = 0; u < TILEOPS_UNROLL; u++) {
            const long long w = w0 + (long long)u * TILEOPS_THREADS;
            id[u] = -1;
            if (w < total) {
#if TILEOPS_ID64
                id[u] = ((const long long *)ids)[w / TILEOPS_NG];
#else
                id[u] = ((const int *)ids)[w / TILEOPS_NG];
#endif
            }
        }
#pragma unroll
        for (int u = 0; u < TILEOPS_UNROLL; u++) {
            const long long w = w0 + (long long)u * TILEOPS_THREADS, g = w % TILEOPS_NG;
            if (w < total && id[u] >= 0 && id[u] < V) {
                v[u] = tileops_ld_group((const char *)weight + id[u] * (long long)TILEOPS_N * TILEOPS_E, g, 1);
            } else {
                v[u] = tileops_splat(tileops_as_float(0x7fc00000u));
            }
        }
#pragma unroll
        for (int u = 0; u < TILEOPS_UNROLL; u++) {
            const long long w = w0 + (long long)u * TILEOPS_THREADS;
            if (w < total) {
                const long long i = w / TILEOPS_NG, g = w - i * TILEOPS_NG;
                tileops_st_group((char *)y + i * (long long)TILEOPS_N * TILEOPS_E, g, v[u], 0);
            }
        }
    }
}

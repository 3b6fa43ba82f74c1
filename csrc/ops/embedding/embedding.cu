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
 *   TILEOPS_THREADS the block size;  TILEOPS_ID64 1 for int64 ids, 0 for int32.
 *
 * ==== Launch ================================================================================
 *   One thread per 16-byte group of y (NG groups per row, the last may be partial),
 *   grid-stride over the n * NG groups: any grid.x >= 1 covers every row. */
#include "../common/rows_common.cuh"

#ifndef TILEOPS_ID64
#error "embedding.cu needs -DTILEOPS_ID64"
#endif

extern "C" __global__ void TILEOPS_BOUNDS tileops_embedding(const void *ids, const void *weight, void *y, long long n,
                                                            long long V) {
    const long long total = n * (long long)TILEOPS_NG;
    const long long step = (long long)tileops_nctaid() * TILEOPS_THREADS;
    for (long long w = (long long)tileops_ctaid() * TILEOPS_THREADS + tileops_tid(); w < total; w += step) {
        const long long i = w / TILEOPS_NG, g = w - i * TILEOPS_NG;
#if TILEOPS_ID64
        const long long id = ((const long long *)ids)[i];
#else
        const long long id = ((const int *)ids)[i];
#endif
        char *dst = (char *)y + i * (long long)TILEOPS_N * TILEOPS_E;
        struct tileops_v4 v;
        if (id >= 0 && id < V) {
            v = tileops_ld_group((const char *)weight + id * (long long)TILEOPS_N * TILEOPS_E, g, 1);
        } else {
            v = tileops_splat(tileops_as_float(0x7fc00000u));
        }
        tileops_st_group(dst, g, v, 0);
    }
}

/* ops/positional/alibi.cu: the GPU kernel of AlibiFwdOp, bias[h, i, j] = slope_h * (j - i),
 * float32 [heads, S, S], slope_h = tileops_alibi_slope(h, heads) (tables.cuh, spliced in:
 * the text the C kernels compile), the product in double rounded once to float32: the
 * CPU's values wherever CUDA's exp2 and glibc's give the same slope (always for heads a
 * power of two up to 8, whose slopes are powers of two; within an ulp of double otherwise).
 *
 * ==== Parameters (arg_format "pqq") ==========================================================
 *   (float *out, long long heads, long long S); out contiguous.
 *
 * ==== Defines ================================================================================
 *   TILEOPS_VEC 4: S a multiple of 4 and out 16-byte aligned, four values per 16-byte store;
 *   else 1.
 *
 * ==== Launch =================================================================================
 *   grid.x blocks over the heads * S rows (grid-stride: any grid.x >= 1), block.x threads
 *   over a row (any block.x >= 1; the launch side takes 256). */
#include "tables.cuh"

#if !defined(TILEOPS_VEC) || (TILEOPS_VEC != 1 && TILEOPS_VEC != 4)
#error "alibi.cu needs -DTILEOPS_VEC=1 or 4"
#endif

struct __attribute__((aligned(16))) tileops_alibi_f4 {
    float v[4];
};

extern "C" __global__ void tileops_alibi(float *out, long long heads, long long seq) {
    const long long rows = heads * seq;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const long long h = r / seq, i = r - h * seq;
        const double slope = tileops_alibi_slope(h, heads);
        float *o = out + r * seq;
#if TILEOPS_VEC == 4
        for (long long j = 4 * (long long)threadIdx.x; j < seq; j += 4 * (long long)blockDim.x) {
            struct tileops_alibi_f4 w;
#pragma unroll
            for (int k = 0; k < 4; k++)
                w.v[k] = (float)POS_MUL(slope, (double)(j + k - i));
            *(struct tileops_alibi_f4 *)(o + j) = w;
        }
#else
        for (long long j = threadIdx.x; j < seq; j += blockDim.x)
            o[j] = (float)POS_MUL(slope, (double)(j - i));
#endif
    }
}

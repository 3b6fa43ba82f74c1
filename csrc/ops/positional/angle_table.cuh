/* ops/positional/angle_table.cuh: the GPU side of the sine / cosine tables (the CPU side
 * is angle_table.c, whose header angle_table.h states the layouts), shared by
 * rope_cos_sin_cache.cu (TILEOPS_LAYOUT 0) and sinusoidal.cu (TILEOPS_LAYOUT 1). C-style
 * CUDA C compiled at run time by NVRTC; tables.cuh (spliced in) holds the arithmetic, the
 * same text the C kernels compile: inverse frequencies with CUDA's pow (within 2 ulp, glibc's
 * within 1), tileops_sincos with the same operations as the CPU (the same bits for the same
 * angle), each value rounded once to float32.
 *
 * ==== Defines ============================================================================
 *   TILEOPS_LAYOUT 0 (rope: cos half, then sin half) or 1 (sinusoidal: sin, cos interleaved);
 *   TILEOPS_PAIR2 1: layout 1 with an even width and an 8-byte aligned out, each (sin, cos)
 *   pair stored as one 8-byte store; else 0.
 *
 * ==== Launch ===============================================================================
 *   block.x threads over the n pairs of a row (any block.x >= 1; the launch side takes n
 *   rounded up to a warp, at most 256), grid.x blocks over the rows (grid-stride: any
 *   grid.x >= 1). A thread computes each of its inverse frequencies once and reuses it for
 *   every row of its block. */
#include "tables.cuh"

#if !defined(TILEOPS_LAYOUT) || !defined(TILEOPS_PAIR2)
#error "angle_table.cuh needs -DTILEOPS_LAYOUT and -DTILEOPS_PAIR2"
#endif

struct __attribute__((aligned(8))) tileops_pos_f2 {
    float s, c;
};

static __device__ __forceinline__ void tileops_angle_rows(float *out, long long rows, long long width, double base,
                                                          int type, double factor, double low, double high,
                                                          double orig) {
    const long long n = TILEOPS_LAYOUT == 0 ? width / 2 : (width + 1) / 2;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const double inv = tileops_rope_scaled(tileops_inv_freq(i, width, base), type, factor, low, high, orig);
        for (long long p = blockIdx.x; p < rows; p += gridDim.x) {
            double s, c;
            tileops_sincos(POS_MUL((double)p, inv), &s, &c);
            float *o = out + p * width;
#if TILEOPS_LAYOUT == 0
            o[i] = (float)c;
            o[n + i] = (float)s;
#elif TILEOPS_PAIR2
            struct tileops_pos_f2 v;
            v.s = (float)s;
            v.c = (float)c;
            *(struct tileops_pos_f2 *)(o + 2 * i) = v;
#else
            o[2 * i] = (float)s;
            if (2 * i + 1 < width)
                o[2 * i + 1] = (float)c;
#endif
        }
    }
}

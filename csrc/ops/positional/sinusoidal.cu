/* ops/positional/sinusoidal.cu: the GPU kernel of SinusoidalFwdOp, the Transformer's table
 * float32 [seq_len, dim]: channel 2i of row p = sin(p / base^(2i / dim)), 2i + 1 = cos of
 * the same angle (an odd dim ends with a sine). The body, defines and launch shape are
 * angle_table.cuh's (TILEOPS_LAYOUT 1).
 *
 * ==== Parameters (arg_format "pqqd") =========================================================
 *   (float *out, long long seq_len, long long dim, double base); out contiguous. The launch
 *   side checked base >= 1 and seq_len < 2^50. */
#include "angle_table.cuh"

extern "C" __global__ void tileops_sinusoidal(float *out, long long rows, long long width, double base) {
    tileops_angle_rows(out, rows, width, base, TILEOPS_ROPE_DEFAULT, 1.0, 1.0, 1.0, 1.0);
}

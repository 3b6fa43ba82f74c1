/* ops/positional/rope_cos_sin_cache.cu: the GPU kernel of RopeCosSinCacheFwdOp, vLLM's
 * cos/sin cache float32 [max_position, rotary_dim]: row p = cos(p inv_i), i < R/2, then
 * sin(p inv_i), inv_i = 1 / base^(2i / R) under Hugging Face's rope_type (tables.cuh).
 * The body, defines and launch shape are angle_table.cuh's (TILEOPS_LAYOUT 0).
 *
 * ==== Parameters (arg_format "pqqdidddd") ==================================================
 *   (float *out, long long max_position, long long rotary_dim, double base, int rope_type
 *    (0 default, 1 linear, 2 llama3), double factor, double low_freq_factor,
 *    double high_freq_factor, double original_max_position_embeddings); out contiguous.
 *   The launch side checked what the kernel relies on: rotary_dim even >= 2, base >= 1,
 *   every angle below 2^50. */
#include "angle_table.cuh"

extern "C" __global__ void tileops_rope_cos_sin_cache(float *out, long long rows, long long width, double base,
                                                      int type, double factor, double low, double high,
                                                      double orig) {
    tileops_angle_rows(out, rows, width, base, type, factor, low, high, orig);
}

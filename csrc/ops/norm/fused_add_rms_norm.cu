/* ops/norm/fused_add_rms_norm.cu: h = round(x + residual), residual_out = h,
 * y = h * rsqrt(mean(h^2) + eps) * w (w optional): the pre-norm residual add of a
 * transformer block. The kernels are norm_rows.cuh's (its top comment: parameters
 * "ppppppqf", defines, launch shapes, in place): tileops_fused_add_rms_norm (row in
 * registers) and tileops_fused_add_rms_norm_long (any N). */
#define TILEOPS_HAS_RESIDUAL 1
#define TILEOPS_MEAN 0
#define TILEOPS_WEIGHT_OFFSET 0
#define TILEOPS_ROWS_KERNEL tileops_fused_add_rms_norm
#define TILEOPS_ROWS_KERNEL_LONG tileops_fused_add_rms_norm_long
#if defined(TILEOPS_HAS_BIAS) && TILEOPS_HAS_BIAS
#error "fused_add_rms_norm has no bias: TILEOPS_HAS_BIAS must be 0"
#endif
#include "norm_rows.cuh"

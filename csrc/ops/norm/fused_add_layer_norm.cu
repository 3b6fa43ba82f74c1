/* ops/norm/fused_add_layer_norm.cu: h = round(x + residual), residual_out = h,
 * y = (h - mean) * rsqrt(var + eps) * w + b (w, b optional). The kernels are
 * norm_rows.cuh's (its top comment: parameters "ppppppqf", defines, launch shapes, in
 * place): tileops_fused_add_layer_norm (row in registers) and
 * tileops_fused_add_layer_norm_long (any N). */
#define TILEOPS_HAS_RESIDUAL 1
#define TILEOPS_MEAN 1
#define TILEOPS_WEIGHT_OFFSET 0
#define TILEOPS_ROWS_KERNEL tileops_fused_add_layer_norm
#define TILEOPS_ROWS_KERNEL_LONG tileops_fused_add_layer_norm_long
#include "norm_rows.cuh"

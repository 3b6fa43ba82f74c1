/* ops/norm/layer_norm.cu: LayerNorm over rows, y = (x - mean) * rsqrt(var + eps) * w + b
 * (w, b optional; var the mean of the squared deviations). The kernels are
 * norm_rows.cuh's (its top comment: parameters "ppppppqf", defines, launch shapes):
 * tileops_layer_norm (row in registers) and tileops_layer_norm_long (any N). */
#define TILEOPS_HAS_RESIDUAL 0
#define TILEOPS_MEAN 1
#define TILEOPS_WEIGHT_OFFSET 0
#define TILEOPS_ROWS_KERNEL tileops_layer_norm
#define TILEOPS_ROWS_KERNEL_LONG tileops_layer_norm_long
#include "norm_rows.cuh"

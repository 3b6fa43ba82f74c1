/* ops/norm/rms_norm_rows.cu: the plain RMSNorm, y = x * rsqrt(mean(x^2) + eps) * w
 * (w optional), through the generic row kernels of norm_rows.cuh (its top comment:
 * parameters "ppppppqf", defines, launch shapes): tileops_rms_norm_rows (row in
 * registers) and tileops_rms_norm_rows_long (any N). Same sums and roundings as
 * rms_norm.cu's tileops_rms_norm at the same threads per row (the same bits); it exists
 * to measure the generic code against the shipped kernel, at decode shapes (1-8 rows)
 * in particular. */
#define TILEOPS_HAS_RESIDUAL 0
#define TILEOPS_MEAN 0
#define TILEOPS_WEIGHT_OFFSET 0
#define TILEOPS_ROWS_KERNEL tileops_rms_norm_rows
#define TILEOPS_ROWS_KERNEL_LONG tileops_rms_norm_rows_long
#if defined(TILEOPS_HAS_BIAS) && TILEOPS_HAS_BIAS
#error "rms_norm_rows has no bias: TILEOPS_HAS_BIAS must be 0"
#endif
#include "norm_rows.cuh"

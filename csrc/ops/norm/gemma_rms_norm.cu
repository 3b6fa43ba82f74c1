/* ops/norm/gemma_rms_norm.cu: Gemma's RMSNorm, y = x * rsqrt(mean(x^2) + eps) * (1 + w),
 * the 1 + w in fp32 (w required). The kernels are norm_rows.cuh's (its top comment:
 * parameters "ppppppqf", defines, launch shapes): tileops_gemma_rms_norm (row in
 * registers) and tileops_gemma_rms_norm_long (any N). */
#define TILEOPS_HAS_RESIDUAL 0
#define TILEOPS_MEAN 0
#define TILEOPS_WEIGHT_OFFSET 1
#define TILEOPS_ROWS_KERNEL tileops_gemma_rms_norm
#define TILEOPS_ROWS_KERNEL_LONG tileops_gemma_rms_norm_long
#if defined(TILEOPS_HAS_WEIGHT) && !TILEOPS_HAS_WEIGHT
#error "gemma_rms_norm needs its weight: TILEOPS_HAS_WEIGHT must be 1"
#endif
#if defined(TILEOPS_HAS_BIAS) && TILEOPS_HAS_BIAS
#error "gemma_rms_norm has no bias: TILEOPS_HAS_BIAS must be 0"
#endif
#include "norm_rows.cuh"

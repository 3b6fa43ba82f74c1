/* rms_norm_rows.c: the CPU kernels "rms_norm_rows_cast" and "rms_norm_rows_cast_reference":
 * RMSNorm through the family driver with Hugging Face's rounding (norm_rows.h:
 * cast_before_weight; LlamaRMSNorm's `weight * (x * rsqrt(mean(x^2) + eps)).to(dtype)`),
 * what RMSNormFwdOp(cast_before_weight=True) runs on the CPU (its CUDA twin is
 * rms_norm_rows.cu built with -DTILEOPS_CAST_BEFORE_WEIGHT=1). Arguments (norm_rows.h,
 * "ppppppqqfi"): x, residual = 0, weight (optional), bias = 0, y, residual_out = 0, rows,
 * n, eps, dtype. y may be x. */
#include "ops/norm/norm_rows.h"

/*                  name               residual bias weight_required mean_subtract weight_offset cast */
TILEOPS_NORM_ROWS_OP(rms_norm_rows_cast, 0,      0,   0,              0,            0.0f,         1)

/* fused_add_rms_norm.c: the CPU kernels "fused_add_rms_norm" and its "_reference".
 *   h = round_to_dtype(x + residual); residual_out = h
 *   y = h * rsqrt(mean(h^2) + eps) * weight            (weight optional: 0 means 1)
 * y normalises the rounded h, as vLLM and Hugging Face do. Arguments (norm_rows.h,
 * "ppppppqqfi"): x, residual, weight, bias = 0, y, residual_out, rows, n, eps, dtype. The
 * in-place form passes y = x and residual_out = residual. "fused_add_rms_norm_cast" (and its
 * "_reference") is the same with Hugging Face's rounding (norm_rows.h: cast_before_weight). */
#include "ops/norm/norm_rows.h"

/*                  name                residual bias weight_required mean_subtract weight_offset cast */
TILEOPS_NORM_ROWS_OP(fused_add_rms_norm, 1,       0,   0,              0,            0.0f,         0)
TILEOPS_NORM_ROWS_OP(fused_add_rms_norm_cast, 1, 0, 0,            0,            0.0f,         1)

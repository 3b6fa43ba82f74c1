/* fused_add_layer_norm.c: the CPU kernels "fused_add_layer_norm" and its "_reference".
 *   h = round_to_dtype(x + residual); residual_out = h
 *   y = (h - mean) * rsqrt(var + eps) * weight + bias   (var biased; weight, bias optional)
 * Arguments (norm_rows.h, "ppppppqqfi"): x, residual, weight, bias, y, residual_out, rows,
 * n, eps, dtype. The in-place form passes y = x and residual_out = residual. */
#include "ops/norm/norm_rows.h"

/*                  name                  residual bias weight_required mean_subtract weight_offset cast */
TILEOPS_NORM_ROWS_OP(fused_add_layer_norm, 1,       1,   0,              1,            0.0f,         0)

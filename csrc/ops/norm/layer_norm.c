/* layer_norm.c: the CPU kernels "layer_norm" and "layer_norm_reference".
 *   y = (x - mean) * rsqrt(var + eps) * weight + bias   over each row of n elements
 * var is the biased variance, mean((x - mean)^2), as torch.nn.functional.layer_norm; weight
 * and bias optional (0: 1 and 0). Arguments (norm_rows.h, "ppppppqqfi"): x, residual = 0,
 * weight, bias, y, residual_out = 0, rows, n, eps, dtype. y may be x. */
#include "ops/norm/norm_rows.h"

/*                  name        residual bias weight_required mean_subtract weight_offset cast */
TILEOPS_NORM_ROWS_OP(layer_norm, 0,       1,   0,              1,            0.0f,         0)

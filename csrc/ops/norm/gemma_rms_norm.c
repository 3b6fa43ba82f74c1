/* gemma_rms_norm.c: the CPU kernels "gemma_rms_norm" and "gemma_rms_norm_reference".
 *   y = x * rsqrt(mean(x^2) + eps) * (1 + weight)       (1 + weight formed in fp32)
 * Gemma stores its norm weights as offsets from 1. Arguments (norm_rows.h, "ppppppqqfi"):
 * x, residual = 0, weight (required), bias = 0, y, residual_out = 0, rows, n, eps, dtype.
 * y may be x. */
#include "ops/norm/norm_rows.h"

/*                  name            residual bias weight_required mean_subtract weight_offset cast */
TILEOPS_NORM_ROWS_OP(gemma_rms_norm, 0,       0,   1,              0,            1.0f,         0)

/* gelu_and_mul.c: the CPU kernels "gelu_and_mul" and "gelu_and_mul_reference".
 *   y = gelu(a) * b, gelu with erf: 0.5 a (1 + erf(a / sqrt 2))
 * for x = [a, b] split along its last dimension. Arguments (gated_act.h, "ppqqqqi"):
 * x, y, rows, n (the half width), x_stride, y_stride, dtype. */
#include "ops/activation/gated_act.h"

TILEOPS_GATED_ACT_OP(gelu_and_mul, TILEOPS_ACT_GELU, 0)
TILEOPS_GATED_ACT_OP(gelu_and_mul_cast, TILEOPS_ACT_GELU, 1) /* act(a) rounded to the dtype, then times b */

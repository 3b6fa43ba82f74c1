/* silu_and_mul.c: the CPU kernels "silu_and_mul" and "silu_and_mul_reference".
 *   y = silu(a) * b = a / (1 + exp(-a)) * b
 * for x = [a, b] split along its last dimension. Arguments (gated_act.h, "ppqqqqi"):
 * x, y, rows, n (the half width), x_stride, y_stride, dtype. */
#include "ops/activation/gated_act.h"

TILEOPS_GATED_ACT_OP(silu_and_mul, TILEOPS_ACT_SILU, 0)
TILEOPS_GATED_ACT_OP(silu_and_mul_cast, TILEOPS_ACT_SILU, 1) /* act(a) rounded to the dtype, then times b */

/* gelu_tanh_and_mul.c: the CPU kernels "gelu_tanh_and_mul" and "gelu_tanh_and_mul_reference".
 *   y = gelu_tanh(a) * b: 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3)))
 * for x = [a, b] split along its last dimension. Arguments (gated_act.h, "ppqqqqi"):
 * x, y, rows, n (the half width), x_stride, y_stride, dtype. */
#include "ops/activation/gated_act.h"

TILEOPS_GATED_ACT_OP(gelu_tanh_and_mul, TILEOPS_ACT_GELU_TANH, 0)
TILEOPS_GATED_ACT_OP(gelu_tanh_and_mul_cast, TILEOPS_ACT_GELU_TANH, 1) /* act(a) rounded to the dtype, then times b */

/* ops/activation/gelu_and_mul.cu: y = gelu(a) * b (erf) for x = [a, b], the halves of each row. The kernel is
 * gated_act.cuh's (its top comment: parameters "ppq", defines, launch): tileops_gelu_and_mul. */
#define TILEOPS_ACT 1
#define TILEOPS_GATED_KERNEL tileops_gelu_and_mul
#include "gated_act.cuh"

/* ops/activation/gelu_tanh_and_mul.cu: y = gelu_tanh(a) * b (tanh approximation) for x = [a, b], the halves of each row. The kernel is
 * gated_act.cuh's (its top comment: parameters "ppq", defines, launch): tileops_gelu_tanh_and_mul. */
#define TILEOPS_ACT 2
#define TILEOPS_GATED_KERNEL tileops_gelu_tanh_and_mul
#include "gated_act.cuh"

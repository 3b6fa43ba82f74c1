/* ops/activation/silu_and_mul.cu: y = silu(a) * b for x = [a, b], the halves of each row. The kernel is
 * gated_act.cuh's (its top comment: parameters "ppq", defines, launch): tileops_silu_and_mul. */
#define TILEOPS_ACT 0
#define TILEOPS_GATED_KERNEL tileops_silu_and_mul
#include "gated_act.cuh"

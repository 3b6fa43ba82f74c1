/* ops/activation/gated_act.h: internal to the core - the one driver behind the CPU kernels
 * of the activation family's gated ops (silu_and_mul, gelu_and_mul, gelu_tanh_and_mul) and
 * the double-precision reference they are tested against. Each op's C file is one
 * TILEOPS_GATED_ACT_OP line.
 *
 * For each of `rows` rows, x holds 2n elements (a = x[0:n], b = x[n:2n]) and y gets n:
 *   y[i] = act(a[i]) * b[i]
 *   silu       act(a) = a / (1 + exp(-a))
 *   gelu       act(a) = a * Phi(a) = 0.5 a (1 + erf(a / sqrt 2)) = 0.5 a erfc(-a / sqrt 2)
 *   gelu_tanh  act(a) = 0.5 a (1 + tanh(u)) = a / (1 + exp(-2u)),
 *              u = sqrt(2 / pi) (a + 0.044715 a^3)
 * computed in fp32 from the dtype (the reference: double), y rounded once to the dtype
 * (vLLM's and FlashInfer's convention: the first half activated, times the second).
 * cast_before_mul (the "<op>_cast" entries) is torch eager's arithmetic in the dtype, as
 * Hugging Face's MLP computes act_fn(gate) * up: act(a) rounded to the dtype, then the
 * product rounded again.
 * Row r of x starts at element r * x_stride, of y at r * y_stride (x_stride >= 2n,
 * y_stride >= n: contiguous rows are 2n and n). y must not overlap x. */
#ifndef TILEOPS_OPS_GATED_ACT_H
#define TILEOPS_OPS_GATED_ACT_H

#include <stdint.h>

#include "tileops/kernel_table.h"
#include "tileops/status.h"

typedef enum tileops_act {
    TILEOPS_ACT_SILU = 0,
    TILEOPS_ACT_GELU = 1,
    TILEOPS_ACT_GELU_TANH = 2
} tileops_act_t;

typedef struct tileops_gated_act_args {
    const char *kernel; /* the kernel's table name, for messages */
    const void *x;
    void *y;
    int64_t rows;
    int64_t n;        /* the half width: y's row length */
    int64_t x_stride; /* elements between rows of x, >= 2n */
    int64_t y_stride; /* elements between rows of y, >= n */
    int dtype;        /* tileops_dtype_t: float32, float16, bfloat16 */
    int act;          /* tileops_act_t */
    int cast_before_mul; /* 1: act(a) rounded to the dtype before the product (above) */
} tileops_gated_act_args_t;

/* The fast kernel: AVX-512, AVX2 or scalar (chosen at run time; every level gives the same
 * bits), spread over the core's pool. TILEOPS_ERR_INVALID_ARGUMENT for what would be unsafe
 * (the message names the kernel and the argument). */
tileops_status_t tileops_gated_act(const tileops_gated_act_args_t *a);

/* Plain scalar loops in double (libm exp, erfc), one thread; y correctly rounded. */
tileops_status_t tileops_gated_act_reference(const tileops_gated_act_args_t *a);

/* Every entry of the family takes (x, y, rows, n, x_stride, y_stride, dtype). */
#define TILEOPS_GATED_ACT_ARG_FORMAT "ppqqqqi"

tileops_status_t tileops_gated_act_call(int act, int cast_before_mul, const char *name, const tileops_arg_t *args,
                                        int reference);

/* Registers the kernels "NAME" and "NAME_reference" of activation ACT (CAST: cast_before_mul). */
#define TILEOPS_GATED_ACT_OP(NAME, ACT, CAST)                                                  \
    static tileops_status_t NAME##_fast(const tileops_arg_t *args) {                          \
        return tileops_gated_act_call(ACT, CAST, #NAME, args, 0);                              \
    }                                                                                          \
    static tileops_status_t NAME##_ref(const tileops_arg_t *args) {                           \
        return tileops_gated_act_call(ACT, CAST, #NAME "_reference", args, 1);                 \
    }                                                                                          \
    static const tileops_cpu_kernel_t NAME##_kernel = {#NAME, TILEOPS_GATED_ACT_ARG_FORMAT,    \
                                                       NAME##_fast};                           \
    static const tileops_cpu_kernel_t NAME##_reference_kernel = {                              \
        #NAME "_reference", TILEOPS_GATED_ACT_ARG_FORMAT, NAME##_ref};                         \
    TILEOPS_CPU_KERNEL(NAME##_kernel)                                                          \
    TILEOPS_CPU_KERNEL(NAME##_reference_kernel)

#endif /* TILEOPS_OPS_GATED_ACT_H */

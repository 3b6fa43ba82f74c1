/* ops/norm/norm_rows.h: internal to the core - the one row-wise driver behind the CPU
 * kernels of the norm family's LayerNorm / RMSNorm variants (layer_norm, fused_add_rms_norm,
 * fused_add_layer_norm, gemma_rms_norm), and the double-precision reference they are
 * tested against. Each op's C file is one TILEOPS_NORM_ROWS_OP line: its packed arguments,
 * its two table entries, its checks.
 *
 * For each of `rows` contiguous rows of n elements (row stride n), all in one dtype:
 *   h    = residual ? round_to_dtype(x + residual) : x      (the add in fp32)
 *   residual_out = h                                          (only with a residual)
 *   mean = mean_subtract ? mean(h) : 0
 *   r    = rsqrt(mean((h - mean)^2) + eps)                    (biased variance / mean square)
 *   y    = (h - mean) * r * (weight_offset + weight) + bias   (weight NULL: 1, bias NULL: 0)
 * accumulated in fp32 (the reference: double), y rounded once to the dtype.
 * cast_before_weight (RMSNorm only: the "_cast" entries) is Hugging Face's arithmetic
 * (LlamaRMSNorm): r = 1 / sqrtf(sum / n + eps) in fp32 steps (torch eager's mean, add and
 * rsqrt), t = h * r rounded to the dtype, y = t * weight rounded again.
 *
 * Aliasing: y may be x and residual_out may be residual (the in-place form of the fused
 * ops); any other overlap between an output and an input is unsupported. */
#ifndef TILEOPS_OPS_NORM_ROWS_H
#define TILEOPS_OPS_NORM_ROWS_H

#include <stdint.h>

#include "tileops/kernel_table.h"
#include "tileops/status.h"

typedef struct tileops_norm_rows_args {
    const char *kernel;   /* the kernel's table name, for messages */
    const void *x;
    const void *residual; /* NULL: no residual add */
    const void *weight;   /* NULL: no scaling */
    const void *bias;     /* NULL: no shift */
    void *y;
    void *residual_out;   /* NULL exactly when residual is */
    int64_t rows;
    int64_t n;
    float eps;
    int dtype;            /* tileops_dtype_t */
    int mean_subtract;    /* 1: LayerNorm, 0: RMSNorm */
    float weight_offset;  /* added to weight in fp32: 0 (plain), 1 (Gemma) */
    int cast_before_weight; /* 1: Hugging Face's rounding (above); RMSNorm without bias only */
} tileops_norm_rows_args_t;

/* The fast kernel: AVX-512, AVX2 or scalar (chosen at run time; every level gives the same
 * bits), rows spread over the core's pool. TILEOPS_ERR_INVALID_ARGUMENT for what would be
 * unsafe (message names the kernel and the argument), TILEOPS_ERR_OUT_OF_MEMORY when a
 * long row's scratch cannot be allocated (the outputs are then unspecified). */
tileops_status_t tileops_norm_rows(const tileops_norm_rows_args_t *a);

/* Plain scalar loops, accumulation in double, one thread; y correctly rounded from the
 * double result. residual_out is bit-identical to the fast kernel's (it is the definition). */
tileops_status_t tileops_norm_rows_reference(const tileops_norm_rows_args_t *a);

/* ---- the table entries ---------------------------------------------------------------- */

/* Every entry of the family takes (x, residual, weight, bias, y, residual_out, rows, n, eps,
 * dtype); a pointer an op does not use must be 0. */
#define TILEOPS_NORM_ROWS_ARG_FORMAT "ppppppqqfi"

/* What distinguishes one op of the family. */
typedef struct tileops_norm_rows_op {
    const char *name;
    const char *reference_name; /* name "_reference" */
    int residual;               /* 1: residual and residual_out required; 0: must be 0 */
    int bias;                   /* 1: bias optional; 0: must be 0 */
    int weight_required;
    int mean_subtract;
    float weight_offset;
    int cast_before_weight;
} tileops_norm_rows_op_t;

/* Checks the packed arguments against the op, unpacks them and runs the fast kernel
 * (reference = 0) or the reference (reference = 1). */
tileops_status_t tileops_norm_rows_call(const tileops_norm_rows_op_t *op, const tileops_arg_t *args,
                                        int reference);

/* Defines op `NAME` and registers its kernels "NAME" and "NAME_reference". */
#define TILEOPS_NORM_ROWS_OP(NAME, RESIDUAL, BIAS, WEIGHT_REQUIRED, MEAN_SUBTRACT, WEIGHT_OFFSET, \
                             CAST_BEFORE_WEIGHT)                                                 \
    static const tileops_norm_rows_op_t NAME##_op = {#NAME, #NAME "_reference", RESIDUAL, BIAS,  \
                                                     WEIGHT_REQUIRED, MEAN_SUBTRACT,             \
                                                     WEIGHT_OFFSET, CAST_BEFORE_WEIGHT};         \
    static tileops_status_t NAME##_fast(const tileops_arg_t *args) {                            \
        return tileops_norm_rows_call(&NAME##_op, args, 0);                                      \
    }                                                                                            \
    static tileops_status_t NAME##_ref(const tileops_arg_t *args) {                             \
        return tileops_norm_rows_call(&NAME##_op, args, 1);                                      \
    }                                                                                            \
    static const tileops_cpu_kernel_t NAME##_kernel = {#NAME, TILEOPS_NORM_ROWS_ARG_FORMAT,      \
                                                       NAME##_fast};                             \
    static const tileops_cpu_kernel_t NAME##_reference_kernel = {                                \
        #NAME "_reference", TILEOPS_NORM_ROWS_ARG_FORMAT, NAME##_ref};                           \
    TILEOPS_CPU_KERNEL(NAME##_kernel)                                                            \
    TILEOPS_CPU_KERNEL(NAME##_reference_kernel)

#endif /* TILEOPS_OPS_NORM_ROWS_H */

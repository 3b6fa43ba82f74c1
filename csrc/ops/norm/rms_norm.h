/* ops/norm/rms_norm.h: internal to the core and its C tests - RMSNorm's CPU entry points
 * as C functions. Python reaches them only through the kernel table ("rms_norm",
 * "rms_norm_reference"); this header is for C callers that want typed arguments (the C
 * tests, the C benchmark, the GPU smoke test's reference). */
#ifndef TILEOPS_OPS_NORM_RMS_NORM_H
#define TILEOPS_OPS_NORM_RMS_NORM_H

#include <stdint.h>
#include "tileops/dtype.h"
#include "tileops/status.h"

/* y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight[:]   (weight optional)
 * x is (rows, n) with row stride x_row_stride, y is (rows, n) with row stride
 * y_row_stride, both in elements, unit stride inside a row; weight is (n,) contiguous or
 * NULL. All three share one float dtype; accumulation is in fp32 (the reference: double).
 * The fields are in the order of the table entries' arg format "pppqqqqfii" (then the
 * variant), which is the order the kernel class passes them. */
typedef struct tileops_rms_norm_args {
    const void *x;
    const void *weight; /* NULL: no weight */
    void *y;
    int64_t rows;
    int64_t n;
    int64_t x_row_stride;
    int64_t y_row_stride;
    float eps;
    int dtype; /* tileops_dtype_t: float32, float16 or bfloat16 */
} tileops_rms_norm_args_t;

/* The three CPU implementations behind the op's three kernel types:
 *  ROW        rows that fit in L1/L2: two passes over the row in the input dtype.
 *  ON_CHIP    the row converted once into a per-thread fp32 scratch (half types), then
 *             normalised from it: one read of x from memory.
 *  STREAMING  rows too long for the caches: sum of squares and the scaled write in
 *             chunks, no scratch.
 * All three are exact to fp32 rounding against the reference. */
typedef enum tileops_rms_norm_variant {
    TILEOPS_RMS_NORM_ROW = 0,
    TILEOPS_RMS_NORM_ON_CHIP = 1,
    TILEOPS_RMS_NORM_STREAMING = 2
} tileops_rms_norm_variant_t;

tileops_status_t tileops_cpu_rms_norm(const tileops_rms_norm_args_t *args, int variant);

/* Plain scalar loops, accumulation in double, one thread: what the fast kernels are
 * tested against. */
tileops_status_t tileops_cpu_rms_norm_reference(const tileops_rms_norm_args_t *args);

#endif /* TILEOPS_OPS_NORM_RMS_NORM_H */

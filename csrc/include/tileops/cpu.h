/* tileops/cpu.h: the CPU kernels and the core's own thread pool.
 *
 * Kernels take raw pointers, sizes and strides (in elements); they never validate user
 * input beyond what keeps memory safe (the op layer checked shapes and dtypes). Rows are
 * spread over the pool; each worker takes a contiguous range of rows. The pool is the
 * core's own (pthreads), not OpenMP, so it never fights torch's runtime for threads. */
#ifndef TILEOPS_CPU_H
#define TILEOPS_CPU_H

#include <stdint.h>
#include "tileops/status.h"
#include "tileops/dtype.h"

/* ---- thread pool ---------------------------------------------------------------- */

/* Number of threads kernels use (the caller's thread counts as one). Default: the
 * environment variable TILEOPS_NUM_THREADS if set, else the CPUs this process may run on. */
int tileops_cpu_num_threads(void);
/* Sets it (n >= 1). Safe to call between kernel calls from any thread. */
tileops_status_t tileops_cpu_set_num_threads(int n);

/* Runs fn(ctx, begin, end) over [0, count) split into at most num_threads contiguous
 * ranges, in parallel, and returns when all are done. Work below min_per_thread items per
 * thread uses fewer threads. Re-entrant calls (fn calling parallel_for) run serially. */
typedef void (*tileops_range_fn)(void *ctx, int64_t begin, int64_t end);
void tileops_cpu_parallel_for(int64_t count, int64_t min_per_thread, tileops_range_fn fn, void *ctx);

/* ---- RMSNorm --------------------------------------------------------------------- */

/* y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight[:]   (weight optional)
 * x is (rows, n) with row stride x_row_stride, y is (rows, n) with row stride
 * y_row_stride, both in elements, unit stride inside a row; weight is (n,) contiguous or
 * NULL. All three share one dtype; accumulation is in fp32 (the reference: double). */
typedef struct tileops_rms_norm_args {
    const void *x;
    const void *weight; /* NULL: no weight */
    void *y;
    int64_t rows;
    int64_t n;
    int64_t x_row_stride;
    int64_t y_row_stride;
    float eps;
    int dtype; /* tileops_dtype_t */
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

/* Which SIMD path the fast kernels take on this CPU: "avx512", "avx2", or "scalar". */
const char *tileops_cpu_simd_level(void);

#endif /* TILEOPS_CPU_H */

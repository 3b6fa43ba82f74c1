/* cpu/args.h: the argument checks the row-wise CPU kernels of every family share
 * (internal; norm_rows.c, gated_act.c). Each returns TILEOPS_OK or fails with
 * TILEOPS_ERR_INVALID_ARGUMENT and a message that starts with the kernel's name k. */
#ifndef TILEOPS_CPU_ARGS_H
#define TILEOPS_CPU_ARGS_H

#include <stdint.h>

#include "tileops/dtype.h"
#include "tileops/status.h"

/* dtype a float code (float32, float16, bfloat16) and rows >= 0 */
static inline tileops_status_t tileops_check_float_rows(const char *k, int dtype, int64_t rows) {
    if (!tileops_dtype_is_float(dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k,
                            dtype, tileops_dtype_name(dtype));
    if (rows < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: rows must be >= 0, got %lld", k, (long long)rows);
    return TILEOPS_OK;
}

/* x and y non-NULL when there are rows to read and write */
static inline tileops_status_t tileops_check_x_y(const char *k, int64_t rows, const void *x, const void *y) {
    const char *null_arg = x == NULL ? "x" : y == NULL ? "y" : NULL;
    if (rows > 0 && null_arg != NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: %s must be non-NULL when rows > 0 (rows = %lld), got NULL", k, null_arg,
                            (long long)rows);
    return TILEOPS_OK;
}

#endif /* TILEOPS_CPU_ARGS_H */

/* ops/positional/angle_table.h: internal to the core - the one driver behind the CPU
 * kernels of the positional tables made of sines and cosines of position * frequency
 * (rope_cos_sin_cache.c: vLLM's rotary cache; sinusoidal.c: the Transformer's table),
 * and the double-precision reference they are tested against.
 *
 * out is float32 [rows, width], contiguous. Row p holds, for the pairs i = 0 .. n - 1
 * (angle x = p * inv_i, inv_i = tileops_rope_scaled(tileops_inv_freq(i, width, base), ...)):
 *   TILEOPS_TABLE_ROPE        n = width / 2 (width even >= 2): cos x_0 .. cos x_{n-1},
 *                             then sin x_0 .. sin x_{n-1} (vLLM's cos_sin_cache)
 *   TILEOPS_TABLE_SINUSOIDAL  n = ceil(width / 2): sin x_i at channel 2i, cos x_i at 2i + 1
 *                             (an odd width ends with a sine), no rope scaling
 * x in double; sin and cos in double (fast: tileops_sincos of tables.cuh, vectorised with
 * AVX2 / AVX-512, the same bits at every level; reference: libm sin and cos), each rounded
 * once to float32. The largest angle, (rows - 1) * max inv_i, must be below 2^50. */
#ifndef TILEOPS_OPS_ANGLE_TABLE_H
#define TILEOPS_OPS_ANGLE_TABLE_H

#include <stdint.h>

#include "tileops/kernel_table.h"
#include "tileops/status.h"

#define TILEOPS_TABLE_ROPE 0
#define TILEOPS_TABLE_SINUSOIDAL 1

typedef struct tileops_angle_table_args {
    const char *kernel; /* the kernel's table name, for messages */
    float *out;
    int64_t rows, width;
    double base;        /* finite, >= 1 */
    int layout;         /* TILEOPS_TABLE_ROPE or TILEOPS_TABLE_SINUSOIDAL */
    int rope_type;      /* TILEOPS_ROPE_DEFAULT / _LINEAR / _LLAMA3 (tables.cuh) */
    double factor;      /* linear, llama3: finite, > 0 */
    double low, high;   /* llama3: finite, 0 < low <= high */
    double orig;        /* llama3: the original context length, finite, > 0 */
} tileops_angle_table_args_t;

/* Fills out (reference = 0: the fast kernel, spread over the core's pool; 1: plain loops,
 * one thread). TILEOPS_ERR_INVALID_ARGUMENT for arguments outside the contract above (the
 * message starts with the kernel's name); nothing is written then. */
tileops_status_t tileops_angle_table(const tileops_angle_table_args_t *a, int reference);

#endif /* TILEOPS_OPS_ANGLE_TABLE_H */

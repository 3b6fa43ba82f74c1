/* ops/sampling/sampling_rows.h: internal to the core - the row machinery of the sampling
 * family's selection kernels (top_k.c, top_k_top_p_mask.c), in sampling_rows.c: a row in
 * float32 and its ordered keys, exp of a shifted row (vectorised, AVX-512 / AVX2 /
 * scalar, the same bits on each), and the radix selection of a row's k-th largest key.
 *
 * Keys are sampling_key's (sampling_cpu.h): the order of the float values, -0.0 == 0.0,
 * NaN the largest. Selection works on 8-bit digits from the top, keeping only the keys
 * that share the digits chosen so far (so each pass reads fewer keys). */
#ifndef TILEOPS_OPS_SAMPLING_ROWS_H
#define TILEOPS_OPS_SAMPLING_ROWS_H

#include <stdint.h>

/* z[i] = x[i] in float32 and keys[i] = sampling_key(z[i]), i < n (x of dtype dt; keys may
 * be NULL). Returns the largest value that is not NaN (-inf for none) and sets *nan when
 * some x[i] is NaN. */
float sampling_row_keys(const void *x, int dt, int64_t n, float *z, uint32_t *keys, int *nan);

/* w[i] = exp(z[i] - m), i < n (w may be z): the vector exp of cpu/vec16.h (< 1.1 ulp; 0 for -inf). */
void sampling_row_exp(const float *z, int64_t n, float m, float *w);

/* The k-th largest of the n keys (1 <= k <= n), and in *above how many keys are larger;
 * scratch holds n keys. */
uint32_t sampling_select(const uint32_t *keys, int64_t n, int64_t k, uint32_t *scratch, int64_t *above);

#endif /* TILEOPS_OPS_SAMPLING_ROWS_H */

/* ops/sampling/sampling_rows.h: internal to the core - the row machinery of the sampling
 * family's selection kernels (top_k.c, top_k_top_p_mask.c), in sampling_rows.c: a row in
 * float32 and its ordered keys, exp of a shifted row (vectorised, AVX-512 / AVX2 /
 * scalar, the same bits on each), and the radix selection of a row's k-th largest key.
 *
 * Keys are sampling_key's (sampling_cpu.h): the order of the float values, -0.0 == 0.0,
 * NaN the largest. Selection works on digits of 11, 11 and 10 bits from the top, keeping
 * only the keys that share the digits chosen so far (so each pass reads fewer keys); for a
 * small k, sampling_candidates first keeps the elements above a floor found on a sample. */
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
 * scratch holds n keys, and may be keys itself (which the selection then overwrites). */
uint32_t sampling_select(const uint32_t *keys, int64_t n, int64_t k, uint32_t *scratch, int64_t *above);

/* The elements that can be among the k largest of n keys (1 <= k <= n), as ranks
 * (sampling_rank) in index order in cand (room for n): those whose key is at least a floor
 * with k or more keys at or above it, the floor the k_s-th largest of every 16th key (k_s
 * a margin above k / 16); where that floor holds fewer than k keys, or k is not small
 * against n, the floor is 0: every element. Returns how many; n means every element, and
 * then cand may not have been written (the caller reads the keys). tmp: room for n / 16 keys.
 * Any floor gives the same k largest: the sample changes only the time. */
int64_t sampling_candidates(const uint32_t *keys, int64_t n, int64_t k, uint64_t *cand, uint32_t *tmp);

#endif /* TILEOPS_OPS_SAMPLING_ROWS_H */

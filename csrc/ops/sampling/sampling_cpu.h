/* ops/sampling/sampling_cpu.h: what the sampling family's CPU kernels share (internal):
 * the ordered keys of float values, the argument checks, the pool's row and chunk splits,
 * the rows' best element (argmax's and sample_from_probs' scan, sampling_best.c) and the
 * selection kernels' full sort of a row.
 *
 * Batch invariance: a row's result depends on its own values and V only. A kernel splits
 * a row into chunks of a fixed size (never a function of B or of the thread count) and
 * combines the chunks' partial results in chunk order, so neither the batch nor the pool
 * changes a bit. */
#ifndef TILEOPS_OPS_SAMPLING_CPU_H
#define TILEOPS_OPS_SAMPLING_CPU_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/status.h"
#include "cpu/memory.h"
#include "cpu/vec16.h"

/* The largest row the kernels take: indices travel as 32-bit numbers in keys. */
#define SAMPLING_MAX_V ((int64_t)INT32_MAX)

/* A key ordering floats as numbers: a larger float has a larger key, -0.0 and +0.0 share
 * one key, every NaN has the largest key (above +inf), as torch orders them (argmax,
 * topk and sort take NaN as the largest value). */
static inline uint32_t sampling_key(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    /* selects, no branches: a loop of keys vectorises */
    uint32_t k = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    k = f == 0.0f ? 0x80000000u : k;
    return f != f ? 0xffffffffu : k;
}

/* (key, index) in one number whose order is the order of "larger value first, then lower
 * index first": the largest of a set is its argmax as torch.argmax defines it. */
static inline uint64_t sampling_rank(uint32_t key, int64_t i) {
    return ((uint64_t)key << 32) | (uint64_t)(0xffffffffu - (uint32_t)i);
}

static inline int64_t sampling_rank_index(uint64_t r) { return (int64_t)(0xffffffffu - (uint32_t)r); }

/* dtype a float code, B >= 0, 1 <= V <= SAMPLING_MAX_V, B * V * 8 bytes within int64 */
static inline tileops_status_t sampling_check_rows(const char *k, int dtype, int64_t B, int64_t V) {
    if (!tileops_dtype_is_float(dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, dtype,
                            tileops_dtype_name(dtype));
    if (B < 0 || V < 1 || V > SAMPLING_MAX_V)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: B >= 0 and 1 <= V <= %lld, got B = %lld, V = %lld", k,
                            (long long)SAMPLING_MAX_V, (long long)B, (long long)V);
    if (B > INT64_MAX / 8 / V)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: B * V * 8 bytes must fit int64, got B = %lld, V = %lld",
                            k, (long long)B, (long long)V);
    return TILEOPS_OK;
}

/* A buffer a kernel is handed: its name, address, bytes and element size; optional ones
 * may be NULL. */
typedef struct sampling_buf {
    const char *name;
    const void *p;
    int64_t bytes, align;
    int optional;
} sampling_buf_t;

/* With B > 0: each required buffer non-NULL, and each given one aligned to its element
 * size and within the address space (cpu/memory.h: what C can check of an address). */
static inline tileops_status_t sampling_check_bufs(const char *k, int64_t B, const sampling_buf_t *bufs, int n) {
    if (B == 0)
        return TILEOPS_OK;
    for (int i = 0; i < n; i++) {
        const sampling_buf_t *b = &bufs[i];
        if (b->p == NULL) {
            if (b->optional)
                continue;
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: %s must be non-NULL when B > 0 (B = %lld), got NULL",
                                k, b->name, (long long)B);
        }
        const char *why = tileops_cpu_extent_problem(b->p, b->bytes, b->align);
        if (why != NULL)
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: %s (%p, %lld bytes) %s", k, b->name, b->p,
                                (long long)b->bytes, why);
    }
    return TILEOPS_OK;
}

/* ---- a row's best element by rank, over chunks in parallel --------------------------- */

/* The best rank (sampling_rank) among n elements of row r from element i0; 0 for none. */
typedef uint64_t (*sampling_chunk_fn)(const void *ctx, int64_t r, int64_t i0, int64_t n);

typedef struct sampling_reduce {
    sampling_chunk_fn fn;
    const void *ctx;
    int64_t V, chunk, chunks; /* chunks of `chunk` elements per row */
    uint64_t *part;           /* [B * chunks] */
} sampling_reduce_t;

static inline void sampling_reduce_range(void *c, int64_t u0, int64_t u1) {
    const sampling_reduce_t *j = c;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / j->chunks, i = (u % j->chunks) * j->chunk;
        j->part[u] = j->fn(j->ctx, r, i, j->V - i < j->chunk ? j->V - i : j->chunk);
    }
}

/* token[r] = the index of row r's best element, -1 where no element has a rank (all 0):
 * each chunk's best in parallel, then the best of the chunks. The chunks depend on V only,
 * and the best of a set is exact, so the result does not depend on B or the threads. */
static inline tileops_status_t sampling_reduce_rows(const char *k, sampling_chunk_fn fn, const void *ctx, int64_t B,
                                                    int64_t V, int64_t chunk, int64_t *token) {
    sampling_reduce_t j = {.fn = fn, .ctx = ctx, .V = V, .chunk = chunk, .chunks = (V + chunk - 1) / chunk};
    j.part = malloc((size_t)(B * j.chunks) * sizeof(uint64_t));
    if (j.part == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for %lld rows' partial results", k, (long long)B);
    tileops_cpu_parallel_for(B * j.chunks, 1, sampling_reduce_range, &j);
    for (int64_t r = 0; r < B; r++) {
        uint64_t best = 0;
        for (int64_t c = 0; c < j.chunks; c++)
            best = j.part[r * j.chunks + c] > best ? j.part[r * j.chunks + c] : best;
        token[r] = best == 0 ? -1 : sampling_rank_index(best);
    }
    free(j.part);
    return TILEOPS_OK;
}

/* The best element of each row (sampling_best.c), the scan of argmax.c (q NULL: the first
 * NaN, else the first maximum) and sample_from_probs.c (q given: the first of the largest
 * ratios p / q > 0): token[r] its index, -1 for a row without one. p [B, V] of dtype dt,
 * q [B, V] float32, contiguous; the arguments checked by the caller. reference: element by
 * element, one thread; else chunks over the pool at the running SIMD level. */
typedef struct sampling_best_args {
    const void *p;
    const float *q;
    int64_t V;
    int dt;
} sampling_best_args_t;

tileops_status_t sampling_best_rows(const char *k, const sampling_best_args_t *a, int64_t B, int reference,
                                    int64_t *token);

/* ---- rows over the pool, and a row's full sort (the selection kernels' references) ------ */

/* qsort's order of ranks (sampling_rank): the largest first */
static inline int sampling_by_rank_descending(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* order[i] = the rank of element i of the V from x + o (dtype dt), then sorted largest
 * first: order[0] is the row's argmax, a NaN key (0xffffffff) when the row has one. */
static inline void sampling_sorted_ranks(const void *x, int64_t o, int64_t V, int dt, uint64_t *order) {
    for (int64_t i = 0; i < V; i++)
        order[i] = sampling_rank(sampling_key(vec16_load1(x, o + i, dt)), i);
    qsort(order, (size_t)V, sizeof *order, sampling_by_rank_descending);
}

/* range(ctx, r0, r1) over the rows [0, B) on the pool; *failed, set by a range that could
 * not get its scratch (rows of V), makes the call an out-of-memory failure */
static inline tileops_status_t sampling_rows_on_pool(const char *k, int64_t B, int64_t V, tileops_range_fn range,
                                                     void *ctx, const int *failed) {
    tileops_cpu_parallel_for(B, 1, range, ctx);
    if (*failed)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for the scratch of rows of %lld", k,
                            (long long)V);
    return TILEOPS_OK;
}

#endif /* TILEOPS_OPS_SAMPLING_CPU_H */

/* top_k.c: the CPU kernels "top_k" (radix selection, rows over the pool) and
 * "top_k_reference" (a full sort of each row, one thread) of TopKFwdOp:
 *   the k largest of each row, largest first; equal values by lower index first; NaN the
 *   largest, -0.0 equal to 0.0 (a stable descending sort of the row, cut at k).
 *
 * Arguments ("pppqqqi"): logits [B, V], values [B, k] (the logits' dtype) or 0 (not
 * asked for), indices [B, k] int64, B, V, k (0 <= k <= V), the logits' dtype. Contiguous.
 * A value is copied bit for bit (-0.0 and NaN payloads kept).
 *
 * Per row: the ordered keys (sampling_rows.h); the candidates (sampling_candidates: for a
 * small k, the elements above a floor found on a sample of the row); the k-th largest key
 * T among them by radix selection; in index order every candidate above T and the first
 * k - (those) equal to T; a sort of those k by rank (key, then lower index). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/sampling/sampling_cpu.h"
#include "ops/sampling/sampling_rows.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

#define TOP_K_ARG_FORMAT "pppqqqi"

typedef struct top_k_args {
    const char *kernel;
    const void *x;
    void *values;
    int64_t *indices;
    int64_t B, V, k;
    int dt;
    int failed; /* set by a range that could not get its scratch */
} top_k_args_t;

/* sel[0..k) by rank into the row's outputs */
static void write_row(const top_k_args_t *a, int64_t r, const uint64_t *sel) {
    const size_t es = tileops_dtype_size(a->dt);
    for (int64_t j = 0; j < a->k; j++) {
        const int64_t i = sampling_rank_index(sel[j]);
        a->indices[r * a->k + j] = i;
        if (a->values != NULL)
            memcpy((char *)a->values + (size_t)(r * a->k + j) * es, (const char *)a->x + (size_t)(r * a->V + i) * es,
                   es);
    }
}

static void rows_range(void *ctx, int64_t r0, int64_t r1) {
    top_k_args_t *a = ctx;
    const int64_t V = a->V, k = a->k;
    /* the thread's scratch: cand [V] and sel [k] ranks, z [V], keys and scratch [V] */
    uint64_t *cand = tileops_cpu_scratch((size_t)V * 20 + (size_t)k * 8);
    if (cand == NULL) {
        __atomic_store_n(&a->failed, 1, __ATOMIC_RELAXED);
    } else {
        uint64_t *sel = cand + V;
        float *z = (float *)(sel + k);
        uint32_t *keys = (uint32_t *)(z + V), *scratch = keys + V;
        const size_t es = tileops_dtype_size(a->dt);
        for (int64_t r = r0; r < r1; r++) {
            int nan;
            (void)sampling_row_keys((const char *)a->x + (size_t)(r * V) * es, a->dt, V, z, keys, &nan);
            const int64_t m = sampling_candidates(keys, V, k, cand, scratch);
            const int all = m == V; /* every element: the row's own keys, cand unused */
            const uint32_t *ck = keys;
            if (!all) {
                for (int64_t j = 0; j < m; j++)
                    scratch[j] = (uint32_t)(cand[j] >> 32);
                ck = scratch;
            }
            int64_t above;
            const uint32_t t = sampling_select(ck, m, k, scratch, &above);
            int64_t n = 0, ties = k - above;
            for (int64_t j = 0; j < m && n < k; j++) {
                const uint64_t rank = all ? sampling_rank(keys[j], j) : cand[j];
                const uint32_t key = (uint32_t)(rank >> 32);
                if (key > t || (key == t && ties-- > 0))
                    sel[n++] = rank;
            }
            qsort(sel, (size_t)k, sizeof *sel, sampling_by_rank_descending);
            write_row(a, r, sel);
        }
    }
}

static tileops_status_t reference_rows(const top_k_args_t *a) {
    uint64_t *all = malloc((size_t)a->V * sizeof(uint64_t));
    if (all == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for a row of %lld", a->kernel, (long long)a->V);
    for (int64_t r = 0; r < a->B; r++) {
        sampling_sorted_ranks(a->x, r * a->V, a->V, a->dt, all);
        write_row(a, r, all);
    }
    free(all);
    return TILEOPS_OK;
}

static tileops_status_t top_k_call(const tileops_arg_t *g, int reference) {
    top_k_args_t a = {
        .kernel = reference ? "top_k_reference" : "top_k",
        .x = (const void *)g[0].p, .values = (void *)g[1].p, .indices = (int64_t *)g[2].p,
        .B = g[3].q, .V = g[4].q, .k = g[5].q, .dt = g[6].i,
    };
    tileops_status_t st = sampling_check_rows(a.kernel, a.dt, a.B, a.V);
    if (st != TILEOPS_OK)
        return st;
    if (a.k < 0 || a.k > a.V)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: k must be in [0, V = %lld], got %lld", a.kernel,
                            (long long)a.V, (long long)a.k);
    if (a.k == 0) /* nothing to read or write */
        return TILEOPS_OK;
    const int64_t e = (int64_t)tileops_dtype_size(a.dt);
    const sampling_buf_t bufs[] = {{"logits", a.x, a.B * a.V * e, e, 0},
                                   {"values", a.values, a.B * a.k * e, e, 1},
                                   {"indices", a.indices, a.B * a.k * 8, 8, 0}};
    if ((st = sampling_check_bufs(a.kernel, a.B, bufs, 3)) != TILEOPS_OK || a.B == 0)
        return st;
    if (reference)
        return reference_rows(&a);
    return sampling_rows_on_pool(a.kernel, a.B, a.V, rows_range, &a, &a.failed);
}

static tileops_status_t top_k_fast(const tileops_arg_t *g) { return top_k_call(g, 0); }
static tileops_status_t top_k_ref(const tileops_arg_t *g) { return top_k_call(g, 1); }

static const tileops_cpu_kernel_t top_k_kernel = {"top_k", TOP_K_ARG_FORMAT, top_k_fast};
static const tileops_cpu_kernel_t top_k_reference_kernel = {"top_k_reference", TOP_K_ARG_FORMAT, top_k_ref};
TILEOPS_CPU_KERNEL(top_k_kernel)
TILEOPS_CPU_KERNEL(top_k_reference_kernel)

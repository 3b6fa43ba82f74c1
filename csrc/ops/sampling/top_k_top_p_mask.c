/* top_k_top_p_mask.c: the CPU kernels "top_k_top_p_mask" (threshold searches, rows over
 * the pool) and "top_k_top_p_mask_reference" (a full sort of each row in double, one
 * thread) of TopKTopPMaskFwdOp, vLLM's apply_top_k_top_p without its sort:
 *   top-k (1 <= k[r] < V): the elements below the k-th largest value are masked (every
 *   element equal to it kept);
 *   top-p (p[r] < 1, on what top-k kept, when the row's maximum is finite): in the order
 *   larger value first, equal values by lower index first, an element is kept when the
 *   probability mass before it is < p (the first always), the mass of the softmax over
 *   the kept elements: vLLM's "cumsum of the ascending probabilities <= 1 - p is masked";
 *   masked elements become -inf, kept ones keep their bits; a row with a NaN is all NaN.
 *
 * Arguments ("ppppqqii"): logits [B, V], k [B] (int32 or int64) or 0 (no top-k), p [B]
 * float32 or 0 (no top-p), out [B, V] (the logits themselves: in place, only masked
 * elements are written), B, V, the logits' dtype, k's dtype. Contiguous; out is the logits
 * or does not overlap them.
 *
 * Per row, no sort (the CUDA kernel does the same, top_k_top_p_mask.cu):
 *   the k-th largest key T by radix selection (sampling_rows.h), kept: key >= T;
 *   weights w = exp(x - max) (fp32) as integers W = floor(w 2^40) (exact sums in any order:
 *   the CPU and the GPU decide alike), Z = sum W over the kept, P = ceil(p Z);
 *   the edge by a radix search over the keys with each digit's mass: the lowest key K
 *   whose mass above, G, is < P (keys above K kept, below it masked); of the elements
 *   equal to K the first ceil((P - G) / W_K) by index are kept (all when W_K = 0).
 * The 2^-40 quantum moves the edge only where the mass before an element is within
 * V 2^-40 of p Z, as the float32 weights do already. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/sampling/sampling_cpu.h"
#include "ops/sampling/sampling_rows.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/vec16.h"

#define TKP_ARG_FORMAT "ppppqqii"
#define TKP_W_SCALE 0x1p40f /* the weights' quantum is 2^-40 of the largest */

typedef struct tkp_args {
    const char *kernel;
    const void *x;
    const void *k;
    const float *p;
    void *y;
    int64_t B, V;
    int dt, kdt;
    int failed; /* set by a range that could not get its scratch */
} tkp_args_t;

static int64_t k_at(const tkp_args_t *a, int64_t r) {
    if (a->k == NULL)
        return 0;
    return a->kdt == TILEOPS_INT32 ? (int64_t)((const int32_t *)a->k)[r] : ((const int64_t *)a->k)[r];
}

/* floor(w 2^40) (w in [0, 1]: below 2^63, so the signed conversion, one instruction, is exact) */
static uint64_t weight(float w) { return (uint64_t)(int64_t)(w * TKP_W_SCALE); }

/* ceil(p Z) for p > 0, in double (as the CUDA kernel computes it); 0 for p <= 0 */
static uint64_t mass_bound(float p, uint64_t z) {
    return p > 0.0f ? (uint64_t)ceil((double)p * (double)z) : 0;
}

/* element i of a row of dtype dt: -inf or NaN written */
static void put_special(void *y, int64_t i, int dt, int nan) {
    if (dt == TILEOPS_FLOAT32) {
        const uint32_t bits = nan ? 0x7fc00000u : 0xff800000u;
        memcpy((char *)y + (size_t)i * 4, &bits, 4);
    } else {
        const uint16_t bits = dt == TILEOPS_FLOAT16 ? (nan ? 0x7e00u : 0xfc00u) : (nan ? 0x7fc0u : 0xff80u);
        memcpy((char *)y + (size_t)i * 2, &bits, 2);
    }
}

/* Scratch of one range of rows: the row in float32 (then its weights' floats, in place),
 * its keys, and the selection's keys (then the top-p candidates). */
typedef struct tkp_scratch {
    float *w;
    uint32_t *keys, *cand;
} tkp_scratch_t;

/* The top-p edge of a row: the lowest kept key *kb, and how many elements equal to it are
 * kept (in index order). The candidates are the elements with key >= tk. */
static int64_t top_p_edge(const tkp_scratch_t *s, int64_t V, uint32_t tk, float p, uint32_t *kb) {
    uint32_t *cand = s->cand;
    int64_t n = 0;
    uint64_t z = 0;
    for (int64_t i = 0; i < V; i++)
        if (s->keys[i] >= tk) {
            cand[n++] = (uint32_t)i;
            z += weight(s->w[i]);
        }
    const uint64_t bound = mass_bound(p, z);
    if (bound == 0) { /* p <= 0: the largest alone (its first element) */
        uint32_t best = 0;
        for (int64_t c = 0; c < n; c++)
            best = s->keys[cand[c]] > best ? s->keys[cand[c]] : best;
        *kb = best;
        return 1;
    }
    uint64_t g = 0; /* the mass of the keys above the digits chosen so far */
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t count[256] = {0};
        uint64_t mass[256] = {0};
        for (int64_t c = 0; c < n; c++) {
            const uint32_t d = (s->keys[cand[c]] >> shift) & 255u;
            count[d]++;
            mass[d] += weight(s->w[cand[c]]);
        }
        /* the lowest non-empty digit whose mass above is still < bound (one exists: g is) */
        uint64_t cum = g, at = g;
        int found = -1;
        for (int d = 255; d >= 0 && cum < bound; d--) {
            if (count[d] == 0)
                continue;
            found = d;
            at = cum;
            cum += mass[d];
        }
        g = at;
        int64_t w = 0;
        for (int64_t c = 0; c < n; c++)
            if ((int)((s->keys[cand[c]] >> shift) & 255u) == found)
                cand[w++] = cand[c];
        n = w;
    }
    *kb = s->keys[cand[0]];
    const uint64_t wb = weight(s->w[cand[0]]);
    if (wb == 0)
        return n;
    const uint64_t take = (bound - g + wb - 1) / wb;
    return take < (uint64_t)n ? (int64_t)take : n;
}

static void row(const tkp_args_t *a, const tkp_scratch_t *s, int64_t r) {
    const int64_t V = a->V;
    const size_t es = tileops_dtype_size(a->dt);
    const void *x = (const char *)a->x + (size_t)(r * V) * es;
    void *y = (char *)a->y + (size_t)(r * V) * es;
    int nan;
    const float m = sampling_row_keys(x, a->dt, V, s->w, s->keys, &nan);
    if (nan) {
        for (int64_t i = 0; i < V; i++)
            put_special(y, i, a->dt, 1);
        return;
    }
    const int64_t k = k_at(a, r);
    uint32_t tk = 0;
    if (k >= 1 && k < V) {
        int64_t above;
        tk = sampling_select(s->keys, V, k, s->cand, &above);
    }
    const float p = a->p != NULL ? a->p[r] : 1.0f;
    const int top_p = p < 1.0f && m != INFINITY && m != -INFINITY;
    uint32_t kb = 0;
    int64_t take = 0;
    if (top_p) {
        sampling_row_exp(s->w, V, m, s->w);
        take = top_p_edge(s, V, tk, p, &kb);
    }
    if (y != x) /* out of place: the row, then -inf over what is masked */
        memcpy(y, x, (size_t)V * es);
    if (tk == 0 && !top_p)
        return;
    int64_t seen = 0; /* elements equal to kb so far */
    for (int64_t i = 0; i < V; i++) {
        const uint32_t key = s->keys[i];
        const int keep = key >= tk && (!top_p || key > kb || (key == kb && seen++ < take));
        if (!keep)
            put_special(y, i, a->dt, 0);
    }
}

static void rows_range(void *ctx, int64_t r0, int64_t r1) {
    tkp_args_t *a = ctx;
    const size_t V = (size_t)a->V;
    float *w = tileops_cpu_scratch(V * 12); /* the thread's scratch: w, keys and cand [V] */
    if (w == NULL) {
        __atomic_store_n(&a->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    const tkp_scratch_t s = {w, (uint32_t *)(w + V), (uint32_t *)(w + V) + V};
    for (int64_t r = r0; r < r1; r++)
        row(a, &s, r);
}

/* ---- reference: the definition over a full sort, in double ----------------------------- */

static void reference_row(const tkp_args_t *a, int64_t r, uint64_t *order, unsigned char *keep) {
    const int64_t V = a->V;
    sampling_sorted_ranks(a->x, r * V, V, a->dt, order);
    const int nan = (order[0] >> 32) == 0xffffffffu; /* the largest key: NaN's */
    memset(keep, 1, (size_t)V);
    const int64_t k = k_at(a, r);
    if (!nan && k >= 1 && k < V) /* below the k-th largest value: masked */
        for (int64_t t = k; t < V; t++)
            keep[sampling_rank_index(order[t])] = (order[t] >> 32) == (order[k - 1] >> 32);
    const double m = vec16_load1(a->x, r * V + sampling_rank_index(order[0]), a->dt);
    const float p = a->p != NULL ? a->p[r] : 1.0f;
    if (!nan && p < 1.0f && m != INFINITY && m != -INFINITY) {
        double z = 0.0, before = 0.0;
        for (int64_t i = 0; i < V; i++)
            z += keep[i] ? exp(vec16_load1(a->x, r * V + i, a->dt) - m) : 0.0;
        for (int64_t t = 0; t < V; t++) {
            const int64_t i = sampling_rank_index(order[t]);
            if (!keep[i])
                continue;
            keep[i] = t == 0 || before < (double)p * z;
            before += exp(vec16_load1(a->x, r * V + i, a->dt) - m);
        }
    }
    const size_t es = tileops_dtype_size(a->dt);
    if (a->y != a->x)
        memcpy((char *)a->y + (size_t)(r * V) * es, (const char *)a->x + (size_t)(r * V) * es, (size_t)V * es);
    for (int64_t i = 0; i < V; i++)
        if (nan || !keep[i])
            put_special(a->y, r * V + i, a->dt, nan);
}

static tileops_status_t reference_rows(const tkp_args_t *a) {
    uint64_t *order = malloc((size_t)a->V * sizeof(uint64_t));
    unsigned char *keep = malloc((size_t)a->V);
    tileops_status_t st = TILEOPS_OK;
    if (order == NULL || keep == NULL)
        st = tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for a row of %lld", a->kernel, (long long)a->V);
    else
        for (int64_t r = 0; r < a->B; r++)
            reference_row(a, r, order, keep);
    free(order);
    free(keep);
    return st;
}

static tileops_status_t tkp_call(const tileops_arg_t *g, int reference) {
    tkp_args_t a = {
        .kernel = reference ? "top_k_top_p_mask_reference" : "top_k_top_p_mask",
        .x = (const void *)g[0].p, .k = (const void *)g[1].p, .p = (const float *)g[2].p, .y = (void *)g[3].p,
        .B = g[4].q, .V = g[5].q, .dt = g[6].i, .kdt = g[7].i,
    };
    tileops_status_t st = sampling_check_rows(a.kernel, a.dt, a.B, a.V);
    if (st != TILEOPS_OK)
        return st;
    if (a.kdt != TILEOPS_INT32 && a.kdt != TILEOPS_INT64)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: k's dtype must be 3 (int32) or 4 (int64), got %d (%s)",
                            a.kernel, a.kdt, tileops_dtype_name(a.kdt));
    const int64_t e = (int64_t)tileops_dtype_size(a.dt), ke = a.kdt == TILEOPS_INT32 ? 4 : 8;
    const sampling_buf_t bufs[] = {{"logits", a.x, a.B * a.V * e, e, 0}, {"k", a.k, a.B * ke, ke, 1},
                                   {"p", a.p, a.B * 4, 4, 1}, {"out", a.y, a.B * a.V * e, e, 0}};
    if ((st = sampling_check_bufs(a.kernel, a.B, bufs, 4)) != TILEOPS_OK || a.B == 0)
        return st;
    if (reference)
        return reference_rows(&a);
    return sampling_rows_on_pool(a.kernel, a.B, a.V, rows_range, &a, &a.failed);
}

static tileops_status_t tkp_fast(const tileops_arg_t *g) { return tkp_call(g, 0); }
static tileops_status_t tkp_ref(const tileops_arg_t *g) { return tkp_call(g, 1); }

static const tileops_cpu_kernel_t tkp_kernel = {"top_k_top_p_mask", TKP_ARG_FORMAT, tkp_fast};
static const tileops_cpu_kernel_t tkp_reference_kernel = {"top_k_top_p_mask_reference", TKP_ARG_FORMAT, tkp_ref};
TILEOPS_CPU_KERNEL(tkp_kernel)
TILEOPS_CPU_KERNEL(tkp_reference_kernel)

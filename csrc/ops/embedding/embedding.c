/* embedding.c: the CPU kernels "embedding" (rows copied with memcpy, ids spread over the
 * core's pool) and "embedding_reference" (element by element, one thread) of
 * EmbeddingFwdOp: y[i, :] = weight[ids[i], :].
 *
 * Arguments ("pppqqqii"): ids, weight, y, n (ids), V (table rows), H (row length), dtype
 * (float32, float16, bfloat16: the table's and y's), the ids' dtype (int32 or int64). All
 * contiguous; y must not overlap the table. An id outside [0, V) is an error naming its
 * index and value, found before anything is written. */
#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

#define EMBEDDING_ARG_FORMAT "pppqqqii"

/* A worker takes at least this many bytes of rows: fewer cost more to wake it. (256 KB
 * kept 32 tokens of 8 KB rows on one thread: 14.4 µs a call against F.embedding's 9.7 on
 * the 2-core VM; 64 KB: 9.6 against 9.1, session 17.) */
#define EMBEDDING_MIN_BYTES_PER_THREAD ((int64_t)64 << 10)

typedef struct embedding_args {
    const char *kernel;
    const void *ids, *weight;
    void *y;
    int64_t n, V, H;
    int dtype, id_dtype;
} embedding_args_t;

static int64_t id_at(const embedding_args_t *a, int64_t i) {
    return a->id_dtype == TILEOPS_INT32 ? (int64_t)((const int32_t *)a->ids)[i] : ((const int64_t *)a->ids)[i];
}

static tileops_status_t check_args(const embedding_args_t *a) {
    const char *k = a->kernel;
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, a->dtype,
                            tileops_dtype_name(a->dtype));
    if (a->id_dtype != TILEOPS_INT32 && a->id_dtype != TILEOPS_INT64)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "ids", "%s: the ids' dtype must be int32 or int64, got %d (%s)", k,
                            a->id_dtype, tileops_dtype_name(a->id_dtype));
    if (a->n < 0 || a->V < 0 || a->H < 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: n >= 0, V >= 0 and H >= 1, got %lld, %lld, %lld", k,
                            (long long)a->n, (long long)a->V, (long long)a->H);
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype), lim = INT64_MAX / es / a->H;
    if (a->V > lim || a->n > lim)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the table's and y's bytes must fit int64", k);
    if (a->n == 0)
        return TILEOPS_OK;
    /* an empty table (V = 0) may have no memory: every id is outside its rows, below */
    const char *null_arg = a->ids == NULL                  ? "ids"
                           : a->weight == NULL && a->V > 0 ? "weight"
                           : a->y == NULL                  ? "y"
                                                           : NULL;
    if (null_arg != NULL)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, null_arg, "%s: %s must be non-NULL when n > 0, got NULL", k, null_arg);
    /* every id before anything is written: a bad one leaves y untouched */
    for (int64_t i = 0; i < a->n; i++) {
        const int64_t id = id_at(a, i);
        if (id < 0 || id >= a->V)
            return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "ids", "%s: ids[%lld] = %lld is outside [0, %lld) (the table's rows)",
                                k, (long long)i, (long long)id, (long long)a->V);
    }
    return TILEOPS_OK;
}

static void rows_range(void *ctx, int64_t i0, int64_t i1) {
    const embedding_args_t *a = ctx;
    const size_t row = (size_t)(a->H * (int64_t)tileops_dtype_size(a->dtype));
    for (int64_t i = i0; i < i1; i++)
        memcpy((char *)a->y + (size_t)i * row, (const char *)a->weight + (size_t)id_at(a, i) * row, row);
}

static void reference_rows(const embedding_args_t *a) {
    const int64_t H = a->H;
    for (int64_t i = 0; i < a->n; i++) {
        const int64_t r = id_at(a, i);
        for (int64_t j = 0; j < H; j++) {
            if (a->dtype == TILEOPS_FLOAT32)
                ((float *)a->y)[i * H + j] = ((const float *)a->weight)[r * H + j];
            else
                ((uint16_t *)a->y)[i * H + j] = ((const uint16_t *)a->weight)[r * H + j];
        }
    }
}

static tileops_status_t embedding_call(const tileops_arg_t *g, int reference) {
    embedding_args_t a = {
        .kernel = reference ? "embedding_reference" : "embedding",
        .ids = (const void *)g[0].p, .weight = (const void *)g[1].p, .y = (void *)g[2].p,
        .n = g[3].q, .V = g[4].q, .H = g[5].q, .dtype = g[6].i, .id_dtype = g[7].i,
    };
    tileops_status_t st = check_args(&a);
    if (st != TILEOPS_OK || a.n == 0)
        return st;
    if (reference) {
        reference_rows(&a);
        return TILEOPS_OK;
    }
    const int64_t row = a.H * (int64_t)tileops_dtype_size(a.dtype);
    tileops_cpu_parallel_for(a.n, (EMBEDDING_MIN_BYTES_PER_THREAD + row - 1) / row, rows_range, &a);
    return TILEOPS_OK;
}

static tileops_status_t embedding_fast(const tileops_arg_t *g) { return embedding_call(g, 0); }
static tileops_status_t embedding_ref(const tileops_arg_t *g) { return embedding_call(g, 1); }

static const tileops_cpu_kernel_t embedding_kernel = {"embedding", EMBEDDING_ARG_FORMAT, embedding_fast};
static const tileops_cpu_kernel_t embedding_reference_kernel = {"embedding_reference", EMBEDDING_ARG_FORMAT,
                                                                embedding_ref};
TILEOPS_CPU_KERNEL(embedding_kernel)
TILEOPS_CPU_KERNEL(embedding_reference_kernel)

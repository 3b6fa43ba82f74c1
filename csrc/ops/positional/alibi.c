/* alibi.c: the CPU kernels "alibi" (fast: per head, one row of slope * k for
 * k = -(S - 1) .. S - 1, from which every row of the head is a memcpy; rows spread over the
 * core's pool) and "alibi_reference" (element by element, one thread) of AlibiFwdOp:
 *   bias[h, i, j] = slope_h * (j - i),   float32 [heads, S, S]
 * slope_h = tileops_alibi_slope(h, heads) (tables.cuh: Press et al.'s slopes, the
 * non-power-of-two rule of BLOOM), the product in double, rounded once to float32 (both
 * kernels compute every element the same way: the same bits).
 *
 * Arguments ("pqq"): out, heads, S (seq_len). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/kernel_table.h"
#include "ops/positional/tables.cuh"

#define ALIBI_ARG_FORMAT "pqq"

/* A worker takes at least this many bytes of rows: fewer cost more to wake it. */
#define ALIBI_MIN_BYTES_PER_THREAD ((int64_t)256 << 10)

typedef struct alibi_job {
    float *out;
    const float *diag; /* per head, 2S - 1 values: slope * k, k = -(S - 1) .. S - 1 */
    int64_t S;
} alibi_job_t;

static void alibi_rows(void *ctx, int64_t r0, int64_t r1) {
    const alibi_job_t *j = ctx;
    const int64_t S = j->S;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t h = r / S, i = r - h * S;
        /* row i, column j: slope * (j - i) = diag_h[j - i + S - 1] */
        memcpy(j->out + r * S, j->diag + h * (2 * S - 1) + (S - 1 - i), (size_t)S * sizeof(float));
    }
}

static tileops_status_t alibi_call(const tileops_arg_t *g, int reference) {
    const char *k = reference ? "alibi_reference" : "alibi";
    float *out = (float *)g[0].p;
    const int64_t H = g[1].q, S = g[2].q;
    if (H < 0 || S < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: heads and seq_len must be >= 0, got %lld, %lld", k,
                            (long long)H, (long long)S);
    if (H == 0 || S == 0)
        return TILEOPS_OK;
    if (S > INT64_MAX / 4 / S || H > INT64_MAX / 4 / S / S)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the bias's bytes must fit int64 (heads %lld, seq_len %lld)",
                            k, (long long)H, (long long)S);
    if (out == NULL || (uintptr_t)out % sizeof(float))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: out must be non-NULL and 4-byte aligned when heads and seq_len are > 0, got %p", k,
                            (void *)out);
    if (reference) {
        for (int64_t h = 0; h < H; h++) {
            const double slope = tileops_alibi_slope(h, H);
            for (int64_t i = 0; i < S; i++)
                for (int64_t c = 0; c < S; c++)
                    out[(h * S + i) * S + c] = (float)POS_MUL(slope, (double)(c - i));
        }
        return TILEOPS_OK;
    }
    if (H > INT64_MAX / 4 / (2 * S - 1))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: heads * (2 seq_len - 1) floats must fit int64", k);
    float *diag = malloc((size_t)(H * (2 * S - 1)) * sizeof(float));
    if (diag == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for %lld x %lld slopes", k, (long long)H,
                            (long long)(2 * S - 1));
    for (int64_t h = 0; h < H; h++) {
        const double slope = tileops_alibi_slope(h, H);
        float *d = diag + h * (2 * S - 1);
        for (int64_t c = 0; c < 2 * S - 1; c++)
            d[c] = (float)POS_MUL(slope, (double)(c - (S - 1)));
    }
    alibi_job_t job = {.out = out, .diag = diag, .S = S};
    const int64_t row_bytes = S * (int64_t)sizeof(float);
    tileops_cpu_parallel_for(H * S, (ALIBI_MIN_BYTES_PER_THREAD + row_bytes - 1) / row_bytes, alibi_rows, &job);
    free(diag);
    return TILEOPS_OK;
}

static tileops_status_t alibi_fast(const tileops_arg_t *g) { return alibi_call(g, 0); }
static tileops_status_t alibi_ref(const tileops_arg_t *g) { return alibi_call(g, 1); }

static const tileops_cpu_kernel_t alibi_kernel = {"alibi", ALIBI_ARG_FORMAT, alibi_fast};
static const tileops_cpu_kernel_t alibi_reference_kernel = {"alibi_reference", ALIBI_ARG_FORMAT, alibi_ref};
TILEOPS_CPU_KERNEL(alibi_kernel)
TILEOPS_CPU_KERNEL(alibi_reference_kernel)

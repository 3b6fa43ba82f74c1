/* paged_decode_attention.c: the CPU kernels "paged_decode_attention" (fast: AVX-512, AVX2
 * or scalar at run time, spread over the core's pool) and "paged_decode_attention_reference"
 * (double-precision loops, one thread) of PagedDecodeAttentionFwdOp.
 *
 * One query token per sequence against a paged KV cache [num_blocks, BS, H_kv, D] (vLLM's
 * layout): for each sequence b of length len = seq_lens[b] and query head h (KV head
 * h / G, G = H / H_kv), over its tokens t < len (token t in block block_table[b, t / BS],
 * row t % BS):
 *   s_t = q[b, h] . k_t * scale,  o[b, h] = sum_t e^(s_t - m) v_t / l,  l = sum_t e^(s_t - m),
 *   lse[b, h] = m + log l (natural log, float32),  m = max_t s_t.
 * A sequence of length 0: o = 0, lse = -inf.
 *
 * The fast kernel, in fp32: a sequence's tokens fall into chunks of PDA_CH = 256 tokens;
 * a chunk's partial state per query head (m: its max score, l, acc[D]) is computed by
 * pda_chunk (vec16's 16-lane vectors: the K row dotted with each head's q, 16 channels at
 * a time in channel order, then folded; scores scaled, e^(s - m) by vec16's vexp, acc by
 * FMAs in token order); the result is the left fold of the chunks' partials in chunk order from the
 * empty state (m = -inf, l = 0, acc = 0) by pda_merge, then o = acc / l rounded once to
 * the dtype, lse = m + log l. Work units are (sequence, KV head) pairs, each folding its
 * chunks as it goes; when there are fewer pairs than threads (a short batch of long
 * sequences), (pair, chunk) units write their partials to a workspace and a second pass
 * over the pairs folds them, the same operations on the same values: a sequence's output
 * is bitwise the same whatever else is in the batch, and at every SIMD level.
 * A NaN or +inf score makes the sequence's output NaN, as softmax does.
 *
 * Arguments ("pppppppqqqqqqqfi"): q [B, H, D], key_cache, value_cache [N, BS, H_kv, D],
 * block_table int32 [B, max_blocks], seq_lens int32 [B], o [B, H, D], lse float32 [B, H]
 * (0: not wanted); B, H, H_kv, D, N, BS, max_blocks; scale; dtype (float32, float16,
 * bfloat16: q's, the caches' and o's). All contiguous; o and lse do not overlap the
 * inputs. D is a multiple of 16 in [16, 256]. A seq_lens[b] outside [0, max_blocks x BS],
 * or a block id of one of a sequence's blocks outside [0, N), is an error naming it, found
 * before anything is written; the entries of a block table past a sequence's blocks are
 * never read. (This relies on IEEE evaluation in the written order: never build with
 * -ffast-math.) */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define PDA_ARG_FORMAT "pppppppqqqqqqqfi"
#define PDA_CH 256   /* tokens per chunk */
#define PDA_HG 16    /* query heads per pass over a chunk's rows */
#define PDA_DMAX 256

typedef struct pda_args {
    const char *kernel;
    const char *q, *kc, *vc;
    const int32_t *bt, *sl;
    char *o;
    float *lse;
    int64_t B, H, Hkv, D, N, BS, MB;
    float scale;
    int dtype;
    int64_t G, es, max_chunks;
} pda_args_t;

/* A KV head's rows lie Hkv x D elements apart (a row per page at 8 fp32 heads of 128): the
 * hardware prefetchers, which stay within a page, miss every one. The chunk's score loop
 * asks for the K row PDA_PF tokens ahead and for the token's V row (read by the value
 * pass after the chunk's scores, from the cache by then). */
#define PDA_PF 4
static void pda_prefetch_row(const char *p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64)
        __builtin_prefetch(p + o, 0, 3);
}

/* Row of token t of sequence b's KV head kvh in a cache (the block id was checked). */
static const char *pda_row(const pda_args_t *a, const char *cache, int64_t b, int64_t kvh, int64_t t) {
    const int64_t blk = a->bt[b * a->MB + t / a->BS];
    return cache + (((blk * a->BS + t % a->BS) * a->Hkv + kvh) * a->D) * a->es;
}

static int64_t pda_chunks_of(int64_t len) { return (len + PDA_CH - 1) / PDA_CH; }

/* ---- the reference ------------------------------------------------------------------------ */

static tileops_status_t pda_reference(const pda_args_t *a) {
    const int64_t D = a->D;
    int64_t longest = 1;
    for (int64_t b = 0; b < a->B; b++)
        longest = a->sl[b] > longest ? a->sl[b] : longest;
    double *sc = malloc(sizeof(double) * (size_t)longest);
    if (sc == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for the scores", a->kernel);
    for (int64_t b = 0; b < a->B; b++) {
        const int64_t len = a->sl[b];
        for (int64_t h = 0; h < a->H; h++) {
            const int64_t kvh = h / a->G;
            const char *qr = a->q + (b * a->H + h) * D * a->es;
            double m = -INFINITY, l = 0.0;
            for (int64_t t = 0; t < len; t++) {
                const char *kr = pda_row(a, a->kc, b, kvh, t);
                double s = 0.0;
                for (int64_t d = 0; d < D; d++)
                    s += (double)vec16_load1(qr, d, a->dtype) * (double)vec16_load1(kr, d, a->dtype);
                sc[t] = s * (double)a->scale;
                if (sc[t] > m || sc[t] != sc[t] || m != m)
                    m = m != m ? m : sc[t];
            }
            for (int64_t t = 0; t < len; t++) {
                sc[t] = exp(sc[t] - m);
                l += sc[t];
            }
            for (int64_t d = 0; d < D; d++) {
                double acc = 0.0;
                for (int64_t t = 0; t < len; t++)
                    acc += sc[t] * (double)vec16_load1(pda_row(a, a->vc, b, kvh, t), d, a->dtype);
                vec16_store_rounded(a->o, (b * a->H + h) * D + d, a->dtype, len == 0 ? 0.0 : acc / l);
            }
            if (a->lse != NULL)
                a->lse[b * a->H + h] = len == 0 ? -INFINITY : (float)(m + log(l));
        }
    }
    free(sc);
    return TILEOPS_OK;
}

/* ---- the fast kernel ------------------------------------------------------------------------ */

/* One chunk's partial of nh query heads (qf: their q rows in fp32, D apart) over tokens
 * [t0, t1) of sequence b, KV head kvh: m[h], l[h], acc[h * D ..]. sc: nh x PDA_CH scratch. */
typedef void (*pda_chunk_fn)(const pda_args_t *a, int64_t b, int64_t kvh, int nh, int64_t t0, int64_t t1,
                             const float *qf, float *sc, float *m, float *l, float *acc);

#define VEC16_SELF "ops/attention/paged_decode_attention.c"
#include "cpu/dispatch_levels.h"

static pda_chunk_fn pda_chunk_for(int level, int dt) {
    return dt == F16    ? VEC16_AT_LEVEL(level, pda_chunk_f16)
           : dt == BF16 ? VEC16_AT_LEVEL(level, pda_chunk_bf16)
                        : VEC16_AT_LEVEL(level, pda_chunk_f32);
}

/* (m, l, acc) <- (m, l, acc) (+) (mb, lb, accb): the one merge rule (a state with m = -inf,
 * no token, weighs 0) */
static void pda_merge(float *m, float *l, float *acc, float mb, float lb, const float *accb, int64_t D) {
    const float mm = *m > mb ? *m : mb;
    const float sa = *m == -INFINITY ? 0.0f : expf(*m - mm), sb = mb == -INFINITY ? 0.0f : expf(mb - mm);
    *l = fmaf(lb, sb, *l * sa);
    for (int64_t d = 0; d < D; d++)
        acc[d] = fmaf(accb[d], sb, acc[d] * sa);
    *m = mm;
}

/* o and lse of query head h of sequence b from its folded state */
static void pda_write(const pda_args_t *a, int64_t b, int64_t h, float m, float l, const float *acc) {
    const int64_t D = a->D;
    char *orow = a->o + (b * a->H + h) * D * a->es;
    for (int64_t d = 0; d < D; d++)
        vec16_store1(orow, d, a->dtype, l == 0.0f ? 0.0f : acc[d] / l);
    if (a->lse != NULL)
        a->lse[b * a->H + h] = l == 0.0f ? -INFINITY : m + logf(l);
}

/* q rows of query heads [h, h + nh) of sequence b, in fp32 */
static void pda_load_q(const pda_args_t *a, int64_t b, int64_t h, int nh, float *qf) {
    const char *qr = a->q + (b * a->H + h) * a->D * a->es;
    for (int64_t i = 0; i < nh * a->D; i++)
        qf[i] = vec16_load1(qr, i, a->dtype);
}

typedef struct pda_job {
    const pda_args_t *a;
    pda_chunk_fn chunk;
    float *ws; /* split: [pairs][max_chunks][G][D + 2] partials (acc, m, l) */
} pda_job_t;

typedef struct pda_scratch {
    float qf[PDA_HG * PDA_DMAX], sc[PDA_HG * PDA_CH], cacc[PDA_HG * PDA_DMAX], racc[PDA_HG * PDA_DMAX];
    float cm[PDA_HG], cl[PDA_HG], rm[PDA_HG], rl[PDA_HG];
} pda_scratch_t;

/* whole pairs: every chunk, folded as it goes */
static void pda_pairs(void *ctx, int64_t p0, int64_t p1) {
    const pda_job_t *j = ctx;
    const pda_args_t *a = j->a;
    const int64_t D = a->D;
    pda_scratch_t scratch, *s = &scratch; /* 64 KiB of stack */
    for (int64_t p = p0; p < p1; p++) {
        const int64_t b = p / a->Hkv, kvh = p % a->Hkv, len = a->sl[b], nc = pda_chunks_of(len);
        for (int64_t h0 = 0; h0 < a->G; h0 += PDA_HG) {
            const int nh = (int)(a->G - h0 < PDA_HG ? a->G - h0 : PDA_HG);
            const int64_t hq = kvh * a->G + h0;
            pda_load_q(a, b, hq, nh, s->qf);
            for (int h = 0; h < nh; h++) {
                s->rm[h] = -INFINITY;
                s->rl[h] = 0.0f;
            }
            memset(s->racc, 0, sizeof(float) * (size_t)(nh * D));
            for (int64_t c = 0; c < nc; c++) {
                const int64_t t1 = (c + 1) * PDA_CH < len ? (c + 1) * PDA_CH : len;
                j->chunk(a, b, kvh, nh, c * PDA_CH, t1, s->qf, s->sc, s->cm, s->cl, s->cacc);
                for (int h = 0; h < nh; h++)
                    pda_merge(&s->rm[h], &s->rl[h], s->racc + h * D, s->cm[h], s->cl[h], s->cacc + h * D, D);
            }
            for (int h = 0; h < nh; h++)
                pda_write(a, b, hq + h, s->rm[h], s->rl[h], s->racc + h * D);
        }
    }
}

/* split, first pass: (pair, chunk) units write their chunk's partials */
static void pda_chunk_units(void *ctx, int64_t u0, int64_t u1) {
    const pda_job_t *j = ctx;
    const pda_args_t *a = j->a;
    const int64_t D = a->D;
    pda_scratch_t scratch, *s = &scratch;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t p = u / a->max_chunks, c = u % a->max_chunks;
        const int64_t b = p / a->Hkv, kvh = p % a->Hkv, len = a->sl[b];
        if (c >= pda_chunks_of(len))
            continue;
        const int64_t t1 = (c + 1) * PDA_CH < len ? (c + 1) * PDA_CH : len;
        for (int64_t h0 = 0; h0 < a->G; h0 += PDA_HG) {
            const int nh = (int)(a->G - h0 < PDA_HG ? a->G - h0 : PDA_HG);
            pda_load_q(a, b, kvh * a->G + h0, nh, s->qf);
            j->chunk(a, b, kvh, nh, c * PDA_CH, t1, s->qf, s->sc, s->cm, s->cl, s->cacc);
            for (int h = 0; h < nh; h++) {
                float *rec = j->ws + ((p * a->max_chunks + c) * a->G + h0 + h) * (D + 2);
                memcpy(rec, s->cacc + h * D, sizeof(float) * (size_t)D);
                rec[D] = s->cm[h];
                rec[D + 1] = s->cl[h];
            }
        }
    }
}

/* split, second pass: each pair's heads fold their chunks' partials in chunk order */
static void pda_fold_units(void *ctx, int64_t p0, int64_t p1) {
    const pda_job_t *j = ctx;
    const pda_args_t *a = j->a;
    const int64_t D = a->D;
    float acc[PDA_DMAX];
    for (int64_t p = p0; p < p1; p++) {
        const int64_t b = p / a->Hkv, kvh = p % a->Hkv, nc = pda_chunks_of(a->sl[b]);
        for (int64_t g = 0; g < a->G; g++) {
            float m = -INFINITY, l = 0.0f;
            memset(acc, 0, sizeof(float) * (size_t)D);
            for (int64_t c = 0; c < nc; c++) {
                const float *rec = j->ws + ((p * a->max_chunks + c) * a->G + g) * (D + 2);
                pda_merge(&m, &l, acc, rec[D], rec[D + 1], rec, D);
            }
            pda_write(a, b, kvh * a->G + g, m, l, acc);
        }
    }
}

/* ---- argument checks ------------------------------------------------------------------------ */

static tileops_status_t pda_check(pda_args_t *a) {
    const char *k = a->kernel;
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, a->dtype,
                            tileops_dtype_name(a->dtype));
    if (a->B < 0 || a->H < 0 || a->N < 0 || a->MB < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: B, H, N and max_blocks must be >= 0, got %lld, %lld, %lld, %lld",
                            k, (long long)a->B, (long long)a->H, (long long)a->N, (long long)a->MB);
    if (a->Hkv < 1 || a->BS < 1 || a->H % a->Hkv != 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: H_kv >= 1 dividing H, and block_size >= 1, got H %lld, H_kv %lld, block_size %lld", k,
                            (long long)a->H, (long long)a->Hkv, (long long)a->BS);
    if (a->D < 16 || a->D > PDA_DMAX || a->D % 16 != 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: D must be a multiple of 16 in [16, %d], got %lld", k,
                            PDA_DMAX, (long long)a->D);
    a->es = (int64_t)tileops_dtype_size(a->dtype);
    a->G = a->H / a->Hkv;
    /* every size in bytes (and the tokens a table holds) fits int64 / 4 */
    const int64_t lim = INT64_MAX / 4, row = a->D * a->es; /* row <= 1 KiB */
    int64_t q_row, kv_row, rows, cells, ctx, total;
    if (__builtin_mul_overflow(a->H, row, &q_row) || __builtin_mul_overflow(a->B, q_row, &total) || total > lim ||
        __builtin_mul_overflow(a->Hkv, row, &kv_row) || __builtin_mul_overflow(a->N, a->BS, &rows) ||
        __builtin_mul_overflow(rows, kv_row, &total) || total > lim || __builtin_mul_overflow(a->B, a->MB, &cells) ||
        cells > lim / 4 || __builtin_mul_overflow(a->MB, a->BS, &ctx) || ctx > lim)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the tensors' bytes must fit int64", k);
    a->max_chunks = pda_chunks_of(a->MB * a->BS);
    if (a->B == 0 || a->H == 0)
        return TILEOPS_OK;
    const char *null_arg = a->q == NULL ? "q" : a->o == NULL ? "o" : a->sl == NULL ? "seq_lens"
                           : (a->MB > 0 && a->bt == NULL) ? "block_table"
                           : (a->N > 0 && a->kc == NULL) ? "key_cache" : (a->N > 0 && a->vc == NULL) ? "value_cache" : NULL;
    if (null_arg != NULL)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, null_arg, "%s: %s must be non-NULL here, got NULL", k, null_arg);
    /* every length and every block a sequence holds, before anything is written */
    for (int64_t b = 0; b < a->B; b++) {
        const int64_t len = a->sl[b];
        if (len < 0 || len > a->MB * a->BS)
            return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "seq_lens",
                                "%s: seq_lens[%lld] = %lld is outside [0, %lld] (max_blocks %lld x block_size %lld)", k,
                                (long long)b, (long long)len, (long long)(a->MB * a->BS), (long long)a->MB,
                                (long long)a->BS);
        for (int64_t j = 0; j < (len + a->BS - 1) / a->BS; j++) {
            const int64_t blk = a->bt[b * a->MB + j];
            if (blk < 0 || blk >= a->N)
                return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "block_table",
                                    "%s: block_table[%lld, %lld] = %lld is outside [0, %lld) (the cache's blocks; "
                                    "sequence %lld holds %lld tokens)",
                                    k, (long long)b, (long long)j, (long long)blk, (long long)a->N, (long long)b,
                                    (long long)len);
        }
    }
    return TILEOPS_OK;
}

/* ---- the table entries ------------------------------------------------------------------------ */

static tileops_status_t pda_call(const tileops_arg_t *g, int reference) {
    pda_args_t a = {
        .kernel = reference ? "paged_decode_attention_reference" : "paged_decode_attention",
        .q = (const char *)g[0].p, .kc = (const char *)g[1].p, .vc = (const char *)g[2].p,
        .bt = (const int32_t *)g[3].p, .sl = (const int32_t *)g[4].p, .o = (char *)g[5].p, .lse = (float *)g[6].p,
        .B = g[7].q, .H = g[8].q, .Hkv = g[9].q, .D = g[10].q, .N = g[11].q, .BS = g[12].q, .MB = g[13].q,
        .scale = g[14].f, .dtype = g[15].i,
    };
    tileops_status_t st = pda_check(&a);
    if (st != TILEOPS_OK || a.B == 0 || a.H == 0)
        return st;
    if (reference)
        return pda_reference(&a);
    pda_job_t job = {.a = &a, .chunk = pda_chunk_for(tileops_cpu_simd_active(), a.dtype), .ws = NULL};
    const int64_t pairs = a.B * a.Hkv;
    int64_t units = 0, ws_floats = 0;
    const int split = pairs < tileops_cpu_num_threads() && a.max_chunks >= 2 &&
                      !__builtin_mul_overflow(pairs, a.max_chunks, &units) &&
                      !__builtin_mul_overflow(units, a.G * (a.D + 2), &ws_floats) &&
                      ws_floats <= ((int64_t)1 << 28); /* a workspace of 1 GiB at most */
    if (!split) {
        tileops_cpu_parallel_for(pairs, 1, pda_pairs, &job);
        return TILEOPS_OK;
    }
    /* fewer pairs than threads: (pair, chunk) units, then the fold (the same bits) */
    job.ws = malloc(sizeof(float) * (size_t)ws_floats);
    if (job.ws == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for the chunks' partials", a.kernel);
    tileops_cpu_parallel_for(units, 1, pda_chunk_units, &job);
    tileops_cpu_parallel_for(pairs, 1, pda_fold_units, &job);
    free(job.ws);
    return TILEOPS_OK;
}

static tileops_status_t pda_fast(const tileops_arg_t *g) { return pda_call(g, 0); }
static tileops_status_t pda_ref(const tileops_arg_t *g) { return pda_call(g, 1); }

static const tileops_cpu_kernel_t pda_kernel = {"paged_decode_attention", PDA_ARG_FORMAT, pda_fast};
static const tileops_cpu_kernel_t pda_reference_kernel = {"paged_decode_attention_reference", PDA_ARG_FORMAT, pda_ref};
TILEOPS_CPU_KERNEL(pda_kernel)
TILEOPS_CPU_KERNEL(pda_reference_kernel)

#else /* ---- VEC16_ISA: one chunk's partial in one instruction set (this file includes itself) ---- */

#include "cpu/vec16.h"

static AI TGT void ISA(chunk_impl)(const pda_args_t *a, int64_t b, int64_t kvh, int nh, int64_t t0, int64_t t1,
                                   const float *qf, float *sc, float *m, float *l, float *acc, int dt) {
    const int64_t D = a->D, n = t1 - t0;
    const VF zero = ISA(vzero)();
    const VF scale = ISA(vset1)(a->scale);
    const char *kp[PDA_CH], *vp[PDA_CH];
    float row[PDA_DMAX];
    /* the chunk's rows: block j, row r of it, walked without a division per token */
    {
        int64_t j = t0 / a->BS, r = t0 % a->BS;
        const int64_t base = kvh * D * a->es, step = a->Hkv * D * a->es;
        int64_t off = (((int64_t)a->bt[b * a->MB + j] * a->BS + r) * a->Hkv) * D * a->es + base;
        for (int64_t t = 0; t < n; t++) {
            kp[t] = a->kc + off;
            vp[t] = a->vc + off;
            if (++r == a->BS && t + 1 < n) {
                r = 0;
                off = (int64_t)a->bt[b * a->MB + ++j] * a->BS * step + base;
            } else {
                off += step;
            }
        }
    }
    /* scores: the K row in fp32 (converted once), each 16 channels dotted with up to 4
     * heads' q at a time (a running sum per head, in channel order), folded */
    const int64_t row_bytes = D * a->es;
    for (int64_t t = 0; t < n; t++) {
        if (t + PDA_PF < n)
            pda_prefetch_row(kp[t + PDA_PF], row_bytes);
        pda_prefetch_row(vp[t], row_bytes);
        const float *k32 = (const float *)kp[t];
        if (dt != F32) {
            for (int64_t i = 0; i < D; i += 16)
                (void)ISA(vstore_n)(row, i, F32, ISA(vload)(kp[t], i, dt), 16);
            k32 = row;
        }
        for (int h0 = 0; h0 < nh; h0 += 4) {
            const int hn = nh - h0 < 4 ? nh - h0 : 4;
            const float *q0 = qf + h0 * D;
            VF s0 = zero, s1 = zero, s2 = zero, s3 = zero;
            for (int64_t i = 0; i < D; i += 16) {
                const VF kv = ISA(vload)(k32, i, F32);
                s0 = ISA(vfma)(kv, ISA(vload)(q0, i, F32), s0);
                if (hn > 1)
                    s1 = ISA(vfma)(kv, ISA(vload)(q0 + D, i, F32), s1);
                if (hn > 2)
                    s2 = ISA(vfma)(kv, ISA(vload)(q0 + 2 * D, i, F32), s2);
                if (hn > 3)
                    s3 = ISA(vfma)(kv, ISA(vload)(q0 + 3 * D, i, F32), s3);
            }
            float *st = sc + h0 * PDA_CH + t;
            st[0] = ISA(vfold)(s0, zero, zero, zero);
            if (hn > 1)
                st[PDA_CH] = ISA(vfold)(s1, zero, zero, zero);
            if (hn > 2)
                st[2 * PDA_CH] = ISA(vfold)(s2, zero, zero, zero);
            if (hn > 3)
                st[3 * PDA_CH] = ISA(vfold)(s3, zero, zero, zero);
        }
    }
    /* per head: m, p = e^(s scale - m) in place, l = sum p (a NaN or +inf score: l = NaN) */
    for (int h = 0; h < nh; h++) {
        float *sh = sc + h * PDA_CH;
        int poison = 0;
        for (int64_t t = 0; t < n; t += 16) {
            const int k = n - t < 16 ? (int)(n - t) : 16;
            (void)ISA(vstore_n)(sh, t, F32, ISA(vmul)(ISA(vload_n)(sh, t, F32, k), scale), k);
        }
        float mx = -INFINITY;
        for (int64_t t = 0; t < n; t++) {
            const float v = sh[t];
            if (v != v || v == INFINITY)
                poison = 1;
            else if (v > mx)
                mx = v;
        }
        const VF mv = ISA(vset1)(mx);
        VF sum = zero;
        for (int64_t t = 0; t < n; t += 16) {
            const int k = n - t < 16 ? (int)(n - t) : 16;
            const VF p = ISA(vkeep_n)(ISA(vexp)(ISA(vsub)(ISA(vload_n)(sh, t, F32, k), mv)), k);
            (void)ISA(vstore_n)(sh, t, F32, p, k);
            sum = ISA(vadd)(sum, p);
        }
        if (n > 0 && mx == -INFINITY)
            poison = 1; /* every score -inf: softmax is NaN */
        m[h] = mx;
        l[h] = poison ? NAN : ISA(vfold)(sum, zero, zero, zero);
    }
    /* acc[h] = sum_t p[h][t] v_t in token order: 16 channels of up to 4 heads held in
     * registers over the chunk's tokens */
    for (int h0 = 0; h0 < nh; h0 += 4) {
        const int hn = nh - h0 < 4 ? nh - h0 : 4;
        const float *p0 = sc + h0 * PDA_CH;
        for (int64_t i = 0; i < D; i += 16) {
            VF a0 = zero, a1 = zero, a2 = zero, a3 = zero;
            for (int64_t t = 0; t < n; t++) {
                const VF v = ISA(vload)(vp[t], i, dt);
                a0 = ISA(vfma)(ISA(vset1)(p0[t]), v, a0);
                if (hn > 1)
                    a1 = ISA(vfma)(ISA(vset1)(p0[PDA_CH + t]), v, a1);
                if (hn > 2)
                    a2 = ISA(vfma)(ISA(vset1)(p0[2 * PDA_CH + t]), v, a2);
                if (hn > 3)
                    a3 = ISA(vfma)(ISA(vset1)(p0[3 * PDA_CH + t]), v, a3);
            }
            float *ah = acc + h0 * D + i;
            (void)ISA(vstore_n)(ah, 0, F32, a0, 16);
            if (hn > 1)
                (void)ISA(vstore_n)(ah, D, F32, a1, 16);
            if (hn > 2)
                (void)ISA(vstore_n)(ah, 2 * D, F32, a2, 16);
            if (hn > 3)
                (void)ISA(vstore_n)(ah, 3 * D, F32, a3, 16);
        }
    }
}

#define PDA_CHUNK(DT, DTN)                                                                                   \
    static TGT void ISA(pda_chunk_##DTN)(const pda_args_t *a, int64_t b, int64_t kvh, int nh, int64_t t0,        \
                                     int64_t t1, const float *qf, float *sc, float *m, float *l, float *acc) { \
        ISA(chunk_impl)(a, b, kvh, nh, t0, t1, qf, sc, m, l, acc, DT);                                       \
    }
PDA_CHUNK(F32, f32)
PDA_CHUNK(F16, f16)
PDA_CHUNK(BF16, bf16)
#undef PDA_CHUNK

#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME
#endif

/* norm_rows.c: the CPU driver of the norm family's row ops (norm_rows.h) - the plain
 * double-precision reference first, then the fast kernel (AVX-512, AVX2 or scalar, chosen
 * at run time), one tested against the other in tests/c/test_cpu_norm_family.c.
 *
 * One arithmetic for every instruction set. A row is worked in steps of 64 elements; lane
 * i % 64 of a step feeds partial sum i % 64, inside blocks of NORM_BLOCK elements whose 64
 * partials are added into 64 running totals, which are then folded pairwise (p[j] += p[j + s]
 * for s = 32, 16, ..., 1). Squares go in by explicit fused multiply-add (fmaf in the scalar
 * code), and every multiply that feeds an add is an explicit FMA too, so no compiler
 * contraction setting can change a result. The per-instruction-set code below is one text
 * compiled three times over a 16-lane vector (an __m512, two __m256, or 16 floats), so the
 * three levels add the same numbers in the same order and give the same bits; and a row's
 * result depends on that row alone - not on the thread count, nor on its batch.
 *
 * Per row: one read pass widens x (plus residual, rounded to the dtype and written to
 * residual_out) into a per-thread fp32 scratch while it accumulates the sum (LayerNorm) or
 * the sum of squares (RMSNorm); LayerNorm then takes sum((h - mean)^2) over the scratch; one
 * write pass forms y from the scratch. fp32 rows need no scratch: h already sits in x or in
 * residual_out. Everything of a row is read before its y is written, so y may be x.
 *
 * (This relies on IEEE evaluation in the written order: never build with -ffast-math.) */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/norm/norm_rows.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "cpu/args.h"
#include "cpu/memory.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

/* Elements per reduction block: each partial's chain of additions stays 64 long, so the
 * rounding error of a sum grows with n / NORM_BLOCK rather than n / 64. A multiple of 64. */
#define NORM_BLOCK 4096

/* Rows up to this long keep their scratch on the stack (16 KiB); longer ones allocate. */
#define NORM_STACK_SCRATCH 4096

/* A thread gets at least this many elements: below it, waking a worker costs more than the
 * rows it would take. */
#define NORM_MIN_ELEMS_PER_THREAD 32768

/* An output extent at least this big that is not yet in memory gets huge pages. */
#define NORM_HUGE_MIN_BYTES ((int64_t)4 << 20)

/* Below this many bytes per tensor, fp16 may take the AVX2 code (see tileops_norm_rows). */
#define NORM_F16_AVX2_MAX_BYTES ((int64_t)8 << 20)

/* How y is scaled: no weight, weight, weight_offset + weight, weight after rounding the
 * normalised value to the dtype (cast_before_weight). */
enum { W_NONE = 0, W_PLAIN = 1, W_OFFSET = 2, W_CAST = 3 };

/* ---- reference ------------------------------------------------------------------------ */

static tileops_status_t check_args(const tileops_norm_rows_args_t *a);

tileops_status_t tileops_norm_rows_reference(const tileops_norm_rows_args_t *a) {
    tileops_status_t st = check_args(a);
    if (st != TILEOPS_OK)
        return st;
    const int dt = a->dtype;
    const int64_t n = a->n, es = (int64_t)tileops_dtype_size(dt);
    for (int64_t r = 0; r < a->rows; r++) {
        const char *x = (const char *)a->x + r * n * es;
        char *y = (char *)a->y + r * n * es;
        /* h is part of the definition (fp32 add, one rounding), not an approximation, so
         * the reference forms it exactly as the fast kernel does; reading it back from
         * residual_out keeps the in-place form (residual_out == residual) correct. */
        const char *h = x;
        if (a->residual != NULL) {
            const char *res = (const char *)a->residual + r * n * es;
            char *out = (char *)a->residual_out + r * n * es;
            for (int64_t i = 0; i < n; i++)
                vec16_store1(out, i, dt, vec16_load1(x, i, dt) + vec16_load1(res, i, dt));
            h = out;
        }
        double mean = 0.0;
        if (a->mean_subtract) {
            for (int64_t i = 0; i < n; i++)
                mean += vec16_load1(h, i, dt);
            mean /= (double)n;
        }
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double d = vec16_load1(h, i, dt) - mean;
            ss += d * d;
        }
        double rstd = 1.0 / sqrt(ss / (double)n + (double)a->eps);
        for (int64_t i = 0; i < n; i++) {
            double v = ((double)vec16_load1(h, i, dt) - mean) * rstd;
            if (a->cast_before_weight && a->weight != NULL) {
                /* the normalised value rounded to the dtype (once, from double), then weighted */
                vec16_store_rounded(y, i, dt, v);
                v = vec16_load1(y, i, dt);
            }
            if (a->weight != NULL) {
                float w = vec16_load1(a->weight, i, dt);
                v *= a->weight_offset != 0.0f ? (double)(a->weight_offset + w) : (double)w;
            }
            if (a->bias != NULL)
                v += vec16_load1(a->bias, i, dt);
            vec16_store_rounded(y, i, dt, v);
        }
    }
    return TILEOPS_OK;
}

/* ---- the fast kernel: per-row passes, one set per instruction set ---------------------- */

/* sum (of h, or of h^2) over a row; writes residual_out and the scratch on the way */
typedef float (*read_fn)(const void *x, const void *res, void *res_out, float *scr, int64_t n);
/* sum((v - mean)^2) over an fp32 row */
typedef float (*var_fn)(const float *v, int64_t n, float mean);
/* y = (v - mean) * s * w + b from an fp32 row */
typedef void (*write_fn)(const float *v, const void *w, const void *b, void *y, int64_t n,
                         float mean, float s, float w_offset);

typedef struct norm_passes {
    read_fn read[3][2][2]; /* [dtype][has residual][square] */
    var_fn var;
    write_fn write[3][4][2]; /* [dtype][W_*][has bias] */
} norm_passes_t;

#define VEC16_SELF "ops/norm/norm_rows.c"
#include "cpu/dispatch_levels.h"

static const norm_passes_t *passes_for(int level) {
    return VEC16_AT_LEVEL(level, passes);
}

/* ---- the fast kernel: rows ------------------------------------------------------------- */

typedef struct norm_job {
    const tileops_norm_rows_args_t *a;
    read_fn read;
    var_fn var; /* NULL for RMSNorm */
    write_fn write;
    int64_t row_bytes;
    atomic_int out_of_memory;
} norm_job_t;

/* 1 / sqrt(sum / n + eps), formed in double from the fp32 sum: it costs nothing per row and
 * keeps the division and the square root from adding fp32 error of their own. Hugging
 * Face's arithmetic (cast_before_weight) takes torch eager's fp32 steps instead: the mean
 * as sum / n, plus eps, then 1 / sqrt, each rounded to fp32. */
static inline float inv_root(float sum, int64_t n, float eps, int fp32_steps) {
    if (fp32_steps) {
        const float ms = sum / (float)n;
        return 1.0f / sqrtf(ms + eps);
    }
    return (float)(1.0 / sqrt((double)sum / (double)n + (double)eps));
}

static void norm_range(void *ctx, int64_t r0, int64_t r1) {
    norm_job_t *j = ctx;
    const tileops_norm_rows_args_t *a = j->a;
    const int64_t n = a->n;
    _Alignas(64) float stack_scr[NORM_STACK_SCRATCH];
    float *scr = NULL, *heap = NULL;
    if (a->dtype != F32) {
        if (n <= NORM_STACK_SCRATCH) {
            scr = stack_scr;
        } else {
            /* check_args bounded n * sizeof(float) by INT64_MAX; size_t may be narrower. */
            if ((uint64_t)n <= (SIZE_MAX - 63) / sizeof(float))
                heap = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) & ~(size_t)63);
            if (heap == NULL) {
                atomic_store(&j->out_of_memory, 1);
                return;
            }
            scr = heap;
        }
    }
    for (int64_t r = r0; r < r1; r++) {
        const int64_t off = r * j->row_bytes;
        const char *x = (const char *)a->x + off;
        const char *res = a->residual != NULL ? (const char *)a->residual + off : NULL;
        char *res_out = a->residual_out != NULL ? (char *)a->residual_out + off : NULL;
        /* Where h lives in fp32 once the read pass is done. */
        const float *h = scr != NULL ? scr : res_out != NULL ? (const float *)res_out : (const float *)x;
        float acc = j->read(x, res, res_out, scr, n);
        float mean = 0.0f, s;
        if (j->var != NULL) {
            mean = (float)((double)acc / (double)n);
            s = inv_root(j->var(h, n, mean), n, a->eps, 0);
        } else {
            s = inv_root(acc, n, a->eps, a->cast_before_weight);
        }
        j->write(h, a->weight, a->bias, (char *)a->y + off, n, mean, s, a->weight_offset);
    }
    free(heap);
}

/* A large new output gets huge pages before its first write (cpu/memory.h). */
static void advise_fresh_output(void *p, int64_t bytes) {
    if (bytes >= NORM_HUGE_MIN_BYTES)
        (void)tileops_cpu_fresh_output(p, bytes, NORM_HUGE_MIN_BYTES);
}

tileops_status_t tileops_norm_rows(const tileops_norm_rows_args_t *a) {
    tileops_status_t st = check_args(a);
    if (st != TILEOPS_OK || a->rows == 0)
        return st;
    const int dt = a->dtype;
    const int64_t bytes = a->rows * a->n * (int64_t)tileops_dtype_size(dt);
    int level = tileops_cpu_simd_active();
    /* fp16 rows in cache run faster through the AVX2 code on the CPUs simd.h marks (Zen 4);
     * rows from memory do not. Both give the same bits, so this size-dependent choice keeps
     * batch invariance. A forced level (tests) is taken literally. */
    if (level == TILEOPS_SIMD_AVX512 && dt == F16 && bytes < NORM_F16_AVX2_MAX_BYTES &&
        !tileops_cpu_simd_overridden() && tileops_cpu_simd_f16_prefers_avx2())
        level = TILEOPS_SIMD_AVX2;
    const norm_passes_t *p = passes_for(level);
    const int wmode = a->weight == NULL          ? W_NONE
                      : a->cast_before_weight    ? W_CAST
                      : a->weight_offset != 0.0f ? W_OFFSET
                                                 : W_PLAIN;
    norm_job_t job = {
        .a = a,
        .read = p->read[dt][a->residual != NULL][!a->mean_subtract],
        .var = a->mean_subtract ? p->var : NULL,
        .write = p->write[dt][wmode][a->bias != NULL],
        .row_bytes = a->n * (int64_t)tileops_dtype_size(dt),
    };
    atomic_init(&job.out_of_memory, 0);
    advise_fresh_output(a->y, bytes);
    if (a->residual_out != NULL)
        advise_fresh_output(a->residual_out, bytes);
    const int64_t min_rows = (NORM_MIN_ELEMS_PER_THREAD + a->n - 1) / a->n;
    tileops_cpu_parallel_for(a->rows, min_rows, norm_range, &job);
    if (atomic_load(&job.out_of_memory))
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY,
                            "%s: could not allocate the fp32 scratch row of n = %lld elements "
                            "(%lld bytes); the outputs are incomplete",
                            a->kernel, (long long)a->n, (long long)a->n * 4);
    return TILEOPS_OK;
}

/* ---- argument checks and the table entries --------------------------------------------- */

static tileops_status_t check_args(const tileops_norm_rows_args_t *a) {
    if (a == NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "norm_rows: args must be non-NULL, got NULL");
    const char *k = a->kernel != NULL ? a->kernel : "norm_rows";
    tileops_status_t st = tileops_check_float_rows(k, a->dtype, a->rows);
    if (st != TILEOPS_OK)
        return st;
    if (a->n < 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: n must be >= 1, got %lld", k,
                            (long long)a->n);
    if ((a->residual == NULL) != (a->residual_out == NULL))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: residual and residual_out must be both NULL or both non-NULL, got "
                            "residual %s and residual_out %s",
                            k, a->residual == NULL ? "NULL" : "non-NULL",
                            a->residual_out == NULL ? "NULL" : "non-NULL");
    if (a->rows == 0) /* nothing is read or written */
        return TILEOPS_OK;
    if ((st = tileops_check_x_y(k, a->rows, a->x, a->y)) != TILEOPS_OK)
        return st;
    /* Byte offsets up to the end of the last row, and the fp32 scratch, must fit int64. */
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype);
    if (a->n > INT64_MAX / 4 || a->rows > INT64_MAX / es / a->n)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: rows * n * %lld bytes must fit in int64, got rows = %lld, n = %lld",
                            k, (long long)es, (long long)a->rows, (long long)a->n);
    /* The extents that follow from the sizes: what C can check of a raw address
     * (cpu/memory.h); that the memory is there is the Python layer's to check. */
    const int64_t rows_bytes = a->rows * a->n * es, row_bytes = a->n * es;
    const struct {
        const char *name;
        const void *p;
        int64_t bytes;
    } bufs[] = {{"x", a->x, rows_bytes},          {"residual", a->residual, rows_bytes},
                {"weight", a->weight, row_bytes}, {"bias", a->bias, row_bytes},
                {"y", a->y, rows_bytes},          {"residual_out", a->residual_out, rows_bytes}};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        const char *problem =
            bufs[i].p == NULL ? NULL : tileops_cpu_extent_problem(bufs[i].p, bufs[i].bytes, es);
        if (problem != NULL)
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                                "%s: %s (address %p, %lld bytes) %s", k, bufs[i].name, bufs[i].p,
                                (long long)bufs[i].bytes, problem);
    }
    return TILEOPS_OK;
}

tileops_status_t tileops_norm_rows_call(const tileops_norm_rows_op_t *op, const tileops_arg_t *args,
                                        int reference) {
    const char *k = reference ? op->reference_name : op->name;
    tileops_norm_rows_args_t a = {
        .kernel = k,
        .x = (const void *)args[0].p,
        .residual = (const void *)args[1].p,
        .weight = (const void *)args[2].p,
        .bias = (const void *)args[3].p,
        .y = (void *)args[4].p,
        .residual_out = (void *)args[5].p,
        .rows = args[6].q,
        .n = args[7].q,
        .eps = args[8].f,
        .dtype = args[9].i,
        .mean_subtract = op->mean_subtract,
        .weight_offset = op->weight_offset,
        .cast_before_weight = op->cast_before_weight,
    };
    /* What the op does not take must be 0: a pointer there means the caller packed the
     * arguments for another op. */
    const char *unused = !op->residual && a.residual != NULL       ? "residual"
                         : !op->residual && a.residual_out != NULL ? "residual_out"
                         : !op->bias && a.bias != NULL             ? "bias"
                                                                   : NULL;
    if (unused != NULL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: %s must be 0 (the op takes none), got a pointer", k, unused);
    if (a.rows > 0) {
        const char *missing = op->residual && a.residual == NULL       ? "residual"
                              : op->residual && a.residual_out == NULL ? "residual_out"
                              : op->weight_required && a.weight == NULL ? "weight"
                                                                        : NULL;
        if (missing != NULL)
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                                "%s: %s must be non-NULL when rows > 0 (rows = %lld), got NULL", k,
                                missing, (long long)a.rows);
    }
    return reference ? tileops_norm_rows_reference(&a) : tileops_norm_rows(&a);
}

#else /* ---- VEC16_ISA: the passes of one instruction set (this file includes itself) ---- */

#include "cpu/vec16.h"

#if VEC16_ISA == VEC16_SCALAR && VEC16_X86
/* On x86 the scalar code is a cold fallback (a CPU without AVX2) and fmaf a library call,
 * so the passes stay out of line: one copy each, dtype and flags tested at run time, instead
 * of ~30 specialised ones (190 -> 26 KB of code). Elsewhere (aarch64) it is the path and
 * fmaf one instruction: specialised and inlined like the vector code. */
#define STEP OUTLINE
#endif

/* ---- the passes, written once over VF -------------------------------------------------- */

#ifndef STEP
#define STEP AI
#endif

#define NORM_LANES(t) ((t) < 16 ? (t) : 16)

/* Lanes i .. i+m-1 of h (m = 16 in the body of a row, 1..15 at its end), into acc: h is x,
 * or x + residual rounded to dt as stored into residual_out; fp32 rows keep no scratch. */
static STEP TGT VF ISA(read16)(const void *x, const void *res, void *res_out, float *scr, int64_t i,
                             int m, int dt, int has_res, int square, VF acc) {
    VF h = m == 16 ? ISA(vload)(x, i, dt) : ISA(vload_n)(x, i, dt, m);
    if (has_res) {
        VF r = m == 16 ? ISA(vload)(res, i, dt) : ISA(vload_n)(res, i, dt, m);
        h = ISA(vstore_n)(res_out, i, dt, ISA(vadd)(h, r), m);
    }
    if (dt != F32)
        (void)ISA(vstore_n)(scr, i, F32, h, m);
    return square ? ISA(vfma)(h, h, acc) : ISA(vadd)(acc, h);
}

static STEP TGT float ISA(read_impl)(const void *x, const void *res, void *res_out, float *scr,
                                   int64_t n, int dt, int has_res, int square) {
    VF o0 = ISA(vzero)(), o1 = o0, o2 = o0, o3 = o0;
    for (int64_t b = 0; b < n; b += NORM_BLOCK) {
        const int64_t e = n - b < NORM_BLOCK ? n : b + NORM_BLOCK;
        VF a0 = ISA(vzero)(), a1 = a0, a2 = a0, a3 = a0;
        int64_t i = b;
        for (; i + 64 <= e; i += 64) {
            a0 = ISA(read16)(x, res, res_out, scr, i, 16, dt, has_res, square, a0);
            a1 = ISA(read16)(x, res, res_out, scr, i + 16, 16, dt, has_res, square, a1);
            a2 = ISA(read16)(x, res, res_out, scr, i + 32, 16, dt, has_res, square, a2);
            a3 = ISA(read16)(x, res, res_out, scr, i + 48, 16, dt, has_res, square, a3);
        }
        /* The last < 64: the same lanes as a full step, absent ones adding nothing. */
        const int t = (int)(e - i);
        if (t > 0)
            a0 = ISA(read16)(x, res, res_out, scr, i, NORM_LANES(t), dt, has_res, square, a0);
        if (t > 16)
            a1 = ISA(read16)(x, res, res_out, scr, i + 16, NORM_LANES(t - 16), dt, has_res, square, a1);
        if (t > 32)
            a2 = ISA(read16)(x, res, res_out, scr, i + 32, NORM_LANES(t - 32), dt, has_res, square, a2);
        if (t > 48)
            a3 = ISA(read16)(x, res, res_out, scr, i + 48, t - 48, dt, has_res, square, a3);
        o0 = ISA(vadd)(o0, a0);
        o1 = ISA(vadd)(o1, a1);
        o2 = ISA(vadd)(o2, a2);
        o3 = ISA(vadd)(o3, a3);
    }
    return ISA(vfold)(o0, o1, o2, o3);
}

static STEP TGT VF ISA(var16)(const float *v, int64_t i, int m, VF mean, VF acc) {
    VF d = m == 16 ? ISA(vsub)(ISA(vload)(v, i, F32), mean)
                   : ISA(vkeep_n)(ISA(vsub)(ISA(vload_n)(v, i, F32, m), mean), m);
    return ISA(vfma)(d, d, acc);
}

static TGT float ISA(var_pass)(const float *v, int64_t n, float mean) {
    const VF vm = ISA(vset1)(mean);
    VF o0 = ISA(vzero)(), o1 = o0, o2 = o0, o3 = o0;
    for (int64_t b = 0; b < n; b += NORM_BLOCK) {
        const int64_t e = n - b < NORM_BLOCK ? n : b + NORM_BLOCK;
        VF a0 = ISA(vzero)(), a1 = a0, a2 = a0, a3 = a0;
        int64_t i = b;
        for (; i + 64 <= e; i += 64) {
            a0 = ISA(var16)(v, i, 16, vm, a0);
            a1 = ISA(var16)(v, i + 16, 16, vm, a1);
            a2 = ISA(var16)(v, i + 32, 16, vm, a2);
            a3 = ISA(var16)(v, i + 48, 16, vm, a3);
        }
        const int t = (int)(e - i);
        if (t > 0)
            a0 = ISA(var16)(v, i, NORM_LANES(t), vm, a0);
        if (t > 16)
            a1 = ISA(var16)(v, i + 16, NORM_LANES(t - 16), vm, a1);
        if (t > 32)
            a2 = ISA(var16)(v, i + 32, NORM_LANES(t - 32), vm, a2);
        if (t > 48)
            a3 = ISA(var16)(v, i + 48, t - 48, vm, a3);
        o0 = ISA(vadd)(o0, a0);
        o1 = ISA(vadd)(o1, a1);
        o2 = ISA(vadd)(o2, a2);
        o3 = ISA(vadd)(o3, a3);
    }
    return ISA(vfold)(o0, o1, o2, o3);
}

/* y for lanes i .. i+m-1: t = (v - mean) * s, then t * w + b by one FMA. Without a weight,
 * (v - mean) * s + b is one FMA as well. */
static STEP TGT void ISA(write16)(const float *v, const void *w, const void *b, void *y, int64_t i,
                                int m, VF mean, VF s, VF w_offset, int dt, int wmode, int has_b) {
    VF d = ISA(vsub)(m == 16 ? ISA(vload)(v, i, F32) : ISA(vload_n)(v, i, F32, m), mean);
    VF out;
    if (wmode == W_NONE) {
        out = has_b ? ISA(vfma)(d, s, m == 16 ? ISA(vload)(b, i, dt) : ISA(vload_n)(b, i, dt, m))
                    : ISA(vmul)(d, s);
    } else {
        VF wv = m == 16 ? ISA(vload)(w, i, dt) : ISA(vload_n)(w, i, dt, m);
        if (wmode == W_OFFSET)
            wv = ISA(vadd)(w_offset, wv);
        VF t = ISA(vmul)(d, s);
        if (wmode == W_CAST) { /* t rounded to dt (through a scratch: vstore_n returns it) */
            float tmp[16];
            t = dt == F32 ? t : ISA(vstore_n)(tmp, 0, dt, t, 16);
        }
        out = has_b ? ISA(vfma)(t, wv, m == 16 ? ISA(vload)(b, i, dt) : ISA(vload_n)(b, i, dt, m))
                    : ISA(vmul)(t, wv);
    }
    (void)ISA(vstore_n)(y, i, dt, out, m);
}

static STEP TGT void ISA(write_impl)(const float *v, const void *w, const void *b, void *y, int64_t n,
                                   float mean, float s, float w_offset, int dt, int wmode, int has_b) {
    const VF vm = ISA(vset1)(mean), vs = ISA(vset1)(s), vo = ISA(vset1)(w_offset);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        ISA(write16)(v, w, b, y, i, 16, vm, vs, vo, dt, wmode, has_b);
        ISA(write16)(v, w, b, y, i + 16, 16, vm, vs, vo, dt, wmode, has_b);
        ISA(write16)(v, w, b, y, i + 32, 16, vm, vs, vo, dt, wmode, has_b);
        ISA(write16)(v, w, b, y, i + 48, 16, vm, vs, vo, dt, wmode, has_b);
    }
    for (; i < n; i += 16)
        ISA(write16)(v, w, b, y, i, n - i < 16 ? (int)(n - i) : 16, vm, vs, vo, dt, wmode, has_b);
}

/* One copy of each pass per (dtype, flags), so the loops carry no tests. The copies are
 * named by the tokens f32 / f16 / bf16 (no macros, so they paste the same at every depth). */
#define NORM_DT_f32 F32
#define NORM_DT_f16 F16
#define NORM_DT_bf16 BF16
#define NORM_READ(DT, R, SQ)                                                                   \
    static TGT float ISA(read_##DT##_##R##_##SQ)(const void *x, const void *res, void *res_out,  \
                                                 float *scr, int64_t n) {                      \
        return ISA(read_impl)(x, res, res_out, scr, n, NORM_DT_##DT, R, SQ);                   \
    }
#define NORM_READS(DT) NORM_READ(DT, 0, 0) NORM_READ(DT, 0, 1) NORM_READ(DT, 1, 0) NORM_READ(DT, 1, 1)
NORM_READS(f32)
NORM_READS(f16)
NORM_READS(bf16)

#define NORM_WRITE(DT, WM, B)                                                                  \
    static TGT void ISA(write_##DT##_##WM##_##B)(const float *v, const void *w, const void *b,   \
                                                 void *y, int64_t n, float mean, float s,      \
                                                 float w_offset) {                             \
        ISA(write_impl)(v, w, b, y, n, mean, s, w_offset, NORM_DT_##DT, WM, B);                \
    }
#define NORM_WRITES(DT)                                                                        \
    NORM_WRITE(DT, W_NONE, 0) NORM_WRITE(DT, W_NONE, 1) NORM_WRITE(DT, W_PLAIN, 0)             \
    NORM_WRITE(DT, W_PLAIN, 1) NORM_WRITE(DT, W_OFFSET, 0) NORM_WRITE(DT, W_OFFSET, 1)             \
    NORM_WRITE(DT, W_CAST, 0) NORM_WRITE(DT, W_CAST, 1)
NORM_WRITES(f32)
NORM_WRITES(f16)
NORM_WRITES(bf16)

#define NORM_READ_ROW(DT) {{ISA(read_##DT##_0_0), ISA(read_##DT##_0_1)}, \
                           {ISA(read_##DT##_1_0), ISA(read_##DT##_1_1)}}
#define NORM_WRITE_ROW(DT) {{ISA(write_##DT##_W_NONE_0), ISA(write_##DT##_W_NONE_1)},    \
                            {ISA(write_##DT##_W_PLAIN_0), ISA(write_##DT##_W_PLAIN_1)},  \
                            {ISA(write_##DT##_W_OFFSET_0), ISA(write_##DT##_W_OFFSET_1)},  \
                            {ISA(write_##DT##_W_CAST_0), ISA(write_##DT##_W_CAST_1)}}

static const norm_passes_t ISA(passes) = {
    .read = {NORM_READ_ROW(f32), NORM_READ_ROW(f16), NORM_READ_ROW(bf16)},
    .var = ISA(var_pass),
    .write = {NORM_WRITE_ROW(f32), NORM_WRITE_ROW(f16), NORM_WRITE_ROW(bf16)},
};

#undef NORM_READ_ROW
#undef NORM_WRITE_ROW
#undef NORM_WRITES
#undef NORM_WRITE
#undef NORM_READS
#undef NORM_READ
#undef NORM_DT_bf16
#undef NORM_DT_f16
#undef NORM_DT_f32
#undef NORM_LANES
#undef STEP
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

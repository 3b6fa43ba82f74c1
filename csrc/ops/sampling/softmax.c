/* softmax.c: the CPU kernels "softmax" (AVX-512, AVX2 or scalar, chosen at run time) and
 * "softmax_reference" (double precision, one thread) of SoftmaxFwdOp:
 *   probs[r, :] = softmax(logits[r, :] / temperature[r]) over the row, in float32, rounded
 *   once to the output's dtype.
 *
 * Arguments ("pppqqii"): logits [B, V], temperature [B] float32 or 0 (none), probs [B, V],
 * B, V, the logits' dtype, the output's dtype (float32, float16, bfloat16). Contiguous;
 * probs does not overlap the inputs.
 *
 * As torch computes it: z = logits / t (an IEEE float32 division, the value torch's
 * `logits.float() / t` holds), M = max z, probs = exp(z - M) / sum exp(z - M). A row with a
 * NaN or a +inf, or of -inf only, is NaN throughout, as torch.softmax gives it (the
 * arithmetic does it: exp of a NaN difference is NaN, and so is the sum then). Any
 * temperature is taken (0 gives NaN rows, as it does in torch).
 *
 * Work: units of one row's chunk of SOFTMAX_CHUNK elements, spread over the pool (one long
 * row, a decode step, uses every thread). Pass A per unit: the chunk's max m, its exps
 * e = exp(z - m) and s = sum e (the chunk is then in cache); e is kept in the output when
 * it is float32, in a thread's scratch for a row done whole (below), else not. Pass B per
 * unit: the row's M = max m and S = sum over its chunks, in chunk order, of s exp(m - M);
 * then probs = e c with c = exp(m - M) / S, e kept or taken again (the same bits either
 * way: one exp an element where e is kept, two where not; a few ulp from the exact value,
 * as torch's e * (1 / S) is). With
 * at least SOFTMAX_ROWS_WHOLE rows a thread, each thread takes whole rows, a row's pass B
 * right after its pass A (rows_ab: the row still in cache). The chunking depends on V
 * only, so a row's bits do not depend on the batch, the schedule or the threads.
 * (This relies on IEEE evaluation in the written order: never build with -ffast-math.) */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/sampling/sampling_cpu.h"
#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/memory.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define SOFTMAX_ARG_FORMAT "pppqqii"
#define SOFTMAX_CHUNK 8192             /* elements of a unit (a multiple of 16) */
#define SOFTMAX_MIN_UNITS_PER_THREAD 2 /* 2 x 8192 elements: less costs more to wake a worker */
#define SOFTMAX_HUGE_MIN_BYTES ((int64_t)4 << 20)
#define SOFTMAX_ROWS_WHOLE 2 /* rows a thread from which each row is done whole (rows_ab) */

typedef struct softmax_args {
    const char *kernel;
    const void *x;
    const float *t;
    void *y;
    int64_t B, V;
    int dt, odt;
} softmax_args_t;

static tileops_status_t check_args(const softmax_args_t *a) {
    tileops_status_t st = sampling_check_rows(a->kernel, a->dt, a->B, a->V);
    if (st != TILEOPS_OK)
        return st;
    if (!tileops_dtype_is_float(a->odt))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: the output's dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)",
                            a->kernel, a->odt, tileops_dtype_name(a->odt));
    const int64_t e = (int64_t)tileops_dtype_size(a->dt), oe = (int64_t)tileops_dtype_size(a->odt);
    const sampling_buf_t bufs[] = {{"logits", a->x, a->B * a->V * e, e, 0},
                                   {"temperature", a->t, a->B * 4, 4, 1},
                                   {"probs", a->y, a->B * a->V * oe, oe, 0}};
    return sampling_check_bufs(a->kernel, a->B, bufs, 3);
}

/* ---- reference: the definition in double, one rounding ---------------------------------- */

static void reference_row(const softmax_args_t *a, int64_t r) {
    const int64_t V = a->V;
    const double t = a->t != NULL ? (double)a->t[r] : 1.0;
    double m = -INFINITY;
    int nan = 0;
    for (int64_t i = 0; i < V; i++) {
        const double z = (double)vec16_load1(a->x, r * V + i, a->dt) / t;
        nan |= z != z;
        m = z > m ? z : m;
    }
    double s = 0.0;
    if (!nan && m != INFINITY && m != -INFINITY)
        for (int64_t i = 0; i < V; i++)
            s += exp((double)vec16_load1(a->x, r * V + i, a->dt) / t - m);
    const int defined = !nan && m != INFINITY && m != -INFINITY;
    for (int64_t i = 0; i < V; i++) {
        const double p = defined ? exp((double)vec16_load1(a->x, r * V + i, a->dt) / t - m) / s : NAN;
        vec16_store_rounded(a->y, r * V + i, a->odt, p);
    }
}

/* ---- the fast kernel -------------------------------------------------------------------- */

typedef struct softmax_fns {
    /* (m, s) of n elements at x (dtype dt), divided by t when tp != NULL; e[0..n) =
     * exp(z - ref) (ref: m, 0 when m is -inf) unless e is NULL */
    void (*stats)(const void *x, const float *tp, int64_t n, int dt, float *m, float *s, float *e);
    /* y[0..n) = e[i] c, or exp(z - ref) c where e is NULL (y may be e, in float32) */
    void (*write)(const void *x, const float *tp, const float *e, void *y, int64_t n, int dt, int odt, float ref,
                  float c);
    /* exp(d), the vector exp's value */
    float (*exp1)(float d);
} softmax_fns_t;

#define VEC16_SELF "ops/sampling/softmax.c"
#include "cpu/dispatch_levels.h"

static const softmax_fns_t *fns_for(int level) {
    return VEC16_AT_LEVEL(level, fns);
}

typedef struct softmax_job {
    const softmax_args_t *a;
    const softmax_fns_t *f;
    int64_t chunks; /* per row */
    float *part;    /* [B * chunks][2]: each unit's (m, s) */
} softmax_job_t;

/* Where pass A keeps the exps of row r's chunk at i for pass B: the output itself in
 * float32; else `row` (a thread's scratch of V floats for the row done whole), or nowhere
 * (NULL: pass B takes them again). */
static float *unit_exps(const softmax_job_t *j, int64_t r, int64_t i, float *row) {
    if (j->a->odt == F32)
        return (float *)j->a->y + r * j->a->V + i;
    return row != NULL ? row + i : NULL;
}

static void units_a(const softmax_job_t *j, int64_t u0, int64_t u1, float *row) {
    const softmax_args_t *a = j->a;
    const size_t es = tileops_dtype_size(a->dt);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / j->chunks, i = (u % j->chunks) * SOFTMAX_CHUNK;
        const int64_t n = a->V - i < SOFTMAX_CHUNK ? a->V - i : SOFTMAX_CHUNK;
        j->f->stats((const char *)a->x + (size_t)(r * a->V + i) * es, a->t != NULL ? a->t + r : NULL, n, a->dt,
                     &j->part[2 * u], &j->part[2 * u + 1], unit_exps(j, r, i, row));
    }
}

static void pass_a(void *ctx, int64_t u0, int64_t u1) { units_a(ctx, u0, u1, NULL); }

/* The row's M and S from its chunks' (m, s), in chunk order. A chunk of -inf only has
 * s = 0 and adds nothing (its exp(m - M) is not taken: it may be NaN); a row of -inf
 * only has no finite M and S is NaN. */
static void row_stats(const softmax_job_t *j, int64_t r, float *M, float *S) {
    const float *p = j->part + 2 * r * j->chunks;
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = 0; c < j->chunks; c++)
        m = p[2 * c] > m ? p[2 * c] : m;
    for (int64_t c = 0; c < j->chunks; c++)
        s += p[2 * c] == -INFINITY ? p[2 * c + 1] : p[2 * c + 1] * j->f->exp1(p[2 * c] - m);
    *M = m;
    *S = m == -INFINITY ? NAN : s;
}

static void units_b(const softmax_job_t *j, int64_t u0, int64_t u1, float *row) {
    const softmax_args_t *a = j->a;
    const size_t es = tileops_dtype_size(a->dt), oes = tileops_dtype_size(a->odt);
    int64_t have = -1;
    float M = 0.0f, S = 0.0f;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t r = u / j->chunks, i = (u % j->chunks) * SOFTMAX_CHUNK;
        const int64_t n = a->V - i < SOFTMAX_CHUNK ? a->V - i : SOFTMAX_CHUNK;
        if (r != have) {
            row_stats(j, r, &M, &S);
            have = r;
        }
        /* the chunk's exps were taken against ref; their factor c = exp(m - M) / S (0 / S for
         * a chunk of -inf only: zeros, or NaN in a row of -inf only) */
        const float m = j->part[2 * u], ref = m == -INFINITY ? 0.0f : m;
        const float c = (m == -INFINITY ? 0.0f : j->f->exp1(m - M)) / S;
        j->f->write((const char *)a->x + (size_t)(r * a->V + i) * es, a->t != NULL ? a->t + r : NULL,
                     unit_exps(j, r, i, row), (char *)a->y + (size_t)(r * a->V + i) * oes, n, a->dt, a->odt,
                     ref, c);
    }
}

static void pass_b(void *ctx, int64_t u0, int64_t u1) { units_b(ctx, u0, u1, NULL); }

/* Rows whole, one after another (enough rows for every thread): a row's pass B follows its
 * pass A while the row (0.5 MB of float32 logits at V = 128256) is still in this core's
 * cache, where two passes over the whole batch read the logits from memory twice. The same
 * units in the same order: the same bits. */
static void rows_ab(void *ctx, int64_t r0, int64_t r1) {
    const softmax_job_t *j = ctx;
    /* a 16-bit output: the row's exps in this thread's scratch (without one, taken again) */
    float *row = j->a->odt == F32 ? NULL : tileops_cpu_scratch((size_t)j->a->V * sizeof(float));
    for (int64_t r = r0; r < r1; r++) {
        units_a(j, r * j->chunks, (r + 1) * j->chunks, row);
        units_b(j, r * j->chunks, (r + 1) * j->chunks, row);
    }
}

static tileops_status_t softmax_call(const tileops_arg_t *g, int reference) {
    softmax_args_t a = {
        .kernel = reference ? "softmax_reference" : "softmax",
        .x = (const void *)g[0].p, .t = (const float *)g[1].p, .y = (void *)g[2].p,
        .B = g[3].q, .V = g[4].q, .dt = g[5].i, .odt = g[6].i,
    };
    tileops_status_t st = check_args(&a);
    if (st != TILEOPS_OK || a.B == 0)
        return st;
    if (reference) {
        for (int64_t r = 0; r < a.B; r++)
            reference_row(&a, r);
        return TILEOPS_OK;
    }
    softmax_job_t job = {.a = &a, .chunks = (a.V + SOFTMAX_CHUNK - 1) / SOFTMAX_CHUNK};
    job.part = malloc((size_t)(a.B * job.chunks) * 2 * sizeof(float));
    if (job.part == NULL)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "%s: no memory for %lld rows' partial sums", a.kernel,
                            (long long)a.B);
    job.f = fns_for(tileops_cpu_simd_active());
    const int64_t y_bytes = a.B * a.V * (int64_t)tileops_dtype_size(a.odt);
    if (y_bytes >= SOFTMAX_HUGE_MIN_BYTES)
        (void)tileops_cpu_fresh_output(a.y, y_bytes, SOFTMAX_HUGE_MIN_BYTES);
    const int64_t units = a.B * job.chunks;
    if (a.B >= SOFTMAX_ROWS_WHOLE * (int64_t)tileops_cpu_num_threads()) {
        tileops_cpu_parallel_for(a.B, 1, rows_ab, &job);
    } else { /* few rows: their chunks spread over the threads, the batch's pass A, then its pass B */
        tileops_cpu_parallel_for(units, SOFTMAX_MIN_UNITS_PER_THREAD, pass_a, &job);
        tileops_cpu_parallel_for(units, SOFTMAX_MIN_UNITS_PER_THREAD, pass_b, &job);
    }
    free(job.part);
    return TILEOPS_OK;
}

static tileops_status_t softmax_fast(const tileops_arg_t *g) { return softmax_call(g, 0); }
static tileops_status_t softmax_ref(const tileops_arg_t *g) { return softmax_call(g, 1); }

static const tileops_cpu_kernel_t softmax_kernel = {"softmax", SOFTMAX_ARG_FORMAT, softmax_fast};
static const tileops_cpu_kernel_t softmax_reference_kernel = {"softmax_reference", SOFTMAX_ARG_FORMAT, softmax_ref};
TILEOPS_CPU_KERNEL(softmax_kernel)
TILEOPS_CPU_KERNEL(softmax_reference_kernel)

#else /* ---- VEC16_ISA: one instruction set's passes (this file includes itself) -------- */

#include "cpu/vec16.h"

/* z of 16 (m) elements: x / t when there is a temperature */
static AI TGT VF ISA(z_n)(const void *x, int64_t i, int dt, const float *tp, int m) {
    VF v = m == 16 ? ISA(vload)(x, i, dt) : ISA(vload_n)(x, i, dt, m);
    return tp != NULL ? ISA(vdiv)(v, ISA(vset1)(*tp)) : v;
}

static TGT void ISA(stats_impl)(const void *x, const float *tp, int64_t n, int dt, float *m_out, float *s_out,
                                float *e) {
    const float ninf = -INFINITY;
    VF mx = ISA(vset1)(ninf);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        mx = ISA(vmax)(ISA(z_n)(x, i, dt, tp, 16), mx); /* z first: a NaN lane keeps mx */
    if (i < n)
        mx = ISA(vmax)(ISA(vfill_n)(ISA(z_n)(x, i, dt, tp, (int)(n - i)), (int)(n - i), ninf), mx);
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, mx, 16);
    float m = ninf;
    for (int k = 0; k < 16; k++)
        m = lanes[k] > m ? lanes[k] : m;
    /* s relative to m, or to 0 for a chunk of -inf only (whose exps are then 0, not NaN) */
    const VF ref = ISA(vset1)(m == ninf ? 0.0f : m);
    VF o0 = ISA(vzero)(), o1 = ISA(vzero)(), o2 = ISA(vzero)(), o3 = ISA(vzero)();
    /* the exps kept (e) or not: one loop, the store's test is the same every step */
#define SOFTMAX_EXP_AT(K, OFF)                                                                                     \
    do {                                                                                                           \
        const VF v = ISA(vexp)(ISA(vsub)(ISA(z_n)(x, i + (OFF), dt, tp, 16), ref));                                \
        if (e != NULL)                                                                                             \
            (void)ISA(vstore_n)(e, i + (OFF), F32, v, 16);                                                         \
        K = ISA(vadd)(K, v);                                                                                       \
    } while (0)
    for (i = 0; i + 64 <= n; i += 64) {
        SOFTMAX_EXP_AT(o0, 0);
        SOFTMAX_EXP_AT(o1, 16);
        SOFTMAX_EXP_AT(o2, 32);
        SOFTMAX_EXP_AT(o3, 48);
    }
#undef SOFTMAX_EXP_AT
    for (; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        const VF v = ISA(vexp)(ISA(vsub)(ISA(z_n)(x, i, dt, tp, c), ref));
        if (e != NULL)
            (void)ISA(vstore_n)(e, i, F32, v, c);
        o0 = ISA(vadd)(o0, ISA(vkeep_n)(v, c));
    }
    *m_out = m;
    *s_out = ISA(vfold)(o0, o1, o2, o3);
}

static TGT void ISA(write_impl)(const void *x, const float *tp, const float *e, void *y, int64_t n, int dt, int odt,
                                float ref, float c) {
    const VF rv = ISA(vset1)(ref), cv = ISA(vset1)(c);
    for (int64_t i = 0; i < n; i += 16) {
        const int k = n - i < 16 ? (int)(n - i) : 16;
        const VF v = e != NULL ? (k == 16 ? ISA(vload)(e, i, F32) : ISA(vload_n)(e, i, F32, k))
                               : ISA(vexp)(ISA(vsub)(ISA(z_n)(x, i, dt, tp, k), rv));
        (void)ISA(vstore_n)(y, i, odt, ISA(vmul)(v, cv), k);
    }
}

/* One copy per dtype of the logits, so the loops carry no dtype tests. */
#define SOFTMAX_SPAN(DT, DTN)                                                                                      \
    static TGT void ISA(stats_##DTN)(const void *x, const float *tp, int64_t n, int dt, float *m, float *s,       \
                                     float *e) {                                                                   \
        (void)dt;                                                                                                  \
        ISA(stats_impl)(x, tp, n, DT, m, s, e);                                                                    \
    }                                                                                                              \
    static TGT void ISA(write_##DTN)(const void *x, const float *tp, const float *e, void *y, int64_t n, int dt,   \
                                     int odt, float ref, float c) {                                                \
        (void)dt;                                                                                                  \
        ISA(write_impl)(x, tp, e, y, n, DT, odt, ref, c);                                                          \
    }
SOFTMAX_SPAN(F32, f32)
SOFTMAX_SPAN(F16, f16)
SOFTMAX_SPAN(BF16, bf16)

static TGT void ISA(stats)(const void *x, const float *tp, int64_t n, int dt, float *m, float *s, float *e) {
    if (dt == F32)
        ISA(stats_f32)(x, tp, n, dt, m, s, e);
    else if (dt == F16)
        ISA(stats_f16)(x, tp, n, dt, m, s, e);
    else
        ISA(stats_bf16)(x, tp, n, dt, m, s, e);
}

static TGT void ISA(write)(const void *x, const float *tp, const float *e, void *y, int64_t n, int dt, int odt,
                           float ref, float c) {
    if (dt == F32)
        ISA(write_f32)(x, tp, e, y, n, dt, odt, ref, c);
    else if (dt == F16)
        ISA(write_f16)(x, tp, e, y, n, dt, odt, ref, c);
    else
        ISA(write_bf16)(x, tp, e, y, n, dt, odt, ref, c);
}

static TGT float ISA(exp1)(float d) {
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, ISA(vexp)(ISA(vset1)(d)), 16);
    return lanes[0];
}

static const softmax_fns_t ISA(fns) = {ISA(stats), ISA(write), ISA(exp1)};

#undef SOFTMAX_SPAN
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

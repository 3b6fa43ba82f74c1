/* rope.c: the CPU kernels "rope" (fast: AVX-512, AVX2 or scalar at run time, tokens spread
 * over the core's pool) and "rope_reference" (plain double-precision loops) of RopeFwdOp.
 *
 * For each token t, with p = positions[t], c = cache[p, 0 : R/2], s = cache[p, R/2 : R]
 * (cache: float32 [P, R], R = rotary_dim), and each head vector x of q[t] and of k[t]
 * (D channels, the first R rotated, the rest passed through):
 *   NeoX style (is_neox = 1), i < R/2:  a = x[i], b = x[i + R/2]
 *       out[i] = a c[i] - b s[i],  out[i + R/2] = b c[i] + a s[i]
 *   GPT-J style (is_neox = 0), i < R/2: a = x[2i], b = x[2i + 1]
 *       out[2i] = a c[i] - b s[i], out[2i + 1] = b c[i] + a s[i]
 *   out[R .. D) = x[R .. D)   (not touched in place)
 * in fp32 (one multiply, one fused multiply-add: the same bits at every instruction set),
 * rounded once to the dtype; the reference in double, rounded once.
 * "rope_cast" (and "rope_cast_reference"; RopeFwdOp's cast_cos_sin) computes in the dtype as
 * torch eager computes Hugging Face's `q * cos + rotate_half(q) * sin`: c and s rounded to
 * the dtype, each product rounded, then the sum (the reference: each step from double).
 *
 * Arguments ("ppppppqqqqqqqqqqqqqqiii"): q, k, positions, cache, q_out, k_out; T, H, H_kv, D,
 * R, P; the token and head strides (elements) of q, k, q_out, k_out; is_neox, dtype, the
 * positions' dtype (int32 or int64). The last dimension has unit stride everywhere. k and
 * k_out are both 0 when there is no key (H_kv is then ignored). q_out may be q (in place,
 * the same strides), k_out may be k; no other overlap. A position outside [0, P) is an
 * error naming the token and the value, found before anything is written. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

#define ROPE_ARG_FORMAT "ppppppqqqqqqqqqqqqqqiii"

/* A worker takes at least this many elements of q and k: fewer cost more to wake it. */
#define ROPE_MIN_ELEMS_PER_THREAD 32768

typedef struct rope_args {
    const char *kernel;
    const void *q, *k, *pos;
    const float *cache;
    void *q_out, *k_out;
    int64_t T, H, Hk, D, R, P;
    int64_t q_st, q_sh, k_st, k_sh, qo_st, qo_sh, ko_st, ko_sh;
    int neox, dtype, pos_dtype;
    int cast; /* rope_cast: the rotation in the dtype's arithmetic (above) */
} rope_args_t;

static int64_t position(const rope_args_t *a, int64_t t) {
    return a->pos_dtype == TILEOPS_INT32 ? (int64_t)((const int32_t *)a->pos)[t] : ((const int64_t *)a->pos)[t];
}

/* ---- the reference -------------------------------------------------------------------- */

/* v rounded once to dt, as a double */
static double round_to(double v, int dt) {
    char tmp[4];
    vec16_store_rounded(tmp, 0, dt, v);
    return vec16_load1(tmp, 0, dt);
}

static void rotate_reference(const rope_args_t *a, const char *x, char *out, const float *c) {
    const int64_t half = a->R / 2, es = (int64_t)tileops_dtype_size(a->dtype);
    const float *s = c + half;
    const int dt = a->dtype;
    for (int64_t i = 0; i < half; i++) {
        const int64_t ia = a->neox ? i : 2 * i, ib = a->neox ? i + half : 2 * i + 1;
        const double xa = vec16_load1(x, ia, dt), xb = vec16_load1(x, ib, dt);
        if (a->cast) {
            const double ci = round_to(c[i], dt), si = round_to(s[i], dt);
            vec16_store_rounded(out, ia, dt, round_to(xa * ci, dt) - round_to(xb * si, dt));
            vec16_store_rounded(out, ib, dt, round_to(xb * ci, dt) + round_to(xa * si, dt));
            continue;
        }
        vec16_store_rounded(out, ia, dt, xa * c[i] - xb * s[i]);
        vec16_store_rounded(out, ib, dt, xb * c[i] + xa * s[i]);
    }
    if (out != x)
        memcpy(out + a->R * es, x + a->R * es, (size_t)((a->D - a->R) * es));
}

/* ---- one token of the fast kernel, per instruction set ---------------------------------- */

/* out[0 .. R) of one head vector from x (either may be the other); c: cos, then sin */
typedef void (*rope_rotate_fn)(const void *x, void *out, const float *c, int64_t half, int dt);

typedef struct rope_rotates {
    rope_rotate_fn neox, gptj, neox_cast, gptj_cast;
} rope_rotates_t;

#define VEC16_SELF "ops/positional/rope.c"
#include "cpu/dispatch_levels.h"

static const rope_rotates_t *rotates_for(int level) {
    return VEC16_AT_LEVEL(level, rotates);
}

typedef struct rope_job {
    const rope_args_t *a;
    rope_rotate_fn rotate; /* NULL: the reference */
} rope_job_t;

/* the head vectors of q (or k) of token t */
static void rope_heads(const rope_job_t *j, const char *x, char *out, int64_t heads, int64_t sh, int64_t osh,
                       const float *c) {
    const rope_args_t *a = j->a;
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype);
    for (int64_t h = 0; h < heads; h++) {
        const char *xh = x + h * sh * es;
        char *oh = out + h * osh * es;
        if (j->rotate == NULL) {
            rotate_reference(a, xh, oh, c);
            continue;
        }
        j->rotate(xh, oh, c, a->R / 2, a->dtype);
        if (oh != xh)
            memcpy(oh + a->R * es, xh + a->R * es, (size_t)((a->D - a->R) * es));
    }
}

static void rope_range(void *ctx, int64_t t0, int64_t t1) {
    const rope_job_t *j = ctx;
    const rope_args_t *a = j->a;
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype);
    for (int64_t t = t0; t < t1; t++) {
        const float *c = a->cache + position(a, t) * a->R;
        rope_heads(j, (const char *)a->q + t * a->q_st * es, (char *)a->q_out + t * a->qo_st * es, a->H, a->q_sh,
                   a->qo_sh, c);
        if (a->k != NULL)
            rope_heads(j, (const char *)a->k + t * a->k_st * es, (char *)a->k_out + t * a->ko_st * es, a->Hk,
                       a->k_sh, a->ko_sh, c);
    }
}

/* ---- argument checks -------------------------------------------------------------------- */

/* Whether (n - 1) * st + (h - 1) * sh + d elements, times es bytes, fit int64 (n, h >= 1). */
static int extent_fits(int64_t n, int64_t st, int64_t h, int64_t sh, int64_t d, int64_t es) {
    const int64_t lim = INT64_MAX / es;
    if (d > lim || (n > 1 && st > (lim - d) / (n - 1)))
        return 0;
    const int64_t used = d + (n - 1) * st;
    return h <= 1 || sh <= (lim - used) / (h - 1);
}

/* whether some two of the n1 x n2 vectors of d elements at i * s1 + j * s2 share an
 * element (the strides >= 0) */
static int overlaps(int64_t n1, int64_t s1, int64_t n2, int64_t s2, int64_t d) {
    if (n1 <= 1) { /* one dimension at most: its stride must hold d */
        n1 = n2;
        s1 = s2;
        n2 = 1;
    }
    if (n2 <= 1)
        return n1 > 1 && s1 < d;
    if (s2 < s1) { /* the smaller stride first */
        const int64_t n = n1, s = s1;
        n1 = n2;
        s1 = s2;
        n2 = n;
        s2 = s;
    }
    return s1 < d || s2 / n1 < s1; /* s2 < n1 * s1, without the product's overflow */
}

static tileops_status_t check_tensor(const char *k, const char *name, int64_t T, int64_t heads, int64_t D,
                                     int64_t st, int64_t sh, int64_t es, int written) {
    if (st < 0 || sh < 0)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, name, "%s: %s's strides must be >= 0, got token %lld, head %lld", k,
                            name, (long long)st, (long long)sh);
    /* a written tensor's head vectors must not overlap one another, in either order of its
     * two strides (token-major, or head-major: [H, T, D] transposed): the dimension of the
     * smaller stride spans at most the other's stride, and that stride holds D elements */
    if (written && overlaps(T, st, heads, sh, D))
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, name,
                            "%s: %s's head vectors overlap: strides token %lld, head %lld for %lld heads of %lld", k,
                            name, (long long)st, (long long)sh, (long long)heads, (long long)D);
    if (T > 0 && heads > 0 && !extent_fits(T, st, heads, sh, D, es))
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, name, "%s: %s's extent must fit int64 bytes", k, name);
    return TILEOPS_OK;
}

static tileops_status_t check_args(const rope_args_t *a) {
    const char *k = a->kernel;
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, a->dtype,
                            tileops_dtype_name(a->dtype));
    if (a->pos_dtype != TILEOPS_INT32 && a->pos_dtype != TILEOPS_INT64)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "positions", "%s: positions' dtype must be int32 or int64, got %d (%s)",
                            k, a->pos_dtype, tileops_dtype_name(a->pos_dtype));
    if (a->neox != 0 && a->neox != 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: is_neox must be 0 or 1, got %d", k, a->neox);
    if (a->T < 0 || a->H < 0 || a->Hk < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: T, H and H_kv must be >= 0, got %lld, %lld, %lld", k,
                            (long long)a->T, (long long)a->H, (long long)a->Hk);
    if (a->R < 2 || a->R % 2 || a->D < a->R)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: rotary_dim must be even with 2 <= rotary_dim <= D, got rotary_dim %lld, D %lld", k,
                            (long long)a->R, (long long)a->D);
    if (a->P < 0 || a->P > INT64_MAX / 4 / a->R) /* 0 rows: every position is outside them */
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "cos_sin_cache", "%s: the cache's rows must be in [0, 2^62 / R), got %lld", k,
                            (long long)a->P);
    if ((a->k == NULL) != (a->k_out == NULL))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: k and k_out must be both 0 or both non-0", k);
    if (a->T == 0)
        return TILEOPS_OK;
    const char *null_arg = a->q == NULL ? "q" : a->q_out == NULL ? "q_out" : a->pos == NULL ? "positions"
                           : a->cache == NULL && a->P > 0 ? "cos_sin_cache" : NULL;
    if (null_arg != NULL)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, null_arg, "%s: %s must be non-NULL when T > 0, got NULL", k, null_arg);
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype);
    tileops_status_t st;
    if ((st = check_tensor(k, "q", a->T, a->H, a->D, a->q_st, a->q_sh, es, 0)) != TILEOPS_OK ||
        (st = check_tensor(k, "q_out", a->T, a->H, a->D, a->qo_st, a->qo_sh, es, 1)) != TILEOPS_OK)
        return st;
    if (a->q_out == a->q && (a->qo_st != a->q_st || a->qo_sh != a->q_sh))
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "q_out", "%s: q_out is q (in place) with other strides", k);
    if (a->k != NULL) {
        if ((st = check_tensor(k, "k", a->T, a->Hk, a->D, a->k_st, a->k_sh, es, 0)) != TILEOPS_OK ||
            (st = check_tensor(k, "k_out", a->T, a->Hk, a->D, a->ko_st, a->ko_sh, es, 1)) != TILEOPS_OK)
            return st;
        if (a->k_out == a->k && (a->ko_st != a->k_st || a->ko_sh != a->k_sh))
            return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "k_out", "%s: k_out is k (in place) with other strides", k);
    }
    /* every position before anything is written: a bad one leaves the outputs untouched */
    for (int64_t t = 0; t < a->T; t++) {
        const int64_t p = position(a, t);
        if (p < 0 || p >= a->P)
            return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "positions",
                                "%s: positions[%lld] = %lld is outside [0, %lld) (the rows of cos_sin_cache)", k,
                                (long long)t, (long long)p, (long long)a->P);
    }
    return TILEOPS_OK;
}

/* ---- the table entries -------------------------------------------------------------------- */

static tileops_status_t rope_call(const tileops_arg_t *g, int reference, int cast) {
    static const char *const names[2][2] = {{"rope", "rope_reference"}, {"rope_cast", "rope_cast_reference"}};
    rope_args_t a = {
        .kernel = names[cast][reference],
        .q = (const void *)g[0].p, .k = (const void *)g[1].p, .pos = (const void *)g[2].p,
        .cache = (const float *)g[3].p, .q_out = (void *)g[4].p, .k_out = (void *)g[5].p,
        .T = g[6].q, .H = g[7].q, .Hk = g[8].q, .D = g[9].q, .R = g[10].q, .P = g[11].q,
        .q_st = g[12].q, .q_sh = g[13].q, .k_st = g[14].q, .k_sh = g[15].q,
        .qo_st = g[16].q, .qo_sh = g[17].q, .ko_st = g[18].q, .ko_sh = g[19].q,
        .neox = g[20].i, .dtype = g[21].i, .pos_dtype = g[22].i, .cast = cast,
    };
    tileops_status_t st = check_args(&a);
    if (st != TILEOPS_OK || a.T == 0)
        return st;
    const rope_rotates_t *r = rotates_for(tileops_cpu_simd_active());
    rope_job_t job = {.a = &a, .rotate = reference ? NULL
                                         : a.neox   ? (cast ? r->neox_cast : r->neox)
                                                    : (cast ? r->gptj_cast : r->gptj)};
    if (reference) {
        rope_range(&job, 0, a.T);
        return TILEOPS_OK;
    }
    const int64_t per_token = (a.H + (a.k != NULL ? a.Hk : 0)) * a.D;
    const int64_t min_tokens = per_token > 0 ? (ROPE_MIN_ELEMS_PER_THREAD + per_token - 1) / per_token : a.T;
    tileops_cpu_parallel_for(a.T, min_tokens, rope_range, &job);
    return TILEOPS_OK;
}

static tileops_status_t rope_fast(const tileops_arg_t *g) { return rope_call(g, 0, 0); }
static tileops_status_t rope_ref(const tileops_arg_t *g) { return rope_call(g, 1, 0); }
static tileops_status_t rope_cast_fast(const tileops_arg_t *g) { return rope_call(g, 0, 1); }
static tileops_status_t rope_cast_ref(const tileops_arg_t *g) { return rope_call(g, 1, 1); }

static const tileops_cpu_kernel_t rope_kernel = {"rope", ROPE_ARG_FORMAT, rope_fast};
static const tileops_cpu_kernel_t rope_reference_kernel = {"rope_reference", ROPE_ARG_FORMAT, rope_ref};
static const tileops_cpu_kernel_t rope_cast_kernel = {"rope_cast", ROPE_ARG_FORMAT, rope_cast_fast};
static const tileops_cpu_kernel_t rope_cast_reference_kernel = {"rope_cast_reference", ROPE_ARG_FORMAT,
                                                                rope_cast_ref};
TILEOPS_CPU_KERNEL(rope_kernel)
TILEOPS_CPU_KERNEL(rope_reference_kernel)
TILEOPS_CPU_KERNEL(rope_cast_kernel)
TILEOPS_CPU_KERNEL(rope_cast_reference_kernel)

#else /* ---- VEC16_ISA: the rotations of one instruction set (this file includes itself) ---- */

#include "cpu/vec16.h"

/* (o1, o2) = (a c - b s, b c + a s): one multiply and one FMA each in fp32, or (cast) in
 * the dtype's arithmetic, c and s and each product rounded to dt (the stores round the sums) */
static AI TGT void ISA(rot)(VF a, VF b, VF cv, VF sv, int dt, int cast, VF *o1, VF *o2) {
    if (!cast) {
        *o1 = ISA(vfma)(a, cv, ISA(vmul)(ISA(vsub)(ISA(vzero)(), b), sv));
        *o2 = ISA(vfma)(b, cv, ISA(vmul)(a, sv));
        return;
    }
    cv = ISA(vround)(cv, dt);
    sv = ISA(vround)(sv, dt);
    *o1 = ISA(vsub)(ISA(vround)(ISA(vmul)(a, cv), dt), ISA(vround)(ISA(vmul)(b, sv), dt));
    *o2 = ISA(vadd)(ISA(vround)(ISA(vmul)(b, cv), dt), ISA(vround)(ISA(vmul)(a, sv), dt));
}

/* NeoX: the two halves of the rotated channels, 16 pairs at a time */
static AI TGT void ISA(neox_impl)(const void *x, void *out, const float *c, int64_t half, int dt, int cast) {
    const float *s = c + half;
    for (int64_t i = 0; i < half; i += 16) {
        const int m = half - i < 16 ? (int)(half - i) : 16;
        const VF a = ISA(vload_n)(x, i, dt, m), b = ISA(vload_n)(x, half + i, dt, m);
        const VF cv = ISA(vload_n)(c, i, F32, m), sv = ISA(vload_n)(s, i, F32, m);
        VF o1, o2;
        ISA(rot)(a, b, cv, sv, dt, cast, &o1, &o2);
        (void)ISA(vstore_n)(out, i, dt, o1, m);
        (void)ISA(vstore_n)(out, half + i, dt, o2, m);
    }
}

/* GPT-J: interleaved pairs, 16 pairs at a time: their 32 elements converted to fp32 by
 * vector loads, split into halves, rotated as NeoX's, interleaved back and converted by
 * vector stores (the same operations on the same values: the same bits; per-element
 * conversions made fp16 8-12x slower than bf16, session 19) */
static AI TGT void ISA(gptj_impl)(const void *x, void *out, const float *c, int64_t half, int dt, int cast) {
    const float *s = c + half;
    for (int64_t i = 0; i < half; i += 16) {
        const int m = half - i < 16 ? (int)(half - i) : 16; /* pairs: 2m elements at 2i */
        const int m0 = 2 * m < 16 ? 2 * m : 16, m1 = 2 * m - m0;
        float xs[32], ea[16] = {0}, eb[16] = {0}, r1[16], r2[16], ys[32]; /* xs: read below 2m only */
        (void)ISA(vstore_n)(xs, 0, F32, ISA(vload_n)(x, 2 * i, dt, m0), 16);
        if (m1 > 0)
            (void)ISA(vstore_n)(xs, 16, F32, ISA(vload_n)(x, 2 * i + 16, dt, m1), 16);
        for (int l = 0; l < m; l++) {
            ea[l] = xs[2 * l];
            eb[l] = xs[2 * l + 1];
        }
        const VF a = ISA(vload_n)(ea, 0, F32, 16), b = ISA(vload_n)(eb, 0, F32, 16);
        const VF cv = ISA(vload_n)(c, i, F32, m), sv = ISA(vload_n)(s, i, F32, m);
        VF o1, o2;
        ISA(rot)(a, b, cv, sv, dt, cast, &o1, &o2);
        (void)ISA(vstore_n)(r1, 0, F32, o1, 16);
        (void)ISA(vstore_n)(r2, 0, F32, o2, 16);
        for (int l = 0; l < 16; l++) {
            ys[2 * l] = r1[l];
            ys[2 * l + 1] = r2[l];
        }
        (void)ISA(vstore_n)(out, 2 * i, dt, ISA(vload_n)(ys, 0, F32, 16), m0);
        if (m1 > 0)
            (void)ISA(vstore_n)(out, 2 * i + 16, dt, ISA(vload_n)(ys, 16, F32, 16), m1);
    }
}

#define ROPE_ROTATE(STYLE, DT, DTN, C)                                                         \
    static TGT void ISA(STYLE##_##DTN##_##C)(const void *x, void *out, const float *c, int64_t half, int dt) { \
        (void)dt;                                                                              \
        ISA(STYLE##_impl)(x, out, c, half, DT, C);                                             \
    }
#define ROPE_ROTATES(STYLE, C) \
    ROPE_ROTATE(STYLE, F32, f32, C) ROPE_ROTATE(STYLE, F16, f16, C) ROPE_ROTATE(STYLE, BF16, bf16, C)
ROPE_ROTATES(neox, 0)
ROPE_ROTATES(gptj, 0)
ROPE_ROTATES(neox, 1)
ROPE_ROTATES(gptj, 1)

/* the dtype's copy of each style (the loops then carry no dtype test) */
#define ROPE_BY_DTYPE(NAME, STYLE, C)                                                          \
    static TGT void ISA(NAME)(const void *x, void *out, const float *c, int64_t half, int dt) { \
        (dt == F16 ? ISA(STYLE##_f16_##C) : dt == BF16 ? ISA(STYLE##_bf16_##C) : ISA(STYLE##_f32_##C))( \
            x, out, c, half, dt);                                                              \
    }
ROPE_BY_DTYPE(neox, neox, 0)
ROPE_BY_DTYPE(gptj, gptj, 0)
ROPE_BY_DTYPE(neox_cast, neox, 1)
ROPE_BY_DTYPE(gptj_cast, gptj, 1)

static const rope_rotates_t ISA(rotates) = {
    .neox = ISA(neox), .gptj = ISA(gptj), .neox_cast = ISA(neox_cast), .gptj_cast = ISA(gptj_cast)};

#undef ROPE_BY_DTYPE
#undef ROPE_ROTATES

#undef ROPE_ROTATE
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

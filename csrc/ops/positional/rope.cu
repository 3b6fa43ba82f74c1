/* ops/positional/rope.cu: the GPU kernel of RopeFwdOp (rotary embeddings), C-style CUDA C
 * compiled at run time by NVRTC with no builtin headers; ../common/rows_common.cuh (16-byte
 * groups, conversions, rounded fp32 arithmetic) is spliced in by the runtime.
 *
 * For each token t, p = positions[t], c = cache + p R (float32: R/2 cos, then R/2 sin),
 * and each head vector x of q[t] (H heads) and of k[t] (Hk heads), D channels:
 *   NeoX (TILEOPS_NEOX 1), i < R/2: a = x[i], b = x[i + R/2]
 *       out[i] = fma(a, c[i], (-b) s[i]),  out[i + R/2] = fma(b, c[i], a s[i])
 *   GPT-J (TILEOPS_NEOX 0), i < R/2: a = x[2i], b = x[2i + 1], the same two formulas
 *   out[R .. D) = x[R .. D)   (only when out is not x)
 * in fp32 (one multiply and one fma per output, as the CPU kernel: the same values), one
 * rounding to the dtype. With -DTILEOPS_CAST_COS_SIN=1, in the dtype's arithmetic as torch
 * eager computes Hugging Face's q * cos + rotate_half(q) * sin: c and s rounded to the
 * dtype, each product rounded, then the sum (the CPU's "rope_cast": the same values). A position outside [0, P) reads no cache row: that token's rotated
 * channels are NaN (in place too); its other channels are as above. Checking positions
 * costs the host a synchronisation, so the GPU path documents this outcome instead.
 *
 * ==== Parameters (arg_format "ppppppqqqqqqqqqqqq") ======================================
 *   (const void *q, const void *k, const void *positions, const float *cache, void *q_out,
 *    void *k_out, long long T, long long H, long long Hk, long long P,
 *    long long q_st, long long q_sh, long long k_st, long long k_sh,
 *    long long qo_st, long long qo_sh, long long ko_st, long long ko_sh)
 *   Strides in elements (token, head); the channel stride is 1. k and k_out are 0 without a
 *   key. q_out may be q (in place, the same strides), k_out k; no other overlap.
 *
 * ==== Defines ===========================================================================
 *   TILEOPS_DTYPE 0 float32, 1 float16, 2 bfloat16;  TILEOPS_N = D (head dim);
 *   TILEOPS_RD = R (rotary dim, even, 2 <= R <= D); TILEOPS_NEOX 0 or 1;
 *   TILEOPS_POS64 1 for int64 positions, 0 for int32;  TILEOPS_THREADS the block-size bound;
 *   TILEOPS_VEC G = 16 / E (the vector path: every pointer 16-byte aligned, every stride
 *   times E a multiple of 16, and G dividing R/2 for NeoX, R for GPT-J) or 1.
 *
 * ==== Launch =============================================================================
 *   grid.x tokens (grid-stride: any grid.x >= 1), block.x <= TILEOPS_THREADS threads over
 *   the token's units: per head of q then of k, the rotated units (NeoX: a group of G
 *   pairs, i.e. G channels of each half; GPT-J: a group of G channels, G/2 pairs), then,
 *   when that tensor is written out of place, the pass-through groups of [R, D). The
 *   launch side (src/tileops/kernels/positional/rope.py) picks block.x = the token's
 *   units rounded up to a warp, at most TILEOPS_THREADS (512: no spills). */
#include "../common/rows_common.cuh"

#if !defined(TILEOPS_RD) || !defined(TILEOPS_NEOX) || !defined(TILEOPS_POS64)
#error "rope.cu needs -DTILEOPS_RD, -DTILEOPS_NEOX, -DTILEOPS_POS64"
#endif
#if TILEOPS_RD < 2 || TILEOPS_RD % 2 || TILEOPS_RD > TILEOPS_N
#error "TILEOPS_RD must be even with 2 <= TILEOPS_RD <= TILEOPS_N"
#endif
#define RP_HALF (TILEOPS_RD / 2)
#if TILEOPS_VEC != 1 && ((TILEOPS_NEOX && RP_HALF % TILEOPS_G) || (!TILEOPS_NEOX && TILEOPS_RD % TILEOPS_G))
#error "the vector path needs G to divide R/2 (NeoX) or R (GPT-J)"
#endif
/* rotated units per head: NeoX groups of G pairs, GPT-J groups of G channels */
#define RP_ROT_UNITS (TILEOPS_NEOX ? (RP_HALF + TILEOPS_G - 1) / TILEOPS_G : (TILEOPS_RD + TILEOPS_G - 1) / TILEOPS_G)
#define RP_PASS_UNITS ((TILEOPS_N - TILEOPS_RD + TILEOPS_G - 1) / TILEOPS_G)
/* the pass-through groups are 16-byte aligned when R is a multiple of G */
#define RP_PASS_VEC (TILEOPS_VEC != 1 && TILEOPS_RD % TILEOPS_G == 0)

TILEOPS_DEV unsigned rp_ntid(void) {
    unsigned r;
    asm("mov.u32 %0, %%ntid.x;" : "=r"(r));
    return r;
}

/* `count` (<= G) elements of the dtype at p, zeros after them */
TILEOPS_DEV struct tileops_v4 rp_ld(const char *p, int count, int vec) {
    return (vec && count == TILEOPS_G) ? tileops_ld16(p) : tileops_ld_group_scalar(p, 0, count);
}
TILEOPS_DEV void rp_st(char *p, struct tileops_v4 v, int count, int vec) {
    if (vec && count == TILEOPS_G)
        tileops_st16(p, v);
    else
        tileops_st_group_scalar(p, 0, count, v);
}

/* `count` (<= 8) floats of the cache at c (NaN for a token without a valid position) */
TILEOPS_DEV void rp_ldf(const float *c, int count, int valid, float *f) {
    const float nan = tileops_as_float(0x7fc00000u);
#if TILEOPS_VEC != 1
    if (valid && count % 4 == 0) {
#pragma unroll
        for (int k = 0; k < 8; k += 4) {
            if (k < count) {
                struct tileops_v4 v = tileops_ld16((const char *)(c + k));
#pragma unroll
                for (int l = 0; l < 4; l++)
                    f[k + l] = tileops_as_float(v.a[l]);
            }
        }
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; k++)
        f[k] = (valid && k < count) ? c[k] : nan;
}

#ifndef TILEOPS_CAST_COS_SIN
#define TILEOPS_CAST_COS_SIN 0
#endif

#if TILEOPS_CAST_COS_SIN
/* v rounded to the dtype and back (float32: v) */
TILEOPS_DEV float rp_round(float v) {
#if TILEOPS_DTYPE == 0
    return v;
#elif TILEOPS_DTYPE == 1
    float r;
    asm("{ .reg .b16 h; cvt.rn.f16.f32 h, %1; cvt.f32.f16 %0, h; }" : "=f"(r) : "f"(v));
    return r;
#else
    return tileops_as_float(tileops_pack2(v, 0.0f) << 16);
#endif
}
#endif

/* out = (a c - b s, b c + a s), per lane, as the CPU kernel forms them */
TILEOPS_DEV void rp_rotate(float a, float b, float cv, float sv, float *o1, float *o2) {
#if TILEOPS_CAST_COS_SIN
    cv = rp_round(cv);
    sv = rp_round(sv);
    *o1 = tileops_add(rp_round(tileops_mul(a, cv)), -rp_round(tileops_mul(b, sv)));
    *o2 = tileops_add(rp_round(tileops_mul(b, cv)), rp_round(tileops_mul(a, sv)));
#else
    *o1 = tileops_fma(a, cv, tileops_mul(-b, sv));
    *o2 = tileops_fma(b, cv, tileops_mul(a, sv));
#endif
}

/* unit u of one head vector x -> out; c: the token's cos row (sin at c + R/2) */
TILEOPS_DEV void rp_unit(const char *x, char *out, int u, const float *c, int valid) {
    const int vec = TILEOPS_VEC != 1;
    if (u >= RP_ROT_UNITS) { /* pass-through group */
        const int j = u - RP_ROT_UNITS, first = TILEOPS_RD + j * TILEOPS_G;
        const int cnt = TILEOPS_N - first < TILEOPS_G ? TILEOPS_N - first : TILEOPS_G;
        rp_st(out + (long long)first * TILEOPS_E, rp_ld(x + (long long)first * TILEOPS_E, cnt, RP_PASS_VEC), cnt,
              RP_PASS_VEC);
        return;
    }
    float fa[TILEOPS_G], fb[TILEOPS_G], cs[8], sn[8];
#if TILEOPS_NEOX
    const int i0 = u * TILEOPS_G;
    const int cnt = RP_HALF - i0 < TILEOPS_G ? RP_HALF - i0 : TILEOPS_G;
    tileops_unpack(rp_ld(x + (long long)i0 * TILEOPS_E, cnt, vec), fa);
    tileops_unpack(rp_ld(x + (long long)(RP_HALF + i0) * TILEOPS_E, cnt, vec), fb);
    rp_ldf(c + i0, cnt, valid, cs);
    rp_ldf(c + RP_HALF + i0, cnt, valid, sn);
#pragma unroll
    for (int l = 0; l < TILEOPS_G; l++)
        rp_rotate(fa[l], fb[l], cs[l], sn[l], &fa[l], &fb[l]);
    rp_st(out + (long long)i0 * TILEOPS_E, tileops_pack(fa), cnt, vec);
    rp_st(out + (long long)(RP_HALF + i0) * TILEOPS_E, tileops_pack(fb), cnt, vec);
#else
    const int e0 = u * TILEOPS_G; /* channels e0 .. e0 + cnt: pairs e0 / 2 .. */
    const int cnt = TILEOPS_RD - e0 < TILEOPS_G ? TILEOPS_RD - e0 : TILEOPS_G;
    tileops_unpack(rp_ld(x + (long long)e0 * TILEOPS_E, cnt, vec), fa);
    rp_ldf(c + e0 / 2, cnt / 2, valid, cs);
    rp_ldf(c + RP_HALF + e0 / 2, cnt / 2, valid, sn);
#pragma unroll
    for (int l = 0; l < TILEOPS_G / 2; l++)
        rp_rotate(fa[2 * l], fa[2 * l + 1], cs[l], sn[l], &fb[2 * l], &fb[2 * l + 1]);
    rp_st(out + (long long)e0 * TILEOPS_E, tileops_pack(fb), cnt, vec);
#endif
}

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rope(const void *q, const void *k, const void *positions, const float *cache, void *q_out, void *k_out,
             long long T, long long H, long long Hk, long long P, long long q_st, long long q_sh, long long k_st,
             long long k_sh, long long qo_st, long long qo_sh, long long ko_st, long long ko_sh) {
    /* units per head: the rotated ones, then the pass-through ones when written elsewhere */
    const int uq = RP_ROT_UNITS + (q_out != q ? RP_PASS_UNITS : 0);
    const int uk = RP_ROT_UNITS + (k_out != k ? RP_PASS_UNITS : 0);
    const long long nq = H * uq, total = nq + (k ? Hk * uk : 0);
    for (long long t = tileops_ctaid(); t < T; t += tileops_nctaid()) {
#if TILEOPS_POS64
        const long long p = ((const long long *)positions)[t];
#else
        const long long p = ((const int *)positions)[t];
#endif
        const int valid = p >= 0 && p < P;
        const float *c = cache + (valid ? p : 0) * (long long)TILEOPS_RD;
        for (long long w = tileops_tid(); w < total; w += rp_ntid()) {
            if (w < nq) {
                const long long h = w / uq;
                rp_unit((const char *)q + (t * q_st + h * q_sh) * TILEOPS_E,
                        (char *)q_out + (t * qo_st + h * qo_sh) * TILEOPS_E, (int)(w - h * uq), c, valid);
            } else {
                const long long h = (w - nq) / uk;
                rp_unit((const char *)k + (t * k_st + h * k_sh) * TILEOPS_E,
                        (char *)k_out + (t * ko_st + h * ko_sh) * TILEOPS_E, (int)(w - nq - h * uk), c, valid);
            }
        }
    }
}

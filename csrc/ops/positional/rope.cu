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
 *   TILEOPS_HB heads per thread per step (1..16, default 4);  TILEOPS_PERSISTENT 1: the build
 *   holds tileops_rope_persistent (TILEOPS_THREADS its block), 0 (default): tileops_rope;
 *   TILEOPS_VEC G = 16 / E (the vector path: every pointer 16-byte aligned, every stride
 *   times E a multiple of 16, and G dividing R/2 for NeoX, R for GPT-J) or 1.
 *
 * ==== Kernels ============================================================================
 *   tileops_rope (any build; below) and tileops_rope_persistent (prefill, the vector builds:
 *   at the end of the file), with the same arguments and the same bits.
 *
 * ==== Launch =============================================================================
 *   tileops_rope: grid.y >= 1 splits each token's head slots, block.x = TT x tokens per block (<=
 *   TILEOPS_THREADS), TT threads per token (the kernel's comment below), grid.x any >= 1
 *   (grid-stride over tokens). The launch side is src/tileops/kernels/positional/rope.py. */
#include "../common/rows_common.cuh"

#if !defined(TILEOPS_RD) || !defined(TILEOPS_NEOX) || !defined(TILEOPS_POS64)
#error "rope.cu needs -DTILEOPS_RD, -DTILEOPS_NEOX, -DTILEOPS_POS64"
#endif
#if TILEOPS_RD < 2 || TILEOPS_RD % 2 || TILEOPS_RD > TILEOPS_N
#error "TILEOPS_RD must be even with 2 <= TILEOPS_RD <= TILEOPS_N"
#endif
#define RP_HALF (TILEOPS_RD / 2)
#ifndef TILEOPS_HB
#define TILEOPS_HB 4
#endif
#if TILEOPS_HB < 1 || TILEOPS_HB > 16
#error "TILEOPS_HB must be 1..16"
#endif
#if TILEOPS_VEC != 1 && ((TILEOPS_NEOX && RP_HALF % TILEOPS_G) || (!TILEOPS_NEOX && TILEOPS_RD % TILEOPS_G))
#error "the vector path needs G to divide R/2 (NeoX) or R (GPT-J)"
#endif
/* rotated units per head: NeoX groups of G pairs, GPT-J groups of G channels */
#define RP_ROT_UNITS (TILEOPS_NEOX ? (RP_HALF + TILEOPS_G - 1) / TILEOPS_G : (TILEOPS_RD + TILEOPS_G - 1) / TILEOPS_G)
#define RP_PASS_UNITS ((TILEOPS_N - TILEOPS_RD + TILEOPS_G - 1) / TILEOPS_G)
/* the pass-through groups are 16-byte aligned when R is a multiple of G */
#define RP_PASS_VEC (TILEOPS_VEC != 1 && TILEOPS_RD % TILEOPS_G == 0)

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

/* ---- one unit of a head: its loads, then its rotation and stores ---------------------- *
 * Unit u < RP_ROT_UNITS is rotated (NeoX: G channels of each half at i0 = u G and
 * R/2 + i0; GPT-J: G channels at e0 = u G, G/2 pairs); a higher unit is the pass-through
 * group j = u - RP_ROT_UNITS of channels [R + j G, ...). `cnt` is the unit's element count
 * (a last partial group on the scalar path). */
/* every unit a whole group: the pass-through channels (if any) and the rotated ones (each
 * half for NeoX) are multiples of G */
#define RP_WHOLE_UNITS ((TILEOPS_N - TILEOPS_RD) % TILEOPS_G == 0 && \
                        (TILEOPS_NEOX ? RP_HALF % TILEOPS_G == 0 : TILEOPS_RD % TILEOPS_G == 0))
TILEOPS_DEV int rp_count(int u) {
#if RP_WHOLE_UNITS
    (void)u;   /* a unit past the head's (u >= uq or uk) is never loaded or stored */
    return TILEOPS_G;
#else
    if (u >= RP_ROT_UNITS) {
        const int first = TILEOPS_RD + (u - RP_ROT_UNITS) * TILEOPS_G;
        return TILEOPS_N - first < TILEOPS_G ? TILEOPS_N - first : TILEOPS_G;
    }
#if TILEOPS_NEOX
    return RP_HALF - u * TILEOPS_G < TILEOPS_G ? RP_HALF - u * TILEOPS_G : TILEOPS_G;
#else
    return TILEOPS_RD - u * TILEOPS_G < TILEOPS_G ? TILEOPS_RD - u * TILEOPS_G : TILEOPS_G;
#endif
#endif
}
/* the unit's first element (its second, NeoX's b half, is R/2 further) */
TILEOPS_DEV int rp_first(int u) {
    return u >= RP_ROT_UNITS ? TILEOPS_RD + (u - RP_ROT_UNITS) * TILEOPS_G : u * TILEOPS_G;
}
TILEOPS_DEV void rp_load(const char *x, int u, int cnt, struct tileops_v4 *va, struct tileops_v4 *vb) {
    const int f = rp_first(u);
    if (u >= RP_ROT_UNITS) {
        *va = rp_ld(x + (long long)f * TILEOPS_E, cnt, RP_PASS_VEC);
        return;
    }
    *va = rp_ld(x + (long long)f * TILEOPS_E, cnt, TILEOPS_VEC != 1);
#if TILEOPS_NEOX
    *vb = rp_ld(x + (long long)(RP_HALF + f) * TILEOPS_E, cnt, TILEOPS_VEC != 1);
#else
    (void)vb;
#endif
}
/* the unit's cos and sin values (c: the token's cos row, sin at c + R/2) */
TILEOPS_DEV void rp_load_cs(const float *c, int u, int cnt, int valid, float *cs, float *sn) {
    if (u >= RP_ROT_UNITS)
        return;
#if TILEOPS_NEOX
    rp_ldf(c + u * TILEOPS_G, cnt, valid, cs);
    rp_ldf(c + RP_HALF + u * TILEOPS_G, cnt, valid, sn);
#else
    rp_ldf(c + u * TILEOPS_G / 2, cnt / 2, valid, cs);
    rp_ldf(c + RP_HALF + u * TILEOPS_G / 2, cnt / 2, valid, sn);
#endif
}
TILEOPS_DEV void rp_store(char *out, int u, int cnt, struct tileops_v4 va, struct tileops_v4 vb, const float *cs,
                          const float *sn) {
    const int f = rp_first(u), vec = TILEOPS_VEC != 1;
    if (u >= RP_ROT_UNITS) {
        rp_st(out + (long long)f * TILEOPS_E, va, cnt, RP_PASS_VEC);
        return;
    }
    float fa[TILEOPS_G], fb[TILEOPS_G];
    tileops_unpack(va, fa);
#if TILEOPS_NEOX
    tileops_unpack(vb, fb);
#pragma unroll
    for (int l = 0; l < TILEOPS_G; l++)
        rp_rotate(fa[l], fb[l], cs[l], sn[l], &fa[l], &fb[l]);
    rp_st(out + (long long)f * TILEOPS_E, tileops_pack(fa), cnt, vec);
    rp_st(out + (long long)(RP_HALF + f) * TILEOPS_E, tileops_pack(fb), cnt, vec);
#else
    (void)vb;
#pragma unroll
    for (int l = 0; l < TILEOPS_G / 2; l++)
        rp_rotate(fa[2 * l], fa[2 * l + 1], cs[l], sn[l], &fb[2 * l], &fb[2 * l + 1]);
    rp_st(out + (long long)f * TILEOPS_E, tileops_pack(fb), cnt, vec);
#endif
}

/* ---- a token's heads: where they lie, and one thread's HB of them ------------------------- */
struct rp_heads {
    const char *q, *k;            /* k 0: no key */
    char *qo, *ko;
    long long q_st, q_sh, k_st, k_sh, qo_st, qo_sh, ko_st, ko_sh;
    long long H;                  /* q's heads; k's follow them: heads H .. nh - 1 */
    int nh, uq, uk;               /* heads in all; units per head of q and of k */
};
/* heads h0 .. h0 + HB - 1 (those < nh) of token t, unit u: loaded into va (and vb, NeoX's
 * second halves) */
TILEOPS_DEV void rp_load_heads(const struct rp_heads *g, long long t, int h0, int u, int cnt, struct tileops_v4 *va,
                               struct tileops_v4 *vb) {
#pragma unroll
    for (int i = 0; i < TILEOPS_HB; i++) {
        const int h = h0 + i;
        if (h < g->H && u < g->uq)
            rp_load(g->q + (t * g->q_st + h * g->q_sh) * TILEOPS_E, u, cnt, &va[i], &vb[TILEOPS_NEOX ? i : 0]);
        else if (h >= g->H && h < g->nh && u < g->uk)
            rp_load(g->k + (t * g->k_st + (h - g->H) * g->k_sh) * TILEOPS_E, u, cnt, &va[i],
                    &vb[TILEOPS_NEOX ? i : 0]);
    }
}
/* the same heads rotated by (cs, sn) and stored to the outputs */
TILEOPS_DEV void rp_store_heads(const struct rp_heads *g, long long t, int h0, int u, int cnt,
                                const struct tileops_v4 *va, const struct tileops_v4 *vb, const float *cs,
                                const float *sn) {
#pragma unroll
    for (int i = 0; i < TILEOPS_HB; i++) {
        const int h = h0 + i;
        if (h < g->H && u < g->uq)
            rp_store(g->qo + (t * g->qo_st + h * g->qo_sh) * TILEOPS_E, u, cnt, va[i], vb[TILEOPS_NEOX ? i : 0], cs,
                     sn);
        else if (h >= g->H && h < g->nh && u < g->uk)
            rp_store(g->ko + (t * g->ko_st + (h - g->H) * g->ko_sh) * TILEOPS_E, u, cnt, va[i],
                     vb[TILEOPS_NEOX ? i : 0], cs, sn);
    }
}
/* unit u's cos / sin values of position p (NaN outside [0, P): nothing read there) */
TILEOPS_DEV void rp_load_pos_cs(const float *cache, long long P, long long p, int u, int cnt, float *cs, float *sn) {
    const int valid = p >= 0 && p < P;
    rp_load_cs(cache + (valid ? p : 0) * (long long)TILEOPS_RD, u, cnt, valid, cs, sn);
}
/* positions[t] */
TILEOPS_DEV long long rp_position(const void *positions, long long t) {
#if TILEOPS_POS64
    return ((const long long *)positions)[t];
#else
    return ((const int *)positions)[t];
#endif
}
/* the kernels' view of their arguments */
TILEOPS_DEV struct rp_heads rp_heads_of(const void *q, const void *k, void *q_out, void *k_out, long long H,
                                        long long Hk, long long q_st, long long q_sh, long long k_st, long long k_sh,
                                        long long qo_st, long long qo_sh, long long ko_st, long long ko_sh) {
    struct rp_heads g;
    g.q = (const char *)q;
    g.k = (const char *)k;
    g.qo = (char *)q_out;
    g.ko = (char *)k_out;
    g.q_st = q_st, g.q_sh = q_sh, g.k_st = k_st, g.k_sh = k_sh;
    g.qo_st = qo_st, g.qo_sh = qo_sh, g.ko_st = ko_st, g.ko_sh = ko_sh;
    g.H = H;
    g.nh = (int)H + (k ? (int)Hk : 0);
    g.uq = RP_ROT_UNITS + (q_out != q ? RP_PASS_UNITS : 0);
    g.uk = k ? RP_ROT_UNITS + (k_out != k ? RP_PASS_UNITS : 0) : 0;
    return g;
}

/* ---- the kernel ------------------------------------------------------------------------ *
 * A token's work is its heads (q's H, then k's Hk: NH) times UPH units per head (the larger
 * of q's and k's unit counts; a head with fewer skips the rest). A thread takes one unit u
 * and a slot s of the S = ceil(NH / HB) slots: heads s HB .. s HB + HB - 1, then S HB
 * further while heads remain. It reads its cos/sin values once for all of them and issues
 * the HB heads' loads before their first store (in place, a store may alias a later load
 * as far as the compiler knows). grid.y splits the S slots into ceil(S / grid.y) per
 * block (decode: one token's heads over several SMs); TT = min(UPH x that, THREADS)
 * threads serve a token (looping when more), the block serves ntid / TT tokens: the
 * launch side computes the same TT. */
#ifndef TILEOPS_PERSISTENT
#define TILEOPS_PERSISTENT 0
#endif
#if !TILEOPS_PERSISTENT
extern "C" __global__ void TILEOPS_BOUNDS
tileops_rope(const void *q, const void *k, const void *positions, const float *cache, void *q_out, void *k_out,
             long long T, long long H, long long Hk, long long P, long long q_st, long long q_sh, long long k_st,
             long long k_sh, long long qo_st, long long qo_sh, long long ko_st, long long ko_sh) {
    TILEOPS_PDL_PROLOGUE();
    const struct rp_heads g = rp_heads_of(q, k, q_out, k_out, H, Hk, q_st, q_sh, k_st, k_sh, qo_st, qo_sh, ko_st,
                                          ko_sh);
    const int uph = g.uq > g.uk ? g.uq : g.uk;
    const int slots = (g.nh + TILEOPS_HB - 1) / TILEOPS_HB;
    /* grid.y splits a token's slots (decode: few tokens, many heads), ys per block */
    const int ys = (slots + (int)tileops_nctaid_y() - 1) / (int)tileops_nctaid_y();
    const int s0 = (int)tileops_ctaid_y() * ys;
    const int tt = uph * ys < TILEOPS_THREADS ? uph * ys : TILEOPS_THREADS;
    const int tpb = (int)tileops_ntid() / tt;
    const int lt = (int)tileops_tid() / tt, j = (int)tileops_tid() - lt * tt;
    if (lt >= tpb)
        return;
    for (long long t = (long long)tileops_ctaid() * tpb + lt; t < T; t += (long long)tileops_nctaid() * tpb) {
        /* the position's load is issued first and used only after the first heads' loads:
         * the two memory latencies overlap */
        const long long p = rp_position(positions, t);
        for (int w = j; w < uph * ys; w += tt) {
            const int u = w % uph, s = s0 + w / uph, cnt = rp_count(u);
            if (s >= slots)
                break;
            float cs[8], sn[8];
            int have_cs = 0;
            for (int h0 = s * TILEOPS_HB; h0 < g.nh; h0 += slots * TILEOPS_HB) {
                struct tileops_v4 va[TILEOPS_HB], vb[TILEOPS_NEOX ? TILEOPS_HB : 1]; /* GPT-J: one load */
                rp_load_heads(&g, t, h0, u, cnt, va, vb);
                if (!have_cs) {
                    rp_load_pos_cs(cache, P, p, u, cnt, cs, sn);
                    have_cs = 1;
                }
                rp_store_heads(&g, t, h0, u, cnt, va, vb, cs, sn);
            }
        }
    }
}
#endif /* !TILEOPS_PERSISTENT */

/* ---- the prefill kernel: resident blocks walking tokens -------------------------------- *
 * From PREFILL_TOKENS_PER_SM x sm_count tokens on (the vector builds of two heads a thread;
 * kernels/positional/rope.py persistent_launch_shape), a block stays resident and walks
 * tokens t, t + stride, ... (stride = gridDim.x x tokens per block) as a two-stage
 * pipeline: while it rotates and stores token t it has already issued token t + stride's
 * q / k loads and cos / sin loads (whose position was loaded an iteration before), and the
 * position of t + 2 stride. tileops_rope instead takes a token and leaves, each token
 * waiting on its position, then its cos / sin row (Nsight, session 12: 47 % of DRAM peak at
 * 4096 tokens, warps on long scoreboard). H200, 4096 tokens, L2-cold: 1.06-1.13x the copy
 * floor against 1.12-1.23x (dev/NOTES.md, session 13). Each thread keeps one work item
 * (unit u of head slot s) for every token it walks, so a token takes TT = UPH x S threads
 * (S = ceil((H + Hk) / HB) slots) and a block TPB = ntid / TT tokens. The arithmetic per
 * element is rp_store's: tileops_rope's bits. Tokens are disjoint, so in place the next
 * token's loads never alias this token's stores.
 *
 * Launch: block >= TT threads (TPB x TT rounded up to a warp: the threads past TPB x TT
 * idle; TILEOPS_THREADS the block), grid.x any >= 1 (a few blocks an SM), grid.y 1. */
#if TILEOPS_PERSISTENT
extern "C" __global__ void TILEOPS_BOUNDS
tileops_rope_persistent(const void *q, const void *k, const void *positions, const float *cache, void *q_out,
                     void *k_out, long long T, long long H, long long Hk, long long P, long long q_st, long long q_sh,
                     long long k_st, long long k_sh, long long qo_st, long long qo_sh, long long ko_st,
                     long long ko_sh) {
    TILEOPS_PDL_PROLOGUE();
    const struct rp_heads g = rp_heads_of(q, k, q_out, k_out, H, Hk, q_st, q_sh, k_st, k_sh, qo_st, qo_sh, ko_st,
                                          ko_sh);
    const int uph = g.uq > g.uk ? g.uq : g.uk;
    const int slots = (g.nh + TILEOPS_HB - 1) / TILEOPS_HB;
    const int tt = uph * slots;
    const int tpb = (int)tileops_ntid() / tt;
    const int lt = (int)tileops_tid() / tt, j = (int)tileops_tid() - lt * tt;
    if (lt >= tpb)
        return;
    const int u = j % uph, s = j / uph, cnt = rp_count(u), h0 = s * TILEOPS_HB;
    const long long stride = (long long)tileops_nctaid() * tpb;
    long long t = (long long)tileops_ctaid() * tpb + lt;
    if (t >= T)
        return;

    struct tileops_v4 va[TILEOPS_HB], vb[TILEOPS_NEOX ? TILEOPS_HB : 1];
    float cs[8], sn[8];
    rp_load_heads(&g, t, h0, u, cnt, va, vb);
    rp_load_pos_cs(cache, P, rp_position(positions, t), u, cnt, cs, sn);
    long long p_next = t + stride < T ? rp_position(positions, t + stride) : 0;
    for (; t < T; t += stride) {
        const long long tn = t + stride;
        struct tileops_v4 na[TILEOPS_HB], nb[TILEOPS_NEOX ? TILEOPS_HB : 1];
        float ncs[8], nsn[8];
        if (tn < T) {   /* the next token's loads, in flight while this one is stored */
            rp_load_heads(&g, tn, h0, u, cnt, na, nb);
            rp_load_pos_cs(cache, P, p_next, u, cnt, ncs, nsn);
        }
        const long long p_after = tn + stride < T ? rp_position(positions, tn + stride) : 0;
        rp_store_heads(&g, t, h0, u, cnt, va, vb, cs, sn);
        if (tn >= T)
            break;
#pragma unroll
        for (int i = 0; i < TILEOPS_HB; i++) {
            va[i] = na[i];
            vb[TILEOPS_NEOX ? i : 0] = nb[TILEOPS_NEOX ? i : 0];
        }
#pragma unroll
        for (int l = 0; l < 8; l++) {
            cs[l] = ncs[l];
            sn[l] = nsn[l];
        }
        p_next = p_after;
    }
}
#endif /* TILEOPS_PERSISTENT */

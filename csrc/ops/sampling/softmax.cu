/* ops/sampling/softmax.cu: the GPU kernel of SoftmaxFwdOp, C-style CUDA C compiled at run
 * time by NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh
 * are spliced in by the runtime):
 *   probs[r, :] = softmax(logits[r, :] / temperature[r]), in float32, one rounding to the
 *   output's dtype.
 * z = x / t is an IEEE division (the value torch's `logits.float() / t` holds); M = max z
 * (a NaN passed over); e = exp(z - M) by ex2.approx (NaN stays NaN: a row with a NaN or a
 * +inf, or of -inf only, comes out NaN throughout, as torch gives it); S = sum e in a fixed
 * order; probs = e / S (IEEE division: div.rn's bits, S's reciprocal made once, below).
 *
 * ==== A row over a cluster, read once ======================================================
 * The row's CHUNK elements of a CTA (sampling_common.cuh) are read once: thread t takes
 * the slots t, t + THREADS, ... (OPT of them, 4 where the chunk allows: the launch rule),
 * a slot an octet of the chunk or, past the chunk's octets, a pad (z = -inf, e = 0). A
 * thread's loads of a batch (all its octets for a 16-bit row: 64 bytes) are issued, each
 * predicated, before the first is used. z is kept in shared memory (TILEOPS_STAGE 1:
 * OPT x THREADS slots of 8 floats, half h of slot o at (h OPT THREADS + o) x 4 floats: a
 * warp's 16-byte accesses are conflict-free), then e over it; the CTAs exchange their
 * maximum, then their sum, by st.async into every CTA's slots, counted by an mbarrier
 * (no release barrier on the path): the logits are read once and the probabilities
 * written once, the bytes of a copy. A 128256-element row is split over a cluster of 8
 * CTAs of 512 threads (64 KiB of slots each, 3 CTAs per SM; 152064: 80 KiB, 2 per SM).
 * TILEOPS_STAGE 2 (16-bit logits without a temperature) keeps the chunk's raw words in
 * registers instead (a thread's OPT x 16 bytes: 16-20 registers), converting them and
 * taking exp(z - M) again in passes 2 and 3, where stage 1 stores z, reads it, stores e and
 * reads e (Nsight, session 12: stage 1 stalls on that round trip, MIO throttle and short
 * scoreboard); the same values in the same order (ex2.approx is deterministic), so the
 * same bits, at 0.92-0.95x stage 1's time L2-cold (H200, B = 32-256 x 128256 bf16,
 * session 13's lab). With a temperature stage 1 stays: a registers build dividing by t in
 * every pass (t's reciprocal made once, below) spilled 92 bytes at 40 registers and took
 * 1.12-1.16x the staged build's time L2-cold (H100, session 34, B = 32-256 x 128256 bf16);
 * with the packed pass-1 maximum divided once (20 bytes spilled) 1.14-1.25x at 3 CTAs an SM
 * and 1.25-1.37x at 2 (session 35).
 * TILEOPS_STAGE 0 (a row too long for 8 CTAs' shared memory, or a GPU before sm_90 with
 * rows over one CTA's) reads the row three times instead (max, sum, write).
 * Order of the sum: each thread adds its slots' elements (slots in increasing order, each
 * slot's 8 in order; a pad adds +0, which changes no sum), the threads' sums by
 * tileops_row_sum's fixed tree, the CTAs' in rank order: fixed by V, the dtype and the
 * architecture (the launch rule), never by B.
 *
 * ==== Parameters (arg_format "ppp") ======================================================
 *   (const void *logits, const float *temperature /+ 0 when TILEOPS_TEMP 0 +/, void *probs)
 *   contiguous [rows, V]; grid.x = rows x TILEOPS_CLUSTER, block TILEOPS_THREADS, dynamic
 *   shared memory TILEOPS_OPT x TILEOPS_THREADS x 32 bytes when TILEOPS_STAGE is 1 (else 0).
 *
 * ==== Defines (besides sampling_common.cuh's) ============================================
 *   TILEOPS_ODTYPE the output's dtype (0 float32, 1 float16, 2 bfloat16); TILEOPS_OVEC 1
 *   when the output's rows are 16-byte aligned (pointer and V x its element size), else 0;
 *   TILEOPS_TEMP 1 with a temperature; TILEOPS_STAGE 0, 1 or 2 (above). */
#include "sampling_common.cuh"

#if !defined(TILEOPS_ODTYPE) || !defined(TILEOPS_OVEC) || !defined(TILEOPS_TEMP) || !defined(TILEOPS_STAGE)
#error "softmax.cu needs -DTILEOPS_ODTYPE, -DTILEOPS_OVEC, -DTILEOPS_TEMP, -DTILEOPS_STAGE"
#endif
#if TILEOPS_ODTYPE == 0
#define SMX_OE 4
#elif TILEOPS_ODTYPE == 1 || TILEOPS_ODTYPE == 2
#define SMX_OE 2
#else
#error "TILEOPS_ODTYPE must be 0 (float32), 1 (float16) or 2 (bfloat16)"
#endif
#if TILEOPS_STAGE == 2 && (TILEOPS_TEMP || TILEOPS_E != 2)
#error "TILEOPS_STAGE 2 (the words kept in registers) is a build for 16-bit logits without a temperature"
#endif

/* ---- the output's dtype ------------------------------------------------------------------ */
#if TILEOPS_ODTYPE == 2 && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800)
TILEOPS_DEV unsigned smx_bf16(float f) { /* round to nearest even, NaN kept quiet */
    unsigned u = tileops_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x0040u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
#endif
/* two floats -> one word of two 16-bit outputs (lo in the low half) */
TILEOPS_DEV unsigned smx_pack2(float lo, float hi) {
    unsigned r;
#if TILEOPS_ODTYPE == 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#elif TILEOPS_ODTYPE == 1
    asm("{ .reg .b16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h}; }" : "=r"(r) : "f"(lo), "f"(hi));
#elif TILEOPS_ODTYPE == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#elif TILEOPS_ODTYPE == 2
    r = smx_bf16(lo) | (smx_bf16(hi) << 16);
#else
    r = tileops_as_uint(lo);
    (void)hi;
#endif
    return r;
}
/* elements 8o .. 8o + 7 of an output row; those at or past V are not written */
TILEOPS_DEV void smx_st8(char *row, long long o, const float *f) {
    const long long e = 8 * o;
#if TILEOPS_OVEC
    if (e + 8 <= TILEOPS_N) {
        struct tileops_v4 v;
#if SMX_OE == 4
#pragma unroll
        for (int h = 0; h < 2; h++) {
#pragma unroll
            for (int k = 0; k < 4; k++)
                v.a[k] = tileops_as_uint(f[4 * h + k]);
            tileops_st16(row + e * 4 + 16 * h, v);
        }
#else
#pragma unroll
        for (int k = 0; k < 4; k++)
            v.a[k] = smx_pack2(f[2 * k], f[2 * k + 1]);
        tileops_st16(row + e * 2, v);
#endif
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (e + k < TILEOPS_N) {
#if SMX_OE == 4
            ((float *)row)[e + k] = f[k];
#else
            ((unsigned short *)row)[e + k] = (unsigned short)(smx_pack2(f[k], 0.0f) & 0xffffu);
#endif
        }
    }
}

/* ---- e / S, S's reciprocal made once -------------------------------------------------------
 * div.rn.f32 compiles to MUFU.RCP of the divisor, one Newton step (two FFMAs), q0 = e r,
 * the residual e - S q0 and q0 + r x residual (FFMAs), with FCHK sending operands outside
 * its range to a slow path. Pass 3 divides every element by the one sum S: smx_recip_of
 * makes r once (the same RCP and Newton step) and smx_div8 takes the per-element steps (the
 * same FFMAs, so the same bits) for an octet whose elements are all where no step rounds
 * outside the normal range (S in [1, 2^24] and e in [2^-96, 1], a residual exact when
 * subnormal: tests/runtime/test_softmax_division_steps.py; an unsigned compare of e's
 * bits). An octet with an element below that (e underflows wherever z - M < -66.5: a low
 * temperature, a masked logit's e = 0) takes the second tier: e in [+0, 2^-96) is scaled
 * by 2^64 (exact: e is 0 or at least 2^-149), taken through the same steps (in range, or 0,
 * whose steps give +0) and scaled back by 2^-64, exact, and so div.rn's bits, where the
 * scaled quotient q' is 0 or at least 2^-62 (the quotient normal; rounding commutes with
 * a power of 2 there). Only an octet with a quotient among the subnormals (z - M within
 * ln S of -87.3), a NaN row or S out of range takes div.rn, out of line, for each element.
 * Before the second tier every octet with an element below 2^-96 took div.rn: with a
 * temperature of 0.25-2 on N(0, 9) logits most octets did (Nsight, H100, session 36: its
 * FCHK path run 36256 times a call at B = 128 x 128256 bf16 -> bf16, and the call 1.45x
 * the time without a temperature). One MUFU an element fewer of three (two exp2).
 * SMX_FASTDIV 0 (a lab build) divides every element by div.rn inline, as before. */
#ifndef SMX_FASTDIV
#define SMX_FASTDIV 1
#endif
#ifndef SMX_TFASTDIV /* x / t's: below */
#define SMX_TFASTDIV 1
#endif
#define SMX_E_LO 0x0f800000u                /* 2^-96's bits */
#define SMX_E_SPAN (0x3f800000u - SMX_E_LO) /* to 1's */
struct smx_recip {
    float s, ns, r; /* S, -S, S's refined reciprocal */
    unsigned span;  /* SMX_E_SPAN + 1 where S is in [1, 2^24] (and SMX_FASTDIV), else 0 */
    unsigned lim;   /* S 2^-126's bits (exact): e at or above it has a normal quotient */
};
/* div.rn's reciprocal of d: MUFU.RCP and one Newton step */
TILEOPS_DEV float smx_refined_rcp(float d) {
    float r0, u, r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r0) : "f"(d));
    asm("fma.rn.f32 %0, %1, %2, 0f3F800000;" : "=f"(u) : "f"(-d), "f"(r0));
    asm("fma.rn.f32 %0, %1, %2, %1;" : "=f"(r) : "f"(r0), "f"(u));
    return r;
}
/* div.rn's per-element steps: q0 = n r, the residual n - d q0, q0 + r x residual (nd: -d) */
TILEOPS_DEV float smx_quot(float n, float nd, float r) {
    float q0, res, q;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(q0) : "f"(n), "f"(r));
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(res) : "f"(nd), "f"(q0), "f"(n));
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(q) : "f"(r), "f"(res), "f"(q0));
    return q;
}
TILEOPS_DEV struct smx_recip smx_recip_of(float S) {
    struct smx_recip d;
    d.s = S;
    d.ns = -S;
    d.r = smx_refined_rcp(S);
    d.span = SMX_FASTDIV && S >= 1.0f && S <= 16777216.0f ? SMX_E_SPAN + 1u : 0u;
    d.lim = tileops_as_uint(S * tileops_as_float(0x00800000u)); /* x 2^-126 */
    return d;
}
#if SMX_FASTDIV
static __device__ __attribute__((noinline)) float smx_div_slow(float e, float S) { return smp_div(e, S); }
#endif
/* p[k] = p[k] / S (div.rn's bits) for n (4 or 8) elements: the fast steps for all n where
 * all are in range (one branch), else div.rn for each */
TILEOPS_DEV void smx_divn(float *p, int n, struct smx_recip d) {
#if !SMX_FASTDIV
#pragma unroll
    for (int k = 0; k < n; k++)
        p[k] = smp_div(p[k], d.s);
#else
    unsigned worst = 0u;
#pragma unroll
    for (int k = 0; k < n; k++) {
        const unsigned off = tileops_as_uint(p[k]) - SMX_E_LO;
        worst = off > worst ? off : worst;
    }
    if (worst < d.span) {
#pragma unroll
        for (int k = 0; k < n; k++)
            p[k] = smx_quot(p[k], d.ns, d.r);
        return;
    }
    /* the second tier: each element 0 or in [lim, 1] (checked first), one in [+0, 2^-96)
     * scaled by 2^64 and back (above) */
    int ok = d.span != 0u;
#pragma unroll
    for (int k = 0; k < n; k++) {
        const unsigned u = tileops_as_uint(p[k]);
        ok &= u == 0u || u - d.lim <= 0x3f800000u - d.lim;
    }
    if (ok) {
#pragma unroll
        for (int k = 0; k < n; k++) {
            const int sc = tileops_as_uint(p[k]) < SMX_E_LO;
            float v, q;
            asm("mul.rn.f32 %0, %1, %2;" : "=f"(v) : "f"(p[k]), "f"(tileops_as_float(sc ? 0x5f800000u : 0x3f800000u)));
            q = smx_quot(v, d.ns, d.r); /* v: e x 2^64 (or 1) above, q x 2^-64 (or 1) below */
            asm("mul.rn.f32 %0, %1, %2;" : "=f"(p[k]) : "f"(q), "f"(tileops_as_float(sc ? 0x1f800000u : 0x3f800000u)));
        }
    } else {
#pragma unroll
        for (int k = 0; k < n; k++)
            p[k] = smx_div_slow(p[k], d.s);
    }
#endif
}
TILEOPS_DEV void smx_div8(float *p, struct smx_recip d) { smx_divn(p, 8, d); }

/* ---- float32 probabilities by whole sectors ----------------------------------------------
 * A thread's octet is 32 contiguous bytes of float32 output, so a warp's 16-byte store of
 * one half of each lane's octet writes half of each of 32 sectors of 32 bytes: twice the
 * L2 write requests of whole ones. That, not the arithmetic or the exchanges, bounded the
 * kernel (H200, session 30, bf16 -> float32 128256, L2-cold: the op 1.56-1.63x the copy's
 * time, the same build with a warp's stores over 512 contiguous bytes 1.09-1.15x;
 * dev/patches/smx_ablate_coalesced.patch, in git history at eee5af6). So where every
 * octet of the output row is whole and 16-byte aligned (SMX_XPOSE), a warp stores its 32
 * consecutive octets (1 KB) as two rows of 512 bytes: lane L the floats 4L .. 4L + 3 of
 * each, half L & 1 of the octets L / 2 and 16 + L / 2. The registers build passes each
 * lane's octet through a 1 KB buffer of the warp in shared memory (write, bar.warp.sync, read, bar.warp.sync; the halves of a lane
 * swapped when bit 2 of its lane is set: neither side has a bank conflict); the staged
 * build reads those halves of e from its slots. The same values: the same bits. Measured
 * with the packed pass-1 maximum below (H100, session 33, bf16 -> float32, L2-cold): 128256
 * B = 32 / 128 / 256 1.61 / 1.39 / 1.33x -> 1.20 / 1.12 / 1.06x the copy's time. */
#define SMX_XPOSE (SMX_OE == 4 && TILEOPS_OVEC && TILEOPS_N % 8 == 0)
/* 16 bytes to / from shared memory at a (the staged slots, the warp's buffer) */
TILEOPS_DEV void smx_sts4(unsigned a, const float *v) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(a), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                 : "memory");
}
TILEOPS_DEV void smx_lds4(unsigned a, float *v) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(a)
                 : "memory");
}
#if SMX_XPOSE
TILEOPS_DEV void smx_st4(char *at, const float *f) {
    struct tileops_v4 v;
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = tileops_as_uint(f[k]);
    tileops_st16(at, v);
}
/* the 16 bytes 512 on from a (an immediate offset: no second address held) */
TILEOPS_DEV void smx_lds4_512(unsigned a, float *v) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4+512];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(a)
                 : "memory");
}
TILEOPS_DEV void smx_warp_sync(void) { asm volatile("bar.warp.sync 0xffffffff;" ::: "memory"); }
/* The lane's two addresses in the warp's 1 KB buffer b: where its octet's half 0 goes (half
 * 1 at wr ^ 16: the halves swapped where bit 2 of the lane is set), and where it reads half
 * L & 1 of the warp's octet L / 2 (of octet 16 + L / 2: 512 bytes on), whose halves were
 * swapped by bit 2 of L / 2, bit 3 of L. */
struct smx_xaddr {
    unsigned wr, rd;
};
TILEOPS_DEV struct smx_xaddr smx_xaddr_of(unsigned b, unsigned lane) {
    struct smx_xaddr a;
    a.wr = b + 32u * lane + 16u * ((lane >> 2) & 1u);
    a.rd = b + 32u * (lane >> 1) + 16u * ((lane & 1u) ^ ((lane >> 3) & 1u));
    return a;
}
/* Every lane of the warp calls it with its octet p (the warp's octets: 32 consecutive, the
 * first's output at yw; those at or past nv of them not stored); a: its addresses in the
 * warp's buffer (two registers held over the calls: the other two addresses are an xor
 * made each call, volatile so not kept, and an immediate offset). */
TILEOPS_DEV void smx_st_warp(char *yw, int nv, const float *p, struct smx_xaddr a, unsigned lane) {
    unsigned wr1;
    asm volatile("xor.b32 %0, %1, 16;" : "=r"(wr1) : "r"(a.wr));
    smx_sts4(a.wr, p);
    smx_sts4(wr1, p + 4);
    smx_warp_sync();
    float q[2][4];
    smx_lds4(a.rd, q[0]);
    smx_lds4_512(a.rd, q[1]);
    smx_warp_sync(); /* read before the warp's next write */
#pragma unroll
    for (int g = 0; g < 2; g++)
        if (16 * g + (int)(lane >> 1) < nv)
            smx_st4(yw + 512 * g + 16 * lane, q[g]);
}
#endif

/* ---- octets of the CTA's chunk --------------------------------------------------------
 * Slot o (0 <= o < SMX_SLOTS = OPT x THREADS) is octet o of the chunk when o < no, else a
 * pad whose z is -inf (exp gives 0: the sum is unchanged). A thread's loads of a batch are
 * all issued (predicated, the pad's words the fill) before the first is used. */
#define SMX_SLOTS (TILEOPS_OPT * TILEOPS_THREADS)
#define SMX_ALLFULL (TILEOPS_VEC != 1 && TILEOPS_N % 8 == 0) /* every octet in the row is whole */
#if TILEOPS_E == 4
#define SMX_FILLW 0xff800000u /* a word of the fill: -inf */
#elif TILEOPS_DTYPE == 1
#define SMX_FILLW 0xfc00fc00u
#else
#define SMX_FILLW 0xff80ff80u
#endif
/* Pass 1 of the registers build takes the maximum of the words as they are, two 16-bit
 * lanes an instruction (max.f16x2 / max.bf16x2: a NaN passed over, as smp_max; exact, as
 * every 16-bit value is a float32), and converts only the two lanes of the result: the same
 * M (the sign of a zero M changes no exp(z - M)). */
#if TILEOPS_STAGE == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define SMX_PACKED_MAX 1
TILEOPS_DEV unsigned smx_max2(unsigned a, unsigned b) {
    unsigned r;
#if TILEOPS_DTYPE == 1
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#else
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#endif
    return r;
}
#else
#define SMX_PACKED_MAX 0
#endif
/* octets of a batch: 64 bytes a thread (a 16-bit thread's 4 octets at once; its 5 when it
 * has 5: 80 bytes); 32 with a float32 temperature build (its divisions' registers beside
 * the words: no spill at 40) */
#if TILEOPS_E == 4 && TILEOPS_TEMP
#define SMX_BATCH 1
#elif TILEOPS_E == 2 && TILEOPS_OPT == 5
#define SMX_BATCH 5
#else
#define SMX_BATCH SMP_BATCH
#endif
#if TILEOPS_OPT <= 2 * SMX_BATCH || TILEOPS_STAGE == 2 /* stage 2: kept[j] needs j known */
#define SMX_UNROLL _Pragma("unroll")
#else
#define SMX_UNROLL _Pragma("unroll 1")
#endif
/* octet o of the chunk (o0 its first octet in the row) is whole and on the vector path */
TILEOPS_DEV int smx_whole(long long o0, int no, int o) {
#if SMX_ALLFULL
    (void)o0;
    return o < no;
#elif TILEOPS_VEC != 1
    return o < no && 8 * (o0 + o) + 8 <= TILEOPS_N;
#else
    (void)o0, (void)no, (void)o;
    return 0;
#endif
}
/* the 16 bytes at p when `pred`, else the fill */
TILEOPS_DEV struct tileops_v4 smx_ld16_if(const char *p, int pred) {
    struct tileops_v4 v;
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = SMX_FILLW;
    asm volatile("{ .reg .pred q; setp.ne.s32 q, %4, 0; @q ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%5]; }"
                 : "+r"(v.a[0]), "+r"(v.a[1]), "+r"(v.a[2]), "+r"(v.a[3])
                 : "r"(pred), "l"(p));
    return v;
}
/* the loads of slots j0 .. j0 + SMX_BATCH - 1 of the thread (those at or past OPT: none) */
TILEOPS_DEV void smx_issue(const char *xt, long long o0, int no, int j0, unsigned tid, struct tileops_v4 (*w)[SMP_WORDS],
                           int *whole) {
#pragma unroll
    for (int b = 0; b < SMX_BATCH; b++) {
        const int o = (j0 + b) * TILEOPS_THREADS + (int)tid;
        whole[b] = j0 + b < TILEOPS_OPT && smx_whole(o0, no, o);
#pragma unroll
        for (int h = 0; h < SMP_WORDS; h++)
            w[b][h] = smx_ld16_if(xt + (long long)(j0 + b) * (TILEOPS_THREADS * 8 * TILEOPS_E) + 16 * h, whole[b]);
    }
}
/* ---- x / t, t's reciprocal made once ---------------------------------------------------
 * The same steps as e / S above (div.rn's fast path: RCP and Newton step once, then q0,
 * the residual and the correction) for an octet whose elements are all in [2^-64, 2^64) in
 * magnitude, where t is in [2^-32, 2^32]: quotients in (2^-96, 2^96], residuals far above
 * the subnormals (tests/runtime/test_softmax_division_steps.py). The octet's least and
 * greatest magnitudes take a min and a max an element (a NaN is passed over and comes out
 * NaN from the steps). Another octet, for such a t, takes the second tier: a zero or an
 * infinity of either sign (a masked logit's -inf) is its own quotient, each other element
 * must be in that range; any other octet (a subnormal, a NaN or a logit past 2^64 in it) or
 * t (negative, tiny, huge, NaN) takes div.rn for each element: div.rn's value everywhere
 * (a NaN's payload aside: every such row comes out NaN). div.rn's own path costs an element MUFU.RCP, its
 * Newton step, FCHK and a branch besides the three steps: with a temperature the op took
 * 1.03-1.24x this build's time L2-cold (H100, session 34, bf16 -> float32 and bf16 -> bf16,
 * B = 32-256, dev/patches/smx_tdiv_rn.patch). SMX_TFASTDIV 0 (that lab build) divides every
 * element by div.rn inline. */
#define SMX_X_LO 0x1f800000u                /* 2^-64's bits */
#define SMX_X_SPAN (0x5f800000u - SMX_X_LO) /* to 2^64's (excluded) */
struct smx_tdiv {
    float t, r; /* t, its refined reciprocal */
    int fast;   /* t in [2^-32, 2^32] (and SMX_TFASTDIV) */
};
TILEOPS_DEV struct smx_tdiv smx_tdiv_of(float t) {
    struct smx_tdiv d;
    d.t = t;
    d.r = smx_refined_rcp(t);
    d.fast = SMX_TFASTDIV && t >= 2.3283064e-10f && t <= 4294967296.0f;
    return d;
}
TILEOPS_DEV void smx_tdiv8(float *z, struct smx_tdiv d) {
#if SMX_TFASTDIV
    float lo, hi;
    asm("abs.f32 %0, %1;" : "=f"(lo) : "f"(z[0]));
    hi = lo;
#pragma unroll
    for (int k = 1; k < 8; k++) {
        float a;
        asm("abs.f32 %0, %1;" : "=f"(a) : "f"(z[k]));
        asm("min.f32 %0, %0, %1;" : "+f"(lo) : "f"(a));
        asm("max.f32 %0, %0, %1;" : "+f"(hi) : "f"(a));
    }
    if (d.fast && lo >= 5.421010862e-20f && hi < 1.844674407e19f) { /* [2^-64, 2^64) */
#pragma unroll
        for (int k = 0; k < 8; k++)
            z[k] = smx_quot(z[k], -d.t, d.r);
        return;
    }
    if (d.fast && lo == tileops_as_float(0x7f800000u)) /* +-inf only: inf / t = inf, its sign kept */
        return;
    if (d.fast) { /* the second tier: +-0 and +-inf are their own quotients, the rest in range */
        int ok = 1;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const unsigned a = tileops_as_uint(z[k]) & 0x7fffffffu;
            ok &= a == 0u || a == 0x7f800000u || a - SMX_X_LO < SMX_X_SPAN;
        }
        if (ok) {
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const unsigned a = tileops_as_uint(z[k]) & 0x7fffffffu;
                if (a != 0u && a != 0x7f800000u)
                    z[k] = smx_quot(z[k], -d.t, d.r);
            }
            return;
        }
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; k++)
        z[k] = smp_div(z[k], d.t);
}

/* z of slot o: x / t (IEEE) of its elements, -inf for a pad or past V; w: its words (or the
 * fill) when whole or a pad, else its elements are loaded one by one */
TILEOPS_DEV void smx_z8(const char *xrow, long long o0, int no, int o, int whole,
                        const struct tileops_v4 *w, struct smx_tdiv td, float *z) {
    if (SMX_ALLFULL || whole || o >= no) {
#pragma unroll
        for (int h = 0; h < SMP_WORDS; h++)
            tileops_unpack(w[h], z + 4 * h);
#if TILEOPS_TEMP
        if (o < no) /* a pad stays -inf whatever t's sign */
            smx_tdiv8(z, td);
#else
        (void)no, (void)td;
#endif
    } else {
        const long long e = 8 * (o0 + o);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            z[k] = SMP_NINF;
            if (e + k < TILEOPS_N) {
#if TILEOPS_TEMP
                z[k] = smp_div(tileops_ld_elem(xrow, e + k), td.t);
#else
                z[k] = tileops_ld_elem(xrow, e + k);
#endif
            }
        }
    }
}

#if TILEOPS_STAGE == 1
/* The staged slots: half h (elements 4h .. 4h + 3) of slot o at float (h SLOTS + o) x 4, a
 * 16-byte access per half (a warp's 32 consecutive slots: 512 contiguous bytes, no bank
 * conflict). z after pass 1, e after pass 2. */
extern __shared__ __attribute__((aligned(16))) float smx_stage[];
/* the address of half h of slot o */
TILEOPS_DEV unsigned smx_slot_half(int o, unsigned h) {
    return smp_smem_addr(smx_stage) + 16u * ((unsigned)o + SMX_SLOTS * h);
}
TILEOPS_DEV void smx_put(int o, const float *v) {
#pragma unroll
    for (unsigned h = 0; h < 2; h++)
        smx_sts4(smx_slot_half(o, h), v + 4 * h);
}
TILEOPS_DEV void smx_get(int o, float *v) {
#pragma unroll
    for (unsigned h = 0; h < 2; h++)
        smx_lds4(smx_slot_half(o, h), v + 4 * h);
}
#endif

/* ---- the cluster's exchange -------------------------------------------------------------
 * Each CTA sends its partial (max, then sum) into slot[rank] of every CTA's shared memory
 * by st.async, counted by the receiver's mbarrier (4 x CLUSTER bytes expected): no
 * release barrier (a MEMBAR.ALL.GPU each) on the path. The mbarriers are made before the
 * loads and published by a relaxed cluster arrive, waited for before the first send; a
 * last relaxed cluster barrier keeps every CTA alive until all have received. The slots
 * are combined in rank order (the same value as a combine in any CTA). */
#if TILEOPS_CLUSTER > 1
TILEOPS_DEV void smx_cluster_arrive_relaxed(void) { asm volatile("barrier.cluster.arrive.relaxed;" ::: "memory"); }
TILEOPS_DEV void smx_mbar_init(smp_u64 *bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smp_smem_addr(bar)) : "memory");
}
TILEOPS_DEV void smx_mbar_publish(void) { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
/* v into slot[rank] of every CTA (one thread calls it) */
TILEOPS_DEV void smx_send(float v, float *slot, smp_u64 *bar, unsigned rank) {
    const unsigned a = smp_smem_addr(slot + rank), b = smp_smem_addr(bar);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(4 * TILEOPS_CLUSTER)
                 : "memory");
#pragma unroll
    for (unsigned r = 0; r < TILEOPS_CLUSTER; r++)
        asm volatile("{ .reg .u32 ra, rb; mapa.shared::cluster.u32 ra, %0, %2; mapa.shared::cluster.u32 rb, %1, %2; "
                     "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [ra], %3, [rb]; }" ::"r"(a),
                     "r"(b), "r"(r), "r"(tileops_as_uint(v))
                     : "memory");
}
/* every CTA's partial received (the mbarrier's first phase) */
TILEOPS_DEV void smx_received(smp_u64 *bar) {
    asm volatile("{ .reg .pred p; SMX_WAIT: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0; @!p bra SMX_WAIT; }" ::"r"(
                     smp_smem_addr(bar))
                 : "memory");
}
#endif
/* the CTAs' v (every thread's) combined over the cluster: the maximum, or the sum */
TILEOPS_DEV float smx_combine(float v, float *slot, smp_u64 *bar, unsigned tid, int sum) {
#if TILEOPS_CLUSTER > 1
    if (tid == 0)
        smx_send(v, slot, bar, smp_rank_in_cluster());
    smx_received(bar);
    float a = slot[0];
#pragma unroll
    for (int r = 1; r < TILEOPS_CLUSTER; r++)
        a = sum ? tileops_add(a, slot[r]) : smp_max(a, slot[r]);
    return a;
#else
    (void)slot, (void)bar, (void)tid, (void)sum;
    return v;
#endif
}

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_softmax(const void *x, const float *temperature,
                                                                          void *y) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ float red[TILEOPS_WARPS];
    __shared__ float slots[2][TILEOPS_CLUSTER];
    __shared__ __attribute__((aligned(8))) smp_u64 bars[2];
#if SMX_XPOSE && TILEOPS_STAGE == 2
    __shared__ __attribute__((aligned(32))) float xbuf[TILEOPS_THREADS * 8]; /* 1 KB a warp (32-aligned: smx_st_warp xors bit 4) */
#endif
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), o0 = c0 / 8; /* o0: the chunk's first octet */
    const int no = (int)((smp_chunk_count(c0) + 7) / 8);                       /* the chunk's octets */
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    char *yrow = (char *)y + row * (long long)TILEOPS_N * SMX_OE;
    const char *xt = xrow + (o0 + tid) * (8 * TILEOPS_E); /* the thread's first octet; slot j: j THREADS on */
#if TILEOPS_CLUSTER > 1
    if (tid == 0) {
        smx_mbar_init(&bars[0]);
        smx_mbar_init(&bars[1]);
        smx_mbar_publish();
    }
    smx_cluster_arrive_relaxed(); /* waited for before the first send */
#endif
#if TILEOPS_TEMP
    const struct smx_tdiv td = smx_tdiv_of(temperature[row]);
#else
    const struct smx_tdiv td = {1.0f, 1.0f, 0};
    (void)temperature;
#endif
    /* pass 1: z (kept on chip: stage 1 z, stage 2 the words), the maximum */
    float m = SMP_NINF;
#if TILEOPS_STAGE == 2
    struct tileops_v4 kept[TILEOPS_OPT][SMP_WORDS];
#endif
#if SMX_PACKED_MAX
    unsigned mw = SMX_FILLW; /* the lanes' maximum of the words taken whole */
#endif
    SMX_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMX_BATCH) {
        struct tileops_v4 w[SMX_BATCH][SMP_WORDS];
        int whole[SMX_BATCH];
        smx_issue(xt, o0, no, j0, tid, w, whole);
#pragma unroll
        for (int b = 0; b < SMX_BATCH; b++) {
            if (j0 + b < TILEOPS_OPT) {
                const int o = (j0 + b) * TILEOPS_THREADS + (int)tid;
#if TILEOPS_STAGE == 2
#pragma unroll
                for (int h = 0; h < SMP_WORDS; h++)
                    kept[j0 + b][h] = w[b][h];
#endif
#if SMX_PACKED_MAX
                if (SMX_ALLFULL || whole[b] || o >= no) { /* the words, or the fill (-inf) */
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        mw = smx_max2(mw, w[b][0].a[k]);
                    continue;
                }
#endif
                float z[8];
                smx_z8(xrow, o0, no, o, whole[b], w[b], td, z);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    m = smp_max(m, z[k]);
#if TILEOPS_STAGE == 1
                smx_put(o, z);
#endif
            }
        }
    }
#if SMX_PACKED_MAX
    {
        const struct tileops_v4 v = {{mw, mw, mw, mw}};
        float f[8];
        tileops_unpack(v, f);
        m = smp_max(m, smp_max(f[0], f[1]));
    }
#endif
    m = smp_block_max(m, red, tid);
#if TILEOPS_CLUSTER > 1
    smp_cluster_wait(); /* every CTA's mbarriers are made */
#endif
    const float M = smx_combine(m, slots[0], &bars[0], tid, 0);
    /* pass 2: e = exp(z - M) (kept on chip), its sum (a pad adds +0: the same sum) */
    float s = 0.0f;
#if TILEOPS_STAGE == 2
#pragma unroll
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
        float z[8];
        smx_z8(xrow, o0, no, o, smx_whole(o0, no, o), kept[j], td, z);
#pragma unroll
        for (int k = 0; k < 8; k++)
            s = tileops_add(s, smp_exp(tileops_add(z[k], -M)));
    }
#elif TILEOPS_STAGE == 1
    SMX_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
        float e[8];
        smx_get(o, e);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            e[k] = smp_exp(tileops_add(e[k], -M)); /* exp(-inf - M) = 0 */
            s = tileops_add(s, e[k]);
        }
        smx_put(o, e);
    }
#else
    SMX_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMX_BATCH) {
        struct tileops_v4 w[SMX_BATCH][SMP_WORDS];
        int whole[SMX_BATCH];
        smx_issue(xt, o0, no, j0, tid, w, whole);
#pragma unroll
        for (int b = 0; b < SMX_BATCH; b++) {
            if (j0 + b < TILEOPS_OPT) {
                const int o = (j0 + b) * TILEOPS_THREADS + (int)tid;
                float z[8];
                smx_z8(xrow, o0, no, o, whole[b], w[b], td, z);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    s = tileops_add(s, smp_exp(tileops_add(z[k], -M)));
            }
        }
    }
#endif
    s = smp_block_sum(s, red, tid);
    const float S = smx_combine(s, slots[1], &bars[1], tid, 1);
#if TILEOPS_CLUSTER > 1
    smx_cluster_arrive_relaxed(); /* this CTA has received all: the others may exit after their wait */
#endif
    /* pass 3: probs = e / S (e kept, or exp(z - M) again) */
    const struct smx_recip rS = smx_recip_of(S);
#if TILEOPS_STAGE == 2
#if SMX_XPOSE
    const unsigned lane = tid & 31u;
    const struct smx_xaddr xa = smx_xaddr_of(smp_smem_addr(xbuf) + 32u * (tid - lane), lane);
#endif
#pragma unroll
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
#if !SMX_XPOSE
        if (o >= no)
            continue;
#endif
        float p[8]; /* a pad's (whole sectors: the warp stores together): exp(-inf - M) / S = 0, not stored */
        smx_z8(xrow, o0, no, o, smx_whole(o0, no, o), kept[j], td, p);
#pragma unroll
        for (int k = 0; k < 8; k++)
            p[k] = smp_exp(tileops_add(p[k], -M));
        smx_div8(p, rS);
#if SMX_XPOSE
        const int ow = o - (int)lane; /* the warp's first octet */
        smx_st_warp(yrow + 32 * (o0 + ow), no - ow, p, xa, lane);
#else
        smx_st8(yrow, o0 + o, p);
#endif
    }
#elif TILEOPS_STAGE == 1 && SMX_XPOSE
    const unsigned lane = tid & 31u;
    SMX_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int ow = j * TILEOPS_THREADS + (int)(tid - lane); /* the warp's first octet */
#pragma unroll
        for (int g = 0; g < 2; g++) {
            const int o = ow + 16 * g + (int)(lane >> 1);
            float q[4];
            smx_lds4(smx_slot_half(o, lane & 1u), q);
            smx_divn(q, 4, rS);
            if (o < no)
                smx_st4(yrow + 32 * (o0 + ow) + 512 * g + 16 * lane, q);
        }
    }
#elif TILEOPS_STAGE == 1
    SMX_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const int o = j * TILEOPS_THREADS + (int)tid;
        float p[8];
        smx_get(o, p);
        smx_div8(p, rS);
        if (o < no)
            smx_st8(yrow, o0 + o, p);
    }
#else
    SMX_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMX_BATCH) {
        struct tileops_v4 w[SMX_BATCH][SMP_WORDS];
        int whole[SMX_BATCH];
        smx_issue(xt, o0, no, j0, tid, w, whole);
#pragma unroll
        for (int b = 0; b < SMX_BATCH; b++) {
            const int o = (j0 + b) * TILEOPS_THREADS + (int)tid;
            if (j0 + b < TILEOPS_OPT && o < no) {
                float p[8];
                smx_z8(xrow, o0, no, o, whole[b], w[b], td, p);
#pragma unroll
                for (int k = 0; k < 8; k++)
                    p[k] = smp_exp(tileops_add(p[k], -M));
                smx_div8(p, rS);
                smx_st8(yrow, o0 + o, p);
            }
        }
    }
#endif
    smp_cluster_wait();
}

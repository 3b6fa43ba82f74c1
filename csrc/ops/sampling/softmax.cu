/* ops/sampling/softmax.cu: the GPU kernel of SoftmaxFwdOp, C-style CUDA C compiled at run
 * time by NVRTC with no builtin headers (sampling_common.cuh and ../common/rows_common.cuh
 * are spliced in by the runtime):
 *   probs[r, :] = softmax(logits[r, :] / temperature[r]), in float32, one rounding to the
 *   output's dtype.
 * z = x / t is an IEEE division (the value torch's `logits.float() / t` holds); M = max z
 * (a NaN passed over); e = exp(z - M) by ex2.approx (NaN stays NaN: a row with a NaN or a
 * +inf, or of -inf only, comes out NaN throughout, as torch gives it); S = sum e in a fixed
 * order; probs = e / S (IEEE division).
 *
 * ==== A row over a cluster, read once ======================================================
 * The row's CHUNK elements of a CTA (sampling_common.cuh) are read once (a thread's octets
 * in batches of SMP_BATCH loads in flight), z kept in shared
 * memory (TILEOPS_STAGE 1: CHUNK floats of dynamic shared memory, element k of octet o at
 * k x CHUNK / 8 + o: a warp's accesses hit 32 banks), and the CTAs exchange
 * their maximum, then their sum, through distributed shared memory: the logits are read
 * once and the probabilities written once, the bytes of a copy. A 128256-element row of
 * float32 is 501 KiB, more than one SM holds: it is split over a cluster of 8 CTAs of
 * 63 KiB each (152064: 74 KiB each), 2 to 3 CTAs per SM. TILEOPS_STAGE 0 (a row too long
 * for 8 CTAs' shared memory, or a GPU before sm_90 with rows over one CTA's) reads the
 * row three times instead (max, sum, write).
 * Order of the sum: each thread adds its elements (octets in increasing order, each
 * octet's 8 in order), the threads' sums by tileops_row_sum's fixed tree, the CTAs' in
 * rank order: fixed by V, the dtype and the architecture (the launch rule), never by B.
 *
 * ==== Parameters (arg_format "ppp") ======================================================
 *   (const void *logits, const float *temperature /+ 0 when TILEOPS_TEMP 0 +/, void *probs)
 *   contiguous [rows, V]; grid.x = rows x TILEOPS_CLUSTER, block TILEOPS_THREADS, dynamic
 *   shared memory TILEOPS_CHUNK x 4 bytes when TILEOPS_STAGE (else 0).
 *
 * ==== Defines (besides sampling_common.cuh's) ============================================
 *   TILEOPS_ODTYPE the output's dtype (0 float32, 1 float16, 2 bfloat16); TILEOPS_OVEC 1
 *   when the output's rows are 16-byte aligned (pointer and V x its element size), else 0;
 *   TILEOPS_TEMP 1 with a temperature; TILEOPS_STAGE 1 or 0 (above). */
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

/* z of octet j0 + b of a thread's batch (smp_batch_octet), divided by t */
TILEOPS_DEV void smx_z(const char *xrow, long long o0, long long no, int j0, int b, unsigned tid, int full,
                       const struct tileops_v4 *w, float t, float *z) {
    smp_batch_octet(xrow, o0, no, j0, b, tid, full, w, SMP_NINF, z);
#if TILEOPS_TEMP
#pragma unroll
    for (int k = 0; k < 8; k++)
        z[k] = smp_div(z[k], t);
#else
    (void)t;
#endif
}
#if TILEOPS_STAGE
extern __shared__ __attribute__((aligned(16))) float smx_stage[]; /* z, then e, of the CTA's chunk */
#endif
/* octet j0 + b's value kept by the previous pass: from shared memory (staged), else z
 * loaded again (w: the batch's words when `full`) */
TILEOPS_DEV void smx_again(const char *xrow, long long o0, long long no, int j0, int b, unsigned tid, int full,
                           const struct tileops_v4 *w, float t, float *z) {
#if TILEOPS_STAGE
    const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
#pragma unroll
    for (int k = 0; k < 8; k++)
        z[k] = smx_stage[k * SMP_NO + o];
    (void)xrow, (void)o0, (void)no, (void)full, (void)w, (void)t;
#else
    smx_z(xrow, o0, no, j0, b, tid, full, w, t, z);
#endif
}
/* the batch's loads (when full) */
TILEOPS_DEV int smx_issue(const char *xrow, long long o0, long long no, int j0, unsigned tid,
                          struct tileops_v4 (*w)[SMP_WORDS]) {
    const int full = smp_batch_full(o0, no, j0, SMP_BATCH, tid);
    if (full) {
#pragma unroll
        for (int b = 0; b < SMP_BATCH; b++)
            smp_ld_raw(xrow, o0 + (long long)(j0 + b) * TILEOPS_THREADS + tid, TILEOPS_E, w[b]);
    }
    return full;
}

extern "C" __global__ void TILEOPS_BOUNDS SMP_CLUSTER_DIMS tileops_softmax(const void *x, const float *temperature,
                                                                          void *y) {
    __shared__ float red[TILEOPS_WARPS];
    __shared__ float slots[2];
    const unsigned tid = tileops_tid();
    const long long row = smp_row(), c0 = smp_chunk_first(), n = smp_chunk_count(c0);
    const long long no = (n + 7) / 8, o0 = c0 / 8; /* this CTA's octets, the first's index in the row */
    const char *xrow = (const char *)x + row * (long long)TILEOPS_N * TILEOPS_E;
    char *yrow = (char *)y + row * (long long)TILEOPS_N * SMX_OE;
#if TILEOPS_TEMP
    const float t = temperature[row];
#else
    const float t = 1.0f;
    (void)temperature;
#endif
    /* pass 1: z (kept on chip), the maximum */
    float m = SMP_NINF;
    SMP_BATCH_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMP_BATCH) {
        struct tileops_v4 w[SMP_BATCH][SMP_WORDS];
        const int full = smx_issue(xrow, o0, no, j0, tid, w);
#pragma unroll
        for (int b = 0; b < SMP_BATCH; b++) {
            const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
            if (o < no) {
                float z[8];
                smx_z(xrow, o0, no, j0, b, tid, full, w[b], t, z);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    m = smp_max(m, z[k]);
#if TILEOPS_STAGE
                    smx_stage[k * SMP_NO + o] = z[k];
#endif
                }
            }
        }
    }
    const float M = smp_cluster_f32(smp_block_max(m, red, tid), &slots[0], tid, 0);
    /* pass 2: e = exp(z - M) (kept on chip), its sum */
    float s = 0.0f;
    SMP_BATCH_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMP_BATCH) {
#if TILEOPS_STAGE
        struct tileops_v4 *w[SMP_BATCH] = {0};
        const int full = 0;
#else
        struct tileops_v4 w[SMP_BATCH][SMP_WORDS];
        const int full = smx_issue(xrow, o0, no, j0, tid, w);
#endif
#pragma unroll
        for (int b = 0; b < SMP_BATCH; b++) {
            const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
            if (o < no) {
                float z[8];
                smx_again(xrow, o0, no, j0, b, tid, full, w[b], t, z);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    const float e = smp_exp(tileops_add(z[k], -M)); /* exp(-inf - M) = 0: a tail adds 0 */
                    s = tileops_add(s, e);
#if TILEOPS_STAGE
                    smx_stage[k * SMP_NO + o] = e;
#endif
                }
            }
        }
    }
    const float S = smp_cluster_f32(smp_block_sum(s, red, tid), &slots[1], tid, 1);
    smp_cluster_arrive(); /* this CTA has read the others' slots: they may exit after their wait */
    /* pass 3: probs = e / S (e kept, or exp(z - M) again) */
    SMP_BATCH_UNROLL
    for (int j0 = 0; j0 < TILEOPS_OPT; j0 += SMP_BATCH) {
#if TILEOPS_STAGE
        struct tileops_v4 *w[SMP_BATCH] = {0};
        const int full = 0;
#else
        struct tileops_v4 w[SMP_BATCH][SMP_WORDS];
        const int full = smx_issue(xrow, o0, no, j0, tid, w);
#endif
#pragma unroll
        for (int b = 0; b < SMP_BATCH; b++) {
            const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
            if (o < no) {
                float p[8];
                smx_again(xrow, o0, no, j0, b, tid, full, w[b], t, p);
#if !TILEOPS_STAGE
#pragma unroll
                for (int k = 0; k < 8; k++)
                    p[k] = smp_exp(tileops_add(p[k], -M));
#endif
#pragma unroll
                for (int k = 0; k < 8; k++)
                    p[k] = smp_div(p[k], S);
                smx_st8(yrow, o0 + o, p);
            }
        }
    }
    smp_cluster_wait();
}

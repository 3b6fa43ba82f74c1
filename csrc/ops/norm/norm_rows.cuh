/* ops/norm/norm_rows.cuh: the generic row-norm GPU kernels of the norm family's ops after
 * RMSNorm (LayerNorm, the fused residual adds, Gemma's RMSNorm, and a plain RMSNorm for
 * comparison with rms_norm.cu), specialised by -D defines and by the op's own small file
 * (csrc/ops/norm/<op>.cu: it sets the op's flags and kernel names, then includes this).
 * C-style CUDA C compiled at run time by NVRTC with no builtin headers; common/rows_common.cuh
 * (included below) holds the 16-byte groups, conversions and fixed-order sums it shares
 * with rms_norm.cu. The runtime splices the includes in before NVRTC sees the source.
 *
 * For each of `rows` contiguous rows of N elements (row stride N), all of one dtype:
 *   h            = residual ? round_to_dtype(x + residual) : x     (the add in fp32)
 *   residual_out = h                                                (only with a residual)
 *   mean         = TILEOPS_MEAN ? sum(h) / N : 0
 *   rstd         = rsqrt(sum((h - mean)^2) / N + eps)    (biased variance, or mean square)
 *   y            = (h - mean) * rstd * (w + TILEOPS_WEIGHT_OFFSET) + b
 *                  (no weight: * 1; no bias: + 0; the last step one fma)
 * accumulated in fp32, y rounded once to the dtype (round to nearest even). The variance
 * is the mean of the squared deviations from the row's mean, summed after the mean is
 * known (a second sum over the row), never E[h^2] - E[h]^2. y normalises the ROUNDED h,
 * the value residual_out holds.
 *
 * ==== Parameters (every kernel of every op; arg_format "ppppppqf") ======================
 *   (const void *x, const void *residual, const void *weight, const void *bias,
 *    void *y, void *residual_out, long long rows, float eps)
 *   Pointers the specialisation does not use are 0 (residual and residual_out without
 *   TILEOPS_HAS_RESIDUAL, weight / bias without TILEOPS_HAS_WEIGHT / TILEOPS_HAS_BIAS).
 *   Rows are contiguous (row stride N elements); weight and bias are (N,) contiguous.
 *   In place: y may be x and residual_out may be residual (the same pointers). Every
 *   element is read and written by the same thread, and each thread reads all it needs of
 *   an element before it writes that element: the register kernel holds its part of the
 *   row; the long-row kernel reads h back from residual_out (with a residual; never x,
 *   which y may have overwritten) or from x (without one: y is written only in the last
 *   pass, element by element after that element's last read). No other overlap between
 *   an output and an input is supported.
 *
 * ==== Defines ===========================================================================
 *   From the launch side (src/tileops/kernels/norm/cuda_rows.py):
 *   TILEOPS_DTYPE          0 float32, 1 float16, 2 bfloat16.
 *   TILEOPS_N              row length N >= 1.
 *   TILEOPS_HAS_WEIGHT     0 or 1.       TILEOPS_HAS_BIAS   0 or 1.
 *   TILEOPS_VEC            G (16-byte vector path: every pointer 16-byte aligned and N * E
 *                          a multiple of 16) or 1 (element loads and stores; any alignment
 *                          of the element type).
 *   TILEOPS_THREADS        block size, a multiple of 32, <= 1024.
 *   TILEOPS_KERNEL         0: the register kernel (TILEOPS_ROWS_KERNEL), 1: the long-row
 *                          kernel (TILEOPS_ROWS_KERNEL_LONG); -1 or undefined: each that fits.
 *   TILEOPS_ROW_THREADS    register kernel: RT, threads per row (a power of two <= 32 or a
 *                          multiple of 32, dividing THREADS); default THREADS.
 *   TILEOPS_MIN_BLOCKS     resident blocks per SM the compiler must allow (caps registers).
 *   TILEOPS_WB_REG_GROUPS  register kernel: weight + bias groups per thread held in
 *                          registers across a block's rows (default 4); past it they are
 *                          loaded after the row's sums, where they are used, or
 *   TILEOPS_WB_SMEM        (0 or 1) staged in shared memory by cp.async (see NR_WB_SMEM).
 *   From the op's file (csrc/ops/norm/<op>.cu), before it includes this:
 *   TILEOPS_HAS_RESIDUAL   0 or 1: h = round(x + residual), written to residual_out.
 *   TILEOPS_MEAN           1: subtract the row's mean (LayerNorm); 0: RMSNorm.
 *   TILEOPS_WEIGHT_OFFSET  0 or 1: the weight scales as (w + offset) (Gemma: 1).
 *   TILEOPS_CAST_BEFORE_WEIGHT (-D, default 0; RMSNorm without bias or offset only) 1:
 *                          Hugging Face's arithmetic (LlamaRMSNorm, as torch computes it on
 *                          a GPU): rstd = rsqrt(s * (1 / N) + eps) (torch's CUDA mean
 *                          multiplies by 1 / N), t = h * rstd rounded to the dtype, y = t * w
 *                          rounded again.
 *   TILEOPS_ROWS_KERNEL, TILEOPS_ROWS_KERNEL_LONG   the two kernels' extern "C" names.
 *
 * ==== Derived quantities ==================================================================
 *   E = element bytes (4, 2), G = 16 / E elements per 16-byte group, NG = ceil(N / G)
 *   groups per row (the last may be partial: TAIL = N - (N / G) * G elements), RT threads
 *   per row (register kernel: TILEOPS_ROW_THREADS; long-row kernel: THREADS).
 *   Thread t of a row owns the groups g = j * RT + t (j = 0, 1, ...), in both kernels and
 *   every pass. Its sums add each group's elements by a fixed pairwise tree (squares:
 *   fma / mul / add as in tileops_sumsq) into one fp32 accumulator in increasing j; the RT
 *   partial sums are combined by the fixed butterflies of tileops_row_sum. So the result
 *   of a row depends only on (op, N, dtype, RT, flags): never on rows, the grid, the row's
 *   position or TILEOPS_VEC (the scalar path loads the same groups element by element),
 *   which makes every row batch-invariant. The plain RMSNorm (rms_norm_rows.cu) sums and
 *   scales exactly as rms_norm.cu's tileops_rms_norm with the same RT: the same bits.
 *
 * ==== Kernels and launch shapes ==========================================================
 * Both loop over rows with a grid stride: any grid.x >= 1 is correct and the result never
 * depends on it. grid.y = grid.z = 1, block = (TILEOPS_THREADS, 1, 1), no dynamic shared
 * memory (static: 8 * THREADS / 32 bytes where a barrier is used).
 *
 * TILEOPS_ROWS_KERNEL (registers): each row is held in registers by RT threads, RPB =
 *   THREADS / RT rows per block (RT <= 32: no barrier; RT > 32: one barrier per sum, so
 *   one per row for RMSNorm and two for LayerNorm).
 *     VPT    = ceil(NG / RT) groups per thread: at most 16 when THREADS <= 256, else 8 for
 *              float32 and 4 for the half types (a compile error otherwise)
 *     grid.x = ceil(rows / RPB) (may be capped: rows are strided)
 *   Launch rule (cuda_rows.py): RT = min(1024, pow2ceil(ceil(NG / V))) with V = 4, or 2
 *   with a residual (two rows in registers; faster at every decode shape on the H200);
 *   with V = 4, where RT leaves some threads a partial share, the exact split over a
 *   multiple of 32 threads (row_threads: 3584 half, 224 threads of 2). THREADS = max(RT,
 *   128) for a power of two, else RT; MIN_BLOCKS = max(1, 1024 / THREADS), for an exact
 *   split as many more as leave 56 registers a thread (224 threads: 5): VPT <= 4, so
 *   N <= 16384 (float32) or 32768 (half types); one row per block from N = 512 G on. The
 *   weight and bias groups stay in registers across the block's rows when they cost at
 *   most 16 registers (vector path); otherwise they are loaded where they are used.
 *
 * TILEOPS_ROWS_KERNEL_LONG (passes over global memory): one row per block at a time,
 *   RT = THREADS, ST_UNROLL groups in flight per thread per step (4 vector, 2 scalar;
 *   the last pass 2 with both weight and bias on the vector path: registers).
 *   Pass 1 reads x (and residual), writes residual_out, sums h (LayerNorm) or h^2
 *   (RMSNorm); LayerNorm's pass 2 re-reads h and sums (h - mean)^2; the last pass re-reads
 *   h, writes y (evict-first stores, so they do not push the row's h out of L2 before
 *   it is read again). Any N.
 *     grid.x = min(rows, sm_count) (the rows in flight stay in L2 for rows up to ~300 KB)
 *   Launch rule: THREADS = 1024, for every N the register kernel does not take.
 */
#include "../common/rows_common.cuh"

/* ---- defines ------------------------------------------------------------------------- */
#if !defined(TILEOPS_HAS_WEIGHT) || !defined(TILEOPS_HAS_BIAS) || !defined(TILEOPS_HAS_RESIDUAL) || \
    !defined(TILEOPS_MEAN) || !defined(TILEOPS_WEIGHT_OFFSET)
#error "norm_rows.cuh needs TILEOPS_HAS_WEIGHT, TILEOPS_HAS_BIAS (-D) and TILEOPS_HAS_RESIDUAL, TILEOPS_MEAN, TILEOPS_WEIGHT_OFFSET (the op's file)"
#endif
#if !defined(TILEOPS_ROWS_KERNEL) || !defined(TILEOPS_ROWS_KERNEL_LONG)
#error "the op's file must name its kernels: TILEOPS_ROWS_KERNEL, TILEOPS_ROWS_KERNEL_LONG"
#endif
#if TILEOPS_WEIGHT_OFFSET != 0 && TILEOPS_WEIGHT_OFFSET != 1
#error "TILEOPS_WEIGHT_OFFSET must be 0 or 1"
#endif
#ifndef TILEOPS_CAST_BEFORE_WEIGHT
#define TILEOPS_CAST_BEFORE_WEIGHT 0
#endif
#if TILEOPS_CAST_BEFORE_WEIGHT && (TILEOPS_MEAN || TILEOPS_HAS_BIAS || TILEOPS_WEIGHT_OFFSET)
#error "TILEOPS_CAST_BEFORE_WEIGHT is RMSNorm's (no mean, bias or weight offset)"
#endif
#ifndef TILEOPS_ROW_THREADS
#define TILEOPS_ROW_THREADS TILEOPS_THREADS
#endif
#ifndef TILEOPS_KERNEL
#define TILEOPS_KERNEL (-1)
#endif
#if TILEOPS_KERNEL < -1 || TILEOPS_KERNEL > 1
#error "TILEOPS_KERNEL must be 0 (register kernel), 1 (long-row kernel) or -1 (both)"
#endif

/* the register kernel's shape */
#define NR_RT TILEOPS_ROW_THREADS
#define NR_RPB (TILEOPS_THREADS / NR_RT)
#define NR_VPT ((TILEOPS_NG + NR_RT - 1) / NR_RT)
/* as in rms_norm.cu: at most 32 registers of packed row per thread at 512+ threads */
#define NR_MAX_VPT (TILEOPS_THREADS <= 256 ? 16 : (TILEOPS_E == 4 ? 8 : 4))
#if NR_RT < 1 || TILEOPS_THREADS % NR_RT != 0 || (NR_RT <= 32 && (NR_RT & (NR_RT - 1)) != 0) || \
    (NR_RT > 32 && NR_RT % 32 != 0)
#error "TILEOPS_ROW_THREADS must be a power of two <= 32 or a multiple of 32, dividing TILEOPS_THREADS"
#endif
#if TILEOPS_KERNEL == 0 && NR_VPT > NR_MAX_VPT
#error "TILEOPS_N is too long for the register kernel with this TILEOPS_ROW_THREADS: use the long-row kernel"
#endif
#define NR_REG_ENABLED ((TILEOPS_KERNEL == 0 || TILEOPS_KERNEL == -1) && NR_VPT <= NR_MAX_VPT)
#define NR_LONG_ENABLED (TILEOPS_KERNEL == 1 || TILEOPS_KERNEL == -1)
/* weight and bias groups held across the rows of a block: only on the vector path and
 * when they cost at most TILEOPS_WB_REG_GROUPS groups of 4 registers (default 4: 16
 * registers; more costs resident blocks under the register cap) */
#ifndef TILEOPS_WB_REG_GROUPS
#define TILEOPS_WB_REG_GROUPS 4
#endif
#define NR_WB_IN_REGS (TILEOPS_VEC != 1 && (TILEOPS_HAS_WEIGHT + TILEOPS_HAS_BIAS) * NR_VPT <= TILEOPS_WB_REG_GROUPS)
/* Otherwise, with TILEOPS_WB_SMEM=1 (the decode build: the launch takes it when the grid
 * fits one block per SM), on sm_80+ and the vector path with no partial group, each
 * thread copies its own weight and bias groups into shared memory with cp.async when the
 * block starts (no registers held, the copies in flight with the row's loads) and reads
 * them there after the row's sums: the parameters' latency leaves the row's critical
 * path. One copy per row slot of the block (a thread reads only what it copied: no
 * barrier), at most 32 KB of static shared memory. The same values, the same bits; with
 * many rows the shared memory costs resident blocks (H200: 29.7 vs 19.1 us at 4096x4096
 * fp16 LayerNorm), hence a build of its own. */
#ifndef TILEOPS_WB_SMEM
#define TILEOPS_WB_SMEM 0
#endif
#define NR_WB_SMEM_BYTES (NR_RPB * TILEOPS_NG * 16 * (TILEOPS_HAS_WEIGHT + TILEOPS_HAS_BIAS))
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && TILEOPS_WB_SMEM && !NR_WB_IN_REGS && TILEOPS_VEC != 1 && \
    TILEOPS_TAIL == 0 && NR_WB_SMEM_BYTES > 0 && NR_WB_SMEM_BYTES <= 32768
#define NR_WB_SMEM 1
#else
#define NR_WB_SMEM 0
#endif
#if TILEOPS_VEC == 1
#define ST_UNROLL 2 /* element loads: 2 groups are already 8-16 loads in flight */
#else
#define ST_UNROLL 4
#endif
/* the long kernel's last pass holds h, weight and bias groups: with both parameters 4
 * steps of 3 groups spill under the 64 registers of a 1024-thread block, so 2 */
#if TILEOPS_HAS_WEIGHT && TILEOPS_HAS_BIAS && TILEOPS_VEC != 1
#define NR_OUT_UNROLL 2
#else
#define NR_OUT_UNROLL ST_UNROLL
#endif

/* ---- the row math ---------------------------------------------------------------------- */
/* h = x + residual rounded to the dtype, group by group (zeros past a tail stay zero) */
TILEOPS_DEV struct tileops_v4 nr_add_round(struct tileops_v4 xv, struct tileops_v4 rv) {
#if TILEOPS_DTYPE == 0
    struct tileops_v4 h;
#pragma unroll
    for (int k = 0; k < 4; k++)
        h.a[k] = tileops_as_uint(tileops_add(tileops_as_float(xv.a[k]), tileops_as_float(rv.a[k])));
    return h;
#else
    float f[TILEOPS_G], r[TILEOPS_G];
    tileops_unpack(xv, f);
    tileops_unpack(rv, r);
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = tileops_add(f[k], r[k]);
    return tileops_pack(f);
#endif
}

/* acc + the sum of a group's elements, a fixed pairwise tree (zeros past a tail add nothing) */
TILEOPS_DEV float nr_sum(struct tileops_v4 v, float acc) {
    float f[TILEOPS_G];
    tileops_unpack(v, f);
    float p[TILEOPS_G / 2];
#pragma unroll
    for (int k = 0; k < TILEOPS_G / 2; k++)
        p[k] = tileops_add(f[2 * k], f[2 * k + 1]);
    return tileops_add_pairs(p, acc);
}

/* Elements of group g that belong to the row: G, TAIL for a partial last group, 0 past NG. */
TILEOPS_DEV int nr_count(long long g) {
    return g < TILEOPS_NGF ? TILEOPS_G : (g < TILEOPS_NG ? TILEOPS_TAIL : 0);
}

/* acc + the sum of (h - mean)^2 over the group's first `count` elements: the positions
 * past the row are zeros that would add mean^2 each, so they are masked out */
TILEOPS_DEV float nr_sumsq_centered(struct tileops_v4 v, float mean, int count, float acc) {
    float f[TILEOPS_G];
    tileops_unpack(v, f);
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = k < count ? tileops_add(f[k], -mean) : 0.0f;
    return tileops_sumsq_f(f, acc);
}

/* NR_CHAN (register kernel, LayerNorm): every thread of a row holds exactly NR_VPT full
 * groups (no tail, NG a multiple of RT), so the mean and the centred sum of squares come
 * from ONE reduction instead of two: each thread's own mean and squared deviations from
 * it, merged by Chan's formula for halves of equal counts n (M2 = M2a + M2b + d^2 n / 2,
 * d the difference of the halves' means), which is symmetric in the pair, so both lanes of
 * a butterfly step round alike and the row's threads agree. */
#if TILEOPS_MEAN && TILEOPS_TAIL == 0 && TILEOPS_NG % NR_RT == 0 && NR_RT <= 512 /* 32 warps' pairs: spills */
#define NR_CHAN 1
#else
#define NR_CHAN 0
#endif
#define NR_C (NR_VPT * TILEOPS_G) /* elements per thread (NR_CHAN) */

/* one butterfly step of Chan's merge: (m, q) and the partner's (mo, qo), n / 2 = half_n */
TILEOPS_DEV void nr_chan_pair(float *m, float *q, float mo, float qo, float half_n) {
    const float d = tileops_add(mo, -*m);
    *q = tileops_fma(tileops_mul(d, d), half_n, tileops_add(*q, qo));
    *m = tileops_mul(tileops_add(*m, mo), 0.5f);
}

/* The row's mean and M2 (its sum of squared deviations from the mean), NR_CHAN: the
 * thread's groups hr, then a butterfly over the warp's lanes of the row, then (RT > 32) the
 * warps' (mean, M2) through red (2 * warps floats; one barrier), merged in warp order by
 * every thread alike: mean = sum(m_w) / nw, M2 = sum(q_w) + 32 C sum((m_w - mean)^2). */
TILEOPS_DEV void nr_row_moments(const struct tileops_v4 *hr, float *red, unsigned tid, float *mean, float *m2) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < NR_VPT; j++)
        s = nr_sum(hr[j], s);
    float m = tileops_mul(s, 1.0f / (float)NR_C), q = 0.0f;
#pragma unroll
    for (int j = 0; j < NR_VPT; j++)
        q = nr_sumsq_centered(hr[j], m, TILEOPS_G, q);
    float half_n = 0.5f * (float)NR_C;
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        if (off < NR_RT) {
            const float mo = tileops_shfl_xor(m, off), qo = tileops_shfl_xor(q, off);
            nr_chan_pair(&m, &q, mo, qo, half_n);
            half_n *= 2.0f;
        }
#if NR_RT > 32
    const unsigned warp = tid >> 5;
    if ((tid & 31u) == 0) {
        red[warp] = m;
        red[TILEOPS_WARPS + warp] = q;
    }
    tileops_barrier();
    const unsigned first = (tid / (unsigned)NR_RT) * (unsigned)(NR_RT / 32);
    float sm = 0.0f;
#pragma unroll
    for (int w = 0; w < NR_RT / 32; w++)
        sm = tileops_add(sm, red[first + w]);
    m = tileops_mul(sm, 1.0f / (float)(NR_RT / 32));
    float sq = 0.0f, sd = 0.0f;
#pragma unroll
    for (int w = 0; w < NR_RT / 32; w++) {
        const float d = tileops_add(red[first + w], -m);
        sd = tileops_fma(d, d, sd);
        sq = tileops_add(sq, red[TILEOPS_WARPS + first + w]);
    }
    q = tileops_fma(sd, 32.0f * (float)NR_C, sq);
#else
    (void)red;
    (void)tid;
#endif
    *mean = m;
    *m2 = q;
}

/* 1 / sqrt(s / N + eps): s the row's sum of squares (RMSNorm) or of squared deviations */
TILEOPS_DEV float nr_rstd(float s, float eps) {
#if TILEOPS_CAST_BEFORE_WEIGHT
    return tileops_rsqrt(tileops_add(tileops_mul(s, 1.0f / (float)TILEOPS_N), eps));
#else
    return tileops_rsqrt(s / (float)TILEOPS_N + eps);
#endif
}

/* Group g of the weight and of the bias (zeros when the op has none; not read then). */
TILEOPS_DEV struct tileops_v4 nr_ld_param(const void *p, long long g) {
    return g < TILEOPS_NG ? tileops_ld_group((const char *)p, g, 1) : tileops_zero4();
}

/* y group = (h - mean) * rstd * (w + offset) + b. Plain rounded fp32 ops in a fixed order
 * (explicit instructions: the vector and scalar paths and both kernels round alike; with
 * no mean, offset or bias this is rms_norm.cu's x * rstd * w, the same bits) */
TILEOPS_DEV struct tileops_v4 nr_output(struct tileops_v4 hv, struct tileops_v4 wv, struct tileops_v4 bv,
                                        float mean, float rstd) {
    float f[TILEOPS_G];
    tileops_unpack(hv, f);
#if TILEOPS_HAS_WEIGHT
    float wf[TILEOPS_G];
    tileops_unpack(wv, wf);
#else
    (void)wv;
#endif
#if TILEOPS_HAS_BIAS
    float bf[TILEOPS_G];
    tileops_unpack(bv, bf);
#else
    (void)bv;
#endif
#if !TILEOPS_MEAN
    (void)mean;
#endif
#if TILEOPS_CAST_BEFORE_WEIGHT && TILEOPS_HAS_WEIGHT
    /* t = h * rstd rounded to the dtype (packed and unpacked), then t * w rounded again */
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = tileops_mul(f[k], rstd);
    tileops_unpack(tileops_pack(f), f);
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = tileops_mul(f[k], wf[k]);
    return tileops_pack(f);
#endif
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++) {
        float v = f[k];
#if TILEOPS_MEAN
        v = tileops_add(v, -mean);
#endif
        v = tileops_mul(v, rstd);
#if TILEOPS_HAS_WEIGHT
#if TILEOPS_WEIGHT_OFFSET
        const float w = tileops_add(wf[k], 1.0f);
#else
        const float w = wf[k];
#endif
#if TILEOPS_HAS_BIAS
        v = tileops_fma(v, w, bf[k]);
#else
        v = tileops_mul(v, w);
#endif
#elif TILEOPS_HAS_BIAS
        v = tileops_add(v, bf[k]);
#endif
        f[k] = v;
    }
    return tileops_pack(f);
}

/* Row pointers (contiguous rows). */
TILEOPS_DEV const char *nr_row_in(const void *base, long long row) {
    return (const char *)base + row * (long long)TILEOPS_N * TILEOPS_E;
}
TILEOPS_DEV char *nr_row_out(void *base, long long row) {
    return (char *)base + row * (long long)TILEOPS_N * TILEOPS_E;
}

/* ==== TILEOPS_ROWS_KERNEL: the row in registers ========================================= */
#if NR_REG_ENABLED
#if NR_WB_SMEM
/* 16 bytes global -> shared, asynchronous (sm_80+), cached in L2 only */
TILEOPS_DEV void nr_cp_async16(struct tileops_v4 *dst, const void *src) {
    unsigned s;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(s) : "l"(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
}
/* this thread's copies are done and visible to it */
TILEOPS_DEV void nr_cp_async_wait_all(void) {
    asm volatile("cp.async.wait_all;" ::: "memory");
}
#endif
/* This thread's groups of `row` of base into v (zeros past the row, or all zeros when the
 * row is past the end: inactive) */
TILEOPS_DEV void nr_rk_load(struct tileops_v4 *v, const void *base, long long row, int active, unsigned t) {
    const char *p = nr_row_in(base, active ? row : 0);
#pragma unroll
    for (int j = 0; j < NR_VPT; j++) {
        const long long g = (long long)j * NR_RT + t;
        v[j] = (active && g < TILEOPS_NG) ? tileops_ld_group(p, g, 0) : tileops_zero4();
    }
}

extern "C" __global__ void TILEOPS_BOUNDS
TILEOPS_ROWS_KERNEL(const void *x, const void *residual, const void *weight, const void *bias, void *y,
                    void *residual_out, long long rows, float eps) {
    TILEOPS_PDL_PROLOGUE();
#if NR_RT > 32 && NR_CHAN
    __shared__ float red[2][2 * TILEOPS_WARPS]; /* alternated per row: (mean, M2) of each warp */
#elif NR_RT > 32
    __shared__ float red[2][TILEOPS_WARPS]; /* alternated per sum: one barrier per sum */
#else
    float *red[2] = {0, 0};
#endif
    const unsigned tid = tileops_tid();
    const unsigned t = tid % NR_RT; /* thread within the row */
    const long long group = tid / NR_RT;
    const long long step = (long long)tileops_nctaid() * NR_RPB;
#if !TILEOPS_HAS_RESIDUAL
    (void)residual;
    (void)residual_out;
#endif
#if NR_WB_IN_REGS
    struct tileops_v4 wr[NR_VPT], br[NR_VPT];
#pragma unroll
    for (int j = 0; j < NR_VPT; j++) {
        const long long g = (long long)j * NR_RT + t;
        wr[j] = TILEOPS_HAS_WEIGHT ? nr_ld_param(weight, g) : tileops_zero4();
        br[j] = TILEOPS_HAS_BIAS ? nr_ld_param(bias, g) : tileops_zero4();
    }
#elif NR_WB_SMEM
    /* this row slot's weight groups, then its bias groups */
    __shared__ struct tileops_v4 wb_sm[NR_RPB][(TILEOPS_HAS_WEIGHT + TILEOPS_HAS_BIAS) * TILEOPS_NG];
    struct tileops_v4 *const w_sm = wb_sm[group];
    struct tileops_v4 *const b_sm = w_sm + TILEOPS_HAS_WEIGHT * TILEOPS_NG;
#pragma unroll
    for (int j = 0; j < NR_VPT; j++) {
        const long long g = (long long)j * NR_RT + t;
        if (g < TILEOPS_NG) {
#if TILEOPS_HAS_WEIGHT
            nr_cp_async16(w_sm + g, (const char *)weight + g * 16);
#endif
#if TILEOPS_HAS_BIAS
            nr_cp_async16(b_sm + g, (const char *)bias + g * 16);
#endif
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
    int parity = 0;
    /* every thread of the block runs the same iterations (rows past the end are zeros and
     * are not stored), so the barriers and full-warp shuffles of the sums stay uniform */
    for (long long base = (long long)tileops_ctaid() * NR_RPB; base < rows; base += step) {
        const long long row = base + group;
        const int active = row < rows;
        struct tileops_v4 hr[NR_VPT];
        nr_rk_load(hr, x, row, active, t);
#if TILEOPS_HAS_RESIDUAL
        {
            struct tileops_v4 rr[NR_VPT];
            nr_rk_load(rr, residual, row, active, t);
            char *orow = nr_row_out(residual_out, active ? row : 0);
#pragma unroll
            for (int j = 0; j < NR_VPT; j++) {
                const long long g = (long long)j * NR_RT + t;
                hr[j] = nr_add_round(hr[j], rr[j]);
                /* this thread read element g of x and residual above: in place is safe */
                if (active && g < TILEOPS_NG)
                    tileops_st_group(orow, g, hr[j], 0);
            }
        }
#endif
#if NR_CHAN
        float mean, m2;
        nr_row_moments(hr, red[parity], tid, &mean, &m2);
        const float rstd = nr_rstd(m2, eps);
#else
#if TILEOPS_MEAN
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < NR_VPT; j++)
            s = nr_sum(hr[j], s);
        const float mean = tileops_row_sum(s, red[parity], tid, NR_RT) / (float)TILEOPS_N;
        parity ^= 1;
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < NR_VPT; j++)
            ss = nr_sumsq_centered(hr[j], mean, nr_count((long long)j * NR_RT + t), ss);
#else
        const float mean = 0.0f;
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < NR_VPT; j++)
            ss = tileops_sumsq(hr[j], ss);
#endif
        const float rstd = nr_rstd(tileops_row_sum(ss, red[parity], tid, NR_RT), eps);
#endif
        parity ^= 1;
        if (active) {
            char *yrow = nr_row_out(y, row);
#if NR_WB_SMEM
            nr_cp_async_wait_all();
#endif
#pragma unroll
            for (int j = 0; j < NR_VPT; j++) {
                const long long g = (long long)j * NR_RT + t;
                if (g < TILEOPS_NG) {
#if NR_WB_IN_REGS
                    const struct tileops_v4 wv = wr[j], bv = br[j];
#elif NR_WB_SMEM
                    const struct tileops_v4 wv = TILEOPS_HAS_WEIGHT ? w_sm[g] : tileops_zero4();
                    const struct tileops_v4 bv = TILEOPS_HAS_BIAS ? b_sm[g] : tileops_zero4();
#else
                    const struct tileops_v4 wv = TILEOPS_HAS_WEIGHT ? nr_ld_param(weight, g) : tileops_zero4();
                    const struct tileops_v4 bv = TILEOPS_HAS_BIAS ? nr_ld_param(bias, g) : tileops_zero4();
#endif
                    tileops_st_group(yrow, g, nr_output(hr[j], wv, bv, mean, rstd), 0);
                }
            }
        }
    }
}
#endif /* NR_REG_ENABLED */

/* ==== TILEOPS_ROWS_KERNEL_LONG: passes over global memory ================================ */
#if NR_LONG_ENABLED
#define NR_J ((TILEOPS_NG + TILEOPS_THREADS - 1) / TILEOPS_THREADS) /* groups per thread */

/* `count` groups of a row from j0 on (zeros past the row) */
TILEOPS_DEV void nr_ld_step(struct tileops_v4 *v, const char *row, int j0, int count, unsigned tid) {
#pragma unroll
    for (int u = 0; u < count; u++) {
        const long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
        v[u] = g < TILEOPS_NG ? tileops_ld_group(row, g, 0) : tileops_zero4();
    }
}

extern "C" __global__ void TILEOPS_BOUNDS
TILEOPS_ROWS_KERNEL_LONG(const void *x, const void *residual, const void *weight, const void *bias, void *y,
                         void *residual_out, long long rows, float eps) {
    TILEOPS_PDL_PROLOGUE();
    __shared__ float red[2][TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    int parity = 0;
#if !TILEOPS_HAS_RESIDUAL
    (void)residual;
    (void)residual_out;
#endif
    for (long long row = tileops_ctaid(); row < rows; row += tileops_nctaid()) {
        const char *xrow = nr_row_in(x, row);
#if TILEOPS_HAS_RESIDUAL
        const char *rrow = nr_row_in(residual, row);
        char *orow = nr_row_out(residual_out, row);
        const char *hrow = orow; /* h is read back from residual_out: x may be y */
#else
        const char *hrow = xrow; /* h is x; y's element is written after its last read */
#endif
        /* pass 1: h (and residual_out), its sum (LayerNorm) or sum of squares (RMSNorm) */
        float s = 0.0f;
#pragma unroll 1
        for (int j0 = 0; j0 < NR_J; j0 += ST_UNROLL) {
            struct tileops_v4 v[ST_UNROLL];
            nr_ld_step(v, xrow, j0, ST_UNROLL, tid);
#if TILEOPS_HAS_RESIDUAL
            struct tileops_v4 r[ST_UNROLL];
            nr_ld_step(r, rrow, j0, ST_UNROLL, tid);
#endif
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++) {
#if TILEOPS_HAS_RESIDUAL
                const long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                v[u] = nr_add_round(v[u], r[u]);
                if (g < TILEOPS_NG)
                    tileops_st_group(orow, g, v[u], 0);
#endif
#if TILEOPS_MEAN
                s = nr_sum(v[u], s);
#else
                s = tileops_sumsq(v[u], s);
#endif
            }
        }
        const float total = tileops_row_sum(s, red[parity], tid, TILEOPS_THREADS);
        parity ^= 1;
#if TILEOPS_MEAN
        /* pass 2: the squared deviations from the mean, h read back */
        const float mean = total / (float)TILEOPS_N;
        float ss = 0.0f;
#pragma unroll 1
        for (int j0 = 0; j0 < NR_J; j0 += ST_UNROLL) {
            struct tileops_v4 v[ST_UNROLL];
            nr_ld_step(v, hrow, j0, ST_UNROLL, tid);
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++)
                ss = nr_sumsq_centered(v[u], mean, nr_count((long long)(j0 + u) * TILEOPS_THREADS + tid), ss);
        }
        const float rstd = nr_rstd(tileops_row_sum(ss, red[parity], tid, TILEOPS_THREADS), eps);
        parity ^= 1;
#else
        const float mean = 0.0f;
        const float rstd = nr_rstd(total, eps);
#endif
        /* last pass: y from h read back, evict-first stores */
        char *yrow = nr_row_out(y, row);
#pragma unroll 1
        for (int j0 = 0; j0 < NR_J; j0 += NR_OUT_UNROLL) {
            struct tileops_v4 v[NR_OUT_UNROLL], wv[NR_OUT_UNROLL], bv[NR_OUT_UNROLL];
            nr_ld_step(v, hrow, j0, NR_OUT_UNROLL, tid);
#pragma unroll
            for (int u = 0; u < NR_OUT_UNROLL; u++) {
                const long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                wv[u] = TILEOPS_HAS_WEIGHT ? nr_ld_param(weight, g) : tileops_zero4();
                bv[u] = TILEOPS_HAS_BIAS ? nr_ld_param(bias, g) : tileops_zero4();
            }
#pragma unroll
            for (int u = 0; u < NR_OUT_UNROLL; u++) {
                const long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                if (g < TILEOPS_NG)
                    tileops_st_group(yrow, g, nr_output(v[u], wv[u], bv[u], mean, rstd), 1);
            }
        }
    }
}
#endif /* NR_LONG_ENABLED */

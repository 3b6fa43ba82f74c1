/* ops/norm/rms_norm.cu: the RMSNorm GPU kernels the launch rules select, compiled at run
 * time by NVRTC (C-style CUDA C, no builtin headers needed: it builds with NVRTC --minimal;
 * its one include, common/rows_common.cuh, is spliced in by the runtime before NVRTC sees it).
 *
 *   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[:]      (w optional)
 *
 * over the last dim of a (rows, N) input; the same function as the CPU kernels in
 * tileops/cpu.h. Accumulation in fp32; one conversion of the result to the dtype, round
 * to nearest even.
 *
 * The experiments measured against these kernels (cache-policy and prefetch defines, a
 * 2-block cluster per row, a TMA bulk-staged kernel) live in dev/cuda/rms_norm_lab.cu,
 * with what each measured in dev/NOTES.md; the kernels below are the lab's default builds
 * (the same cubins) with TILEOPS_CONTIGUOUS=0.
 *
 * ==== Parameters (identical for the three kernels; arg_format "pppqqqf") ===============
 *   (const void *x, const void *w /+ 0 when TILEOPS_HAS_WEIGHT=0 +/, void *y,
 *    long long rows, long long x_row_stride, long long y_row_stride, float eps)
 *   strides in elements; unit stride inside a row; w is (N,) contiguous. With
 *   TILEOPS_CONTIGUOUS=1 both strides must be N (the arguments are then not read).
 *   y may be x (in place): every row is read before it is written by the same threads.
 *
 * ==== Defines ===========================================================================
 *   TILEOPS_DTYPE        0 float32, 1 float16, 2 bfloat16 (codes of tileops/dtype.h).
 *   TILEOPS_N            row length N >= 1 (compile time).
 *   TILEOPS_HAS_WEIGHT   0 or 1.
 *   TILEOPS_VEC          G = elements per 16-byte vector (4 for float32, 8 for the half
 *                        types) for the vector path, or 1 for the scalar path. The vector
 *                        path requires x, y (and w) 16-byte aligned and both row strides
 *                        multiples of G (any stride when rows == 1); otherwise use 1.
 *   TILEOPS_THREADS      block size: a multiple of 32, <= 1024.
 *   TILEOPS_ROW_THREADS  tileops_rms_norm only: RT, threads per row; a power of two <= 32,
 *                        or a multiple of 32; divides TILEOPS_THREADS. Default THREADS.
 *                        (The other two kernels always use RT = TILEOPS_THREADS.)
 *   TILEOPS_MIN_BLOCKS   resident blocks per SM the compiler must allow (the second
 *                        __launch_bounds__ argument; caps registers); 0 (default): none.
 *   TILEOPS_CONTIGUOUS   1: rows are contiguous, both row strides N, known at compile time
 *                        (RMSNormFwdOp's builds: its x and y are contiguous); 0 (default):
 *                        the stride arguments. A runtime stride costs the register kernel a
 *                        per-thread constant load and 64-bit multiplies before its first row
 *                        load: with it compile-time, bf16 1 / 32 / 256 x 3584 hot went
 *                        1.81 / 1.91 / 2.47 -> 1.66 / 1.78 / 2.37 us on an H100, level to
 *                        slightly faster elsewhere (dev/NOTES.md session 46).
 *   TILEOPS_KERNEL       which kernel to compile: 0 tileops_rms_norm, 1 ..._on_chip,
 *                        2 ..._streaming; -1 or undefined: all of them that fit the defines
 *                        (recommended: name the one you launch; NVRTC is then faster and
 *                        a too-long N for the register kernel is a compile error).
 *
 * ==== Derived quantities (what launches are computed from) =============================
 *   E  = element size: 4 (float32) or 2 (float16, bfloat16)
 *   G  = 16 / E                  elements per 16-byte group (4 or 8)
 *   NG = ceil(N / G)             groups per row (the last one may be partial: a tail)
 *   RT = threads per row         (TILEOPS_ROW_THREADS for tileops_rms_norm, else THREADS)
 *   Thread t of a row owns groups g = j * RT + t, j = 0, 1, ...; it sums the squares of
 *   each group by a fixed pairwise tree (tileops_sumsq) and adds the group sums in
 *   increasing j into one fp32 accumulator;
 *   the RT partial sums are combined by a fixed xor-butterfly inside each warp and, when
 *   RT > 32, by a second fixed butterfly over the per-warp sums (through shared memory).
 *   The order depends only on (N, dtype, RT): never on rows, the grid, the row's position
 *   or TILEOPS_VEC (the scalar path loads the same groups element by element), so a
 *   row's result is batch-invariant, and the kernels give bitwise identical
 *   results for the same RT.
 *
 * ==== Kernels and launch shapes ==========================================================
 * Every kernel loops over rows with a grid stride, so any grid.x >= 1 is correct and the
 * result never depends on it;
 * grid.y = grid.z = 1; block = (TILEOPS_THREADS, 1, 1).
 * Static shared memory: 8 * TILEOPS_THREADS / 32 bytes (<= 256) where a barrier is used.
 * Which kernel for which N (measured on an H200, see the recommended shapes below):
 *   N <= 32768 (any dtype)                    tileops_rms_norm
 *   32768 < N and NG * 16 + 256 <= opt-in      tileops_rms_norm_on_chip
 *   longer rows                               tileops_rms_norm_streaming
 *
 * tileops_rms_norm (registers): each row is held in registers by RT threads; RPB =
 *   THREADS / RT rows per block (RT <= 32: a warp or part of a warp per row, no barrier;
 *   RT > 32: several warps, one barrier per row).
 *     VPT     = ceil(NG / RT) groups per thread; at most 8 for float32 and 4 for the half
 *               types, 16 for any dtype when THREADS <= 256 (a compile error otherwise;
 *               more would spill at 1024 threads)
 *     grid.x  = ceil(rows / RPB)  (may be capped, e.g. at 2^31 - 1: rows are strided)
 *     shared  = 0 dynamic
 *     max N   = RT 1024 x max VPT x G = 32768 for every dtype (vector or scalar path).
 *   Recommended (src/tileops/kernels/norm/rms_norm.py): RT = min(1024, pow2ceil(ceil(NG /
 *   4))) (>= 1; so VPT <= 4, and 5..8 only for float32 N in 16385..32768), or where that
 *   leaves some threads a partial share the exact split over a multiple of 32 threads
 *   (cuda_rows.row_threads: 3584 half, 448 groups, 224 threads of 2); THREADS = max(RT,
 *   128) for a power of two, else RT (one row a block); grid.x = ceil(rows / (THREADS /
 *   RT)), TILEOPS_MIN_BLOCKS = max(1, 1024 / THREADS) (as many blocks as fit 1024 threads
 *   resident per SM: <= 64 registers, 72 for 4 x 224; no spills at any N).
 *   E.g. float16 N = 4096: NG 512, RT = THREADS = 128, VPT 4, one row per block,
 *   grid.x = rows, MIN_BLOCKS 8. The weight stays in registers across the rows of a
 *   block when VPT <= 4 and THREADS <= 256 (vector path).
 *
 * tileops_rms_norm_on_chip (shared memory): one row per block at a time, staged in dynamic
 *   shared memory in its 16-byte groups (vector path on sm_80+: cp.async, the tail group
 *   zero-filled; otherwise through registers), reduced, then normalised from shared
 *   memory: x is read from memory once. When a block has further rows (grid.x < rows)
 *   each slot is refilled with the block's next row as soon as it has been written out.
 *     grid.x  = rows (recommended: one row per block measured faster than a persistent
 *               grid; a smaller grid is correct)
 *     shared  = NG * 16 bytes dynamic (the runtime raises the function's limit > 48 KiB)
 *     max N   : NG * 16 + THREADS / 4 <= max shared per block (opt-in). H200 (232448
 *               bytes), THREADS 1024: NG <= 14512: N <= 58048 (float32), 116096 (half).
 *   Recommended THREADS = 1024 (512 when NG <= 4096).
 *
 * tileops_rms_norm_streaming (two passes over global memory): one row per block at a
 *   time; pass 1 sums the squares, pass 2 re-reads x (from L2 when the rows in flight
 *   fit), scales and writes y (evict-first stores, so they do not push x out of L2).
 *   Any N; ST_UNROLL vectors in flight per thread per step.
 *     grid.x  = min(rows, sm_count)  (one 1024-thread block per SM: the rows in flight,
 *               sm_count * N * E bytes, stay inside L2 for rows up to ~300 KB)
 *     shared  = 0 dynamic
 *   Recommended THREADS = 1024.
 */
#include "../common/rows_common.cuh"

/* ---- defines ------------------------------------------------------------------------- */
#ifndef TILEOPS_HAS_WEIGHT
#error "rms_norm.cu needs -DTILEOPS_HAS_WEIGHT"
#endif
#ifndef TILEOPS_ROW_THREADS
#define TILEOPS_ROW_THREADS TILEOPS_THREADS
#endif
#if TILEOPS_VEC == 1
#define ST_UNROLL 2 /* element loads: 2 groups are already 8-16 loads in flight */
#else
#define ST_UNROLL 4
#endif
#ifndef TILEOPS_KERNEL
#define TILEOPS_KERNEL (-1)
#endif
#ifndef TILEOPS_CONTIGUOUS
#define TILEOPS_CONTIGUOUS 0
#endif
/* Every kernel's second statement (after the PDL prologue): the row strides as the
 * compile-time N where the rows are contiguous. */
#if TILEOPS_CONTIGUOUS
#define RMS_ROW_STRIDES()         \
    do {                          \
        x_row_stride = TILEOPS_N; \
        y_row_stride = TILEOPS_N; \
    } while (0)
#else
#define RMS_ROW_STRIDES() ((void)0)
#endif

/* the register kernel's shape */
#define RK_RT TILEOPS_ROW_THREADS
#define RK_RPB (TILEOPS_THREADS / RK_RT)
#define RK_FIRST ((long long)tileops_ctaid() * RK_RPB)
#define RK_STEP ((long long)tileops_nctaid() * RK_RPB)
#define RK_VPT ((TILEOPS_NG + RK_RT - 1) / RK_RT)
/* at most 32 registers of packed row per thread (float32: 8 groups; the half types get
 * 4, as their unpacked floats take registers too): larger spills at 1024 threads. Blocks
 * of at most 256 threads may hold 16 groups per thread (ptxas, sm_90a: 92-180 registers,
 * no spills), e.g. one warp per 4096-element half row: no block barrier at all. */
#define RK_MAX_VPT (TILEOPS_THREADS <= 256 ? 16 : (TILEOPS_E == 4 ? 8 : 4))
#if RK_RT < 1 || TILEOPS_THREADS % RK_RT != 0 || (RK_RT <= 32 && (RK_RT & (RK_RT - 1)) != 0) || \
    (RK_RT > 32 && RK_RT % 32 != 0)
#error "TILEOPS_ROW_THREADS must be a power of two <= 32 or a multiple of 32, dividing TILEOPS_THREADS"
#endif
#if TILEOPS_KERNEL == 0 && RK_VPT > RK_MAX_VPT
#error "TILEOPS_N is too long for tileops_rms_norm with this TILEOPS_ROW_THREADS (more than RK_MAX_VPT groups per thread): use more row threads or tileops_rms_norm_on_chip"
#endif
#define RK_ENABLED ((TILEOPS_KERNEL == 0 || TILEOPS_KERNEL == -1) && RK_VPT <= RK_MAX_VPT)
#define OC_ENABLED (TILEOPS_KERNEL == 1 || TILEOPS_KERNEL == -1)
#define ST_ENABLED (TILEOPS_KERNEL == 2 || TILEOPS_KERNEL == -1)
/* the weight stays in registers across rows when it costs at most 16 registers and the
 * block is small (at 512+ threads the extra registers cost a resident block per SM) */
#define RK_W_IN_REGS (TILEOPS_HAS_WEIGHT && TILEOPS_VEC != 1 && RK_VPT <= 4 && TILEOPS_THREADS <= 256)

/* ---- the RMSNorm math (the group helpers are common/rows_common.cuh's) ------------ */
/* y group = x group * rstd (* w group) */
TILEOPS_DEV struct tileops_v4 tileops_scale(struct tileops_v4 xv, struct tileops_v4 wv,
                                            float rstd) {
    float f[TILEOPS_G];
    tileops_unpack(xv, f);
#if TILEOPS_HAS_WEIGHT
    float wf[TILEOPS_G];
    tileops_unpack(wv, wf);
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = f[k] * rstd * wf[k];
#else
    (void)wv;
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = f[k] * rstd;
#endif
    return tileops_pack(f);
}

/* 1 / sqrt(mean + eps) from a row's total sum of squares */
TILEOPS_DEV float tileops_rstd(float sumsq, float eps) {
    return tileops_rsqrt(sumsq / (float)TILEOPS_N + eps);
}

/* The scalar path's output: the first `count` elements of group g, one by one. */
TILEOPS_DEV void tileops_write_scalar(char *yrow, const void *w, long long g, struct tileops_v4 xv,
                                      float rstd, int count) {
    float f[TILEOPS_G];
    tileops_unpack(xv, f);
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++) {
        if (k < count) {
            float v = f[k] * rstd;
#if TILEOPS_HAS_WEIGHT
            v = v * tileops_ld_elem((const char *)w, g * TILEOPS_G + k);
#else
            (void)w;
#endif
            tileops_st_elem(yrow, g * TILEOPS_G + k, v);
        }
    }
}

/* Writes y group g = x group * rstd (* w group g). wv: the weight group when the caller
 * already holds it (have_w), else it is loaded here. The scalar path works element by
 * element (same arithmetic, same roundings as the vector path, fewer registers). */
TILEOPS_DEV void tileops_write_group(char *yrow, const void *w, long long g, struct tileops_v4 xv,
                                     int have_w, struct tileops_v4 wv, float rstd,
                                     int evict_first) {
#if TILEOPS_VEC == 1
    (void)have_w;
    (void)wv;
    (void)evict_first;
    if (TILEOPS_FULL(g))
        tileops_write_scalar(yrow, w, g, xv, rstd, TILEOPS_G);
    else
        tileops_write_scalar(yrow, w, g, xv, rstd, TILEOPS_TAIL);
#else
#if TILEOPS_HAS_WEIGHT
    if (!have_w)
        wv = tileops_ld_group((const char *)w, g, 1);
#else
    (void)have_w;
    (void)w;
#endif
    tileops_st_group(yrow, g, tileops_scale(xv, wv, rstd), evict_first);
#endif
}

/* Row pointers: strides in elements. */
TILEOPS_DEV const char *tileops_row_in(const void *base, long long row, long long stride) {
    return (const char *)base + row * stride * TILEOPS_E;
}
TILEOPS_DEV char *tileops_row_out(void *base, long long row, long long stride) {
    return (char *)base + row * stride * TILEOPS_E;
}

/* The rstd of a row held in shared memory as its NG groups, by a block of THREADS threads
 * (RT = THREADS: thread tid sums groups j * THREADS + tid, in increasing j): the on-chip
 * kernel. */
#define TILEOPS_SMEM_J ((TILEOPS_NG + TILEOPS_THREADS - 1) / TILEOPS_THREADS) /* groups per thread */
TILEOPS_DEV float tileops_smem_row_rstd(const struct tileops_v4 *row, float *red, unsigned tid,
                                        float eps) {
    float acc = 0.0f;
#pragma unroll 4
    for (int j = 0; j < TILEOPS_SMEM_J; j++) {
        int g = j * TILEOPS_THREADS + (int)tid;
        if (g < TILEOPS_NG)
            acc = tileops_sumsq(row[g], acc);
    }
    return tileops_rstd(tileops_row_sum(acc, red, tid, TILEOPS_THREADS), eps);
}

/* ==== tileops_rms_norm: the row in registers ============================================ */
#if RK_ENABLED
/* Loads this thread's groups of `row` into xr (zeros past the row or when row >= rows). */
TILEOPS_DEV void tileops_rk_load(struct tileops_v4 *xr, const void *x, long long row,
                                 long long rows, long long x_row_stride, unsigned t) {
    const int active = row < rows;
    const char *xrow = tileops_row_in(x, active ? row : 0, x_row_stride);
#pragma unroll
    for (int j = 0; j < RK_VPT; j++) {
        long long g = (long long)j * RK_RT + t;
        xr[j] = (active && g < TILEOPS_NG) ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
    }
}

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rms_norm(const void *x, const void *w, void *y, long long rows, long long x_row_stride,
                 long long y_row_stride, float eps) {
    TILEOPS_PDL_PROLOGUE();
    RMS_ROW_STRIDES();
#if RK_RT > 32
    __shared__ float red[2][TILEOPS_WARPS]; /* alternated per row: one barrier per row */
#else
    float *red[2] = {0, 0};
#endif
    const unsigned tid = tileops_tid();
    const unsigned t = tid % RK_RT; /* thread within the row */
    const long long group = tid / RK_RT;
#if RK_W_IN_REGS
    struct tileops_v4 wr[RK_VPT];
#pragma unroll
    for (int j = 0; j < RK_VPT; j++) {
        long long g = (long long)j * RK_RT + t;
        wr[j] = g < TILEOPS_NG ? tileops_ld_group((const char *)w, g, 1) : tileops_zero4();
    }
#endif
    int parity = 0;
    for (long long base = RK_FIRST; base < rows; base += RK_STEP) {
        const long long row = base + group;
        struct tileops_v4 xr[RK_VPT];
        tileops_rk_load(xr, x, row, rows, x_row_stride, t);
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < RK_VPT; j++)
            acc = tileops_sumsq(xr[j], acc);
        const float rstd = tileops_rstd(tileops_row_sum(acc, red[parity], tid, RK_RT), eps);
        parity ^= 1;
        if (row < rows) {
            char *yrow = tileops_row_out(y, row, y_row_stride);
#pragma unroll
            for (int j = 0; j < RK_VPT; j++) {
                long long g = (long long)j * RK_RT + t;
                if (g < TILEOPS_NG) {
#if RK_W_IN_REGS
                    tileops_write_group(yrow, w, g, xr[j], 1, wr[j], rstd, 0);
#else
                    tileops_write_group(yrow, w, g, xr[j], 0, tileops_zero4(), rstd, 0);
#endif
                }
            }
        }
    }
}
#endif /* RK_ENABLED */

/* ==== tileops_rms_norm_on_chip: the row staged in shared memory ========================= */
#if OC_ENABLED
#define OC_J TILEOPS_SMEM_J
#if TILEOPS_VEC != 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define OC_ASYNC 1 /* cp.async: global -> shared without registers, all in flight at once */
#else
#define OC_ASYNC 0
#endif

TILEOPS_DEV unsigned tileops_smem_addr(const void *p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

/* Stages group g of a row into its shared memory slot. Each thread stages its own groups
 * and later reads only those, so no barrier is needed between copy and use. */
TILEOPS_DEV void tileops_stage_group(struct tileops_v4 *slot, const char *xrow, int g) {
#if OC_ASYNC
    unsigned bytes = TILEOPS_FULL(g) ? 16u : TILEOPS_TAIL * TILEOPS_E;
    /* copies `bytes`, zero-fills the rest of the 16 */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :
                 : "r"(tileops_smem_addr(slot)), "l"(xrow + (long long)g * 16), "r"(bytes)
                 : "memory");
#else
    *slot = tileops_ld_group(xrow, g, 0);
#endif
}

/* Stages this thread's groups of a row (smem: the row's NG slots). */
TILEOPS_DEV void tileops_stage_row(struct tileops_v4 *smem, const char *xrow, unsigned tid) {
#pragma unroll 4
    for (int j = 0; j < OC_J; j++) {
        int g = j * TILEOPS_THREADS + (int)tid;
        if (g < TILEOPS_NG)
            tileops_stage_group(&smem[g], xrow, g);
    }
}

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rms_norm_on_chip(const void *x, const void *w, void *y, long long rows,
                         long long x_row_stride, long long y_row_stride, float eps) {
    TILEOPS_PDL_PROLOGUE();
    RMS_ROW_STRIDES();
    extern __shared__ struct tileops_v4 tileops_row_smem[]; /* NG groups */
    __shared__ float red[2][TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    const long long step = tileops_nctaid();
    int parity = 0;
    long long row = tileops_ctaid();
#if OC_ASYNC
    /* software pipeline over the block's rows: while a group of row r is normalised and
     * written, the same slot is refilled with that group of the block's next row, so the
     * next row's loads overlap this row's stores (one buffer, any row length) */
    if (row < rows)
        tileops_stage_row(tileops_row_smem, tileops_row_in(x, row, x_row_stride), tid);
#endif
    for (; row < rows; row += step) {
#if OC_ASYNC
        asm volatile("cp.async.wait_all;" ::: "memory");
#else
        tileops_stage_row(tileops_row_smem, tileops_row_in(x, row, x_row_stride), tid);
#endif
        const float rstd = tileops_smem_row_rstd(tileops_row_smem, red[parity], tid, eps);
        parity ^= 1;
        char *yrow = tileops_row_out(y, row, y_row_stride);
#if OC_ASYNC
        const long long next = row + step;
        const int prefetch = next < rows;
        const char *nxrow = tileops_row_in(x, prefetch ? next : row, x_row_stride);
#endif
#pragma unroll 4
        for (int j = 0; j < OC_J; j++) {
            int g = j * TILEOPS_THREADS + (int)tid;
            if (g < TILEOPS_NG) {
                tileops_write_group(yrow, w, g, tileops_row_smem[g], 0, tileops_zero4(), rstd, 0);
#if OC_ASYNC
                /* after the store in program order: the slot was read (the store used it) */
                if (prefetch)
                    tileops_stage_group(&tileops_row_smem[g], nxrow, g);
#endif
            }
        }
    }
}
#endif /* OC_ENABLED */

/* ==== tileops_rms_norm_streaming: two passes over global memory ========================= */
#if ST_ENABLED
#define ST_J ((TILEOPS_NG + TILEOPS_THREADS - 1) / TILEOPS_THREADS) /* groups per thread */

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rms_norm_streaming(const void *x, const void *w, void *y, long long rows,
                           long long x_row_stride, long long y_row_stride, float eps) {
    TILEOPS_PDL_PROLOGUE();
    RMS_ROW_STRIDES();
    __shared__ float red[2][TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    int parity = 0;
    for (long long row = tileops_ctaid(); row < rows; row += tileops_nctaid()) {
        const char *xrow = tileops_row_in(x, row, x_row_stride);
        float acc = 0.0f;
#pragma unroll 1
        for (int j0 = 0; j0 < ST_J; j0 += ST_UNROLL) {
            struct tileops_v4 v[ST_UNROLL];
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                v[u] = g < TILEOPS_NG ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
            }
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++)
                acc = tileops_sumsq(v[u], acc);
        }
        const float rstd = tileops_rstd(tileops_row_sum(acc, red[parity], tid, TILEOPS_THREADS), eps);
        parity ^= 1;
        char *yrow = tileops_row_out(y, row, y_row_stride);
#pragma unroll 1
        for (int j0 = 0; j0 < ST_J; j0 += ST_UNROLL) {
            struct tileops_v4 v[ST_UNROLL];
            struct tileops_v4 wv[ST_UNROLL];
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                v[u] = g < TILEOPS_NG ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
#if TILEOPS_HAS_WEIGHT && TILEOPS_VEC != 1
                wv[u] = g < TILEOPS_NG ? tileops_ld_group((const char *)w, g, 1) : tileops_zero4();
#else
                wv[u] = tileops_zero4();
#endif
            }
#pragma unroll
            for (int u = 0; u < ST_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                if (g < TILEOPS_NG)
                    tileops_write_group(yrow, w, g, v[u], 1, wv[u], rstd, 1);
            }
        }
    }
}
#endif /* ST_ENABLED */

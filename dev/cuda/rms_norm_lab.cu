/* dev/cuda/rms_norm_lab.cu: the RMSNorm lab (llm.c's dev/cuda/ style). A full, standalone
 * copy of the RMSNorm kernels as they were measured, with every experiment the launch rules
 * never select; the library ships only the default builds, in csrc/ops/norm/rms_norm.cu
 * (whose cubins are byte-identical to this file's default builds: the kernels below with
 * none of the tuning defines set). Built by dev/sweep_norm.py, dev/probe_placement.py and
 * dev/tests/ through tileops.runtime.build with this file's path as the source name.
 * Predictions, commands and raw numbers: dev/NOTES.md; raw rows: dev/results/h200/.
 *
 * Versions (what each changed; what it measured on the H200, fp16, cold us unless said):
 *   v1  register kernel, RT = pow2ceil(NG / 4), one row per block for RT >= 128, grid =
 *       rows (the launch rule). sweep_norm --mode shapes: the fastest cold shape at every
 *       workload; the on-chip / streaming kernels and persistent grids no better.
 *   v2  TILEOPS_LD_POLICY 1-3 (L1 no-allocate, L2::256B prefetch, both), TILEOPS_ST_POLICY
 *       1-2 (evict-first, L1 no-allocate): within noise or slower everywhere (2048x4096
 *       13.2-14.1 vs 13.2). results/h200/experiments/1_*.json. Not adopted.
 *   v3  L2 evict-first on x (TILEOPS_LD_POLICY 4-6, createpolicy) and evict-last on y
 *       (TILEOPS_ST_POLICY 3): predicted 13.2 -> ~10; measured 12.86-13.79 (13.22), +2.7 us
 *       at 16384x4096. experiments/2_*.json. Not adopted.
 *   v4  TILEOPS_PREFETCH=1 on a persistent grid (next row's loads before this row's
 *       reduction): slower at every grid (2048x16384 39.8-42.8 vs 36.7 copy). Not adopted.
 *   v5  the on-chip kernel in small blocks and persistent grids: slower everywhere
 *       (2048x4096 15.4-16.3). experiments/3_*.json, 4_*.json. Not adopted.
 *   v6  fixed pairwise sum-of-squares tree per group and a log2(warps) cross-warp
 *       butterfly (same bits): hot 1x4096 1.66-1.67 -> 1.64. Adopted (shipped).
 *   v7  register cap TILEOPS_MIN_BLOCKS = 1024 / THREADS: 2048x8192 cold 21.63-22.24 ->
 *       20.96, hot 18.1-18.3 -> 16.14. experiments/5_*.json. Adopted (the launch rule).
 *   v8  TILEOPS_CLUSTER=2, a row over a 2-block cluster (DSMEM exchange of the per-warp
 *       sums; same bits as the one-block build with 2 x threads): 16-37 % slower
 *       (2048x16384 46.27 vs 39.84). experiments/6_cluster_2cta.json. Not adopted.
 *   v9  tileops_rms_norm_bulk (TILEOPS_KERNEL=3), TMA bulk copies into a ring of
 *       TILEOPS_STAGES row buffers on a persistent grid (same bits as the register build
 *       with RT = THREADS): slower everywhere (2048x16384 41.87 vs 39.90).
 *       experiments/7_bulk_tma.json. Not adopted; it found a runtime bug (the dynamic
 *       shared limit), fixed in csrc/runtime.
 *   v10 register caps at every row-thread count (sweep_norm --mode regcap): no shape beat
 *       the rule (2048x16384 39.33-39.87 vs 39.04-39.30). experiments/8_regcap.json.
 * Bit-for-bit tests of the experiment builds against the default build: dev/tests/.
 * Compile checks: tests/gpu/compile_check_kernels.sh (its lab section).
 *
 * What follows is the file as it was when the experiments ran.
 */
/* The RMSNorm GPU kernels, compiled at run time by NVRTC (C-style CUDA C,
 * no includes, no builtin headers needed: it builds with NVRTC --minimal).
 *
 *   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[:]      (w optional)
 *
 * over the last dim of a (rows, N) input; the same function as the CPU kernels in
 * tileops/cpu.h. Accumulation in fp32; one conversion of the result to the dtype, round
 * to nearest even.
 *
 * ==== Parameters (identical for the four kernels; arg_format "pppqqqf") ===============
 *   (const void *x, const void *w /+ 0 when TILEOPS_HAS_WEIGHT=0 +/, void *y,
 *    long long rows, long long x_row_stride, long long y_row_stride, float eps)
 *   strides in elements; unit stride inside a row; w is (N,) contiguous.
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
 *   TILEOPS_UNROLL       tileops_rms_norm_streaming only: groups in flight per thread per
 *                        step (default 4 on the vector path, 2 on the scalar path).
 *   TILEOPS_LD_POLICY    cache policy of the 16-byte loads of x: 0 ld.global (default),
 *                        1 .L1::no_allocate, 2 .L2::256B (prefetch size), 3 both,
 *                        4 L2 evict-first (createpolicy), 5 4 + .L2::256B,
 *                        6 4 + .L1::no_allocate. x is dead once read: evict-first lets
 *                        y's lines replace x's (clean) rather than older dirty lines.
 *   TILEOPS_ST_POLICY    cache policy of the 16-byte stores of y (the streaming kernel's
 *                        second pass always stores evict-first): 0 st.global (default),
 *                        1 .cs (evict first), 2 .L1::no_allocate, 3 L2 evict-last.
 *   TILEOPS_MIN_BLOCKS   resident blocks per SM the compiler must allow (the second
 *                        __launch_bounds__ argument; caps registers); 0 (default): none.
 *   TILEOPS_PREFETCH     tileops_rms_norm only: 1 = a block issues the loads of its next
 *                        rows before it reduces and stores the current ones (twice the
 *                        registers for the row; pays only when grid.x < ceil(rows / RPB)).
 *   TILEOPS_KERNEL       which kernel to compile: 0 tileops_rms_norm, 1 ..._on_chip,
 *                        2 ..._streaming, 3 ..._bulk; -1 or undefined: all of 0, 1, 2
 *                        that fit the defines, never 3 (which is built only when named)
 *                        (recommended: name the one you launch; NVRTC is then faster and
 *                        a too-long N for the register kernel is a compile error).
 *   TILEOPS_STAGES       tileops_rms_norm_bulk only: row buffers in the ring, 2..4
 *                        (default 2). See "tileops_rms_norm_bulk" below.
 *   TILEOPS_CLUSTER      tileops_rms_norm only: 1 (default) the row in one block, or 2:
 *                        each row in a cluster of 2 blocks (sm_90+; needs TILEOPS_KERNEL
 *                        0 and TILEOPS_ROW_THREADS == TILEOPS_THREADS <= 512). See
 *                        "tileops_rms_norm as a 2-block cluster" below.
 *
 * ==== Derived quantities (what launches are computed from) =============================
 *   E  = element size: 4 (float32) or 2 (float16, bfloat16)
 *   G  = 16 / E                  elements per 16-byte group (4 or 8)
 *   NG = ceil(N / G)             groups per row (the last one may be partial: a tail)
 *   RT = threads per row         (TILEOPS_ROW_THREADS for tileops_rms_norm, else THREADS;
 *                                2 * THREADS over a cluster with TILEOPS_CLUSTER=2)
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
 * Every kernel loops over rows with a grid stride, so any grid.x >= 1 (TILEOPS_CLUSTER=2:
 * any even grid.x >= 2) is correct and the result never depends on it;
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
 *   Recommended: RT = min(1024, pow2ceil(ceil(NG / 4))) (>= 1; so VPT <= 4, and 5..8
 *   only for float32 N in 16385..32768), THREADS = max(RT, 128),
 *   grid.x = ceil(rows / (THREADS / RT)), TILEOPS_MIN_BLOCKS = max(1, 1024 / THREADS)
 *   (<= 64 registers: at least 1024 threads resident per SM; no spills at any N).
 *   E.g. float16 N = 4096: NG 512, RT = THREADS = 128, VPT 4, one row per block,
 *   grid.x = rows, MIN_BLOCKS 8. The weight stays in registers across the rows of a
 *   block when VPT <= 4 and THREADS <= 256 (vector path).
 *
 * tileops_rms_norm as a 2-block cluster (TILEOPS_CLUSTER=2; measured by
 *   benchmarks/sweep_norm.py --mode cluster, not chosen by the rule above): one row per
 *   cluster at a time, half of it in the registers of each block. Thread tid of the
 *   block of rank c (%cluster_ctarank) is the row's thread t = c * THREADS + tid of
 *   RT = 2 * THREADS: it owns the groups g = j * RT + t, and the row sums to the same
 *   bits as a one-block build with TILEOPS_ROW_THREADS = TILEOPS_THREADS = 2 * THREADS
 *   (the same per-warp butterflies, then the same butterfly over the RT / 32 per-warp
 *   sums, those of the peer block read through distributed shared memory). The cluster
 *   shape is compiled in (cluster_dims(2, 1, 1)): a plain launch with grid.x even.
 *     block   = TILEOPS_THREADS (<= 512: at most 32 per-warp sums per row)
 *     VPT     = ceil(NG / (2 * THREADS)), with the limit of a THREADS block above
 *     grid.x  = 2 * ceil(rows / 1) = 2 * rows (may be capped at an even number, e.g.
 *               2^31 - 2: cluster ctaid.x / 2 of nctaid.x / 2 strides over the rows)
 *     shared  = 0 dynamic (static 8 * THREADS / 32 bytes)
 *   E.g. float16 N = 8192: NG 1024, THREADS 256 (RT 512, VPT 2), grid.x = 2 * rows,
 *   TILEOPS_MIN_BLOCKS = max(1, 1024 / THREADS) (or 0).
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
 *   Any N; TILEOPS_UNROLL vectors in flight per thread per step.
 *     grid.x  = min(rows, sm_count)  (one 1024-thread block per SM: the rows in flight,
 *               sm_count * N * E bytes, stay inside L2 for rows up to ~300 KB)
 *     shared  = 0 dynamic
 *   Recommended THREADS = 1024.
 *
 * tileops_rms_norm_bulk (TILEOPS_KERNEL=3, an experiment measured by
 *   benchmarks/sweep_norm.py --mode bulk, not chosen by the rule above; built only when
 *   named): a persistent grid whose blocks stage their rows in a ring of TILEOPS_STAGES
 *   row buffers in dynamic shared memory, filled by TMA bulk copies
 *   (cp.async.bulk ... mbarrier::complete_tx::bytes, one per row, issued by thread 0), so
 *   a block has up to STAGES - 1 further rows' loads in flight while it reduces and
 *   stores one. Block b handles rows b, b + grid.x, ...; row k of the block goes to
 *   stage k % STAGES, whose mbarrier (static shared memory, one per stage, arrival count
 *   1) completes a phase when the row's bytes have landed; the phase parity of a stage
 *   flips each time it is reused. After a row's stores a block barrier (every thread has
 *   read the stage), then thread 0 orders those generic-proxy reads before the async
 *   proxy's writes (fence.proxy.async.shared::cta) and issues the copy of the block's
 *   row k + STAGES into the stage, if it has one: no copy is ever issued for a row the
 *   block will not consume, so it never exits with one in flight.
 *   The reduction is the on-chip kernel's (RT = THREADS, groups read from shared memory
 *   in the register kernel's order): bitwise the same as the register kernel built with
 *   TILEOPS_ROW_THREADS = TILEOPS_THREADS = THREADS, and as the on-chip kernel.
 *   Requirements (compile errors otherwise): sm_90+, the vector path (TILEOPS_VEC = G),
 *   N * E a multiple of 16 (whole groups: no tail), STAGES * N * E + the static shared
 *   memory <= 232448 bytes (227 KiB, the H100/H200 opt-in per block), N * E < 2^20 (the
 *   mbarrier's transaction count).
 *     block   = TILEOPS_THREADS
 *     grid.x  = min(rows, sm_count * blocks_per_sm), blocks_per_sm = k where k blocks fit
 *               an SM by shared memory: k * (STAGES * NG * 16 + 1 KiB) <= 228 KiB (any
 *               grid.x >= 1 is correct)
 *     shared  = STAGES * NG * 16 bytes dynamic (the runtime raises the function's limit
 *               > 48 KiB); static: 8 * STAGES (mbarriers) + 8 * THREADS / 32 bytes
 *   E.g. float16 N = 8192: NG 1024, 16 KiB per stage; STAGES 3, THREADS 512:
 *   shared 49152, 4 blocks per SM, grid.x = min(rows, 4 * sm_count).
 */

/* ---- no headers: the few CUDA keywords the kernels need, if the compiler lacks them --- */
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#endif
#ifndef __forceinline__
#define __forceinline__ __inline__ __attribute__((always_inline))
#endif
#ifndef __cluster_dims__
#define __cluster_dims__(...) __attribute__((cluster_dims(__VA_ARGS__)))
#endif

/* ---- defines ------------------------------------------------------------------------- */
#if !defined(TILEOPS_DTYPE) || !defined(TILEOPS_N) || !defined(TILEOPS_HAS_WEIGHT) || \
    !defined(TILEOPS_VEC) || !defined(TILEOPS_THREADS)
#error "norm.cu needs -DTILEOPS_DTYPE, -DTILEOPS_N, -DTILEOPS_HAS_WEIGHT, -DTILEOPS_VEC, -DTILEOPS_THREADS"
#endif
#if TILEOPS_DTYPE == 0
#define TILEOPS_E 4
#elif TILEOPS_DTYPE == 1 || TILEOPS_DTYPE == 2
#define TILEOPS_E 2
#else
#error "TILEOPS_DTYPE must be 0 (float32), 1 (float16) or 2 (bfloat16)"
#endif
#define TILEOPS_G (16 / TILEOPS_E)
#if TILEOPS_N < 1
#error "TILEOPS_N must be >= 1"
#endif
#if TILEOPS_VEC != 1 && TILEOPS_VEC != TILEOPS_G
#error "TILEOPS_VEC must be 1 (scalar path) or 16 / element size (vector path)"
#endif
#if TILEOPS_THREADS < 32 || TILEOPS_THREADS > 1024 || TILEOPS_THREADS % 32 != 0
#error "TILEOPS_THREADS must be a multiple of 32 in [32, 1024]"
#endif
#ifndef TILEOPS_ROW_THREADS
#define TILEOPS_ROW_THREADS TILEOPS_THREADS
#endif
#ifndef TILEOPS_UNROLL
#if TILEOPS_VEC == 1
#define TILEOPS_UNROLL 2 /* element loads: 2 groups are already 8-16 loads in flight */
#else
#define TILEOPS_UNROLL 4
#endif
#endif
#ifndef TILEOPS_KERNEL
#define TILEOPS_KERNEL (-1)
#endif
#ifndef TILEOPS_LD_POLICY
#define TILEOPS_LD_POLICY 0
#endif
#ifndef TILEOPS_ST_POLICY
#define TILEOPS_ST_POLICY 0
#endif
#ifndef TILEOPS_MIN_BLOCKS
#define TILEOPS_MIN_BLOCKS 0
#endif
#ifndef TILEOPS_PREFETCH
#define TILEOPS_PREFETCH 0
#endif
#ifndef TILEOPS_CLUSTER
#define TILEOPS_CLUSTER 1
#endif
#ifndef TILEOPS_STAGES
#define TILEOPS_STAGES 2
#endif
#if TILEOPS_CLUSTER == 2
#if TILEOPS_KERNEL != 0
#error "TILEOPS_CLUSTER 2 needs TILEOPS_KERNEL 0 (the register kernel only)"
#endif
#if TILEOPS_ROW_THREADS != TILEOPS_THREADS || TILEOPS_THREADS > 512
#error "TILEOPS_CLUSTER 2 needs TILEOPS_ROW_THREADS == TILEOPS_THREADS <= 512 (one row per block pair, at most 32 warps per row)"
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "TILEOPS_CLUSTER 2 needs sm_90 or later (thread block clusters)"
#endif
#elif TILEOPS_CLUSTER != 1
#error "TILEOPS_CLUSTER must be 1 or 2"
#endif
#if TILEOPS_LD_POLICY == 0
#define TILEOPS_LD_X "ld.global.v4.u32"
#elif TILEOPS_LD_POLICY == 1
#define TILEOPS_LD_X "ld.global.L1::no_allocate.v4.u32"
#elif TILEOPS_LD_POLICY == 2
#define TILEOPS_LD_X "ld.global.L2::256B.v4.u32"
#elif TILEOPS_LD_POLICY == 3
#define TILEOPS_LD_X "ld.global.L1::no_allocate.L2::256B.v4.u32"
#elif TILEOPS_LD_POLICY == 4
#define TILEOPS_LD_X "ld.global.L2::cache_hint.v4.u32"
#elif TILEOPS_LD_POLICY == 5
#define TILEOPS_LD_X "ld.global.L2::cache_hint.L2::256B.v4.u32"
#elif TILEOPS_LD_POLICY == 6
#define TILEOPS_LD_X "ld.global.L1::no_allocate.L2::cache_hint.v4.u32"
#else
#error "TILEOPS_LD_POLICY must be 0 to 6"
#endif
#if TILEOPS_ST_POLICY == 0
#define TILEOPS_ST_Y "st.global.v4.u32"
#elif TILEOPS_ST_POLICY == 1
#define TILEOPS_ST_Y "st.global.cs.v4.u32"
#elif TILEOPS_ST_POLICY == 2
#define TILEOPS_ST_Y "st.global.L1::no_allocate.v4.u32"
#elif TILEOPS_ST_POLICY == 3
#define TILEOPS_ST_Y "st.global.L2::cache_hint.v4.u32"
#else
#error "TILEOPS_ST_POLICY must be 0 to 3"
#endif
#if TILEOPS_MIN_BLOCKS < 0 || TILEOPS_MIN_BLOCKS * TILEOPS_THREADS > 2048
#error "TILEOPS_MIN_BLOCKS must be >= 0 with TILEOPS_MIN_BLOCKS * TILEOPS_THREADS <= 2048"
#endif
#if TILEOPS_MIN_BLOCKS
#define TILEOPS_BOUNDS __launch_bounds__(TILEOPS_THREADS, TILEOPS_MIN_BLOCKS)
#else
#define TILEOPS_BOUNDS __launch_bounds__(TILEOPS_THREADS)
#endif

#define TILEOPS_NG ((TILEOPS_N + TILEOPS_G - 1) / TILEOPS_G) /* groups per row */
#define TILEOPS_NGF (TILEOPS_N / TILEOPS_G)                   /* full groups */
#define TILEOPS_TAIL (TILEOPS_N - TILEOPS_NGF * TILEOPS_G)     /* elements of the last */
#define TILEOPS_FULL(g) (TILEOPS_TAIL == 0 || (g) < TILEOPS_NGF) /* group g has G elements */
#define TILEOPS_WARPS (TILEOPS_THREADS / 32)

/* the register kernel's shape */
#if TILEOPS_CLUSTER == 2
#define RK_CLUSTER 1
#define RK_RT (2 * TILEOPS_THREADS) /* the row's threads: both blocks of the cluster */
#define RK_RPB 1                    /* rows per cluster */
/* a block's first row and the row stride: cluster ctaid.x / 2 of nctaid.x / 2 */
#define RK_FIRST ((long long)(tileops_ctaid() >> 1))
#define RK_STEP ((long long)(tileops_nctaid() >> 1))
#define RK_CLUSTER_DIMS __cluster_dims__(2, 1, 1)
#else
#define RK_CLUSTER 0
#define RK_RT TILEOPS_ROW_THREADS
#define RK_RPB (TILEOPS_THREADS / RK_RT)
#define RK_FIRST ((long long)tileops_ctaid() * RK_RPB)
#define RK_STEP ((long long)tileops_nctaid() * RK_RPB)
#define RK_CLUSTER_DIMS
#endif
#define RK_VPT ((TILEOPS_NG + RK_RT - 1) / RK_RT)
/* at most 32 registers of packed row per thread (float32: 8 groups; the half types get
 * 4, as their unpacked floats take registers too): larger spills at 1024 threads. Blocks
 * of at most 256 threads may hold 16 groups per thread (ptxas, sm_90a: 92-180 registers,
 * no spills), e.g. one warp per 4096-element half row: no block barrier at all. */
#define RK_MAX_VPT (TILEOPS_THREADS <= 256 ? 16 : (TILEOPS_E == 4 ? 8 : 4))
#if RK_RT < 1 || (!RK_CLUSTER && TILEOPS_THREADS % RK_RT != 0) || \
    (RK_RT <= 32 && (RK_RT & (RK_RT - 1)) != 0) || (RK_RT > 32 && RK_RT % 32 != 0)
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
#ifndef RK_W_IN_REGS
#define RK_W_IN_REGS (TILEOPS_HAS_WEIGHT && TILEOPS_VEC != 1 && RK_VPT <= 4 && TILEOPS_THREADS <= 256)
#endif

/* unused: each specialisation uses only some helpers */
#define TILEOPS_DEV static __device__ __forceinline__ __attribute__((unused))

/* One 16-byte group: G elements packed in four 32-bit words (for the half types element
 * 2k is the low half of word k). */
struct __attribute__((aligned(16))) tileops_v4 {
    unsigned int a[4];
};

/* ---- thread indices and barriers (PTX special registers, no builtin header) ----------- */
TILEOPS_DEV unsigned tileops_tid(void) {
    unsigned r;
    asm("mov.u32 %0, %%tid.x;" : "=r"(r));
    return r;
}
TILEOPS_DEV unsigned tileops_ctaid(void) {
    unsigned r;
    asm("mov.u32 %0, %%ctaid.x;" : "=r"(r));
    return r;
}
TILEOPS_DEV unsigned tileops_nctaid(void) {
    unsigned r;
    asm("mov.u32 %0, %%nctaid.x;" : "=r"(r));
    return r;
}
TILEOPS_DEV void tileops_barrier(void) { asm volatile("bar.sync 0;" ::: "memory"); }
TILEOPS_DEV float tileops_shfl_xor(float v, int offset) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(offset));
    return r;
}
/* The same instruction rsqrtf() compiles to without fast math (2 ulp, subnormals kept). */
TILEOPS_DEV float tileops_rsqrt(float v) {
    float r;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
TILEOPS_DEV float tileops_as_float(unsigned u) {
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
}
TILEOPS_DEV unsigned tileops_as_uint(float f) {
    unsigned u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
    return u;
}

/* ---- global and shared memory access -------------------------------------------------- */
/* L2 cache policies (64-bit descriptors; not volatile: computed once, hoisted) */
TILEOPS_DEV unsigned long long tileops_policy_evict_first(void) {
    unsigned long long r;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(r));
    return r;
}
TILEOPS_DEV unsigned long long tileops_policy_evict_last(void) {
    unsigned long long r;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(r));
    return r;
}
TILEOPS_DEV struct tileops_v4 tileops_ld16(const char *p) {
    struct tileops_v4 v;
#if TILEOPS_LD_POLICY >= 4
    asm volatile(TILEOPS_LD_X " {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p), "l"(tileops_policy_evict_first()));
#else
    asm volatile(TILEOPS_LD_X " {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p));
#endif
    return v;
}
/* read-only data (the weight): the non-coherent path, kept in L1 */
TILEOPS_DEV struct tileops_v4 tileops_ld16_nc(const char *p) {
    struct tileops_v4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p));
    return v;
}
TILEOPS_DEV void tileops_st16(char *p, struct tileops_v4 v) {
#if TILEOPS_ST_POLICY == 3
    asm volatile(TILEOPS_ST_Y " [%0], {%1, %2, %3, %4}, %5;"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3]),
                   "l"(tileops_policy_evict_last())
                 : "memory");
#else
    asm volatile(TILEOPS_ST_Y " [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3])
                 : "memory");
#endif
}
/* evict-first store (streaming kernel: keep L2 for the second read of x) */
TILEOPS_DEV void tileops_st16_cs(char *p, struct tileops_v4 v) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3])
                 : "memory");
}
TILEOPS_DEV unsigned tileops_smem_addr(const void *p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

TILEOPS_DEV struct tileops_v4 tileops_zero4(void) {
    struct tileops_v4 v;
    v.a[0] = 0u;
    v.a[1] = 0u;
    v.a[2] = 0u;
    v.a[3] = 0u;
    return v;
}

/* Group g of a row, element by element: the first `count` elements, zeros after. Only
 * element alignment is needed. */
TILEOPS_DEV struct tileops_v4 tileops_ld_group_scalar(const char *row, long long g, int count) {
    struct tileops_v4 v = tileops_zero4();
#if TILEOPS_E == 4
    const unsigned *p = (const unsigned *)row + g * 4;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < count)
            v.a[k] = p[k];
#else
    const unsigned short *p = (const unsigned short *)row + g * 8;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < count)
            v.a[k >> 1] |= (unsigned)p[k] << (16 * (k & 1));
#endif
    return v;
}

TILEOPS_DEV void tileops_st_group_scalar(char *row, long long g, int count, struct tileops_v4 v) {
#if TILEOPS_E == 4
    unsigned *p = (unsigned *)row + g * 4;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < count)
            p[k] = v.a[k];
#else
    unsigned short *p = (unsigned short *)row + g * 8;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < count)
            p[k] = (unsigned short)(v.a[k >> 1] >> (16 * (k & 1)));
#endif
}

/* Loads group g (< NG) of a row: 16-byte load on the vector path, element loads for the
 * tail and on the scalar path. nc: read-only data. */
TILEOPS_DEV struct tileops_v4 tileops_ld_group(const char *row, long long g, int nc) {
#if TILEOPS_VEC == 1
    (void)nc;
    /* a constant count for full groups: no per-element predicates */
    if (TILEOPS_FULL(g))
        return tileops_ld_group_scalar(row, g, TILEOPS_G);
    return tileops_ld_group_scalar(row, g, TILEOPS_TAIL);
#else
    if (TILEOPS_FULL(g))
        return nc ? tileops_ld16_nc(row + g * 16) : tileops_ld16(row + g * 16);
    return tileops_ld_group_scalar(row, g, TILEOPS_TAIL);
#endif
}

TILEOPS_DEV void tileops_st_group(char *row, long long g, struct tileops_v4 v, int evict_first) {
#if TILEOPS_VEC == 1
    (void)evict_first;
    if (TILEOPS_FULL(g))
        tileops_st_group_scalar(row, g, TILEOPS_G, v);
    else
        tileops_st_group_scalar(row, g, TILEOPS_TAIL, v);
#else
    if (TILEOPS_FULL(g)) {
        if (evict_first)
            tileops_st16_cs(row + g * 16, v);
        else
            tileops_st16(row + g * 16, v);
    } else {
        tileops_st_group_scalar(row, g, TILEOPS_TAIL, v);
    }
#endif
}

/* ---- conversions ---------------------------------------------------------------------- */
/* group -> G floats */
TILEOPS_DEV void tileops_unpack(struct tileops_v4 v, float *f) {
#if TILEOPS_DTYPE == 0
#pragma unroll
    for (int k = 0; k < 4; k++)
        f[k] = tileops_as_float(v.a[k]);
#else
#if TILEOPS_DTYPE == 1
#define TILEOPS_UNPACK2 "{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
#else
#define TILEOPS_UNPACK2 "{ shl.b32 %0, %2, 16; and.b32 %1, %2, 0xffff0000; }"
#endif
    /* volatile: the compiler must not keep the unpacked floats alive across the row's
     * reduction (twice the registers of the packed halves); unpacking again is cheap */
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float lo, hi;
        asm volatile(TILEOPS_UNPACK2 : "=f"(lo), "=f"(hi) : "r"(v.a[k]));
        f[2 * k] = lo;
        f[2 * k + 1] = hi;
    }
#endif
}

#if TILEOPS_DTYPE == 2 && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800)
/* float -> bfloat16 bits, round to nearest even, NaN kept quiet (before sm_80) */
TILEOPS_DEV unsigned tileops_bf16_bits(float f) {
    unsigned u = tileops_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x0040u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}
#endif

/* two floats -> one word of the dtype's pair (lo in the low half) */
TILEOPS_DEV unsigned tileops_pack2(float lo, float hi) {
    unsigned r;
#if TILEOPS_DTYPE == 1
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("{ .reg .b16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h}; }"
        : "=r"(r)
        : "f"(lo), "f"(hi));
#endif
#elif TILEOPS_DTYPE == 2
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    r = tileops_bf16_bits(lo) | (tileops_bf16_bits(hi) << 16);
#endif
#else
    r = tileops_as_uint(lo);
    (void)hi;
#endif
    return r;
}

/* G floats -> group */
TILEOPS_DEV struct tileops_v4 tileops_pack(const float *f) {
    struct tileops_v4 v;
#if TILEOPS_DTYPE == 0
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = tileops_as_uint(f[k]);
#else
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = tileops_pack2(f[2 * k], f[2 * k + 1]);
#endif
    return v;
}

/* ---- the math shared by the three kernels --------------------------------------------- */

/* Rounded fp32 arithmetic the compiler may schedule but not re-associate or contract
 * differently from one kernel to another: the sums below have one fixed shape. */
TILEOPS_DEV float tileops_mul(float a, float b) {
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
TILEOPS_DEV float tileops_fma(float a, float b, float c) {
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
}
TILEOPS_DEV float tileops_add(float a, float b) {
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

/* acc + the sum of squares of a group, as a fixed pairwise tree: pairs (2k, 2k+1) as
 * fma(f[2k+1], f[2k+1], f[2k] * f[2k]), then the pair sums pairwise, then one add to acc.
 * A thread's dependent chain is then log2(G) + 1 + its group count, not G x groups
 * (what a single-row call waits on). */
TILEOPS_DEV float tileops_sumsq(struct tileops_v4 v, float acc) {
    float f[TILEOPS_G];
    tileops_unpack(v, f);
    float p[TILEOPS_G / 2];
#pragma unroll
    for (int k = 0; k < TILEOPS_G / 2; k++)
        p[k] = tileops_fma(f[2 * k + 1], f[2 * k + 1], tileops_mul(f[2 * k], f[2 * k]));
#if TILEOPS_G == 8
    float s = tileops_add(tileops_add(p[0], p[1]), tileops_add(p[2], p[3]));
#else
    float s = tileops_add(p[0], p[1]);
#endif
    return tileops_add(acc, s);
}

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

/* float -> one element of the dtype, round to nearest even */
TILEOPS_DEV void tileops_st_elem(char *row, long long i, float v) {
#if TILEOPS_DTYPE == 0
    ((float *)row)[i] = v;
#elif TILEOPS_DTYPE == 1
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    ((unsigned short *)row)[i] = h;
#else
    ((unsigned short *)row)[i] = (unsigned short)(tileops_pack2(v, 0.0f) & 0xffffu);
#endif
}

/* one element of the dtype -> float */
TILEOPS_DEV float tileops_ld_elem(const char *row, long long i) {
#if TILEOPS_DTYPE == 0
    return ((const float *)row)[i];
#elif TILEOPS_DTYPE == 1
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(((const unsigned short *)row)[i]));
    return f;
#else
    return tileops_as_float((unsigned)((const unsigned short *)row)[i] << 16);
#endif
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

/* v summed over each group of `width` lanes (a power of two <= 32) by an xor butterfly,
 * the steps 16, 8, ... 1 below width: every lane of the group gets the same total. */
TILEOPS_DEV float tileops_butterfly(float v, int width) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        if (off < width)
            v += tileops_shfl_xor(v, off);
    return v;
}

/* The smallest power of two >= nw (nw >= 1; constant after inlining). */
TILEOPS_DEV int tileops_pow2ceil(int nw) {
    int pw = 1;
    while (pw < nw)
        pw <<= 1;
    return pw;
}

/* Sum over the RT threads of a row, the same fixed order for every row. RT <= 32: an
 * xor butterfly inside the row's lanes. RT > 32: a butterfly in each warp, the per-warp
 * sums through red[] (one barrier; all threads of the block must call it), a butterfly
 * over them. red: TILEOPS_WARPS floats, not reused before the next barrier. Every thread
 * of the row returns the same total. */
TILEOPS_DEV float tileops_row_sum(float v, float *red, unsigned tid, int rt) {
    if (rt <= 32)
        return tileops_butterfly(v, rt);
    v = tileops_butterfly(v, 32);
    unsigned warp = tid >> 5, lane = tid & 31u;
    if (lane == 0)
        red[warp] = v;
    tileops_barrier();
    unsigned first = (tid / (unsigned)rt) * (unsigned)(rt / 32);
    /* the nw per-warp sums sit in every group of pw lanes (pw = pow2ceil(nw)), so a
     * butterfly of log2(pw) steps leaves the total in all 32 lanes; it adds the same
     * values in the same pairs as a full 5-step one (whose extra steps added zeros) */
    const int nw = rt / 32;
    const int pw = tileops_pow2ceil(nw);
    const unsigned l = lane & (unsigned)(pw - 1);
    float p = l < (unsigned)nw ? red[first + l] : 0.0f;
    return tileops_butterfly(p, pw);
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
 * and bulk kernels. */
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

#if RK_CLUSTER
/* ---- a row over the 2 blocks of a cluster (sm_90+) ---------------------------------- */
TILEOPS_DEV unsigned tileops_cluster_ctarank(void) {
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
/* the two halves of a cluster-wide barrier of every thread of both blocks: what a
 * thread wrote to shared memory before its arrive is visible to the peer block after
 * its wait */
TILEOPS_DEV void tileops_cluster_arrive(void) {
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
TILEOPS_DEV void tileops_cluster_wait(void) {
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}
/* the float at the same shared address as p in the block of rank `rank` (DSMEM) */
TILEOPS_DEV float tileops_ld_cluster(const float *p, unsigned rank) {
    float r;
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %1, %2; ld.shared::cluster.f32 %0, [a]; }"
                 : "=f"(r)
                 : "r"(tileops_smem_addr(p)), "r"(rank)
                 : "memory");
    return r;
}

/* tileops_row_sum(v, red, t, RK_RT) of a one-block build, for a row spread over the 2
 * blocks of a cluster (the block of rank c holds the row's threads c * THREADS ...):
 * the same butterfly in each warp; the per-warp sums through red[] (each block's own)
 * and one cluster barrier (every thread of both blocks must call it); then the same
 * butterfly over the RK_RT / 32 sums, sum l read from block l / TILEOPS_WARPS. The peer
 * reads this block's red[] after the barrier: red is not rewritten before the next
 * cluster barrier, and the block must not exit before the peer has passed one more. */
TILEOPS_DEV float tileops_row_sum_cluster(float v, float *red, unsigned tid) {
    v = tileops_butterfly(v, 32);
    const unsigned lane = tid & 31u;
    if (lane == 0)
        red[tid >> 5] = v;
    tileops_cluster_arrive();
    tileops_cluster_wait();
    const int nw = RK_RT / 32; /* <= 32 */
    const int pw = tileops_pow2ceil(nw);
    const unsigned l = lane & (unsigned)(pw - 1);
    float p = 0.0f;
    if (l < (unsigned)nw) {
        const unsigned rank = l / (unsigned)TILEOPS_WARPS;
        p = tileops_ld_cluster(&red[l - rank * (unsigned)TILEOPS_WARPS], rank);
    }
    return tileops_butterfly(p, pw);
}
#endif /* RK_CLUSTER */

extern "C" __global__ void TILEOPS_BOUNDS RK_CLUSTER_DIMS
tileops_rms_norm(const void *x, const void *w, void *y, long long rows, long long x_row_stride,
                 long long y_row_stride, float eps) {
#if RK_RT > 32
    __shared__ float red[2][TILEOPS_WARPS]; /* alternated per row: one barrier per row */
#else
    float *red[2] = {0, 0};
#endif
    const unsigned tid = tileops_tid();
#if RK_CLUSTER
    const unsigned t = tileops_cluster_ctarank() * TILEOPS_THREADS + tid; /* thread within the row */
    const long long group = 0;
#else
    const unsigned t = tid % RK_RT; /* thread within the row */
    const long long group = tid / RK_RT;
#endif
#if RK_W_IN_REGS
    struct tileops_v4 wr[RK_VPT];
#pragma unroll
    for (int j = 0; j < RK_VPT; j++) {
        long long g = (long long)j * RK_RT + t;
        wr[j] = g < TILEOPS_NG ? tileops_ld_group((const char *)w, g, 1) : tileops_zero4();
    }
#endif
#if TILEOPS_PREFETCH
    struct tileops_v4 xr[RK_VPT];
    tileops_rk_load(xr, x, RK_FIRST + group, rows, x_row_stride, t);
#endif
    int parity = 0;
    for (long long base = RK_FIRST; base < rows; base += RK_STEP) {
        const long long row = base + group;
#if !TILEOPS_PREFETCH
        struct tileops_v4 xr[RK_VPT];
        tileops_rk_load(xr, x, row, rows, x_row_stride, t);
#endif
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < RK_VPT; j++)
            acc = tileops_sumsq(xr[j], acc);
#if TILEOPS_PREFETCH
        /* the next rows' loads are in flight during this row's reduction and stores */
        struct tileops_v4 xn[RK_VPT];
        tileops_rk_load(xn, x, row + RK_STEP, rows, x_row_stride, t);
#endif
#if RK_CLUSTER
        const float rstd = tileops_rstd(tileops_row_sum_cluster(acc, red[parity], tid), eps);
        /* the block's last row: its reads of the peer's red[] are done, the peer may exit
         * once both have arrived (the wait is after the loop, behind the stores) */
        if (base + RK_STEP >= rows)
            tileops_cluster_arrive();
#else
        const float rstd = tileops_rstd(tileops_row_sum(acc, red[parity], tid, RK_RT), eps);
#endif
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
#if TILEOPS_PREFETCH
#pragma unroll
        for (int j = 0; j < RK_VPT; j++)
            xr[j] = xn[j];
#endif
    }
#if RK_CLUSTER
    /* both blocks of a cluster visit the same rows: both arrived iff they had a row */
    if (RK_FIRST < rows)
        tileops_cluster_wait();
#endif
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
    __shared__ float red[2][TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    int parity = 0;
    for (long long row = tileops_ctaid(); row < rows; row += tileops_nctaid()) {
        const char *xrow = tileops_row_in(x, row, x_row_stride);
        float acc = 0.0f;
#pragma unroll 1
        for (int j0 = 0; j0 < ST_J; j0 += TILEOPS_UNROLL) {
            struct tileops_v4 v[TILEOPS_UNROLL];
#pragma unroll
            for (int u = 0; u < TILEOPS_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                v[u] = g < TILEOPS_NG ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
            }
#pragma unroll
            for (int u = 0; u < TILEOPS_UNROLL; u++)
                acc = tileops_sumsq(v[u], acc);
        }
        const float rstd = tileops_rstd(tileops_row_sum(acc, red[parity], tid, TILEOPS_THREADS), eps);
        parity ^= 1;
        char *yrow = tileops_row_out(y, row, y_row_stride);
#pragma unroll 1
        for (int j0 = 0; j0 < ST_J; j0 += TILEOPS_UNROLL) {
            struct tileops_v4 v[TILEOPS_UNROLL];
            struct tileops_v4 wv[TILEOPS_UNROLL];
#pragma unroll
            for (int u = 0; u < TILEOPS_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                v[u] = g < TILEOPS_NG ? tileops_ld_group(xrow, g, 0) : tileops_zero4();
#if TILEOPS_HAS_WEIGHT && TILEOPS_VEC != 1
                wv[u] = g < TILEOPS_NG ? tileops_ld_group((const char *)w, g, 1) : tileops_zero4();
#else
                wv[u] = tileops_zero4();
#endif
            }
#pragma unroll
            for (int u = 0; u < TILEOPS_UNROLL; u++) {
                long long g = (long long)(j0 + u) * TILEOPS_THREADS + tid;
                if (g < TILEOPS_NG)
                    tileops_write_group(yrow, w, g, v[u], 1, wv[u], rstd, 1);
            }
        }
    }
}
#endif /* ST_ENABLED */

/* ==== tileops_rms_norm_bulk: rows staged by TMA bulk copies in a ring of stages ========= */
#if TILEOPS_KERNEL == 3
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "tileops_rms_norm_bulk (TILEOPS_KERNEL 3) needs sm_90 or later (cp.async.bulk, mbarrier transaction counts)"
#endif
#if TILEOPS_VEC != TILEOPS_G || TILEOPS_TAIL != 0
#error "tileops_rms_norm_bulk (TILEOPS_KERNEL 3) needs the vector path (TILEOPS_VEC = 16 / element size) and N * element size a multiple of 16"
#endif
#if TILEOPS_STAGES < 2 || TILEOPS_STAGES > 4
#error "TILEOPS_STAGES must be 2, 3 or 4"
#endif
#define BK_ROW_BYTES (TILEOPS_NG * 16) /* = N * E: whole groups */
#define BK_J TILEOPS_SMEM_J
/* the mbarrier transaction count is below 2^20: one bulk copy of a row always fits it */
#if BK_ROW_BYTES >= (1 << 20)
#error "tileops_rms_norm_bulk: a row of N * element size >= 2^20 bytes exceeds the mbarrier transaction count"
#endif
#if TILEOPS_STAGES * BK_ROW_BYTES + 8 * TILEOPS_STAGES + 8 * TILEOPS_WARPS > 232448
#error "tileops_rms_norm_bulk: TILEOPS_STAGES row buffers exceed 227 KiB of shared memory per block: fewer stages"
#endif

/* ---- mbarriers and bulk copies (sm_90+) ---------------------------------------------- */
TILEOPS_DEV void tileops_mbar_init(unsigned long long *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(tileops_smem_addr(bar)), "r"(count)
                 : "memory");
}
/* makes the initialised mbarriers visible to the async proxy (the bulk copies) */
TILEOPS_DEV void tileops_fence_mbar_init(void) {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/* orders this thread's (and, after a barrier, the block's) generic-proxy accesses to
 * shared memory before later async-proxy ones (a bulk copy rewriting a read buffer) */
TILEOPS_DEV void tileops_fence_proxy_async(void) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/* Waits until the phase of parity `parity` of the mbarrier has completed. */
TILEOPS_DEV void tileops_mbar_wait(unsigned long long *bar, unsigned parity) {
    const unsigned a = tileops_smem_addr(bar);
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                     "selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}
/* One thread: arms the stage's mbarrier for a row's bytes (its one arrival) and issues
 * the bulk copy of the row (global, 16-byte aligned) into the stage's buffer. */
TILEOPS_DEV void tileops_bulk_row(struct tileops_v4 *dst, unsigned long long *bar, const char *src) {
    const unsigned b = tileops_smem_addr(bar);
    asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }"
                 ::"r"(b), "r"((unsigned)BK_ROW_BYTES)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(tileops_smem_addr(dst)), "l"(src), "r"((unsigned)BK_ROW_BYTES), "r"(b)
                 : "memory");
}

extern "C" __global__ void TILEOPS_BOUNDS
tileops_rms_norm_bulk(const void *x, const void *w, void *y, long long rows,
                      long long x_row_stride, long long y_row_stride, float eps) {
    extern __shared__ struct tileops_v4 tileops_bulk_smem[]; /* STAGES rows of NG groups */
    __shared__ __attribute__((aligned(8))) unsigned long long bar[TILEOPS_STAGES];
    __shared__ float red[2][TILEOPS_WARPS];
    const unsigned tid = tileops_tid();
    const long long first = tileops_ctaid();
    const long long step = tileops_nctaid();
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < TILEOPS_STAGES; s++)
            tileops_mbar_init(&bar[s], 1);
        tileops_fence_mbar_init();
    }
    tileops_barrier(); /* the initialised mbarriers, before any thread waits on one */
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < TILEOPS_STAGES; s++) {
            const long long r = first + s * step;
            if (r < rows)
                tileops_bulk_row(tileops_bulk_smem + s * TILEOPS_NG, &bar[s],
                                 tileops_row_in(x, r, x_row_stride));
        }
    }
    int stage = 0, parity = 0;
    unsigned phase = 0; /* parity of the phase the current pass over the stages waits for */
    for (long long row = first; row < rows; row += step) {
        const struct tileops_v4 *buf = tileops_bulk_smem + stage * TILEOPS_NG;
        tileops_mbar_wait(&bar[stage], phase);
        const float rstd = tileops_smem_row_rstd(buf, red[parity], tid, eps);
        parity ^= 1;
        char *yrow = tileops_row_out(y, row, y_row_stride);
#pragma unroll 4
        for (int j = 0; j < BK_J; j++) {
            int g = j * TILEOPS_THREADS + (int)tid;
            if (g < TILEOPS_NG)
                tileops_write_group(yrow, w, g, buf[g], 0, tileops_zero4(), rstd, 0);
        }
        tileops_barrier(); /* every thread has read the stage */
        if (tid == 0) {
            const long long next = row + TILEOPS_STAGES * step;
            if (next < rows) {
                tileops_fence_proxy_async();
                tileops_bulk_row(tileops_bulk_smem + stage * TILEOPS_NG, &bar[stage],
                                 tileops_row_in(x, next, x_row_stride));
            }
        }
        if (++stage == TILEOPS_STAGES) {
            stage = 0;
            phase ^= 1u;
        }
    }
}
#endif /* TILEOPS_KERNEL == 3 */

/* ops/sampling/sampling_common.cuh: what the sampling family's CUDA C kernels share (the
 * runtime splices it, and ../common/rows_common.cuh, into each kernel's source): octets of
 * a row, ordered keys, block-wide reductions and scans in a fixed order, the row split
 * over a thread-block cluster, and the radix passes of the selection kernels.
 *
 * ==== A row over a cluster (softmax, argmax, sample_from_probs) =========================
 * Row r is handled by the TILEOPS_CLUSTER CTAs of cluster r (grid.x = rows x CLUSTER,
 * the cluster shape compiled in: a plain launch); the CTA of rank c takes the elements
 * [c CHUNK, (c + 1) CHUNK) of the row (TILEOPS_CHUNK, a multiple of 8; the last CTAs may
 * have fewer, or none). Thread t of a CTA takes the chunk's octets (8 elements) t,
 * t + THREADS, ... (TILEOPS_OPT of them at most). A CTA's partial result goes over
 * distributed shared memory to the CTAs that need it (softmax: every CTA; argmax and the
 * draw: rank 0, which writes the token), combined in rank order. TILEOPS_CLUSTER = 1 is a
 * plain CTA per row (any GPU).
 * Every split depends on V, the dtype and the architecture only: a row's bits never
 * depend on the batch.
 *
 * ==== Defines (besides rows_common.cuh's: TILEOPS_DTYPE, TILEOPS_N = V, TILEOPS_VEC,
 * TILEOPS_THREADS) ==========================================================================
 *   TILEOPS_CLUSTER 1, 2, 4, 8 or 16 (> 1: sm_90 or later); TILEOPS_CHUNK elements per CTA, a
 *   multiple of 8 with CLUSTER x CHUNK >= V; TILEOPS_OPT octets per thread,
 *   OPT x THREADS x 8 >= CHUNK. TILEOPS_VEC: G when the rows are 16-byte aligned (the
 *   pointers and V x E), else 1 (element loads). */
#ifndef TILEOPS_SAMPLING_COMMON_CUH
#define TILEOPS_SAMPLING_COMMON_CUH

#include "../common/rows_common.cuh"

#if !defined(TILEOPS_CLUSTER) || !defined(TILEOPS_CHUNK) || !defined(TILEOPS_OPT)
#error "the sampling kernels need -DTILEOPS_CLUSTER, -DTILEOPS_CHUNK, -DTILEOPS_OPT"
#endif
#if TILEOPS_CLUSTER != 1 && TILEOPS_CLUSTER != 2 && TILEOPS_CLUSTER != 4 && TILEOPS_CLUSTER != 8 && TILEOPS_CLUSTER != 16
#error "TILEOPS_CLUSTER must be 1, 2, 4, 8 or 16 (non-portable: the runtime allows it on sm_90 kernels)"
#endif
#if TILEOPS_CHUNK < 8 || TILEOPS_CHUNK % 8 || TILEOPS_CHUNK * TILEOPS_CLUSTER < TILEOPS_N
#error "TILEOPS_CHUNK must be a multiple of 8 with TILEOPS_CLUSTER x TILEOPS_CHUNK >= TILEOPS_N"
#endif
#if TILEOPS_OPT < 1 || TILEOPS_OPT * TILEOPS_THREADS * 8 < TILEOPS_CHUNK
#error "TILEOPS_OPT x TILEOPS_THREADS x 8 must cover TILEOPS_CHUNK"
#endif
#if TILEOPS_CLUSTER > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "TILEOPS_CLUSTER > 1 needs sm_90 or later (thread block clusters)"
#endif
#if TILEOPS_CLUSTER > 1
#define SMP_CLUSTER_DIMS __attribute__((cluster_dims(TILEOPS_CLUSTER, 1, 1)))
#else
#define SMP_CLUSTER_DIMS
#endif
#define SMP_NO (TILEOPS_CHUNK / 8) /* octets of a chunk */
#define SMP_NINF tileops_as_float(0xff800000u) /* -inf */

typedef unsigned long long smp_u64;

/* ---- special registers, shared memory, warps -------------------------------------------- */
TILEOPS_DEV unsigned smp_smem_addr(const void *p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}
TILEOPS_DEV void smp_red_add_u32(unsigned *p, unsigned v) {
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(smp_smem_addr(p)), "r"(v) : "memory");
}
TILEOPS_DEV unsigned smp_atom_add_u32(unsigned *p, unsigned v) { /* returns the old value */
    unsigned old;
    asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(smp_smem_addr(p)), "r"(v) : "memory");
    return old;
}
/* *hi:*lo += v, exactly, by 32-bit atomics (a 64-bit shared atomic is a compare-and-swap
 * loop, slow under contention): the low word's carry goes to the high word; the sum is
 * exact in any order. (One 64-bit red.shared.add an element instead: the mask 1.45x
 * slower, H200 session 19.) */
TILEOPS_DEV void smp_add_u64_split(unsigned *lo, unsigned *hi, smp_u64 v) {
    const unsigned l = (unsigned)v, old = smp_atom_add_u32(lo, l);
    const unsigned up = (unsigned)(v >> 32) + (old + l < old);
    if (up)
        smp_red_add_u32(hi, up);
}
TILEOPS_DEV void smp_red_min_s32(int *p, int v) {
    asm volatile("red.shared.min.s32 [%0], %1;" ::"r"(smp_smem_addr(p)), "r"(v) : "memory");
}
TILEOPS_DEV unsigned smp_shfl_xor_u32(unsigned v, int off) {
    unsigned r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(off));
    return r;
}
TILEOPS_DEV smp_u64 smp_shfl_xor_u64(smp_u64 v, int off) {
    return ((smp_u64)smp_shfl_xor_u32((unsigned)(v >> 32), off) << 32) | smp_shfl_xor_u32((unsigned)v, off);
}
/* the value of lane `src` - `delta` (lanes below delta get their own value) */
TILEOPS_DEV smp_u64 smp_shfl_up_u64(smp_u64 v, int delta) {
    unsigned lo, hi;
    asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(lo) : "r"((unsigned)v), "r"(delta));
    asm volatile("shfl.sync.up.b32 %0, %1, %2, 0, 0xffffffff;" : "=r"(hi) : "r"((unsigned)(v >> 32)), "r"(delta));
    return ((smp_u64)hi << 32) | lo;
}
TILEOPS_DEV float smp_max(float a, float b) { /* the number when one is NaN */
    float r;
    asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
TILEOPS_DEV float smp_div(float a, float b) { /* IEEE division */
    float r;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
/* exp(d) as 2^(d log2 e): NaN for NaN, 0 for -inf and for results below 2^-126 (ftz: the
 * non-ftz form costs a compare and two predicated multiplies an exp) */
TILEOPS_DEV float smp_exp(float d) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(tileops_mul(d, 1.44269504088896341f)));
    return r;
}

/* ---- ordered keys ------------------------------------------------------------------------ */
/* A key ordering floats as numbers: -0.0 == 0.0, every NaN the largest (as torch orders
 * them), the same function as the CPU kernels' sampling_key. */
TILEOPS_DEV unsigned smp_key(float f) {
    const unsigned u = tileops_as_uint(f);
    if (f != f)
        return 0xffffffffu;
    if (f == 0.0f)
        return 0x80000000u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
/* (key, index) as one number: larger value first, then lower index first */
TILEOPS_DEV smp_u64 smp_rank(unsigned key, long long i) {
    return ((smp_u64)key << 32) | (smp_u64)(0xffffffffu - (unsigned)i);
}
TILEOPS_DEV long long smp_rank_index(smp_u64 r) { return (long long)(0xffffffffu - (unsigned)r); }

/* ---- octets of a row ------------------------------------------------------------------- */
/* Elements 8o .. 8o + 7 of a row (dtype TILEOPS_DTYPE) as floats; those at or past V (the
 * row's last, partial octet) read as `fill`. */
TILEOPS_DEV void smp_ld8(const char *row, long long o, float fill, float *f) {
    const long long e = 8 * o;
#if TILEOPS_VEC != 1
    if (e + 8 <= TILEOPS_N) {
#if TILEOPS_E == 4
        tileops_unpack(tileops_ld16_nc(row + e * 4), f);
        tileops_unpack(tileops_ld16_nc(row + e * 4 + 16), f + 4);
#else
        tileops_unpack(tileops_ld16_nc(row + e * 2), f);
#endif
        return;
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; k++)
        f[k] = e + k < TILEOPS_N ? tileops_ld_elem(row, e + k) : fill;
}

/* Batches of a thread's octets: j0 .. j0 + nb - 1 of its loop (octet o0 + j THREADS + tid
 * of the row). When all nb are full octets of the CTA's on the vector path
 * (smp_batch_full), the caller issues every 16-byte load of the batch first (smp_ld_raw),
 * then converts one octet at a time as it uses it (smp_batch_octet): nb loads in flight
 * per thread, where a loop of smp_ld8 compiles to one at a time (a CTA then has a fraction
 * of the bytes in flight that HBM needs). Otherwise smp_batch_octet loads each octet as
 * smp_ld8 does. SMP_BATCH octets make 64 bytes per thread (16 registers). */
#define SMP_WORDS (TILEOPS_E == 4 ? 2 : 1) /* 16-byte words per octet */
#define SMP_BATCH (4 / SMP_WORDS)
/* whether the CTA's octet o (of o0 + o in the row) is one of its octets and whole, on the
 * vector path: a batch is full when its last octet is (smp_batch_full); a partial batch loads its
 * whole octets together (smp_ld_partial) */
TILEOPS_DEV int smp_octet_whole(long long o0, long long no, long long o) {
#if TILEOPS_VEC != 1
    return o < no && 8 * (o0 + o) + 8 <= TILEOPS_N;
#else
    (void)o0, (void)no, (void)o;
    return 0;
#endif
}
TILEOPS_DEV int smp_batch_full(long long o0, long long no, int j0, int nb, unsigned tid) {
    return smp_octet_whole(o0, no, (long long)(j0 + nb - 1) * TILEOPS_THREADS + tid);
}
/* the words of octet o of a row of `e`-byte elements (a full octet, 16-byte aligned) */
TILEOPS_DEV void smp_ld_raw(const char *row, long long o, int e, struct tileops_v4 *w) {
#pragma unroll
    for (int h = 0; h < 8 * e / 16; h++)
        w[h] = tileops_ld16_nc(row + 8 * o * e + 16 * h);
}
/* A partial batch's whole octets, their loads issued together as a full batch's are (the
 * thread at the CTA's end then waits one latency for them, not one an octet) */
TILEOPS_DEV void smp_ld_partial(const char *t, long long o0, long long no, int j0, int nb, unsigned tid,
                                struct tileops_v4 (*w)[SMP_WORDS]) {
#pragma unroll
    for (int b = 0; b < nb; b++)
        if (smp_octet_whole(o0, no, (long long)(j0 + b) * TILEOPS_THREADS + tid))
            smp_ld_raw(t, (long long)(j0 + b) * TILEOPS_THREADS, TILEOPS_E, w[b]);
}
/* octet j0 + b of the batch as floats: from its words when the batch is full, else loaded
 * (past the CTA's octets: `fill` throughout) */
TILEOPS_DEV void smp_batch_octet(const char *row, long long o0, long long no, int j0, int b, unsigned tid, int full,
                                 const struct tileops_v4 *w, float fill, float *f) {
    const long long o = (long long)(j0 + b) * TILEOPS_THREADS + tid;
    if (full) {
#pragma unroll
        for (int h = 0; h < SMP_WORDS; h++)
            tileops_unpack(w[h], f + 4 * h);
    } else if (o < no) {
        smp_ld8(row, o0 + o, fill, f);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            f[k] = fill;
    }
}
/* the loop over a thread's batches: unrolled while short */
#if TILEOPS_OPT <= 4 * SMP_BATCH
#define SMP_BATCH_UNROLL _Pragma("unroll")
#else
#define SMP_BATCH_UNROLL _Pragma("unroll 1")
#endif

/* ---- a thread's best element (argmax, sample_from_probs) ------------------------------
 * A thread scans its elements in increasing index order keeping the largest value seen
 * and its index: a strict comparison, so a tie keeps the earlier element and no index is
 * compared per element. Per batch (smp_best_octet over its octets) the index is kept
 * relative to the batch's first element (a constant per element: one select), made
 * absolute at the batch's end when its best rose. The (key, index) rank (smp_rank) is
 * formed once per thread, for the CTA's and the cluster's reductions. */

/* max(best, f) into best: NaN when either is (nan_wins: a NaN, once the best, stays it),
 * else NaN passed over */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define SMP_MAX_NAN "max.NaN.f32 %0, %0, %2;"
#else
#define SMP_MAX_NAN "{ .reg .pred q; .reg .f32 t, s; setp.nan.f32 q, %0, %2; max.f32 t, %0, %2; add.f32 s, %0, %2; " \
                    "selp.f32 %0, s, t, q; }"
#endif
/* One octet of a batch, its element k at `rel0` + k from the batch's first: *at = that
 * offset where f[k] > *best (the best so far in the batch); *best the running maximum
 * (NaN-sticky when nan_wins, else NaN passed over). One asm statement per element, in
 * order: written in C, the compiler computes every running maximum first and keeps them
 * alive for the selects (spills). */
TILEOPS_DEV void smp_best_octet(const float *f, int rel0, int nan_wins, float *best, int *at) {
#pragma unroll
    for (int k = 0; k < 8; k++) {
        if (nan_wins)
            asm volatile("{ .reg .pred p; setp.gt.f32 p, %2, %0; selp.b32 %1, %3, %1, p; " SMP_MAX_NAN " }"
                         : "+f"(*best), "+r"(*at)
                         : "f"(f[k]), "r"(rel0 + k));
        else
            asm volatile("{ .reg .pred p; setp.gt.f32 p, %2, %0; selp.b32 %1, %3, %1, p; selp.f32 %0, %2, %0, p; }"
                         : "+f"(*best), "+r"(*at)
                         : "f"(f[k]), "r"(rel0 + k));
    }
}
/* The first NaN among the thread's elements (one whose best is NaN: read again, rare);
 * -1 for none. */
TILEOPS_DEV long long smp_first_nan(const char *row, long long o0, long long no, unsigned tid) {
#pragma unroll 1
    for (long long o = tid; o < no; o += TILEOPS_THREADS) {
        float f[8];
        smp_ld8(row, o0 + o, 0.0f, f);
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (f[k] != f[k])
                return 8 * (o0 + o) + k;
    }
    return -1;
}

/* ---- block-wide reductions and scans (every thread of the CTA calls them) -------------- */
/* Each leaves its result in every thread and `red` free for the next call (a barrier at the
 * end). The order of the float sum is fixed (tileops_row_sum). */
TILEOPS_DEV float smp_block_max(float v, float *red, unsigned tid) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        v = smp_max(v, tileops_shfl_xor(v, off));
    if ((tid & 31u) == 0)
        red[tid >> 5] = v;
    tileops_barrier();
    float m = red[0];
    for (int w = 1; w < TILEOPS_WARPS; w++)
        m = smp_max(m, red[w]);
    tileops_barrier();
    return m;
}
TILEOPS_DEV float smp_block_sum(float v, float *red, unsigned tid) {
    v = tileops_row_sum(v, red, tid, TILEOPS_THREADS);
    tileops_barrier();
    return v;
}
/* The ranks' maximum (sum 0) or the words' sum (sum 1) over the CTA, exact in any order:
 * each warp's by a butterfly, then warp 0 combines the warps' (a thread reads one word of
 * red, not every warp's). */
TILEOPS_DEV smp_u64 smp_block_reduce_u64(smp_u64 v, smp_u64 *red, unsigned tid, int sum) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1) {
        const smp_u64 o = smp_shfl_xor_u64(v, off);
        v = sum ? v + o : o > v ? o : v;
    }
    if ((tid & 31u) == 0)
        red[tid >> 5] = v;
    tileops_barrier();
    if (tid < 32) {
        v = tid < (unsigned)TILEOPS_WARPS ? red[tid] : 0;
#pragma unroll
        for (int off = 16; off >= 1; off >>= 1) {
            const smp_u64 o = smp_shfl_xor_u64(v, off);
            v = sum ? v + o : o > v ? o : v;
        }
        if (tid == 0)
            red[0] = v;
    }
    tileops_barrier();
    v = red[0];
    tileops_barrier();
    return v;
}
TILEOPS_DEV smp_u64 smp_block_max_u64(smp_u64 v, smp_u64 *red, unsigned tid) {
    return smp_block_reduce_u64(v, red, tid, 0);
}
TILEOPS_DEV smp_u64 smp_block_sum_u64(smp_u64 v, smp_u64 *red, unsigned tid) {
    return smp_block_reduce_u64(v, red, tid, 1);
}
/* The inclusive sum of v over the warp's lanes up to this one. */
TILEOPS_DEV smp_u64 smp_warp_scan_u64(smp_u64 v, unsigned lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const smp_u64 o = smp_shfl_up_u64(v, d);
        if (lane >= (unsigned)d)
            v += o;
    }
    return v;
}
/* The sum of v over the threads below this one (exclusive, in thread order); *total the
 * sum over all. red: SMP_RED words (the warps' totals, scanned by warp 0: a thread reads
 * two words, where a loop over the warps' totals in every thread read 64 and the scan took
 * ~2 µs of 1024 threads, H200). */
#define SMP_RED (TILEOPS_WARPS + 1)
TILEOPS_DEV smp_u64 smp_block_scan_u64(smp_u64 v, smp_u64 *red, unsigned tid, smp_u64 *total) {
    const unsigned lane = tid & 31u, warp = tid >> 5;
    const smp_u64 incl = smp_warp_scan_u64(v, lane);
    if (lane == 31)
        red[warp] = incl;
    tileops_barrier();
    if (warp == 0) {
        const smp_u64 w = lane < (unsigned)TILEOPS_WARPS ? red[lane] : 0, wi = smp_warp_scan_u64(w, lane);
        if (lane < (unsigned)TILEOPS_WARPS)
            red[lane] = wi - w; /* the warps' totals before this one's */
        if (lane == 31)
            red[TILEOPS_WARPS] = wi;
    }
    tileops_barrier();
    const smp_u64 before = red[warp];
    *total = red[TILEOPS_WARPS];
    tileops_barrier();
    return before + incl - v;
}

/* ---- the cluster --------------------------------------------------------------------- */
TILEOPS_DEV unsigned smp_rank_in_cluster(void) {
#if TILEOPS_CLUSTER > 1
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
#else
    return 0;
#endif
}
/* the two halves of a barrier of every thread of the cluster's CTAs: what a thread wrote
 * to shared memory before arriving is visible to the other CTAs after their wait */
TILEOPS_DEV void smp_cluster_arrive(void) {
#if TILEOPS_CLUSTER > 1
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
#endif
}
TILEOPS_DEV void smp_cluster_wait(void) {
#if TILEOPS_CLUSTER > 1
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
#endif
}
#if TILEOPS_CLUSTER > 1
/* the write of v to the word at the same shared address as p in the CTA of rank `rank` */
TILEOPS_DEV void smp_st_cluster_u64(smp_u64 *p, unsigned rank, smp_u64 v) {
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %0, %1; st.shared::cluster.u64 [a], %2; }" ::"r"(
                     smp_smem_addr(p)),
                 "r"(rank), "l"(v)
                 : "memory");
}
/* the word at the same shared address as p in the CTA of rank `rank` */
TILEOPS_DEV smp_u64 smp_ld_cluster_u64(const smp_u64 *p, unsigned rank) {
    smp_u64 r;
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %1, %2; ld.shared::cluster.u64 %0, [a]; }"
                 : "=l"(r)
                 : "r"(smp_smem_addr(p)), "r"(rank)
                 : "memory");
    return r;
}
#endif
/* The largest of the CTAs' ranks v (each CTA's the same in its every thread), in thread 0
 * of the cluster's CTA of rank 0 (elsewhere: v): each CTA's thread 0 writes its v into
 * rank 0's slots (TILEOPS_CLUSTER words), one cluster barrier (reading every CTA's word in
 * every thread took 1024 x CLUSTER loads over distributed shared memory a CTA). Every
 * thread of every CTA calls it; no CTA reads another's shared memory after it. */
TILEOPS_DEV smp_u64 smp_cluster_max_u64(smp_u64 v, smp_u64 *slots, unsigned tid) {
#if TILEOPS_CLUSTER > 1
    const unsigned me = smp_rank_in_cluster();
    if (tid == 0)
        smp_st_cluster_u64(&slots[me], 0, v);
    smp_cluster_arrive();
    smp_cluster_wait();
    if (tid == 0 && me == 0) {
#pragma unroll
        for (unsigned r = 0; r < TILEOPS_CLUSTER; r++)
            v = slots[r] > v ? slots[r] : v;
    }
    return v;
#else
    (void)slots;
    (void)tid;
    return v;
#endif
}

/* The elements [c0, c0 + n) of the row this CTA takes (n may be 0: a CTA past the row). */
TILEOPS_DEV long long smp_chunk_first(void) { return (long long)smp_rank_in_cluster() * TILEOPS_CHUNK; }
TILEOPS_DEV long long smp_chunk_count(long long c0) {
    const long long n = (long long)TILEOPS_N - c0;
    return n < 0 ? 0 : n < TILEOPS_CHUNK ? n : TILEOPS_CHUNK;
}
/* the row of this CTA's cluster */
TILEOPS_DEV long long smp_row(void) { return (long long)(tileops_ctaid() / TILEOPS_CLUSTER); }

/* ==== the selection kernels (top_k.cu, top_k_top_p_mask.cu) =============================
 * A row over a cluster of TILEOPS_CLUSTER CTAs of SMP_SEL_THREADS (1: a CTA per row), the
 * CTA of rank c taking octets [o0, o0 + no) of the row (smp_sel_chunk). Keys are the
 * dtype's own: 32 bits of a float32 (smp_key), 16 of a float16 / bfloat16 (smp_key16 of
 * its bits: the same order), chosen digit by digit from the top (11, 11, 10 bits; 11, 5)
 * over histograms of SMP_BINS bins in shared memory: each CTA counts its chunk in its own
 * bins, then adds its non-zero bins into every CTA's sums (SMP_SUMS: reductions over
 * distributed shared memory; a pass's keys fall in a few dozen bins, where reading all
 * 2048 bins of every CTA took ~6 µs a pass at a cluster of 8, H200), so every CTA picks the
 * same digit. Counts and masses are integers: the sums, the picks, so the results, do not
 * depend on the order of the adds or the cluster's size (the launcher may choose it by
 * the batch).
 *
 * The cluster's exchanges (a histogram's sums, a word per CTA) follow one protocol: the
 * CTA writes its part (into the others' sums, or its own slot), arrives at and waits on a
 * cluster barrier, reads (its sums, or the others' slots), then arrives again without
 * waiting (*pending = 1): that second barrier's wait comes before the CTA next writes what
 * others read or adds into their sums (smp_cluster_settle) and before it exits. A thread
 * clears the sums it read (its two bins) before that arrival. With TILEOPS_CLUSTER 1 every
 * exchange is the CTA's own value. */
#define SMP_BINS 2048
#if TILEOPS_N >= 4294967296LL
#error "the selections' counts are 32-bit words: V < 2^32"
#endif
#define SMP_SEL_THREADS 1024 /* two bins per thread in the scans */
/* A thread's octets kept in registers (the selection kernels): on the vector path with at
 * most 4 octets a thread (a cluster's CTA of the real vocabularies: 2 or 3), each thread
 * loads the 16-byte words of its first SMP_KEEP full octets once (smp_keep_load) and every
 * pass after converts them (smp_keys8_kept); its other octets are loaded by each pass
 * (smp_keys8). 2 kept (8 registers in 16-bit, 16 in float32; 1 in float32 at 4 octets a
 * thread) spill in no build; 3 or 4 spill in some (1024 threads: 64 registers). Top-50
 * B = 1 bf16 14.39 -> 13.48 µs, float32 17.79 -> 17.33 (H200, session 19; the lab's
 * TKP_REGS of session 18). -DSMP_KEEP=0 turns it off (dev/time_top_k.py's variants cCn). */
#ifndef SMP_KEEP_OPT
#define SMP_KEEP_OPT 4 /* the most octets a thread that keeps words (a kernel may lower it) */
#endif
#ifndef SMP_KEEP
#define SMP_KEEP                                                                                                       \
    (TILEOPS_VEC == 1 || TILEOPS_OPT > SMP_KEEP_OPT ? 0                                                                \
     : TILEOPS_OPT < 2                               ? TILEOPS_OPT                                                     \
     : TILEOPS_E == 4 && TILEOPS_OPT == 4            ? 1                                                               \
                                                     : 2)
#endif
#if SMP_KEEP < 0 || SMP_KEEP > TILEOPS_OPT || (SMP_KEEP && (TILEOPS_VEC == 1 || TILEOPS_OPT > 4))
#error "SMP_KEEP: at most TILEOPS_OPT octets a thread of at most 4, on the vector path"
#endif
#if SMP_KEEP
#define SMP_SEL_UNROLL _Pragma("unroll") /* the kept words indexed by constants */
#else
#define SMP_SEL_UNROLL _Pragma("unroll 2") /* a pass over the row: short code, loads in flight (4: no faster) */
#endif
#if TILEOPS_E == 4
#define SMP_PASSES 3
#define SMP_SHIFT(p) ((p) == 0 ? 21 : (p) == 1 ? 10 : 0)
#define SMP_WIDTH(p) ((p) == 2 ? 10 : 11)
#else
#define SMP_PASSES 2
#define SMP_SHIFT(p) ((p) == 0 ? 5 : 0)
#define SMP_WIDTH(p) ((p) == 0 ? 11 : 5)
#endif

/* the ordered key of a float16 / bfloat16's bits: -0.0 == 0.0, NaN the largest */
TILEOPS_DEV unsigned smp_key16(unsigned h) {
#if TILEOPS_DTYPE == 1
    const unsigned inf = 0x7c00u;
#else
    const unsigned inf = 0x7f80u;
#endif
    if ((h & 0x7fffu) > inf)
        return 0xffffu;
    if ((h & 0x7fffu) == 0)
        return 0x8000u;
    return (h & 0x8000u) ? (~h & 0xffffu) : (h | 0x8000u);
}

/* the elements' bits of a full octet from its 16-byte words */
TILEOPS_DEV void smp_bits8(const struct tileops_v4 *w, unsigned *bits) {
#pragma unroll
    for (int k = 0; k < 8; k++) {
#if TILEOPS_E == 4
        bits[k] = w[k >> 2].a[k & 3];
#else
        bits[k] = (w[0].a[k >> 1] >> (16 * (k & 1))) & 0xffffu;
#endif
    }
}
/* keys and values of octet o's bits (elements past V: key 0, never chosen) */
TILEOPS_DEV void smp_keys8_of(long long o, const unsigned *bits, unsigned *key, float *f) {
    const long long e = 8 * o;
#pragma unroll
    for (int k = 0; k < 8; k++) {
#if TILEOPS_E == 4
        f[k] = tileops_as_float(bits[k]);
        key[k] = smp_key(f[k]);
#elif TILEOPS_DTYPE == 1
        asm("cvt.f32.f16 %0, %1;" : "=f"(f[k]) : "h"((unsigned short)bits[k]));
        key[k] = smp_key16(bits[k]);
#else
        f[k] = tileops_as_float(bits[k] << 16);
        key[k] = smp_key16(bits[k]);
#endif
        if (e + k >= TILEOPS_N)
            key[k] = 0;
    }
}
/* Keys and values of the row's octet o (keys past V: 0, never chosen; values past V: -inf);
 * bits[k]: the element's own bits (what a kept or selected element is written as). */
TILEOPS_DEV void smp_keys8(const char *row, long long o, unsigned *key, float *f, unsigned *bits) {
    const long long e = 8 * o;
#if TILEOPS_VEC != 1
    if (e + 8 <= TILEOPS_N) {
        struct tileops_v4 w[SMP_WORDS];
        smp_ld_raw(row, o, TILEOPS_E, w);
        smp_bits8(w, bits);
    } else
#endif
    {
#pragma unroll
        for (int k = 0; k < 8; k++) {
#if TILEOPS_E == 4
            bits[k] = e + k < TILEOPS_N ? ((const unsigned *)row)[e + k] : 0xff800000u;
#else
            bits[k] = e + k < TILEOPS_N ? ((const unsigned short *)row)[e + k] : (TILEOPS_DTYPE == 1 ? 0xfc00u : 0xff80u);
#endif
        }
    }
    smp_keys8_of(o, bits, key, f);
}

/* the words a thread keeps: its j-th octet's (j < SMP_KEEP), when a full octet of the CTA's */
struct smp_kept {
    struct tileops_v4 w[SMP_KEEP ? SMP_KEEP : 1][SMP_WORDS];
};
TILEOPS_DEV void smp_keep_load(const char *row, int o0, int no, unsigned tid, struct smp_kept *kp) {
#if SMP_KEEP
#pragma unroll
    for (int j = 0; j < SMP_KEEP; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        if (o < no && 8 * (o0 + o) + 8 <= TILEOPS_N)
            smp_ld_raw(row, o0 + o, TILEOPS_E, kp->w[j]);
    }
#else
    (void)row, (void)o0, (void)no, (void)tid, (void)kp;
#endif
}
/* smp_keys8 of the CTA's octet o (< no), this thread's j-th: from the kept words when
 * they hold it (j a constant: the loops over j unrolled) */
TILEOPS_DEV void smp_keys8_kept(const char *row, int o0, long long o, int j, const struct smp_kept *kp,
                                unsigned *key, float *f, unsigned *bits) {
#if SMP_KEEP
    if (j < SMP_KEEP && 8 * (o0 + o) + 8 <= TILEOPS_N) {
        smp_bits8(kp->w[j], bits);
        smp_keys8_of(o0 + o, bits, key, f);
        return;
    }
#else
    (void)j, (void)kp;
#endif
    smp_keys8(row, o0 + o, key, f, bits);
}

/* What the digit scans hand every thread. */
struct smp_pick {
    int digit;
    smp_u64 above; /* what the bins above the digit hold (counts or masses) */
    smp_u64 count, mass; /* the digit's bin's, over the cluster (mass: smp_pick_mass only) */
    /* this CTA's own keys: how many in the bins above the digit (smp_pick_count only), and
     * in the digit's bin */
    smp_u64 local_above, local_count;
};

/* ---- the cluster's exchanges -------------------------------------------------------- */
/* the CTA's octets of the row: [*o0, *o0 + *no) */
TILEOPS_DEV void smp_sel_chunk(int *o0, int *no) {
    const long long c0 = smp_chunk_first();
    *o0 = c0 / 8;
    *no = (smp_chunk_count(c0) + 7) / 8;
}
/* the wait of a pending arrival (the protocol above) */
TILEOPS_DEV void smp_cluster_settle(int *pending) {
    if (*pending)
        smp_cluster_wait();
    *pending = 0;
}
#if TILEOPS_CLUSTER > 1
/* reductions into the word at the same shared address as p in the CTA of rank `rank` */
TILEOPS_DEV void smp_red_cluster_u32(const void *p, unsigned rank, unsigned v) {
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %0, %1; red.shared::cluster.add.u32 [a], %2; }" ::"r"(
                     smp_smem_addr(p)),
                 "r"(rank), "r"(v)
                 : "memory");
}
TILEOPS_DEV void smp_red_cluster_u64(const void *p, unsigned rank, smp_u64 v) {
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %0, %1; red.shared::cluster.add.u64 [a], %2; }" ::"r"(
                     smp_smem_addr(p)),
                 "r"(rank), "l"(v)
                 : "memory");
}
TILEOPS_DEV unsigned smp_atom_cluster_u32(const void *p, unsigned rank, unsigned v) { /* the old value */
    unsigned old;
    asm volatile("{ .reg .u32 a; mapa.shared::cluster.u32 a, %1, %2; atom.shared::cluster.add.u32 %0, [a], %3; }"
                 : "=r"(old)
                 : "r"(smp_smem_addr(p)), "r"(rank), "r"(v)
                 : "memory");
    return old;
}
#endif
/* n slots of the counter *p of the cluster's CTA of rank 0: the first one's number */
TILEOPS_DEV unsigned smp_take_rank0(unsigned *p, unsigned n) {
#if TILEOPS_CLUSTER > 1
    return smp_atom_cluster_u32(p, 0, n);
#else
    return smp_atom_add_u32(p, n);
#endif
}
/* the write of a word to the shared array `p` of the cluster's CTA of rank 0 */
TILEOPS_DEV void smp_put_rank0(smp_u64 *p, smp_u64 v) {
#if TILEOPS_CLUSTER > 1
    smp_st_cluster_u64(p, 0, v);
#else
    *p = v;
#endif
}
/* The CTAs' words v (the same in every thread of a CTA) over the cluster: their sum (*before:
 * over the ranks below this CTA's) and their maximum. slot: a shared word of the CTA's,
 * written here; all: CLUSTER shared words, where CLUSTER threads gather every CTA's slot
 * (CLUSTER loads over distributed shared memory a CTA, not a thread) for the CTA's others
 * to read. Every thread of the cluster calls it. */
TILEOPS_DEV smp_u64 smp_sel_exchange(smp_u64 v, smp_u64 *slot, smp_u64 *all, unsigned tid, int *pending,
                                     smp_u64 *before, smp_u64 *largest) {
#if TILEOPS_CLUSTER > 1
    smp_cluster_settle(pending);
    if (tid == 0)
        *slot = v;
    smp_cluster_arrive();
    smp_cluster_wait();
    if (tid < TILEOPS_CLUSTER)
        all[tid] = smp_ld_cluster_u64(slot, tid);
    smp_cluster_arrive();
    *pending = 1;
    tileops_barrier();
    const unsigned me = smp_rank_in_cluster();
    smp_u64 sum = 0, b = 0, mx = 0;
#pragma unroll
    for (unsigned r = 0; r < TILEOPS_CLUSTER; r++) {
        const smp_u64 o = all[r];
        sum += o;
        b += r < me ? o : 0;
        mx = o > mx ? o : mx;
    }
    *before = b;
    *largest = mx;
    return sum;
#else
    (void)slot, (void)all, (void)tid, (void)pending;
    *before = 0;
    *largest = v;
    return v;
#endif
}
/* A thread's two bins of the scans (dh = BINS - 1 - 2 tid, dl = dh - 1), over the cluster. */
struct smp_bins {
    smp_u64 ch, cl; /* counts */
    smp_u64 wh, wl; /* masses (0 without) */
};

/* Digit of the k-th largest (1 <= need <= the histogram's total) in the counts: the bin d
 * with (counts above d) < need <= (counts above d) + count[d]. */
TILEOPS_DEV struct smp_pick smp_pick_count(struct smp_bins bn, const unsigned *cnt, smp_u64 need, smp_u64 *red,
                                           struct smp_pick *out, unsigned tid) {
    const int dh = SMP_BINS - 1 - 2 * (int)tid, dl = dh - 1;
    const smp_u64 ch = bn.ch, cl = bn.cl;
    /* one scan of both: the cluster's counts in the high word, the CTA's in the low (each
     * at most V < 2^32) */
    smp_u64 total;
    const unsigned lh = cnt[dh], ll = cnt[dl];
    const smp_u64 s = smp_block_scan_u64(((ch + cl) << 32) | (lh + ll), red, tid, &total);
    const smp_u64 ah = s >> 32, al = ah + ch, lah = s & 0xffffffffull, lal = lah + lh;
    if (ah < need && need <= ah + ch)
        out->digit = dh, out->above = ah, out->count = ch, out->local_above = lah, out->local_count = lh;
    if (al < need && need <= al + cl)
        out->digit = dl, out->above = al, out->count = cl, out->local_above = lal, out->local_count = ll;
    tileops_barrier();
    const struct smp_pick p = *out;
    tileops_barrier();
    return p;
}

/* ceil(p z) in double for p > 0 (the CPU kernel's mass_bound), 0 for p <= 0 */
TILEOPS_DEV smp_u64 smp_mass_bound(float p, smp_u64 z) {
    if (!(p > 0.0f))
        return 0;
    smp_u64 r;
    asm("{ .reg .f64 a, b; cvt.f64.f32 a, %1; cvt.rn.f64.u64 b, %2; mul.rn.f64 a, a, b; cvt.rpi.u64.f64 %0, a; }"
        : "=l"(r)
        : "f"(p), "l"(z));
    return r;
}
/* The top-p digit: the lowest non-empty bin d whose mass above (g + the masses of the bins
 * above d) is < *bound. On the first pass (*bound 0, g 0) the bins hold the whole mass Z of
 * the keys searched: *bound = ceil(top_p Z) from their sum (top_p > 0: *bound >= 1). (g < *bound:
 * one exists.) */
TILEOPS_DEV struct smp_pick smp_pick_mass(struct smp_bins bn, const unsigned *cnt, smp_u64 g, float top_p,
                                          smp_u64 *bound_io, smp_u64 *red, struct smp_pick *out, int *lowest,
                                          unsigned tid) {
    const int dh = SMP_BINS - 1 - 2 * (int)tid, dl = dh - 1;
    const smp_u64 wh = bn.wh, wl = bn.wl;
    smp_u64 total;
    const smp_u64 ah = g + smp_block_scan_u64(wh + wl, red, tid, &total), al = ah + wh;
    if (*bound_io == 0)
        *bound_io = smp_mass_bound(top_p, total);
    const smp_u64 bound = *bound_io;
    if (tid == 0)
        *lowest = SMP_BINS;
    tileops_barrier();
    const int mine = (bn.cl && al < bound) ? dl : (bn.ch && ah < bound) ? dh : SMP_BINS;
    if (mine < SMP_BINS)
        smp_red_min_s32(lowest, mine);
    tileops_barrier();
    const int d = *lowest;
    if (d == dh || d == dl) {
        out->digit = d;
        out->above = d == dh ? ah : al;
        out->count = d == dh ? bn.ch : bn.cl;
        out->mass = d == dh ? wh : wl;
        out->local_count = cnt[d];
    }
    tileops_barrier();
    const struct smp_pick p = *out;
    tileops_barrier();
    return p;
}

/* a key's mass in the top-p search: floor(exp(f - m) 2^40) */
TILEOPS_DEV smp_u64 smp_weight(float f, float m) {
    smp_u64 w;
    asm("cvt.rzi.u64.f32 %0, %1;" : "=l"(w) : "f"(tileops_mul(smp_exp(tileops_add(f, -m)), 1099511627776.0f)));
    return w;
}
/* The cluster's sums of the CTAs' bins: counts (tot) and, in the mask, masses (totw), in
 * every CTA's shared memory (SMP_SUMS bytes; unused with TILEOPS_CLUSTER 1, where the
 * CTA's own bins are the sums). smp_sums_init clears this thread's two bins (the scans'
 * dh, dl) before the first histogram; every thread of the cluster calls it (it leaves
 * *pending). */
#define SMP_SUMS (SMP_BINS * 12)
TILEOPS_DEV void smp_sums_init(unsigned *tot, smp_u64 *totw, unsigned tid, int *pending) {
#if TILEOPS_CLUSTER > 1
    const int dh = SMP_BINS - 1 - 2 * (int)tid, dl = dh - 1;
    tot[dh] = tot[dl] = 0;
    if (totw != 0)
        totw[dh] = totw[dl] = 0;
    smp_cluster_arrive();
    *pending = 1;
#else
    (void)tot, (void)totw, (void)tid, (void)pending;
#endif
}
/* A histogram's end: once every thread of the CTA has counted, this thread's two bins of
 * the scans (dh, dl) summed over the cluster: the CTA's non-zero bins added into every
 * CTA's sums, a cluster barrier, its own sums read and cleared (an exchange: it leaves
 * *pending). */
TILEOPS_DEV struct smp_bins smp_histogram_sum(const unsigned *cnt, const unsigned *lo, const unsigned *hi,
                                              unsigned *tot, smp_u64 *totw, unsigned tid, int *pending) {
    tileops_barrier();
    const int dh = SMP_BINS - 1 - 2 * (int)tid, dl = dh - 1;
    struct smp_bins bn;
    bn.ch = cnt[dh];
    bn.cl = cnt[dl];
    bn.wh = lo != 0 ? ((smp_u64)hi[dh] << 32) | lo[dh] : 0;
    bn.wl = lo != 0 ? ((smp_u64)hi[dl] << 32) | lo[dl] : 0;
#if TILEOPS_CLUSTER > 1
    smp_cluster_settle(pending); /* every CTA has read and cleared its sums */
#pragma unroll
    for (unsigned r = 0; r < TILEOPS_CLUSTER; r++) {
        if (bn.ch)
            smp_red_cluster_u32(&tot[dh], r, (unsigned)bn.ch);
        if (bn.cl)
            smp_red_cluster_u32(&tot[dl], r, (unsigned)bn.cl);
        if (bn.wh)
            smp_red_cluster_u64(&totw[dh], r, bn.wh);
        if (bn.wl)
            smp_red_cluster_u64(&totw[dl], r, bn.wl);
    }
    smp_cluster_arrive();
    smp_cluster_wait();
    bn.ch = tot[dh];
    bn.cl = tot[dl];
    tot[dh] = tot[dl] = 0;
    if (lo != 0) {
        bn.wh = totw[dh];
        bn.wl = totw[dl];
        totw[dh] = totw[dl] = 0;
    }
    smp_cluster_arrive();
    *pending = 1;
#else
    (void)tot, (void)totw, (void)pending;
#endif
    return bn;
}

/* One pass of a radix search over the CTA's chunk (octets [o0, o0 + no)): per digit
 * ((key >> shift) & digit_mask) of the keys >= floor that share the digits chosen so far
 * (key & chosen == prefix), the count (cnt) and, when lo is given, the mass (smp_weight;
 * lo, hi: its two words), the keys from kp's words where it keeps them; then this
 * thread's two bins of the scans summed over the cluster (tot, totw: smp_sums_init's).
 * Every thread of the cluster calls it (an exchange: it leaves *pending). */
TILEOPS_DEV struct smp_bins smp_histogram(const char *row, int o0, int no, const struct smp_kept *kp, unsigned floor,
                                           unsigned chosen, unsigned prefix, int shift, unsigned digit_mask,
                                           unsigned *cnt, unsigned *lo, unsigned *hi, unsigned *tot, smp_u64 *totw,
                                           float m, unsigned tid, int *pending) {
    for (int b = (int)tid; b < SMP_BINS; b += SMP_SEL_THREADS) {
        cnt[b] = 0;
        if (lo != 0) {
            lo[b] = 0;
            hi[b] = 0;
        }
    }
    tileops_barrier();
    SMP_SEL_UNROLL
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        if (o < no) {
            unsigned key[8], bits[8];
            float f[8];
            smp_keys8_kept(row, o0, o, j, kp, key, f, bits);
#pragma unroll
            for (int e = 0; e < 8; e++)
                if (8 * (o0 + o) + e < TILEOPS_N && key[e] >= floor && (key[e] & chosen) == prefix) {
                    const unsigned d = (key[e] >> shift) & digit_mask;
                    smp_red_add_u32(&cnt[d], 1u);
                    if (lo != 0)
                        smp_add_u64_split(&lo[d], &hi[d], smp_weight(f[e], m));
                }
        }
    }
    return smp_histogram_sum(cnt, lo, hi, tot, totw, tid, pending);
}

/* (keys above t) << 32 | (keys equal to t) over the CTA's chunk (every thread calls it) */
TILEOPS_DEV smp_u64 smp_count_around(const char *row, int o0, int no, const struct smp_kept *kp, unsigned t,
                                     smp_u64 *red, unsigned tid) {
    smp_u64 mine = 0;
#if SMP_KEEP
#pragma unroll
#else
#pragma unroll 1
#endif
    for (int j = 0; j < TILEOPS_OPT; j++) {
        const long long o = (long long)j * SMP_SEL_THREADS + tid;
        if (o < no) {
            unsigned key[8], bits[8];
            float f[8];
            smp_keys8_kept(row, o0, o, j, kp, key, f, bits);
#pragma unroll
            for (int e = 0; e < 8; e++)
                mine += key[e] > t ? (1ull << 32) : key[e] == t && 8 * (o0 + o) + e < TILEOPS_N ? 1ull : 0ull;
        }
    }
    return smp_block_sum_u64(mine, red, tid);
}

/* The k-th largest key t of the row (1 <= k <= V); *above: how many keys are larger,
 * *equal: how many equal it; *local: (this CTA's keys above t) << 32 | (its keys equal to
 * t), from the histograms. */
TILEOPS_DEV unsigned smp_select(const char *row, int o0, int no, const struct smp_kept *kp, smp_u64 k, unsigned *cnt,
                                unsigned *tot, smp_u64 *red, struct smp_pick *out, unsigned tid, smp_u64 *above,
                                smp_u64 *equal, smp_u64 *local, int *pending) {
    unsigned prefix = 0, chosen = 0; /* the digits chosen so far, and their bits */
    smp_u64 gt = 0, lgt = 0;
    for (int p = 0; p < SMP_PASSES; p++) {
        const int shift = SMP_SHIFT(p);
        const unsigned digit_mask = (1u << SMP_WIDTH(p)) - 1u;
        const struct smp_bins bn =
            smp_histogram(row, o0, no, kp, 0u, chosen, prefix, shift, digit_mask, cnt, 0, 0, tot, 0, 0.0f, tid,
                          pending);
        const struct smp_pick pk = smp_pick_count(bn, cnt, k - gt, red, out, tid);
        gt += pk.above;
        lgt += pk.local_above;
        prefix |= (unsigned)pk.digit << shift;
        chosen |= digit_mask << shift;
        *local = (lgt << 32) | pk.local_count;
        *equal = pk.count;
    }
    *above = gt;
    return prefix;
}

#endif /* TILEOPS_SAMPLING_COMMON_CUH */

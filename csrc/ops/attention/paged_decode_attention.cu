/* ops/attention/paged_decode_attention.cu: the GPU kernels of PagedDecodeAttentionFwdOp,
 * C-style CUDA C compiled at run time by NVRTC with no builtin headers
 * (../common/rows_common.cuh, spliced in by the runtime, gives the CUDA keywords, element
 * conversions and the rounded fp32 operations).
 *
 * One query token per sequence against a paged KV cache [num_blocks, BS, H_kv, D]:
 *   o[b, h] = sum_t p_t v_t / sum_t p_t,  p_t = exp(s_t - max s),  s_t = q[b, h] . k_t * scale
 * over the tokens t < seq_lens[b] of sequence b, token t in block block_table[b, t / BS]
 * at row t % BS, query head h reading KV head h / G; lse[b, h] = max s + log(sum p).
 *
 * ==== Batch invariance: chunks, and one fixed fold ========================================
 * A sequence's tokens fall into chunks of PDA_CH = 256 tokens, whatever the batch. A chunk's
 * partial state (m: the max of its scores in log2 units, l: the sum of 2^(s - m), a[D]: the
 * sum of 2^(s - m) v, per query head) is computed by a chunk group of 4 warps, each warp
 * taking 64 consecutive tokens in tiles of 16 (online softmax inside the warp), the 4 warp
 * states then folded in warp order. A CTA holds PDA_CG groups (1 or 2): in each round its
 * groups take its next PDA_CG chunks, one each, and their partials are folded in chunk
 * order (the same operations on the same values as one group, chunk after chunk). The
 * sequence's result is the left fold of its chunks' partials
 * in chunk order, starting from the empty state (m = -inf, l = 0, a = 0), by one merge rule
 * (pda_merge) in explicitly rounded fp32, then o = a / l, lse = (m + log2 l) ln 2. Whether
 * one CTA walks all of a sequence's chunks and folds as it goes (no split), or several CTAs
 * each write the partials of their chunks to a workspace and the merge kernel folds them
 * (split: chosen from B x H_kv against the SM count), every operation on a sequence's values
 * is the same: its output is bitwise the same whatever else is in the batch.
 *
 * ==== Superchunks (PDA_SC > 1; a build option, kernels/attention/paged_decode_attention.py
 * SUPERCHUNK, default 1: the fold above) =====================================================
 * The sequence is the left fold, in order, of its superchunks of PDA_SC chunks (the last
 * may hold fewer), each the left fold of its chunks' partials from the empty state. Without
 * a split the CTA keeps both states; a split whose CTAs take whole superchunks (cpc a
 * multiple of PDA_SC) stores one partial a superchunk (PDA_SC times fewer stores: a
 * split's per-chunk stores cost it 8-14 % at 32K tokens, dev/time_pda_ws.py); a split of
 * another cpc stores each chunk's partial and the merge folds both levels. Every path is
 * the same operations on the same values: batch invariant as above.
 *
 * ==== Compute: tensor cores (PDA_MMA 1: float16, bfloat16) or fp32 FMAs (PDA_MMA 0) ========
 * A warp's tile: scores S^T = K Q^T (16 tokens x 8 query heads per n-tile, mma m16n8k16, K
 * from shared memory by ldmatrix, Q^T fragments in registers), f32 accumulation; p = 2^(s*c
 * - m) in fp32, rounded to the dtype for P V (as flash attention does; l sums the fp32 p);
 * O^T += V^T P^T (16 dims x 8 heads per m-tile: V by ldmatrix.trans, P^T by movmatrix of the
 * score fragments). Query heads are the mma's N dimension, so a group of up to 8 heads
 * wastes nothing for G = 8. PDA_MMA 0 computes the same fragments with fp32 FMAs (any
 * dtype; the path float32 takes): dot products in index order, P through shared memory.
 *
 * ==== Memory ============================================================================
 * Each warp streams its tiles' K and V rows into its own PDA_STAGES-deep ring of shared
 * memory with 16-byte cp.async (K and V read once per KV head: all query heads of the group
 * use them), rows XOR-swizzled per 16-byte segment (conflict-free ldmatrix; pda_swz). A token at or
 * past seq_lens[b] is never read (its rows are zero-filled). Block table entries past a
 * sequence's blocks are never used; with block sizes that are multiples of 16 a tile's block
 * id is read ahead, before the length is known, so an entry inside the table's row (of
 * max_blocks) past them may be read, never one outside it.
 *
 * ==== Bad input (no host synchronisation to check it) ====================================
 * A block id outside [0, num_blocks) for a token the sequence holds is never dereferenced
 * (that row is zero-filled); the chunk's l becomes NaN, so the whole sequence's o and lse
 * come out NaN. A seq_lens[b] outside [0, max_blocks * BS] reads nothing: that
 * sequence's o and lse are NaN. Other sequences are unaffected.
 *
 * ==== CUDA graphs ============================================================================
 * Nothing reads seq_lens or block_table on the host; the grid depends on shapes only (B,
 * H_kv, the head slices, the split S from B x H_kv, max_blocks and the SM count).
 *
 * ==== Kernels ============================================================================
 * tileops_paged_decode_attention (arg format "ppppppppqqqqqqqf"):
 *   (q, key_cache, value_cache, block_table, seq_lens, o, lse, ws, H, H_kv, num_blocks,
 *    max_blocks, max_chunks, cpc, zs, scale_log2)
 *   grid (B * H_kv * zs, S), block 128 x PDA_CG, dynamic shared memory PDA_SMEM bytes (the same
 *   formula as kernels/attention/paged_decode_attention.py smem_bytes). CTA (x, y): sequence
 *   b, KV head kvh, head slice z (x = (b * H_kv + kvh) * zs + z: query heads kvh * G + z *
 *   PDA_GS .. + PDA_GS, those < G), chunks [y * cpc, y * cpc + cpc). lse may be 0 (not
 *   wanted). ws == 0: no split (S = 1): the CTA folds every chunk and writes o and lse.
 *   ws != 0: the CTA writes each chunk's partial to ws[((b * H + h) * max_chunks + c) *
 *   (D + 2) + (d | D: m | D + 1: l)] and tileops_paged_decode_attention_merge writes o, lse;
 *   built with -DPDA_CS = S (2 .. 8, grid.y = S: the split is one thread block cluster) the
 *   cluster's CTAs fold the partials themselves after its barrier, the same operations
 *   (pda_cluster_finish), and no merge kernel is launched.
 *   scale_log2 = scale * log2(e). max_chunks = ceil(max_blocks * BS / PDA_CH).
 * tileops_paged_decode_attention_merge ("ppppqqq"): (ws, seq_lens, o, lse, H, max_blocks,
 *   max_chunks); grid B * H, block >= D threads (one per channel).
 * All tensors contiguous, 16-byte aligned; o does not overlap the inputs.
 *
 * ==== Defines ============================================================================
 *   TILEOPS_DTYPE 0 float32, 1 float16, 2 bfloat16 (and the common TILEOPS_N = D,
 *   TILEOPS_VEC = 16 / element size, TILEOPS_THREADS = 128 x PDA_CG);  PDA_D head size (a multiple
 *   of 16, <= 256);  PDA_G query heads per KV head;  PDA_GS query heads per CTA (<= 16, <= 8
 *   for D > 128);  PDA_BS block size;  PDA_MMA 1 tensor cores (16-bit dtypes), 0 fp32 FMAs;
 *   PDA_STAGES 1 .. 4, the depth of each warp's ring;  PDA_CG chunk groups a CTA (1 or 2;
 *   default 1; 2 needs D a multiple of 256 / (PDA_GS rounded up to 8));  PDA_CS the split's
 *   CTAs in one cluster (1: none, the merge kernel's path; 2 .. 8, sm_90+);  PDA_SC chunks a
 *   superchunk (default 1; see "Superchunks" below). */
#include "../common/rows_common.cuh"

#if !defined(PDA_D) || !defined(PDA_G) || !defined(PDA_GS) || !defined(PDA_BS) || !defined(PDA_MMA) || \
    !defined(PDA_STAGES)
#error "paged_decode_attention.cu needs -DPDA_D, -DPDA_G, -DPDA_GS, -DPDA_BS, -DPDA_MMA, -DPDA_STAGES"
#endif
#if PDA_D % 16 != 0 || PDA_D < 16 || PDA_D > 256 || PDA_D != TILEOPS_N
#error "PDA_D must be a multiple of 16 in [16, 256], equal to TILEOPS_N"
#endif
#if PDA_G < 1 || PDA_GS < 1 || PDA_GS > PDA_G || PDA_GS > 16 || (PDA_D > 128 && PDA_GS > 8)
#error "PDA_GS must be in [1, min(PDA_G, 16)] (8 for PDA_D > 128)"
#endif
#ifndef PDA_CG
#define PDA_CG 1
#endif
#if PDA_BS < 1 || PDA_STAGES < 1 || PDA_STAGES > 4 || (PDA_CG != 1 && PDA_CG != 2) || TILEOPS_THREADS != 128 * PDA_CG
#error "PDA_BS >= 1, PDA_STAGES in [1, 4], PDA_CG 1 or 2, TILEOPS_THREADS = 128 x PDA_CG"
#endif
#if PDA_MMA && TILEOPS_E != 2
#error "the tensor-core path (PDA_MMA 1) takes float16 or bfloat16"
#endif

#define PDA_NW 4                                    /* warps per chunk (a chunk group) */
#define PDA_NWT (PDA_NW * PDA_CG)                   /* warps per CTA */
#define PDA_TILE 16                                 /* tokens per tile */
#define PDA_TPW 4                                   /* tiles per warp per chunk */
#define PDA_CH (PDA_NW * PDA_TPW * PDA_TILE)        /* tokens per chunk: 256 */
#define PDA_NT ((PDA_GS + 7) / 8)                   /* n-tiles of 8 query heads */
#define PDA_GS8 (PDA_NT * 8)
#define PDA_KS (PDA_D / 16)                         /* k-steps of QK^T, m-tiles of O^T */
#define PDA_RB (PDA_D * TILEOPS_E)                  /* bytes of a K or V row */
#define PDA_SEG (PDA_RB / 16)                       /* 16-byte segments per row */
#define PDA_TILE_BYTES (PDA_TILE * PDA_RB)
#define PDA_WARP_BYTES (PDA_STAGES * 2 * PDA_TILE_BYTES)
#define PDA_FOLD_OFF (PDA_NWT * PDA_WARP_BYTES)
#define PDA_FOLD_W (PDA_GS8 * (PDA_D + 2))          /* floats of one warp's state */
#define PDA_Q_OFF (PDA_FOLD_OFF + 4 * PDA_NWT * PDA_FOLD_W)
#if PDA_MMA
#define PDA_SMEM PDA_Q_OFF
#else
#define PDA_P_OFF (PDA_Q_OFF + 4 * PDA_GS8 * PDA_D)
#define PDA_SMEM (PDA_P_OFF + 4 * PDA_NWT * PDA_GS8 * PDA_TILE)
#endif
#if defined(PDA_SMEM_EXPECT) && PDA_SMEM_EXPECT != PDA_SMEM   /* a test's check of the launcher's formula */
#error "PDA_SMEM differs from PDA_SMEM_EXPECT (kernels/attention/paged_decode_attention.py smem_bytes)"
#endif
/* the fold's heads: the CTA's heads rounded up to a power of two where each of its threads
 * still takes whole channels (Llama-3-8B's group of 4: its threads fold the 4 real heads of
 * the 8 the warps' states hold, half the work a thread), else all PDA_GS8; the same
 * operations on each element either way */
#if PDA_GS <= 1 && PDA_D % TILEOPS_THREADS == 0
#define PDA_FH 1
#elif PDA_GS <= 2 && PDA_D % (TILEOPS_THREADS / 2) == 0
#define PDA_FH 2
#elif PDA_GS <= 4 && PDA_D % (TILEOPS_THREADS / 4) == 0
#define PDA_FH 4
#else
#define PDA_FH PDA_GS8
#endif
#define PDA_TPH (TILEOPS_THREADS / PDA_FH)          /* fold: threads per query head (8 .. 256) */
#if defined(PDA_FH_EXPECT) && PDA_FH_EXPECT != PDA_FH   /* a test's check of the emulator's rule */
#error "PDA_FH differs from PDA_FH_EXPECT (dev/emulate_paged_decode_attention.py fold_heads)"
#endif
#if PDA_D % PDA_TPH != 0
#error "PDA_CG 2 needs PDA_D a multiple of 256 / PDA_GS8 (each fold thread takes whole channels)"
#endif
#define PDA_EPT (PDA_D / PDA_TPH)                   /* fold: channels per thread (of head fg) */
/* the fold reads a thread's channels PDA_FVW at a time (16- or 8-byte shared loads): its
 * channel i is PDA_CHAN(i), runs of PDA_FVW, the threads of a head side by side in each run
 * (the loads of a quarter warp one contiguous span: no bank conflict) */
#if PDA_EPT % 4 == 0
#define PDA_FVW 4
#elif PDA_EPT % 2 == 0
#define PDA_FVW 2
#else
#define PDA_FVW 1
#endif
#define PDA_CHAN(i) (((i) / PDA_FVW) * (PDA_TPH * PDA_FVW) + fu * PDA_FVW + (i) % PDA_FVW)
#define PDA_LN2 0.693147180559945309f
#define PDA_MB 16                                   /* merge kernel: chunks loaded at once */

#if TILEOPS_DTYPE == 1
#define PDA_MMA_T "f16"
#else
#define PDA_MMA_T "bf16"
#endif

/* ---- small PTX helpers ------------------------------------------------------------------ */
TILEOPS_DEV void pda_syncwarp(void) { asm volatile("bar.warp.sync 0xffffffff;" ::: "memory"); }
TILEOPS_DEV float pda_neg_inf(void) { return tileops_as_float(0xff800000u); }
TILEOPS_DEV float pda_nan(void) { return tileops_as_float(0x7fc00000u); }
TILEOPS_DEV int pda_any(int pred) {
    int r;
    asm volatile("{ .reg .pred p, q; setp.ne.s32 p, %1, 0; vote.sync.any.pred q, p, 0xffffffff; selp.s32 %0, 1, 0, q; }"
                 : "=r"(r)
                 : "r"(pred));
    return r;
}
TILEOPS_DEV unsigned pda_smem_addr(const void *p) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (unsigned)a;
}
/* 16 bytes global -> shared; bytes 0: nothing is read, the 16 bytes are zeroed */
TILEOPS_DEV void pda_cp16(unsigned dst, const char *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
TILEOPS_DEV void pda_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
#define PDA_WAIT(n) asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory")

/* ---- the merge rule: (m, l, a) <- (m, l, a) (+) (mb, lb, ab) ------------------------------ */
/* m in log2 units. A state with m = -inf (no token) weighs 0; the result is the same
 * operations on the same values wherever it is applied (a CTA's fold or the merge kernel).
 * The weights depend on m and mb only: pda_weigh computes them (and folds l, m) once per
 * head, pda_apply folds each channel's a with them; pda_merge is the two for one channel. */
TILEOPS_DEV void pda_weigh(float *m, float *l, float mb, float lb, float *sa, float *sb) {
    const float ninf = pda_neg_inf();
    const float mm = tileops_maxf(*m, mb);
    *sa = *m == ninf ? 0.0f : tileops_ex2(tileops_sub(*m, mm));
    *sb = mb == ninf ? 0.0f : tileops_ex2(tileops_sub(mb, mm));
    *l = tileops_fma(lb, *sb, tileops_mul(*l, *sa));
    *m = mm;
}
TILEOPS_DEV float pda_apply(float a, float ab, float sa, float sb) { return tileops_fma(ab, sb, tileops_mul(a, sa)); }
TILEOPS_DEV void pda_merge(float *m, float *l, float *a, float mb, float lb, float ab) {
    float sa, sb;
    pda_weigh(m, l, mb, lb, &sa, &sb);
    *a = pda_apply(*a, ab, sa, sb);
}
/* pda_merge where `in`, else (m, l, a) as they were, by selection (no branch: the folds'
 * merges of successive partials overlap) */
TILEOPS_DEV void pda_merge_if(int in, float *m, float *l, float *a, float mb, float lb, float ab) {
    float m2 = *m, l2 = *l, a2 = *a;
    pda_merge(&m2, &l2, &a2, mb, lb, ab);
    *m = in ? m2 : *m;
    *l = in ? l2 : *l;
    *a = in ? a2 : *a;
}

/* o and lse of a folded state (l == 0: no token: o = 0, lse = -inf) */
TILEOPS_DEV float pda_out(float l, float a) { return l == 0.0f ? 0.0f : tileops_div_rn(a, l); }
TILEOPS_DEV float pda_lse(float m, float l) {
    return l == 0.0f ? pda_neg_inf() : tileops_mul(tileops_add(m, tileops_lg2(l)), PDA_LN2);
}

#if PDA_MMA
TILEOPS_DEV void pda_ldsm4(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
TILEOPS_DEV void pda_ldsm4_t(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
TILEOPS_DEV unsigned pda_movt(unsigned x) {
    unsigned r;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
    return r;
}
/* c += A B: A 16x16 (a[4]), B 16x8 (b0, b1), c 16x8 fp32 */
TILEOPS_DEV void pda_mma(float *c, const unsigned *a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PDA_MMA_T "." PDA_MMA_T ".f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* byte offset of 16-byte segment `seg` of row `row` in a swizzled tile: in each full group
 * of 8 segments, segment s of row r is stored at s ^ (r & 7) (8 rows of one ldmatrix then
 * hit 8 different bank groups); a row of 2 or 4 segments XORs with r & 1 or r & 3; the
 * segments past the last full group of 8 (rows of 80, 96, ... channels), or a row of 6,
 * stay in place. A permutation inside each row. */
TILEOPS_DEV unsigned pda_swz(int row, int seg) {
#if PDA_SEG >= 8
    const int s = seg < (PDA_SEG & ~7) ? (seg ^ (row & 7)) : seg;
#elif (PDA_SEG & (PDA_SEG - 1)) == 0
    const int s = seg ^ (row & (PDA_SEG - 1));
#else
    const int s = seg;
#endif
    return (unsigned)(row * PDA_RB + (s << 4));
}

/* ---- one warp's work ---------------------------------------------------------------------- */
/* Tokens, chunks and table indices are 32-bit unsigned: a tile's first token is below its
 * chunk's end, and a live chunk's below len + 255 (len an int32 <= max_blocks x BS), so
 * they stay under 2^32; the byte offsets into the caches are 64-bit. */
struct pda_seq {
    const char *kc;          /* the key cache at this KV head (its bytes inside a cache row) */
    long long vk;            /* value_cache - key_cache, bytes */
    const int *bt;           /* this sequence's block table row */
    unsigned len;            /* seq_lens[b], once checked */
    unsigned nblocks;        /* num_blocks, at most 2^31: every block id of the table below it or not */
    unsigned max_blocks;     /* the table row's entries (at most 2^32 - 1 counted) */
    int row_stride;          /* bytes between cache rows (H_kv * D * E; the host keeps a block < 2 GiB) */
    unsigned c0;             /* first chunk of this CTA */
    unsigned c_end;          /* past its last chunk */
    int w, grp, lane;        /* the warp's place in its chunk group, the group */
};

/* the chunk of tile k of this warp: round k / PDA_TPW takes chunks c0 + round x PDA_CG + group */
TILEOPS_DEV unsigned pda_tile_chunk(const struct pda_seq *s, int k) {
    return s->c0 + (unsigned)((k / PDA_TPW) * PDA_CG + s->grp);
}
/* first token of tile k of this warp */
TILEOPS_DEV unsigned pda_tile_tok(const struct pda_seq *s, int k) {
    return pda_tile_chunk(s, k) * PDA_CH + (unsigned)(s->w * (PDA_TPW * PDA_TILE) + (k % PDA_TPW) * PDA_TILE);
}
/* tile k holds tokens of this CTA (its chunk is the CTA's; some of its tokens are < len) */
TILEOPS_DEV int pda_tile_live(const struct pda_seq *s, int k) {
    return pda_tile_chunk(s, k) < s->c_end && pda_tile_tok(s, k) < s->len;
}

/* The block id that tile k reads when a block holds whole tiles (PDA_BS a multiple of 16:
 * a tile starts at a multiple of 16, so its 16 rows lie in one block): read a tile ahead of
 * its copies (pda_issue's `blk`), so that no copy waits on the block table. It is read
 * before the length is known: an entry inside the table's row (max_blocks of them) past the
 * sequence's blocks may be read, never used; past the row, nothing is read (-1). */
TILEOPS_DEV int pda_tile_block(const struct pda_seq *s, int k) {
#if PDA_BS % PDA_TILE == 0
    const unsigned i = pda_tile_tok(s, k) / PDA_BS;
    return i < s->max_blocks ? s->bt[i] : -1;
#else
    (void)s;
    (void)k;
    return -1;
#endif
}

/* issues the copies of tile k's K and V rows into ring slot k % PDA_STAGES (rows at or past
 * len are zero-filled; a bad block id's rows too, and *bad is set). blk: pda_tile_block(k)
 * when blocks hold whole tiles; otherwise each row's block id is read here. */
TILEOPS_DEV void pda_issue(const struct pda_seq *s, int k, int blk, unsigned ring, int *bad) {
    if (!pda_tile_live(s, k))
        return;
    const unsigned tok0 = pda_tile_tok(s, k);
    const unsigned kt = ring + (unsigned)((k % PDA_STAGES) * 2 * PDA_TILE_BYTES);   /* V's rows: + PDA_TILE_BYTES */
    const int rows = s->len - tok0 < PDA_TILE ? (int)(s->len - tok0) : PDA_TILE; /* rows holding tokens (live: tok0 < len) */
#if PDA_BS % PDA_TILE == 0
    const int ok = (unsigned)blk < s->nblocks;   /* a negative id is >= 2^31 */
    if (!ok)
        *bad = 1;
    /* row 0 of the tile; a bad block reads nothing and points at the cache's start */
    const char *base = s->kc + (ok ? ((long long)blk * PDA_BS + tok0 % PDA_BS) * s->row_stride : 0);
#else
    (void)blk;
#endif
#if PDA_BS % PDA_TILE == 0 && PDA_SEG % 8 == 0
    /* rows of whole groups of 8 swizzled segments: lane (r0, s0) = (lane / 8, lane % 8)
     * copies segments 8 b + s0 of rows r0 + 4 a, 8 lanes a row's 128 bytes. Since r0 < 4,
     * row & 7 = r0 ^ 4 (a & 1): the segment lands at 8 b + (s0 ^ r0 ^ 4 (a & 1)) (pda_swz),
     * two shared addresses a lane plus constants; the global ones step by 4 rows */
    const int r0 = s->lane >> 3, s0 = s->lane & 7;
    const unsigned d0 = kt + (unsigned)(r0 * PDA_RB + ((s0 ^ r0) << 4));
    const unsigned d1 = kt + (unsigned)(r0 * PDA_RB + ((s0 ^ r0 ^ 4) << 4));
    const char *src = base + (unsigned)(r0 * s->row_stride + s0 * 16);
#pragma unroll
    for (int a = 0; a < PDA_TILE / 4; a++) {
        const int bytes = ok && r0 + 4 * a < rows ? 16 : 0;
        const unsigned d = ((a & 1) ? d1 : d0) + (unsigned)(4 * a * PDA_RB);
        const char *vsrc = src + s->vk;
#pragma unroll
        for (int b = 0; b < PDA_SEG / 8; b++) {
            pda_cp16(d + 128u * b, src + 128 * b, bytes);
            pda_cp16(d + 128u * b + PDA_TILE_BYTES, vsrc + 128 * b, bytes);
        }
        src += 4 * s->row_stride;
    }
#else
#pragma unroll
    for (int j = 0; j < (PDA_TILE * PDA_SEG + 31) / 32; j++) {
        const int idx = s->lane + 32 * j;
        if (PDA_TILE * PDA_SEG % 32 != 0 && idx >= PDA_TILE * PDA_SEG)
            break;
        const int row = idx / PDA_SEG, seg = idx % PDA_SEG;
#if PDA_BS % PDA_TILE == 0
        const int bytes = ok && row < rows ? 16 : 0;
        const char *src = base + (unsigned)(row * s->row_stride + seg * 16);
#else
        int bytes = 0;
        const char *src = s->kc;
        if (row < rows) {
            const unsigned tok = tok0 + (unsigned)row;
            const long long b = s->bt[tok / PDA_BS];
            if (b >= 0 && b < (long long)s->nblocks) {
                src += (b * PDA_BS + tok % PDA_BS) * s->row_stride + seg * 16;
                bytes = 16;
            } else {
                *bad = 1;
            }
        }
#endif
        pda_cp16(kt + pda_swz(row, seg), src, bytes);
        pda_cp16(kt + PDA_TILE_BYTES + pda_swz(row, seg), src + s->vk, bytes);
    }
#endif
}

/* ---- the main kernel ------------------------------------------------------------------------ */
extern __shared__ __attribute__((aligned(16))) unsigned char pda_smem[];

/* ---- a split's merge: each chunk's partial, folded in chunk order (the merge kernel, or
 * the cluster's CTAs: the same operations) --------------------------------------------- */
/* chunks c0 .. c0 + nb - 1 (those < n; nb a constant: PDA_MB, or PDA_FB) of channel d: their m,
 * l and a */
TILEOPS_DEV void pda_merge_load(const float *P, long long c0, long long n, int d, float *pm, float *pl, float *pa,
                                int nb) {
#pragma unroll
    for (int j = 0; j < nb; j++) {
        const float *Q = P + (c0 + j) * (PDA_D + 2);
        const int in = c0 + j < n;
        pm[j] = in ? Q[PDA_D] : 0.0f;
        pl[j] = in ? Q[PDA_D + 1] : 0.0f;
        pa[j] = in ? Q[d] : 0.0f;
    }
}
/* folds chunks c0 .. c0 + nb - 1 (those < n) into (m, l, a) in chunk order; branch-free (a chunk past n
 * leaves the state as it was, by selection), so that the weights' exp2 of successive
 * chunks overlap: only m's max, l's and a's multiply-adds chain from chunk to chunk */
TILEOPS_DEV void pda_merge_fold(long long c0, long long n, float *m, float *l, float *a, const float *pm,
                                const float *pl, const float *pa, int nb) {
#pragma unroll
    for (int j = 0; j < nb; j++) {
        pda_merge_if(c0 + j < n, m, l, a, pm[j], pl[j], pa[j]);
    }
}

#ifndef PDA_SC
#define PDA_SC 1
#endif
#if PDA_SC < 1 || PDA_MB % PDA_SC != 0
#error "PDA_SC (chunks a superchunk) must be >= 1 and divide PDA_MB (16): a merge batch holds whole superchunks"
#endif
#if PDA_SC > 1
/* batch c0's superchunks, each folded from empty (those with a chunk < n), into qm, ql, qa */
TILEOPS_DEV void pda_merge_sc_states(long long c0, long long n, const float *pm, const float *pl, const float *pa,
                                     float *qm, float *ql, float *qa) {
#pragma unroll
    for (int h = 0; h < PDA_MB / PDA_SC; h++) {
        qm[h] = pda_neg_inf();
        ql[h] = 0.0f;
        qa[h] = 0.0f;
#pragma unroll
        for (int j = h * PDA_SC; j < (h + 1) * PDA_SC; j++) {
            pda_merge_if(c0 + j < n, &qm[h], &ql[h], &qa[h], pm[j], pl[j], pa[j]);
        }
    }
}
/* chunks c0 .. c0 + PDA_MB - 1 (those < n; c0 a multiple of PDA_MB, so the batch holds whole
 * superchunks) folded superchunk by superchunk: each from empty in chunk order (the
 * superchunks' chains are independent: they overlap), then into (m, l, a) in order, where
 * the superchunk has a chunk < n (its chunks past n leave its state as it was). A chain of
 * PDA_SC + PDA_MB / PDA_SC merges a batch (H200, session 14: a fold that carried one
 * superchunk state through the batch, two merges a chunk, made the merge kernel 1.2 µs
 * slower than PDA_SC 1's; this one is within 0.2 µs). */
TILEOPS_DEV void pda_merge_fold_sc(long long c0, long long n, float *m, float *l, float *a, const float *pm,
                                   const float *pl, const float *pa) {
    float qm[PDA_MB / PDA_SC], ql[PDA_MB / PDA_SC], qa[PDA_MB / PDA_SC];
    pda_merge_sc_states(c0, n, pm, pl, pa, qm, ql, qa);
#pragma unroll
    for (int h = 0; h < PDA_MB / PDA_SC; h++) {
        pda_merge_if(c0 + h * PDA_SC < n, m, l, a, qm[h], ql[h], qa[h]);
    }
}
#endif
/* how a split's partials are folded: PDA_SC == 1, or whole superchunks stored (cpc a
 * multiple of PDA_SC): slots of one partial each, folded in order; else chunks' partials
 * folded into their superchunks first (pda_merge_fold_sc). *slots: the partials to fold. */
TILEOPS_DEV int pda_two_level(long long cpc, long long n_chunks, long long *slots) {
#if PDA_SC > 1
    if (cpc % PDA_SC != 0) {
        *slots = n_chunks;
        return 1;
    }
    *slots = (n_chunks + PDA_SC - 1) / PDA_SC;
#else
    (void)cpc;
    *slots = n_chunks;
#endif
    return 0;
}
/* folds partials [c0, c0 + nb) of n into (m, l, a), both levels when two (PDA_SC > 1: the
 * two-level fold takes a batch of PDA_MB, which nb then is) */
TILEOPS_DEV void pda_merge_step(int two, long long c0, long long n, float *m, float *l, float *a, const float *pm,
                                const float *pl, const float *pa, int nb) {
#if PDA_SC > 1
    if (two) {
        pda_merge_fold_sc(c0, n, m, l, a, pm, pl, pa);
        return;
    }
#else
    (void)two;
#endif
    pda_merge_fold(c0, n, m, l, a, pm, pl, pa, nb);
}

#ifndef PDA_CS
#define PDA_CS 1
#endif
#if PDA_CS < 1 || PDA_CS > 8
#error "PDA_CS (the split's CTAs in one cluster) must be 1 .. 8"
#endif
#if PDA_CS > 1
#define PDA_CLUSTER_DIMS __attribute__((cluster_dims(1, PDA_CS, 1)))
/* the cluster's fold loads and folds PDA_FB partials at a time: its S CTAs' (one partial each
 * where cpc is 1), or the merge kernel's batch in builds of superchunks (whose two-level fold
 * takes whole superchunks a batch). The same operations on the partials either way: a
 * partial past n is loaded and discarded by selection. */
#if PDA_SC > 1
#define PDA_FB PDA_MB
#else
#define PDA_FB PDA_CS
#endif
#else
#define PDA_CLUSTER_DIMS
#endif

/* A split of S = PDA_CS CTAs a sequence launched as one cluster (grid.y = S): each CTA
 * has written its chunks' partials to ws; after the cluster's barrier (release / acquire:
 * every CTA's ws writes are visible to the others) its CTAs fold the partials of their
 * query heads in chunk order, a (head, channel) pair per thread as the merge kernel does
 * (pda_merge_load / _fold: the same bits), and write o and lse. No second kernel. Every
 * CTA of the cluster calls this once, whether it had chunks or not (all of them arrive). */
TILEOPS_DEV void pda_cluster_finish(const float *ws, void *o, float *lse, long long b, long long H, long long hbase,
                                    long long z, long long n_chunks, long long max_chunks, long long cpc) {
#if PDA_CS > 1
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
    /* the (head, channel) pairs dealt over the cluster's CTAs: one each where they suffice */
    for (int e = (int)(tileops_ctaid_y() * TILEOPS_THREADS + tileops_tid()); e < PDA_GS * PDA_D;
         e += PDA_CS * TILEOPS_THREADS) {
        const int g = e / PDA_D, d = e % PDA_D;
        if (z * PDA_GS + g >= PDA_G)
            break;
        const long long bh = b * H + hbase + g;
        const float *P = ws + bh * max_chunks * (PDA_D + 2);
        float m = pda_neg_inf(), l = 0.0f, a = 0.0f, pm[PDA_FB], pl[PDA_FB], pa[PDA_FB];
        long long n;
        const int two = pda_two_level(cpc, n_chunks, &n);
        for (long long c0 = 0; c0 < n; c0 += PDA_FB) {
            pda_merge_load(P, c0, n, d, pm, pl, pa, PDA_FB);
            pda_merge_step(two, c0, n, &m, &l, &a, pm, pl, pa, PDA_FB);
        }
        tileops_st_elem((char *)o + bh * PDA_D * TILEOPS_E, d, pda_out(l, a));
        if (d == 0 && lse)
            lse[bh] = pda_lse(m, l);
    }
#else
    (void)ws; (void)o; (void)lse; (void)b; (void)H; (void)hbase; (void)z; (void)n_chunks; (void)max_chunks; (void)cpc;
#endif
}

/* PDA_FVW floats of shared memory, loaded at once */
struct __attribute__((aligned(4 * PDA_FVW))) pda_fv {
    float x[PDA_FVW];
};
/* elements e .. e + PDA_FVW - 1 of a chunk group's partial a: its warps' states (F0: the
 * first warp's) folded in warp order with the head's weights sa, sb (pda_weigh's, per warp
 * from the second on), into ca */
TILEOPS_DEV void pda_warps_fold(const float *F0, int e, const float *sa, const float *sb, float *ca) {
    const struct pda_fv v = *(const struct pda_fv *)(F0 + e);
#pragma unroll
    for (int j = 0; j < PDA_FVW; j++)
        ca[j] = v.x[j];
#pragma unroll
    for (int ww = 1; ww < PDA_NW; ww++) {
        const struct pda_fv u = *(const struct pda_fv *)(F0 + ww * PDA_FOLD_W + e);
#pragma unroll
        for (int j = 0; j < PDA_FVW; j++)
            ca[j] = pda_apply(ca[j], u.x[j], sa[ww], sb[ww]);
    }
}

extern "C" __global__ void TILEOPS_BOUNDS PDA_CLUSTER_DIMS tileops_paged_decode_attention(
    const void *q, const void *key_cache, const void *value_cache, const int *block_table, const int *seq_lens,
    void *o, float *lse, float *ws, long long H, long long H_kv, long long num_blocks, long long max_blocks,
    long long max_chunks, long long cpc, long long zs, float scale_log2) {
    TILEOPS_PDL_PROLOGUE();
    const unsigned tid = tileops_tid();
    const int w = (int)(tid >> 5), lane = (int)(tid & 31u);
    const int gq = lane >> 2, t4 = lane & 3;
    const int fg = (int)tid / PDA_TPH, fu = (int)tid % PDA_TPH; /* the fold's head and first channel */
    const long long x = tileops_ctaid();
    const long long z = x % zs, pair = x / zs, kvh = pair % H_kv, b = pair / H_kv;
    const long long hbase = kvh * PDA_G + z * PDA_GS;  /* the CTA's first query head */
    const int split = ws != 0;

    /* what does not depend on the length first: the first tiles' block ids are read here,
     * in flight together with seq_lens[b] (tiles past the length never use theirs) */
    struct pda_seq s;
    s.kc = (const char *)key_cache + kvh * PDA_RB;
    s.vk = (const char *)value_cache - (const char *)key_cache;
    s.bt = block_table + b * max_blocks;
    s.max_blocks = max_blocks < 0xffffffffLL ? (unsigned)max_blocks : 0xffffffffu;
    s.nblocks = num_blocks < 0x80000000LL ? (unsigned)num_blocks : 0x80000000u;
    s.row_stride = (int)(H_kv * PDA_RB);
    s.c0 = split ? (unsigned)(tileops_ctaid_y() * cpc) : 0u;
    s.w = w % PDA_NW;
    s.grp = w / PDA_NW;
    s.lane = lane;
    s.c_end = 0;            /* the CTA's own end, below, once the length is known */
    int first_blk[PDA_STAGES];
#pragma unroll
    for (int k = 0; k < PDA_STAGES; k++)
        first_blk[k] = pda_tile_block(&s, k);
    const long long len = seq_lens[b];
    const float ninf = pda_neg_inf();

    /* query head hl (0 .. PDA_GS8) of this CTA: one of its heads, and one of the group's */
    #define PDA_HEAD_OK(hl) ((hl) < PDA_GS && z * PDA_GS + (hl) < PDA_G)

    if (len < 0 || len > max_blocks * PDA_BS) {  /* a bad length: NaN, nothing read */
        if (split && (PDA_CS == 1 || tileops_ctaid_y() != 0))
            return;  /* the merge kernel (a cluster: its first CTA, below) writes the NaNs; the
                      * cluster's CTAs share b, so none of them waits at its barrier */
        for (int e = (int)tid; e < PDA_GS8 * PDA_D; e += TILEOPS_THREADS) {
            const int g = e / PDA_D, d = e % PDA_D;
            if (PDA_HEAD_OK(g)) {
                tileops_st_elem((char *)o + ((b * H + hbase + g) * PDA_D) * TILEOPS_E, d, pda_nan());
                if (d == 0 && lse)
                    lse[b * H + hbase + g] = pda_nan();
            }
        }
        return;
    }
    const long long n_chunks = (len + PDA_CH - 1) / PDA_CH;
    long long c_begin = 0, c_end = n_chunks;
    if (split) {
        c_begin = (long long)tileops_ctaid_y() * cpc;
        c_end = c_begin + cpc < n_chunks ? c_begin + cpc : n_chunks;
        if (c_begin >= c_end) {   /* no chunk of this CTA holds a token */
            pda_cluster_finish(ws, o, lse, b, H, hbase, z, n_chunks, max_chunks, cpc);
            return;
        }
    }
    s.len = (unsigned)len;
    s.c_end = (unsigned)c_end;
    const unsigned ring = pda_smem_addr(pda_smem) + (unsigned)(w * PDA_WARP_BYTES);
    float *fold = (float *)(pda_smem + PDA_FOLD_OFF);

#if PDA_MMA
    /* Q^T fragments: b0 = q[head gq][16 ks + 2 t4 .. +1], b1 the same 8 channels on */
    unsigned qf[PDA_NT][PDA_KS][2];
#pragma unroll
    for (int nt = 0; nt < PDA_NT; nt++) {
        const int hl = nt * 8 + gq;
        const unsigned *qrow = (const unsigned *)((const char *)q + ((b * H + hbase + hl) * PDA_D) * TILEOPS_E);
#pragma unroll
        for (int ks = 0; ks < PDA_KS; ks++) {
            qf[nt][ks][0] = PDA_HEAD_OK(hl) ? qrow[ks * 8 + t4] : 0u;
            qf[nt][ks][1] = PDA_HEAD_OK(hl) ? qrow[ks * 8 + 4 + t4] : 0u;
        }
    }
#else
    float *qs = (float *)(pda_smem + PDA_Q_OFF);
    float *ps = (float *)(pda_smem + PDA_P_OFF) + w * PDA_GS8 * PDA_TILE;
    for (int e = (int)tid; e < PDA_GS8 * PDA_D; e += TILEOPS_THREADS) {
        const int g = e / PDA_D, d = e % PDA_D;
        qs[e] = PDA_HEAD_OK(g) ? tileops_ld_elem((const char *)q + ((b * H + hbase + g) * PDA_D) * TILEOPS_E, d)
                               : 0.0f;
    }
    tileops_barrier();
#endif

    /* the warp's state over the current chunk: per n-tile, heads 2 t4 and 2 t4 + 1 */
    float wm[PDA_NT][2], wl[PDA_NT][2], acc[PDA_NT][PDA_KS][4];
#pragma unroll
    for (int nt = 0; nt < PDA_NT; nt++) {
        wm[nt][0] = wm[nt][1] = ninf;
        wl[nt][0] = wl[nt][1] = 0.0f;
#pragma unroll
        for (int md = 0; md < PDA_KS; md++)
            acc[nt][md][0] = acc[nt][md][1] = acc[nt][md][2] = acc[nt][md][3] = 0.0f;
    }
    /* the CTA's running fold (no split), in registers: the thread's channels PDA_CHAN(i) of
     * head fg (the fold's mapping, below), and that head's m and l */
    float ra[PDA_EPT], rm = ninf, rl = 0.0f;
#pragma unroll
    for (int i = 0; i < PDA_EPT; i++)
        ra[i] = 0.0f;
#if PDA_SC > 1
    /* the current superchunk's state (no split, or a split storing whole superchunks) */
    float qa[PDA_EPT], qm = ninf, ql = 0.0f;
#pragma unroll
    for (int i = 0; i < PDA_EPT; i++)
        qa[i] = 0.0f;
    const int sup_store = split && cpc % PDA_SC == 0;
#endif
    int bad = 0;

    /* rounds of PDA_CG chunks (the last may leave a group without one: its warps copy and
     * compute nothing, and take part in the round's barriers) */
    const int nk = (int)((c_end - c_begin + PDA_CG - 1) / PDA_CG) * PDA_TPW;
#pragma unroll
    for (int k = 0; k < PDA_STAGES - 1; k++) {
        if (k < nk)
            pda_issue(&s, k, first_blk[k], ring, &bad);
        pda_commit();
    }
    /* the block id of the next tile to issue, read one tile ahead */
    int next_blk = first_blk[PDA_STAGES - 1];
    for (int k = 0; k < nk; k++) {
        if (k + PDA_STAGES - 1 < nk) {
            pda_issue(&s, k + PDA_STAGES - 1, next_blk, ring, &bad);
            if (k + PDA_STAGES < nk)
                next_blk = pda_tile_block(&s, k + PDA_STAGES);
        }
        pda_commit();
        PDA_WAIT(PDA_STAGES - 1);
        pda_syncwarp();
        const unsigned tok0 = pda_tile_tok(&s, k);
        if (pda_tile_live(&s, k)) {
            const unsigned kt = ring + (unsigned)((k % PDA_STAGES) * 2 * PDA_TILE_BYTES), vt = kt + PDA_TILE_BYTES;
            /* ---- S^T: rows gq, gq + 8 (tokens), columns 2 t4, 2 t4 + 1 (heads) ---- */
            float sc[PDA_NT][4];
#pragma unroll
            for (int nt = 0; nt < PDA_NT; nt++)
                sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#if PDA_MMA
#pragma unroll
            for (int ks = 0; ks < PDA_KS; ks++) {
                unsigned a[4];
                const int rr = (lane & 7) + (lane & 8), sg = 2 * ks + (lane >> 4);
                pda_ldsm4(kt + pda_swz(rr, sg), a);
#pragma unroll
                for (int nt = 0; nt < PDA_NT; nt++)
                    pda_mma(sc[nt], a, qf[nt][ks][0], qf[nt][ks][1]);
            }
#else
            {
                const char *kp = (const char *)pda_smem + (kt - pda_smem_addr(pda_smem));
#pragma unroll
                for (int nt = 0; nt < PDA_NT; nt++) {
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        const int row = gq + (r >> 1) * 8, hl = nt * 8 + 2 * t4 + (r & 1);
                        float dot = 0.0f;
                        for (int d = 0; d < PDA_D; d++)
                            dot = tileops_fma(tileops_ld_elem(kp + pda_swz(row, d / TILEOPS_G), d % TILEOPS_G),
                                              qs[hl * PDA_D + d], dot);
                        sc[nt][r] = dot;
                    }
                }
            }
#endif
            /* ---- online softmax over the tile ---- */
            const int ok0 = tok0 + gq < s.len, ok1 = tok0 + gq + 8 < s.len;
            float pv[PDA_NT][4], al[PDA_NT][2];
#pragma unroll
            for (int nt = 0; nt < PDA_NT; nt++) {
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const float s0 = ok0 ? tileops_mul(sc[nt][j], scale_log2) : ninf;
                    const float s1 = ok1 ? tileops_mul(sc[nt][2 + j], scale_log2) : ninf;
                    float mx = tileops_maxf(s0, s1);
                    mx = tileops_maxf(mx, tileops_shfl_xor(mx, 4));
                    mx = tileops_maxf(mx, tileops_shfl_xor(mx, 8));
                    mx = tileops_maxf(mx, tileops_shfl_xor(mx, 16));
                    const float mn = tileops_maxf(wm[nt][j], mx);
                    al[nt][j] = wm[nt][j] == ninf ? 0.0f : tileops_ex2(tileops_sub(wm[nt][j], mn));
                    pv[nt][j] = tileops_ex2(tileops_sub(s0, mn));
                    pv[nt][2 + j] = tileops_ex2(tileops_sub(s1, mn));
                    wl[nt][j] = tileops_fma(wl[nt][j], al[nt][j], tileops_add(pv[nt][j], pv[nt][2 + j]));
                    wm[nt][j] = mn;
                }
                /* rescale only when some head's max moved (x * 1 is x: the same bits) */
                if (pda_any(al[nt][0] != 1.0f || al[nt][1] != 1.0f)) {
#pragma unroll
                    for (int md = 0; md < PDA_KS; md++) {
                        acc[nt][md][0] = tileops_mul(acc[nt][md][0], al[nt][0]);
                        acc[nt][md][1] = tileops_mul(acc[nt][md][1], al[nt][1]);
                        acc[nt][md][2] = tileops_mul(acc[nt][md][2], al[nt][0]);
                        acc[nt][md][3] = tileops_mul(acc[nt][md][3], al[nt][1]);
                    }
                }
            }
            /* ---- O^T += V^T P^T: rows gq, gq + 8 of each 16 channels, columns 2 t4, 2 t4 + 1 ---- */
#if PDA_MMA
            unsigned pb[PDA_NT][2];
#pragma unroll
            for (int nt = 0; nt < PDA_NT; nt++) {
                pb[nt][0] = pda_movt(tileops_pack2(pv[nt][0], pv[nt][1]));
                pb[nt][1] = pda_movt(tileops_pack2(pv[nt][2], pv[nt][3]));
            }
#pragma unroll
            for (int md = 0; md < PDA_KS; md++) {
                unsigned a[4];
                const int rr = (lane & 7) + ((lane >> 4) << 3), sg = 2 * md + ((lane >> 3) & 1);
                pda_ldsm4_t(vt + pda_swz(rr, sg), a);
#pragma unroll
                for (int nt = 0; nt < PDA_NT; nt++)
                    pda_mma(acc[nt][md], a, pb[nt][0], pb[nt][1]);
            }
#else
#pragma unroll
            for (int nt = 0; nt < PDA_NT; nt++) {
                ps[(nt * 8 + 2 * t4) * PDA_TILE + gq] = pv[nt][0];
                ps[(nt * 8 + 2 * t4 + 1) * PDA_TILE + gq] = pv[nt][1];
                ps[(nt * 8 + 2 * t4) * PDA_TILE + gq + 8] = pv[nt][2];
                ps[(nt * 8 + 2 * t4 + 1) * PDA_TILE + gq + 8] = pv[nt][3];
            }
            pda_syncwarp();
            {
                const char *vp = (const char *)pda_smem + (vt - pda_smem_addr(pda_smem));
#pragma unroll
                for (int nt = 0; nt < PDA_NT; nt++) {
#pragma unroll
                    for (int md = 0; md < PDA_KS; md++) {
#pragma unroll
                        for (int r = 0; r < 4; r++) {
                            const int d = md * 16 + gq + (r >> 1) * 8, hl = nt * 8 + 2 * t4 + (r & 1);
                            float v = acc[nt][md][r];
                            for (int tk = 0; tk < PDA_TILE; tk++)
                                v = tileops_fma(tileops_ld_elem(vp + pda_swz(tk, d / TILEOPS_G), d % TILEOPS_G),
                                                ps[hl * PDA_TILE + tk], v);
                            acc[nt][md][r] = v;
                        }
                    }
                }
            }
#endif
        }
        pda_syncwarp();  /* slot k % STAGES is refilled by the next iteration */

        if (k % PDA_TPW != PDA_TPW - 1)
            continue;
        /* ---- the end of a round: each group's warps' states -> its chunk's partial ---- */
        const long long c_round = c_begin + (k / PDA_TPW) * PDA_CG;
        const int poisoned = pda_any(bad);
        float *F = fold + w * PDA_FOLD_W;
#pragma unroll
        for (int nt = 0; nt < PDA_NT; nt++) {
            const int h0 = nt * 8 + 2 * t4;
#pragma unroll
            for (int md = 0; md < PDA_KS; md++) {
                const int d0 = md * 16 + gq;
                F[h0 * PDA_D + d0] = acc[nt][md][0];
                F[(h0 + 1) * PDA_D + d0] = acc[nt][md][1];
                F[h0 * PDA_D + d0 + 8] = acc[nt][md][2];
                F[(h0 + 1) * PDA_D + d0 + 8] = acc[nt][md][3];
                acc[nt][md][0] = acc[nt][md][1] = acc[nt][md][2] = acc[nt][md][3] = 0.0f;
            }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float l = wl[nt][j];
                l = tileops_add(l, tileops_shfl_xor(l, 4));
                l = tileops_add(l, tileops_shfl_xor(l, 8));
                l = tileops_add(l, tileops_shfl_xor(l, 16));
                if (gq == 0) {
                    F[PDA_GS8 * PDA_D + h0 + j] = wm[nt][j];
                    F[PDA_GS8 * PDA_D + PDA_GS8 + h0 + j] = poisoned ? pda_nan() : l;
                }
                wm[nt][j] = ninf;
                wl[nt][j] = 0.0f;
            }
        }
        tileops_barrier();
#pragma unroll
        for (int gi = 0; gi < PDA_CG; gi++) {   /* the round's chunks, in chunk order */
            const long long c = c_round + gi;
            if (c >= c_end)
                break;
            const float *F0 = fold + gi * PDA_NW * PDA_FOLD_W;   /* the group's first warp's state */
            /* the warps' states, folded in warp order: the weights once for the thread's head */
            float cm = F0[PDA_GS8 * PDA_D + fg], cl = F0[PDA_GS8 * PDA_D + PDA_GS8 + fg];
            float sa[PDA_NW], sb[PDA_NW];
#pragma unroll
            for (int ww = 1; ww < PDA_NW; ww++) {
                const float *G = F0 + ww * PDA_FOLD_W;
                pda_weigh(&cm, &cl, G[PDA_GS8 * PDA_D + fg], G[PDA_GS8 * PDA_D + PDA_GS8 + fg], &sa[ww], &sb[ww]);
            }
            float cav[PDA_EPT];   /* the thread's channels of the chunk's partial */
#pragma unroll
            for (int i = 0; i < PDA_EPT; i += PDA_FVW)
                pda_warps_fold(F0, fg * PDA_D + PDA_CHAN(i), sa, sb, cav + i);
#if PDA_SC > 1
            /* into the superchunk's state (no split, or whole superchunks stored), which at
             * the superchunk's end goes into the running fold (no split) or to ws (split) */
            const int to_sup = !split || sup_store, ends = c % PDA_SC == PDA_SC - 1 || c == n_chunks - 1;
            float qsa = 0.0f, qsb = 0.0f, rsa = 0.0f, rsb = 0.0f;
            if (to_sup)
                pda_weigh(&qm, &ql, cm, cl, &qsa, &qsb);
            if (!split && ends)
                pda_weigh(&rm, &rl, qm, ql, &rsa, &rsb);
            float *P = split ? ws + ((b * H + hbase + fg) * max_chunks + (sup_store ? c / PDA_SC : c)) * (PDA_D + 2) : 0;
#pragma unroll
            for (int i = 0; i < PDA_EPT; i++) {
                const int d = PDA_CHAN(i);
                const float ca = cav[i];
                if (to_sup)
                    qa[i] = pda_apply(qa[i], ca, qsa, qsb);
                if (!split && ends)
                    ra[i] = pda_apply(ra[i], qa[i], rsa, rsb);
                else if (split && PDA_HEAD_OK(fg) && (!sup_store || ends))
                    P[d] = sup_store ? qa[i] : ca;
                if (to_sup && ends)
                    qa[i] = 0.0f;
            }
            if (split && fu == 0 && PDA_HEAD_OK(fg) && (!sup_store || ends)) {
                P[PDA_D] = sup_store ? qm : cm;
                P[PDA_D + 1] = sup_store ? ql : cl;
            }
            if (to_sup && ends) {
                qm = ninf;
                ql = 0.0f;
            }
#else
            /* then into the CTA's running fold (no split) */
            float rsa = 0.0f, rsb = 0.0f;
            if (!split)
                pda_weigh(&rm, &rl, cm, cl, &rsa, &rsb);
            float *P = split ? ws + ((b * H + hbase + fg) * max_chunks + c) * (PDA_D + 2) : 0;
#pragma unroll
            for (int i = 0; i < PDA_EPT; i++) {
                const int d = PDA_CHAN(i);
                const float ca = cav[i];
                if (!split)
                    ra[i] = pda_apply(ra[i], ca, rsa, rsb);
                else if (PDA_HEAD_OK(fg))
                    P[d] = ca;
            }
            if (split && fu == 0 && PDA_HEAD_OK(fg)) {
                P[PDA_D] = cm;
                P[PDA_D + 1] = cl;
            }
#endif
        }
        tileops_barrier();
    }
    PDA_WAIT(0);
    if (split) {
        pda_cluster_finish(ws, o, lse, b, H, hbase, z, n_chunks, max_chunks, cpc);
        return;
    }
    /* ---- no split: o and lse of the folded state ---- */
    if (!PDA_HEAD_OK(fg))
        return;
#pragma unroll
    for (int i = 0; i < PDA_EPT; i++)
        tileops_st_elem((char *)o + ((b * H + hbase + fg) * PDA_D) * TILEOPS_E, PDA_CHAN(i), pda_out(rl, ra[i]));
    if (fu == 0 && lse)
        lse[b * H + hbase + fg] = pda_lse(rm, rl);
}

#if PDA_SC > 1
/* The merge kernel's superchunk groups (builds of superchunks): PDA_MG groups of PDA_MT
 * threads (a thread a channel), group g folding the superchunks of batch w0 + g PDA_MB of
 * each window of PDA_MG batches from empty (pda_merge_sc_states, as pda_merge_fold_sc
 * does) into shared memory, group 0 then folding a window's PDA_MW superchunk states into
 * the sequence's state in order (pda_merge_fold_sc's second loop: the same operations in
 * the same order), while the other groups fold the next window. A chain of PDA_SC + PDA_MW merges a
 * window of PDA_MG PDA_MB partials instead of PDA_MG (PDA_SC + PDA_MB / PDA_SC): the same
 * bits, fewer dependent steps (128 partials: 32 against 80). A build of PDA_MG = 1 is the
 * one-group merge: a thread a channel folds both levels itself, its loads of one batch
 * overlapping the fold of the other (the launcher's merge_launch_groups takes it where the
 * merge's B x H CTAs fill the SMs: H100, Llama-3-70B TP4 B = 32 32K, 5.19 us against 12.48
 * with 4 groups). */
#define PDA_MT ((PDA_D + 31) / 32 * 32)
/* PDA_MG: the launcher's merge_groups (kernels/attention/paged_decode_attention.py: 4, 2 at
 * head_size 256) or 1, which also sizes the merge's block */
#if !defined(PDA_MG) || PDA_MG < 1 || PDA_MT * PDA_MG > 1024
#error "builds of superchunks need -DPDA_MG (the merge kernel's thread groups, >= 1, at most 1024 threads)"
#endif
#define PDA_MW (PDA_MG * (PDA_MB / PDA_SC))   /* superchunk states a window */
#define PDA_MERGE_BOUNDS __launch_bounds__(PDA_MT * PDA_MG)
#else
#define PDA_MERGE_BOUNDS
#endif

extern "C" __global__ void PDA_MERGE_BOUNDS
tileops_paged_decode_attention_merge(const float *ws, const int *seq_lens, void *o, float *lse, long long H,
                                     long long max_blocks, long long max_chunks
#if PDA_SC > 1
                                     , long long cpc
#endif
                                     ) {
    /* launched with programmatic dependent launch: scheduled while the attention kernel
     * still writes the partials, it waits for that kernel here */
    TILEOPS_PDL_PROLOGUE();
#if PDA_SC == 1
    const long long cpc = 1;   /* (an argument only in builds of superchunks) */
    const int grp = 0, d = (int)tileops_tid();
#else
    const int grp = (int)tileops_tid() / PDA_MT, d = (int)tileops_tid() % PDA_MT;
#if PDA_MG > 1
    __shared__ float qs[2][PDA_MW][PDA_D + 2];   /* two windows of superchunk states: m at D, l at D + 1 */
#endif
#endif
    const long long bh = tileops_ctaid(), b = bh / H;
    /* the first batch of partials is read while seq_lens[b] is (inside the workspace: the
     * chunks past the sequence's are read and never used); group g's: batch g */
    const float *P = ws + bh * max_chunks * (PDA_D + 2);
    float am[PDA_MB], al[PDA_MB], aa[PDA_MB], bm[PDA_MB], bl[PDA_MB], ba[PDA_MB];
    const int dd = d < PDA_D ? d : 0;   /* a thread past the channels loads channel 0's and stores nothing */
    pda_merge_load(P, (long long)grp * PDA_MB, max_chunks, dd, am, al, aa, PDA_MB);
    const long long len = seq_lens[b];
    char *orow = (char *)o + bh * PDA_D * TILEOPS_E;
    if (len < 0 || len > max_blocks * PDA_BS) {
        if (grp == 0 && d < PDA_D) {
            tileops_st_elem(orow, d, pda_nan());
            if (d == 0 && lse)
                lse[bh] = pda_nan();
        }
        return;
    }
    long long n_chunks = (len + PDA_CH - 1) / PDA_CH;
    float m = pda_neg_inf(), l = 0.0f, a = 0.0f;
    const int two = pda_two_level(cpc, n_chunks, &n_chunks);   /* n_chunks: the partials to fold */
#if PDA_SC > 1 && PDA_MG > 1
    if (two) {
        int k = 0;
        for (long long w0 = 0; w0 < n_chunks; w0 += PDA_MG * PDA_MB, k ^= 1) {
            const long long c0 = w0 + (long long)grp * PDA_MB;
            if (w0)
                pda_merge_load(P, c0, n_chunks, dd, am, al, aa, PDA_MB);
            float qm[PDA_MB / PDA_SC], ql[PDA_MB / PDA_SC], qa[PDA_MB / PDA_SC];
            pda_merge_sc_states(c0, n_chunks, am, al, aa, qm, ql, qa);
#pragma unroll
            for (int h = 0; h < PDA_MB / PDA_SC; h++) {
                float *q = qs[k][grp * (PDA_MB / PDA_SC) + h];
                if (d < PDA_D)
                    q[d] = qa[h];
                if (d == 0) {   /* every thread of the group computed the same m and l */
                    q[PDA_D] = qm[h];
                    q[PDA_D + 1] = ql[h];
                }
            }
            /* the window's states are written; group 0 read the other buffer's before it came here */
            tileops_barrier();
            if (grp == 0 && d < PDA_D) {
#pragma unroll
                for (int s = 0; s < PDA_MW; s++) {
                    const float *q = qs[k][s];
                    pda_merge_if(w0 + (long long)s * PDA_SC < n_chunks, &m, &l, &a, q[PDA_D], q[PDA_D + 1], q[d]);
                }
            }
        }
        if (grp == 0 && d < PDA_D) {
            tileops_st_elem(orow, d, pda_out(l, a));
            if (d == 0 && lse)
                lse[bh] = pda_lse(m, l);
        }
        return;
    }
    if (grp != 0 || d >= PDA_D)   /* one level: group 0 alone, its first load batch 0 as below */
        return;
#else
    if (d >= PDA_D)
        return;
#endif
    /* The partials are loaded PDA_MB chunks at a time into one of two register batches while
     * the other batch is folded, one chunk after the other in chunk order (a 32K-token
     * sequence has 128 chunks: a load latency each would be the kernel's time). */
    for (long long c0 = 0; c0 < n_chunks; c0 += 2 * PDA_MB) {
        pda_merge_load(P, c0 + PDA_MB, n_chunks, d, bm, bl, ba, PDA_MB);
        pda_merge_step(two, c0, n_chunks, &m, &l, &a, am, al, aa, PDA_MB);
        pda_merge_load(P, c0 + 2 * PDA_MB, n_chunks, d, am, al, aa, PDA_MB);
        pda_merge_step(two, c0 + PDA_MB, n_chunks, &m, &l, &a, bm, bl, ba, PDA_MB);
    }
    tileops_st_elem(orow, d, pda_out(l, a));
    if (d == 0 && lse)
        lse[bh] = pda_lse(m, l);
}

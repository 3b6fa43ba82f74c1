/* ops/attention/merge_attn_states.cu: the GPU kernel of MergeAttnStatesFwdOp, C-style CUDA
 * C compiled at run time by NVRTC with no builtin headers; ../common/rows_common.cuh
 * (16-byte groups, conversions, rounded fp32 arithmetic) is spliced in by the runtime.
 *
 * For each row r (a (token, head) pair) with la = lse_a[r], lb = lse_b[r] (natural-log
 * logsumexp values, float32) and the rows a = o_a[r], b = o_b[r] of D elements, the rules
 * of the CPU kernel (merge_attn_states.c):
 *   either lse NaN                 o[r] = NaN, lse[r] = NaN
 *   (+inf counts as -inf: an empty partial, as FlashAttention marks a row with no key)
 *   both -inf                      o[r] = 0, lse[r] = -inf
 *   la = -inf (a empty)            o[r] = b, lse[r] = lb   (a's values do not matter)
 *   lb = -inf                      o[r] = a, lse[r] = la
 *   else, m = max(la, lb), wa = 2^((la - m) log2 e), wb likewise, s = wa + wb:
 *       o[r] = fma(wa / s, a, (wb / s) b),   lse[r] = m + log2(s) ln 2
 * in fp32 (ex2.approx and lg2.approx: a few fp32 ulps in the weights; IEEE divisions),
 * one rounding of o to the dtype.
 *
 * ==== Parameters (arg_format "ppppppq") ===================================================
 *   (const void *o_a, const float *lse_a, const void *o_b, const float *lse_b, void *o,
 *    float *lse, long long rows)   all contiguous, rows = T H; o may be o_a or o_b (in
 *   place: each thread reads its group before it writes it; plain loads, not the
 *   non-coherent path); no other overlap (lse overlaps nothing: other threads of its row
 *   read lse_a and lse_b while the group-0 thread writes it).
 *
 * ==== Defines ===========================================================================
 *   TILEOPS_DTYPE 0 float32, 1 float16, 2 bfloat16;  TILEOPS_N = D (head size);
 *   TILEOPS_THREADS the block-size bound;  TILEOPS_VEC G = 16 / E (rows of whole 16-byte
 *   groups, o_a, o_b and o 16-byte aligned) or 1.
 *
 * ==== Launch =============================================================================
 *   One thread per 16-byte group of a row (NG groups, the last may be partial); a block
 *   takes MG_RPB rows at a time (as many whole rows as TILEOPS_THREADS groups hold, at
 *   least one), grid-stride over the rows: any grid.x >= 1 and any block.x (a multiple of
 *   32, <= TILEOPS_THREADS) covers every row. The launch side
 *   (src/tileops/kernels/attention/merge_attn_states.py) picks block.x = MG_RPB * NG
 *   rounded up to a warp, at most TILEOPS_THREADS. The group-0 thread of a row writes its
 *   lse. */
#include "../common/rows_common.cuh"

#define MG_RPB (TILEOPS_NG >= TILEOPS_THREADS ? 1 : TILEOPS_THREADS / TILEOPS_NG)
#define MG_SPAN (MG_RPB * TILEOPS_NG)
#define MG_LOG2E 1.4426950408889634f
#define MG_LN2 0.6931471805599453f

extern "C" __global__ void TILEOPS_BOUNDS tileops_merge_attn_states(const void *o_a, const float *lse_a,
                                                                    const void *o_b, const float *lse_b, void *o,
                                                                    float *lse, long long rows) {
    TILEOPS_PDL_PROLOGUE();
    const float inf = tileops_as_float(0x7f800000u), nan = tileops_as_float(0x7fc00000u);
    const unsigned tid = tileops_tid(), step = tileops_ntid();
    const long long row_bytes = (long long)TILEOPS_N * TILEOPS_E;
    for (long long base = (long long)tileops_ctaid() * MG_RPB; base < rows;
         base += (long long)tileops_nctaid() * MG_RPB) {
        for (unsigned w = tid; w < (unsigned)MG_SPAN; w += step) {
            const unsigned lr = w / (unsigned)TILEOPS_NG, g = w - lr * (unsigned)TILEOPS_NG;
            const long long r = base + lr;
            if (r >= rows)
                break; /* w only grows: so does r */
            const long long off = r * row_bytes;
            /* both groups and both lse loaded together (an empty side's group is then
             * not used: its values do not matter) */
            const struct tileops_v4 va = tileops_ld_group((const char *)o_a + off, g, 0);
            const struct tileops_v4 vb = tileops_ld_group((const char *)o_b + off, g, 0);
            const float la = lse_a[r], lb = lse_b[r];
            const int ea = la == inf || la == -inf, eb = lb == inf || lb == -inf;
            struct tileops_v4 v;
            float out_lse;
            if (la != la || lb != lb) {
                v = tileops_splat(nan);
                out_lse = nan;
            } else if (ea && eb) {
                v = tileops_zero4();
                out_lse = -inf;
            } else if (ea) {
                v = vb;
                out_lse = lb;
            } else if (eb) {
                v = va;
                out_lse = la;
            } else {
                const float m = la > lb ? la : lb;
                const float wa = tileops_ex2(tileops_mul(la - m, MG_LOG2E)), wb = tileops_ex2(tileops_mul(lb - m, MG_LOG2E));
                const float s = tileops_add(wa, wb), pa = wa / s, pb = wb / s;
                float fa[TILEOPS_G], fb[TILEOPS_G];
                tileops_unpack(va, fa);
                tileops_unpack(vb, fb);
#pragma unroll
                for (int k = 0; k < TILEOPS_G; k++)
                    fa[k] = tileops_fma(pa, fa[k], tileops_mul(pb, fb[k]));
                v = tileops_pack(fa);
                out_lse = tileops_fma(tileops_lg2(s), MG_LN2, m);
            }
            tileops_st_group((char *)o + off, g, v, 0);
            if (g == 0)
                lse[r] = out_lse;
        }
    }
}

/* ops/attention/kv_cache_write.cu: the GPU kernel of KVCacheWriteFwdOp, C-style CUDA C
 * compiled at run time by NVRTC with no builtin headers; ../common/rows_common.cuh (16-byte
 * groups and their loads and stores) is spliced in by the runtime.
 *
 * For each token t with s = slot_mapping[t] in [0, num_slots):
 *   key_cache[s, h, :] = k[t, h, :],  value_cache[s, h, :] = v[t, h, :]   (h < H_kv)
 * the caches seen as [num_slots, H_kv, D] (the contiguous [num_blocks, block_size, H_kv, D]
 * layout: slot s = block * block_size + offset is row s; no division). A negative slot
 * writes nothing (vLLM's padding); so does a slot >= num_slots: checking slots costs the
 * host a synchronisation, so the GPU path documents this outcome instead (nothing is
 * written outside the caches, the token's rows are left as they were).
 *
 * ==== Parameters (arg_format "pppppqqqqqq") ==============================================
 *   (const void *k, const void *v, void *key_cache, void *value_cache,
 *    const void *slot_mapping, long long T, long long num_slots,
 *    long long k_st, long long k_sh, long long v_st, long long v_sh)
 *   Strides of k and v in elements (token, head); the channel stride is 1. The caches
 *   are contiguous and overlap neither each other nor k and v.
 *
 * ==== Defines =============================================================================
 *   TILEOPS_DTYPE 0 float32, 1 float16, 2 bfloat16;  TILEOPS_N = D (head size);
 *   TILEOPS_HK = H_kv;  TILEOPS_SLOT64 1 for int64 slots, 0 for int32;
 *   TILEOPS_THREADS the block-size bound;  TILEOPS_VEC G = 16 / E (the vector path: every
 *   pointer 16-byte aligned, D E and every stride times E multiples of 16) or 1.
 *
 * ==== Launch ================================================================================
 *   A token is KV_UNITS units (one 16-byte group of one head of k, then of v); a
 *   block takes KV_TPB tokens at a time (as many whole tokens as TILEOPS_THREADS units
 *   hold, at least one), grid-stride over the tokens: any grid.x >= 1 and any block.x
 *   (a multiple of 32, <= TILEOPS_THREADS) covers every token; the launch side
 *   (src/tileops/kernels/attention/kv_cache_write.py) picks block.x = KV_TPB * KV_UNITS
 *   rounded up to a warp, at most TILEOPS_THREADS. Index arithmetic is 32-bit division by
 *   constants, one 64-bit multiply per token for the slot's row. */
#include "../common/rows_common.cuh"

#if !defined(TILEOPS_HK) || !defined(TILEOPS_SLOT64)
#error "kv_cache_write.cu needs -DTILEOPS_HK and -DTILEOPS_SLOT64"
#endif
#if TILEOPS_HK < 1
#error "TILEOPS_HK must be >= 1"
#endif

#define KV_HUNITS (TILEOPS_HK * TILEOPS_NG) /* units of k (then as many of v) */
#define KV_UNITS (2 * KV_HUNITS)
#define KV_TPB (KV_UNITS >= TILEOPS_THREADS ? 1 : TILEOPS_THREADS / KV_UNITS)
#define KV_SPAN (KV_TPB * KV_UNITS)

extern "C" __global__ void TILEOPS_BOUNDS tileops_kv_cache_write(const void *k, const void *v, void *key_cache,
                                                                 void *value_cache, const void *slot_mapping,
                                                                 long long T, long long num_slots, long long k_st,
                                                                 long long k_sh, long long v_st, long long v_sh) {
    TILEOPS_PDL_PROLOGUE();
    const unsigned tid = tileops_tid(), step = tileops_ntid();
    for (long long base = (long long)tileops_ctaid() * KV_TPB; base < T;
         base += (long long)tileops_nctaid() * KV_TPB) {
        for (unsigned w = tid; w < (unsigned)KV_SPAN; w += step) {
            const unsigned lt = w / (unsigned)KV_UNITS, u = w - lt * (unsigned)KV_UNITS;
            const long long t = base + lt;
            if (t >= T)
                break; /* w only grows: so does t */
            const int is_v = u >= (unsigned)KV_HUNITS;
            const unsigned r = is_v ? u - (unsigned)KV_HUNITS : u;
            const unsigned h = r / (unsigned)TILEOPS_NG, g = r - h * (unsigned)TILEOPS_NG;
            const char *src = is_v ? (const char *)v + (t * v_st + (long long)h * v_sh) * TILEOPS_E
                                   : (const char *)k + (t * k_st + (long long)h * k_sh) * TILEOPS_E;
            /* the group and the slot loaded together (neither waits for the other) */
            const struct tileops_v4 x = tileops_ld_group(src, g, 1);
#if TILEOPS_SLOT64
            const long long s = ((const long long *)slot_mapping)[t];
#else
            const long long s = ((const int *)slot_mapping)[t];
#endif
            if (s < 0 || s >= num_slots)
                continue;
            char *dst = (char *)(is_v ? value_cache : key_cache) +
                        (s * TILEOPS_HK + h) * (long long)(TILEOPS_N * TILEOPS_E);
            tileops_st_group(dst, g, x, 0);
        }
    }
}

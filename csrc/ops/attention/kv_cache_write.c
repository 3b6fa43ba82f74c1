/* kv_cache_write.c: the CPU kernels "kv_cache_write" (rows copied with memcpy, tokens
 * spread over the core's pool) and "kv_cache_write_reference" (element by element, one
 * thread) of KVCacheWriteFwdOp: for each token t with s = slot_mapping[t] >= 0,
 *   key_cache[s, :, :] = k[t, :, :],   value_cache[s, :, :] = v[t, :, :]
 * the caches seen as [num_slots, H, D] rows (the contiguous [num_blocks, block_size, H, D]
 * layout: slot s = block * block_size + offset is row s). A negative slot writes nothing.
 *
 * Arguments ("pppppqqqqqqqqii"): k, v (the tokens' keys and values), key_cache,
 * value_cache, slot_mapping; T, H, D, num_slots (num_blocks * block_size), the token and
 * head strides (elements) of k, then of v; dtype (float32, float16, bfloat16: the four
 * tensors'), the slots' dtype (int32 or int64). The channel stride of k and v is 1; the
 * caches are contiguous and overlap neither each other nor k and v. A slot >= num_slots is an error naming the
 * token and the value, found before anything is written. Two tokens with one slot: one of
 * the two rows is written, which one is not specified (the tokens run in parallel). */
#include <stdint.h>
#include <string.h>

#include "tileops/cpu.h"
#include "tileops/dtype.h"
#include "tileops/kernel_table.h"

#define KV_ARG_FORMAT "pppppqqqqqqqqii"

/* A worker takes at least this many bytes of rows: fewer cost more to wake it. */
#define KV_MIN_BYTES_PER_THREAD ((int64_t)256 << 10)

typedef struct kv_args {
    const char *kernel;
    const void *k, *v, *slots;
    void *key_cache, *value_cache;
    int64_t T, H, D, num_slots, k_st, k_sh, v_st, v_sh;
    int dtype, slot_dtype;
} kv_args_t;

static int64_t slot_at(const kv_args_t *a, int64_t t) {
    return a->slot_dtype == TILEOPS_INT32 ? (int64_t)((const int32_t *)a->slots)[t] : ((const int64_t *)a->slots)[t];
}

/* Whether the last element of T x H rows of D, strides st and sh, lies within int64 bytes. */
static int extent_fits(int64_t T, int64_t st, int64_t H, int64_t sh, int64_t D, int64_t es) {
    const int64_t lim = INT64_MAX / es;
    if (D > lim || (T > 1 && st > (lim - D) / (T - 1)))
        return 0;
    const int64_t used = D + (T - 1) * st;
    return H <= 1 || sh <= (lim - used) / (H - 1);
}

static tileops_status_t check_strides(const kv_args_t *a, const char *name, int64_t st, int64_t sh, int64_t es) {
    if (st < 0 || sh < 0)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, name, "%s: %s's strides must be >= 0, got token %lld, head %lld",
                            a->kernel, name, (long long)st, (long long)sh);
    if (!extent_fits(a->T, st, a->H, sh, a->D, es))
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, name, "%s: %s's extent must fit int64 bytes", a->kernel, name);
    return TILEOPS_OK;
}

static tileops_status_t check_args(const kv_args_t *a) {
    const char *k = a->kernel;
    if (!tileops_dtype_is_float(a->dtype))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: dtype must be 0 (float32), 1 (float16) or 2 (bfloat16), got %d (%s)", k, a->dtype,
                            tileops_dtype_name(a->dtype));
    if (a->slot_dtype != TILEOPS_INT32 && a->slot_dtype != TILEOPS_INT64)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "slot_mapping", "%s: slot_mapping's dtype must be int32 or int64, got %d (%s)",
                            k, a->slot_dtype, tileops_dtype_name(a->slot_dtype));
    if (a->T < 0 || a->H < 1 || a->D < 1 || a->num_slots < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: T >= 0, H >= 1, D >= 1 and num_slots >= 0, got %lld, %lld, %lld, %lld", k,
                            (long long)a->T, (long long)a->H, (long long)a->D, (long long)a->num_slots);
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype);
    if (a->H > INT64_MAX / es / a->D || a->num_slots > INT64_MAX / es / a->D / a->H)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: the caches' bytes must fit int64", k);
    if (a->T == 0)
        return TILEOPS_OK;
    /* caches of no slot may be NULL (an empty tensor's pointer): every slot then is
     * negative (skipped) or out of range (refused below), so neither is touched */
    const int caches = a->num_slots > 0;
    const char *null_arg = a->k == NULL ? "k" : a->v == NULL ? "v" : caches && a->key_cache == NULL ? "key_cache"
                           : caches && a->value_cache == NULL ? "value_cache" : a->slots == NULL ? "slot_mapping"
                           : NULL;
    if (null_arg != NULL)
        return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, null_arg, "%s: %s must be non-NULL when T > 0 (the caches: "
                                "and num_slots > 0), got NULL", k, null_arg);
    tileops_status_t st;
    if ((st = check_strides(a, "k", a->k_st, a->k_sh, es)) != TILEOPS_OK ||
        (st = check_strides(a, "v", a->v_st, a->v_sh, es)) != TILEOPS_OK)
        return st;
    /* every slot before anything is written: a bad one leaves the caches untouched */
    for (int64_t t = 0; t < a->T; t++) {
        const int64_t s = slot_at(a, t);
        if (s >= a->num_slots)
            return tileops_fail_arg(TILEOPS_ERR_INVALID_ARGUMENT, "slot_mapping",
                                "%s: slot_mapping[%lld] = %lld is outside [0, %lld) (the caches' num_blocks * "
                                "block_size slots; a negative slot skips the token)",
                                k, (long long)t, (long long)s, (long long)a->num_slots);
    }
    return TILEOPS_OK;
}

/* The H rows of D elements of one token (strides st, sh) to the contiguous row at dst. */
static void copy_token(char *dst, const char *src, int64_t H, int64_t D, int64_t sh, int64_t es) {
    if (sh == D || H == 1) {
        memcpy(dst, src, (size_t)(H * D * es));
        return;
    }
    for (int64_t h = 0; h < H; h++)
        memcpy(dst + h * D * es, src + h * sh * es, (size_t)(D * es));
}

static void tokens_range(void *ctx, int64_t t0, int64_t t1) {
    const kv_args_t *a = ctx;
    const int64_t es = (int64_t)tileops_dtype_size(a->dtype), row = a->H * a->D * es;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t s = slot_at(a, t);
        if (s < 0)
            continue;
        copy_token((char *)a->key_cache + s * row, (const char *)a->k + t * a->k_st * es, a->H, a->D, a->k_sh, es);
        copy_token((char *)a->value_cache + s * row, (const char *)a->v + t * a->v_st * es, a->H, a->D, a->v_sh,
                   es);
    }
}

static void reference_rows(const kv_args_t *a) {
    const int64_t H = a->H, D = a->D, f32 = a->dtype == TILEOPS_FLOAT32;
    for (int64_t t = 0; t < a->T; t++) {
        const int64_t s = slot_at(a, t);
        if (s < 0)
            continue;
        for (int64_t h = 0; h < H; h++)
            for (int64_t d = 0; d < D; d++) {
                const int64_t o = (s * H + h) * D + d, ik = t * a->k_st + h * a->k_sh + d,
                              iv = t * a->v_st + h * a->v_sh + d;
                if (f32) {
                    ((float *)a->key_cache)[o] = ((const float *)a->k)[ik];
                    ((float *)a->value_cache)[o] = ((const float *)a->v)[iv];
                } else {
                    ((uint16_t *)a->key_cache)[o] = ((const uint16_t *)a->k)[ik];
                    ((uint16_t *)a->value_cache)[o] = ((const uint16_t *)a->v)[iv];
                }
            }
    }
}

static tileops_status_t kv_call(const tileops_arg_t *g, int reference) {
    kv_args_t a = {
        .kernel = reference ? "kv_cache_write_reference" : "kv_cache_write",
        .k = (const void *)g[0].p, .v = (const void *)g[1].p, .key_cache = (void *)g[2].p,
        .value_cache = (void *)g[3].p, .slots = (const void *)g[4].p,
        .T = g[5].q, .H = g[6].q, .D = g[7].q, .num_slots = g[8].q,
        .k_st = g[9].q, .k_sh = g[10].q, .v_st = g[11].q, .v_sh = g[12].q,
        .dtype = g[13].i, .slot_dtype = g[14].i,
    };
    tileops_status_t st = check_args(&a);
    if (st != TILEOPS_OK || a.T == 0)
        return st;
    if (reference) {
        reference_rows(&a);
        return TILEOPS_OK;
    }
    const int64_t row = a.H * a.D * (int64_t)tileops_dtype_size(a.dtype);   /* a token moves two */
    tileops_cpu_parallel_for(a.T, (KV_MIN_BYTES_PER_THREAD / 2 + row - 1) / row, tokens_range, &a);
    return TILEOPS_OK;
}

static tileops_status_t kv_fast(const tileops_arg_t *g) { return kv_call(g, 0); }
static tileops_status_t kv_ref(const tileops_arg_t *g) { return kv_call(g, 1); }

static const tileops_cpu_kernel_t kv_cache_write_kernel = {"kv_cache_write", KV_ARG_FORMAT, kv_fast};
static const tileops_cpu_kernel_t kv_cache_write_reference_kernel = {"kv_cache_write_reference", KV_ARG_FORMAT,
                                                                     kv_ref};
TILEOPS_CPU_KERNEL(kv_cache_write_kernel)
TILEOPS_CPU_KERNEL(kv_cache_write_reference_kernel)

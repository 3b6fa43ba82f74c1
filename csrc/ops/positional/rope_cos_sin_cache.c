/* rope_cos_sin_cache.c: the CPU kernels "rope_cos_sin_cache" and
 * "rope_cos_sin_cache_reference" of RopeCosSinCacheFwdOp: vLLM's cos/sin cache, float32
 * [max_position, rotary_dim], row p = cos(p inv_i), i < R/2, then sin(p inv_i), with
 * inv_i = 1 / base^(2i / R) under Hugging Face's rope_type (default, linear, llama3; see
 * tables.cuh). The driver is angle_table.c (angle_table.h).
 *
 * Arguments ("pqqdidddd"): out, max_position, rotary_dim, base, rope_type (0 default,
 * 1 linear, 2 llama3), factor, low_freq_factor, high_freq_factor,
 * original_max_position_embeddings. */
#include "ops/positional/angle_table.h"

#define ROPE_CACHE_ARG_FORMAT "pqqdidddd"

static tileops_status_t rope_cache_call(const tileops_arg_t *g, int reference) {
    const tileops_angle_table_args_t a = {
        .kernel = reference ? "rope_cos_sin_cache_reference" : "rope_cos_sin_cache",
        .out = (float *)g[0].p, .rows = g[1].q, .width = g[2].q, .base = g[3].d, .layout = TILEOPS_TABLE_ROPE,
        .rope_type = g[4].i, .factor = g[5].d, .low = g[6].d, .high = g[7].d, .orig = g[8].d,
    };
    return tileops_angle_table(&a, reference);
}

static tileops_status_t rope_cache_fast(const tileops_arg_t *g) { return rope_cache_call(g, 0); }
static tileops_status_t rope_cache_ref(const tileops_arg_t *g) { return rope_cache_call(g, 1); }

static const tileops_cpu_kernel_t rope_cache_kernel = {"rope_cos_sin_cache", ROPE_CACHE_ARG_FORMAT, rope_cache_fast};
static const tileops_cpu_kernel_t rope_cache_reference_kernel = {"rope_cos_sin_cache_reference",
                                                                 ROPE_CACHE_ARG_FORMAT, rope_cache_ref};
TILEOPS_CPU_KERNEL(rope_cache_kernel)
TILEOPS_CPU_KERNEL(rope_cache_reference_kernel)

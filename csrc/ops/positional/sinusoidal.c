/* sinusoidal.c: the CPU kernels "sinusoidal" and "sinusoidal_reference" of
 * SinusoidalFwdOp: the Transformer's positional table (Vaswani et al.), float32
 * [seq_len, dim], channel 2i of row p = sin(p / base^(2i / dim)), channel 2i + 1 =
 * cos(p / base^(2i / dim)) (an odd dim ends with a sine). The driver is angle_table.c.
 *
 * Arguments ("pqqd"): out, seq_len, dim, base. */
#include "ops/positional/angle_table.h"

#define SINUSOIDAL_ARG_FORMAT "pqqd"

static tileops_status_t sinusoidal_call(const tileops_arg_t *g, int reference) {
    const tileops_angle_table_args_t a = {
        .kernel = reference ? "sinusoidal_reference" : "sinusoidal",
        .out = (float *)g[0].p, .rows = g[1].q, .width = g[2].q, .base = g[3].d, .layout = TILEOPS_TABLE_SINUSOIDAL,
    };
    return tileops_angle_table(&a, reference);
}

static tileops_status_t sinusoidal_fast(const tileops_arg_t *g) { return sinusoidal_call(g, 0); }
static tileops_status_t sinusoidal_ref(const tileops_arg_t *g) { return sinusoidal_call(g, 1); }

static const tileops_cpu_kernel_t sinusoidal_kernel = {"sinusoidal", SINUSOIDAL_ARG_FORMAT, sinusoidal_fast};
static const tileops_cpu_kernel_t sinusoidal_reference_kernel = {"sinusoidal_reference", SINUSOIDAL_ARG_FORMAT,
                                                                 sinusoidal_ref};
TILEOPS_CPU_KERNEL(sinusoidal_kernel)
TILEOPS_CPU_KERNEL(sinusoidal_reference_kernel)

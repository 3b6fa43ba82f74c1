/* tileops/kernel_table.h: the table of CPU kernels, and the packed argument every kernel
 * (CPU and CUDA) is called with.
 *
 * A CPU kernel is a C function that takes its arguments as an array of tileops_arg_t,
 * described by a format string fixed when the kernel is registered (one character per
 * argument: 'p' pointer, 'q' int64, 'i' int32, 'f' float32, 'd' float64). An op's C file registers its
 * kernels with TILEOPS_CPU_KERNEL at load time; the binding looks a kernel up by name once
 * (at build) and launches it by handle through one generic entry, exactly as CUDA kernels
 * are launched. So neither the binding nor this header grows when an op is added. */
#ifndef TILEOPS_KERNEL_TABLE_H
#define TILEOPS_KERNEL_TABLE_H

#include <stdint.h>
#include "tileops/status.h"

/* One argument value; which member is read follows the kernel's arg format. */
typedef union tileops_arg {
    uintptr_t p;
    int64_t q;
    int32_t i;
    float f;
    double d; /* a parameter whose value must reach the kernel exactly (a Python float) */
} tileops_arg_t;

#define TILEOPS_MAX_KERNEL_ARGS 24
/* The characters an arg format may hold, in tileops_arg_t member order. */
#define TILEOPS_ARG_FORMAT_CHARS "pqifd"

/* A CPU kernel: validates what keeps memory safe (sizes, dtype codes), never user input
 * the op layer checked, and returns a status with the thread-local message set. */
typedef tileops_status_t (*tileops_cpu_kernel_fn)(const tileops_arg_t *args);

typedef struct tileops_cpu_kernel {
    const char *name;       /* unique, e.g. "rms_norm" */
    const char *arg_format; /* e.g. "pppqqqqfii"; at most TILEOPS_MAX_KERNEL_ARGS characters */
    tileops_cpu_kernel_fn fn;
} tileops_cpu_kernel_t;

/* Adds a kernel to the table (called by TILEOPS_CPU_KERNEL at load time). A duplicate
 * name, a bad format or a full table is remembered and reported by every later lookup. */
void tileops_cpu_kernel_register(const tileops_cpu_kernel_t *kernel);

/* Registers `kernel` (a static tileops_cpu_kernel_t) when the library is loaded. Nothing
 * references an op's file but its constructor, so the file must be linked as an object
 * (setup.py and the Makefile list every .c of csrc/ops/<family>); a static archive would
 * silently drop it, and lookups of its kernels would then fail by name. */
#define TILEOPS_CPU_KERNEL(kernel)                                                        \
    __attribute__((constructor)) static void tileops_register_##kernel(void) {             \
        tileops_cpu_kernel_register(&(kernel));                                           \
    }

/* The handle of the kernel named `name`: TILEOPS_OK and *handle >= 0; or
 * TILEOPS_ERR_INVALID_ARGUMENT naming the kernel and listing the registered ones; or, once
 * any registration failed, TILEOPS_ERR_INTERNAL with that failure's message (for every
 * name: a build that lost a kernel must not look healthy). Handles are stable for the life
 * of the process. */
tileops_status_t tileops_cpu_kernel_lookup(const char *name, int *handle);
/* The entry of a handle, NULL for a bad one. */
const tileops_cpu_kernel_t *tileops_cpu_kernel_get(int handle);
/* Number of registered kernels (handles are 0 .. count-1). */
int tileops_cpu_kernel_count(void);
/* Calls kernel `handle` with `num_args` arguments (must equal strlen(arg_format)) on the
 * calling thread and returns the kernel's status; a bad handle or count is
 * TILEOPS_ERR_INVALID_ARGUMENT. */
tileops_status_t tileops_cpu_kernel_launch(int handle, const tileops_arg_t *args, int num_args);

#endif /* TILEOPS_KERNEL_TABLE_H */

/* runtime/modules.h: the fifth layer of the CUDA runtime - the table of built kernels
 * (tileops_cuda_build fills it, tying NVRTC and the disk cache together, and loads each
 * binary once per device), read by the launch layer. */
#ifndef TILEOPS_RUNTIME_MODULES_H
#define TILEOPS_RUNTIME_MODULES_H

#include "runtime/loader.h"

/* One built kernel. Entries are written once, before the handle is published, and never
 * move: launch reads them without a lock. */
typedef struct tileops_kernel_entry {
    CUfunction fn;
    CUmodule module;
    int device;
    int num_args;
    char arg_format[TILEOPS_MAX_KERNEL_ARGS + 1];
    char name[64];                  /* kernel name, truncated, for messages */
    _Atomic unsigned shared_set;    /* dynamic shared limit set on fn so far (by launch) */
    _Atomic unsigned launch_flags;  /* TILEOPS_LAUNCH_* honoured by every launch of fn */
} tileops_kernel_entry_t;

/* NULL for a handle that was never published. Lock-free. */
tileops_kernel_entry_t *tileops_kernel_lookup(int handle);

#endif /* TILEOPS_RUNTIME_MODULES_H */

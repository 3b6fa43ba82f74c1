/* runtime/launch.c: the top layer of the CUDA runtime - tileops_cuda_launch, the hot
 * path. It looks its handle up in the never-moving kernel table, makes the device's
 * primary context current only when it is not, packs the arguments into a stack array
 * and calls cuLaunchKernel (cuLaunchKernelEx for a kernel launched with programmatic
 * dependent launch): lock-free, no allocation, never synchronises or prints. */
#include "runtime/modules.h"
#include "runtime/devices.h"
#include "runtime/loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t g_shared_mutex = PTHREAD_MUTEX_INITIALIZER;
/* The launch flags honoured process-wide (tileops_cuda_set_launch_mask). */
static _Atomic unsigned g_launch_mask = TILEOPS_LAUNCH_PDL;

unsigned tileops_cuda_set_launch_mask(unsigned mask) {
    return atomic_exchange_explicit(&g_launch_mask, mask & TILEOPS_LAUNCH_PDL, memory_order_acq_rel);
}

/* Raises the function's dynamic shared memory limit to `bytes` if it is lower (once per
 * increase; serialised). The entry's device context must be current. */
static tileops_status_t ensure_shared(tileops_kernel_entry_t *entry, unsigned bytes) {
    tileops_status_t st = TILEOPS_OK;
    pthread_mutex_lock(&g_shared_mutex);
    if (atomic_load_explicit(&entry->shared_set, memory_order_relaxed) < bytes) {
        CUresult rc = tileops_cuda_api()->cuFuncSetAttribute(
            entry->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
        if (rc != CUDA_SUCCESS) {
            char call[160];
            snprintf(call, sizeof call,
                     "cuFuncSetAttribute(%s, MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)", entry->name,
                     bytes);
            st = tileops_cuda_fail_call(call, rc);
        } else {
            atomic_store_explicit(&entry->shared_set, bytes, memory_order_release);
        }
    }
    pthread_mutex_unlock(&g_shared_mutex);
    return st;
}

tileops_status_t tileops_cuda_launch(int handle, const unsigned grid[3], const unsigned block[3],
                                     unsigned shared_bytes, uintptr_t stream,
                                     const tileops_arg_t *args, int num_args) {
    tileops_kernel_entry_t *e = tileops_kernel_lookup(handle);
    if (!e)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cuda_launch: bad kernel handle %d",
                            handle);
    if (!grid || !block)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_launch(%s): grid and block must not be NULL", e->name);
    if (num_args != e->num_args)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_launch(%s): the kernel takes %d argument%s (format \"%s\"), got %d",
                            e->name, e->num_args, e->num_args == 1 ? "" : "s", e->arg_format, num_args);
    if (num_args > 0 && !args)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cuda_launch(%s): args is NULL",
                            e->name);
    if (block[0] == 0 || block[1] == 0 || block[2] == 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_launch(%s): empty block (%u, %u, %u)", e->name, block[0],
                            block[1], block[2]);
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
        return TILEOPS_OK;

    CUcontext ctx, previous;
    int changed;
    tileops_status_t st = tileops_cuda_device_context(e->device, &ctx);
    if (st != TILEOPS_OK)
        return st;
    st = tileops_cuda_push_context(ctx, &previous, &changed);
    if (st != TILEOPS_OK)
        return st;
    /* Any dynamic size above what was set so far raises the function's limit once: the
     * default limit is 48 KiB less the kernel's static shared memory, so a fixed 48 KiB
     * threshold would refuse e.g. 48 KiB dynamic + 160 bytes static. */
    if (shared_bytes > atomic_load_explicit(&e->shared_set, memory_order_acquire)) {
        st = ensure_shared(e, shared_bytes);
        if (st != TILEOPS_OK) {
            tileops_cuda_restore_context(previous, changed);
            return st;
        }
    }

    /* cuLaunchKernel wants one pointer per parameter, pointing at its value; it only
     * reads through them. */
    void *params[TILEOPS_MAX_KERNEL_ARGS];
    for (int i = 0; i < num_args; i++) {
        tileops_arg_t *a = (tileops_arg_t *)(uintptr_t)&args[i];
        switch (e->arg_format[i]) {
        case 'p': params[i] = &a->p; break;
        case 'q': params[i] = &a->q; break;
        case 'i': params[i] = &a->i; break;
        case 'd': params[i] = &a->d; break;
        default: params[i] = &a->f; break; /* 'f': the format was validated at build */
        }
    }
    /* A published handle implies a successful load, so the table is there. A kernel with
     * TILEOPS_LAUNCH_PDL (set only where cuLaunchKernelEx exists) goes through it. */
    const tileops_cuda_api_t *api = tileops_cuda_api();
    const unsigned flags = atomic_load_explicit(&e->launch_flags, memory_order_acquire) &
                           atomic_load_explicit(&g_launch_mask, memory_order_relaxed);
    const int pdl = (flags & TILEOPS_LAUNCH_PDL) != 0;
    CUresult rc;
    if (pdl) {
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig config = {grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 shared_bytes, (CUstream)stream, &attr, 1};
        rc = api->cuLaunchKernelEx(&config, e->fn, num_args > 0 ? params : NULL, NULL);
    } else {
        rc = api->cuLaunchKernel(e->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                 shared_bytes, (CUstream)stream, num_args > 0 ? params : NULL, NULL);
    }
    tileops_cuda_restore_context(previous, changed);
    if (rc != CUDA_SUCCESS) {
        char call[224];
        snprintf(call, sizeof call, "%s(%s, grid=(%u,%u,%u), block=(%u,%u,%u), shared=%u%s)",
                 pdl ? "cuLaunchKernelEx" : "cuLaunchKernel", e->name, grid[0], grid[1], grid[2],
                 block[0], block[1], block[2], shared_bytes, pdl ? ", programmatic serialisation" : "");
        return tileops_cuda_fail_call(call, rc);
    }
    tileops_cuda_stat_add(TILEOPS_STAT_LAUNCHES, 1);
    return TILEOPS_OK;
}

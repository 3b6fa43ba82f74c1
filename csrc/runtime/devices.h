/* runtime/devices.h: the second layer of the CUDA runtime - facts about each device,
 * read once, and its primary context, for the layers that compile for a device, load
 * modules into it and launch on it. */
#ifndef TILEOPS_RUNTIME_DEVICES_H
#define TILEOPS_RUNTIME_DEVICES_H

#include "runtime/loader.h"

/* Per-device facts, read once per device (loads the runtime if needed). */
typedef struct tileops_cuda_device_info {
    int major, minor;
    int sm_count;
    int max_shared_optin;
    int l2_bytes;
} tileops_cuda_device_info_t;
tileops_status_t tileops_cuda_device_info(int device, const tileops_cuda_device_info_t **info);

/* The device's primary context, retained on first use (cuDevicePrimaryCtxRetain once per
 * device) and kept for the life of the process. Lock-free once retained. */
tileops_status_t tileops_cuda_device_context(int device, CUcontext *ctx);

/* Makes ctx current on this thread if it is not; *previous receives what was current and
 * *changed whether a switch happened (then restore with tileops_cuda_restore_context).
 * Only after a successful load (a context exists only then). */
tileops_status_t tileops_cuda_push_context(CUcontext ctx, CUcontext *previous, int *changed);
void tileops_cuda_restore_context(CUcontext previous, int changed);

#endif /* TILEOPS_RUNTIME_DEVICES_H */

/* runtime/devices.c: the public device and stream queries of tileops/runtime.h and what
 * devices.h gives the layers above - compute capability and sizes read once per device,
 * primary contexts retained once per device, and switching the current context only when
 * it is not already the one wanted (torch reads the current context as its current
 * device, so it is always put back). Lock-free once a device has been seen. */
#include "runtime/devices.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define TILEOPS_MAX_DEVICES 64

/* ---- per-device state --------------------------------------------------------------- */

static pthread_mutex_t g_device_mutex = PTHREAD_MUTEX_INITIALIZER;
static tileops_cuda_device_info_t g_device_info[TILEOPS_MAX_DEVICES];
static atomic_int g_device_info_ready[TILEOPS_MAX_DEVICES];
static _Atomic(CUcontext) g_device_ctx[TILEOPS_MAX_DEVICES];

/* ---- devices ------------------------------------------------------------------------ */

tileops_status_t tileops_cuda_device_count(int *count) {
    if (!count)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cuda_device_count: count is NULL");
    *count = 0;
    tileops_status_t st = tileops_cuda_load(NULL);
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();
    int n = 0;
    CUresult rc = api->cuDeviceGetCount(&n);
    if (rc != CUDA_SUCCESS)
        return tileops_cuda_fail_call("cuDeviceGetCount", rc);
    *count = n;
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_device_info(int device, const tileops_cuda_device_info_t **info) {
    tileops_status_t st = tileops_cuda_load(NULL);
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();
    if (device < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "CUDA device %d is not valid", device);
    if (device >= TILEOPS_MAX_DEVICES)
        return tileops_fail(TILEOPS_ERR_UNSUPPORTED, "CUDA device %d: at most %d devices are supported",
                            device, TILEOPS_MAX_DEVICES);
    if (atomic_load_explicit(&g_device_info_ready[device], memory_order_acquire)) {
        *info = &g_device_info[device];
        return TILEOPS_OK;
    }
    pthread_mutex_lock(&g_device_mutex);
    st = TILEOPS_OK;
    if (!atomic_load_explicit(&g_device_info_ready[device], memory_order_relaxed)) {
        int count = 0;
        CUdevice dev = 0;
        tileops_cuda_device_info_t d;
        CUresult rc = api->cuDeviceGetCount(&count);
        if (rc != CUDA_SUCCESS) {
            st = tileops_cuda_fail_call("cuDeviceGetCount", rc);
            goto out;
        }
        if (device >= count) {
            st = tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                              "CUDA device %d does not exist (%d device%s)", device, count,
                              count == 1 ? "" : "s");
            goto out;
        }
        rc = api->cuDeviceGet(&dev, device);
        if (rc != CUDA_SUCCESS) {
            st = tileops_cuda_fail_call("cuDeviceGet", rc);
            goto out;
        }
        static const struct {
            int attribute;
            const char *name;
            size_t offset;
        } attrs[] = {
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
             offsetof(tileops_cuda_device_info_t, major)},
            {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
             offsetof(tileops_cuda_device_info_t, minor)},
            {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT",
             offsetof(tileops_cuda_device_info_t, sm_count)},
            {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
             "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
             offsetof(tileops_cuda_device_info_t, max_shared_optin)},
            {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE",
             offsetof(tileops_cuda_device_info_t, l2_bytes)},
        };
        memset(&d, 0, sizeof d);
        for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
            int value = 0;
            rc = api->cuDeviceGetAttribute(&value, attrs[i].attribute, dev);
            if (rc != CUDA_SUCCESS) {
                char call[96];
                snprintf(call, sizeof call, "cuDeviceGetAttribute(%s)", attrs[i].name);
                st = tileops_cuda_fail_call(call, rc);
                goto out;
            }
            memcpy((char *)&d + attrs[i].offset, &value, sizeof value);
        }
        g_device_info[device] = d;
        atomic_store_explicit(&g_device_info_ready[device], 1, memory_order_release);
    }
out:
    pthread_mutex_unlock(&g_device_mutex);
    if (st == TILEOPS_OK)
        *info = &g_device_info[device];
    return st;
}

tileops_status_t tileops_cuda_device_context(int device, CUcontext *ctx) {
    if (device >= 0 && device < TILEOPS_MAX_DEVICES) {
        CUcontext c = atomic_load_explicit(&g_device_ctx[device], memory_order_acquire);
        if (c) {
            *ctx = c;
            return TILEOPS_OK;
        }
    }
    const tileops_cuda_device_info_t *info;
    tileops_status_t st = tileops_cuda_device_info(device, &info); /* validates device */
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();
    pthread_mutex_lock(&g_device_mutex);
    CUcontext c = atomic_load_explicit(&g_device_ctx[device], memory_order_relaxed);
    if (!c) {
        CUdevice dev = 0;
        CUresult rc = api->cuDeviceGet(&dev, device);
        if (rc == CUDA_SUCCESS)
            rc = api->cuDevicePrimaryCtxRetain(&c, dev);
        if (rc != CUDA_SUCCESS) {
            pthread_mutex_unlock(&g_device_mutex);
            return tileops_cuda_fail_call("cuDevicePrimaryCtxRetain", rc);
        }
        atomic_store_explicit(&g_device_ctx[device], c, memory_order_release);
    }
    pthread_mutex_unlock(&g_device_mutex);
    *ctx = c;
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_push_context(CUcontext ctx, CUcontext *previous, int *changed) {
    const tileops_cuda_api_t *api = tileops_cuda_api();
    CUcontext cur = NULL;
    *changed = 0;
    *previous = NULL;
    CUresult rc = api->cuCtxGetCurrent(&cur);
    if (rc != CUDA_SUCCESS)
        return tileops_cuda_fail_call("cuCtxGetCurrent", rc);
    if (cur == ctx)
        return TILEOPS_OK;
    rc = api->cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS)
        return tileops_cuda_fail_call("cuCtxSetCurrent", rc);
    *previous = cur;
    *changed = 1;
    return TILEOPS_OK;
}

void tileops_cuda_restore_context(CUcontext previous, int changed) {
    /* Puts back what the caller had current (torch's runtime reads the current context
     * as its current device). A failure here cannot be reported usefully; ignore it. */
    if (changed)
        (void)tileops_cuda_api()->cuCtxSetCurrent(previous);
}

tileops_status_t tileops_cuda_device_arch(int device, int *major, int *minor) {
    const tileops_cuda_device_info_t *info;
    if (!major || !minor)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cuda_device_arch: NULL output");
    tileops_status_t st = tileops_cuda_device_info(device, &info);
    if (st != TILEOPS_OK)
        return st;
    *major = info->major;
    *minor = info->minor;
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_reset_persisting_l2(int device) {
    CUcontext ctx = NULL, previous = NULL;
    int changed = 0;
    tileops_status_t st = tileops_cuda_device_context(device, &ctx); /* loads, validates device */
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();
    if (!api->cuCtxResetPersistingL2Cache)
        return tileops_fail(TILEOPS_ERR_LIBRARY,
                            "libcuda.so.1 has no symbol cuCtxResetPersistingL2Cache (driver older than CUDA 11.0?)");
    st = tileops_cuda_push_context(ctx, &previous, &changed);
    if (st != TILEOPS_OK)
        return st;
    CUresult rc = api->cuCtxResetPersistingL2Cache();
    tileops_cuda_restore_context(previous, changed);
    return rc == CUDA_SUCCESS ? TILEOPS_OK : tileops_cuda_fail_call("cuCtxResetPersistingL2Cache", rc);
}

tileops_status_t tileops_cuda_device_attributes(int device, int *sm_count,
                                                int *max_shared_per_block_optin,
                                                int *l2_bytes) {
    const tileops_cuda_device_info_t *info;
    tileops_status_t st = tileops_cuda_device_info(device, &info);
    if (st != TILEOPS_OK)
        return st;
    if (sm_count)
        *sm_count = info->sm_count;
    if (max_shared_per_block_optin)
        *max_shared_per_block_optin = info->max_shared_optin;
    if (l2_bytes)
        *l2_bytes = info->l2_bytes;
    return TILEOPS_OK;
}

/* ---- streams ------------------------------------------------------------------------ */

tileops_status_t tileops_cuda_stream_is_capturing(uintptr_t stream, int *capturing) {
    if (!capturing)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_stream_is_capturing: capturing is NULL");
    *capturing = 0;
    tileops_status_t st = tileops_cuda_load(NULL);
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc = api->cuStreamIsCapturing((CUstream)stream, &status);
    if (rc != CUDA_SUCCESS)
        return tileops_cuda_fail_call("cuStreamIsCapturing", rc);
    /* An invalidated capture is still a capture in progress: building would break it. */
    *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
    return TILEOPS_OK;
}

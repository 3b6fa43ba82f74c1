/* runtime/loader.h: the bottom layer of the CUDA runtime - what the core needs from the
 * NVIDIA driver (libcuda.so.1) and NVRTC, declared here so that no CUDA header is needed
 * to build it; the function table tileops_cuda_load fills with dlsym; and what every
 * layer above shares: naming a failed driver call, the counters, a clock.
 *
 * The layers, each including only the headers of those below it (tests/test_layout.py
 * checks it): loader -> devices -> nvrtc -> disk_cache -> modules -> launch.
 *
 * The types, enum values and function signatures below mirror the CUDA driver API
 * (cuda.h) and the NVRTC API (nvrtc.h) of CUDA 12/13; only what the core calls is
 * vendored. Internal to the core: not installed, not part of the public API. */
#ifndef TILEOPS_RUNTIME_LOADER_H
#define TILEOPS_RUNTIME_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include "tileops/runtime.h"

/* ---- driver API types (mirror cuda.h) --------------------------------------------- */

typedef int CUresult; /* enum cudaError_enum in cuda.h; an int-sized enum */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100

/* CUdevice_attribute values */
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97

/* CUfunction_attribute values */
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED 14

/* CUstreamCaptureStatus values */
#define CU_STREAM_CAPTURE_STATUS_NONE 0
#define CU_STREAM_CAPTURE_STATUS_ACTIVE 1
#define CU_STREAM_CAPTURE_STATUS_INVALIDATED 2

/* CUstreamCaptureMode values */
#define CU_STREAM_CAPTURE_MODE_GLOBAL 0

/* stream and event creation flags */
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0

/* Enum-typed parameters (CUdevice_attribute, CUfunction_attribute,
 * CUstreamCaptureStatus) are passed as int: the driver's enums are int-sized. */
typedef CUresult (*PFN_cuInit)(unsigned int flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int *version);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char **str);
typedef CUresult (*PFN_cuGetErrorString)(CUresult error, const char **str);
typedef CUresult (*PFN_cuDeviceGetCount)(int *count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice *device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
typedef CUresult (*PFN_cuCtxGetCurrent)(CUcontext *ctx);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule *module, const void *image);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule module);
typedef CUresult (*PFN_cuFuncSetAttribute)(CUfunction fn, int attribute, int value);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction fn, unsigned grid_x, unsigned grid_y,
                                        unsigned grid_z, unsigned block_x, unsigned block_y,
                                        unsigned block_z, unsigned shared_bytes, CUstream stream,
                                        void **params, void **extra);
typedef CUresult (*PFN_cuStreamIsCapturing)(CUstream stream, int *status);
typedef CUresult (*PFN_cuCtxResetPersistingL2Cache)(void);

/* cuLaunchKernelEx's configuration (CUDA 12.0+), for launch attributes: only the one
 * tileops sets is named. The value union is 64 bytes, 8-aligned (it holds pointers in
 * cuda.h); an attribute is its int id, 4 bytes of padding, then the value (72 bytes).
 * tests/runtime/test_driver_abi.py compares these layouts with cuda.h where it exists. */
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    void *align_as_pointer; /* not a member of cuda.h's union: gives it its alignment */
    int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;
typedef struct CUlaunchAttribute_st {
    int id; /* CUlaunchAttributeID */
    char pad[8 - sizeof(int)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig_st {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
typedef CUresult (*PFN_cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction fn, void **params,
                                          void **extra);
/* Used by the GPU tests only (optional: NULL when the driver lacks one). */
typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr *ptr, size_t bytes);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr ptr);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dst, const void *src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyDtoH_v2)(void *dst, CUdeviceptr src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyDtoDAsync_v2)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                              CUstream stream);
typedef CUresult (*PFN_cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count,
                                         CUstream stream);
typedef CUresult (*PFN_cuStreamCreate)(CUstream *stream, unsigned flags);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream stream);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream stream);
typedef CUresult (*PFN_cuEventCreate)(CUevent *event, unsigned flags);
typedef CUresult (*PFN_cuEventDestroy_v2)(CUevent event);
typedef CUresult (*PFN_cuEventRecord)(CUevent event, CUstream stream);
typedef CUresult (*PFN_cuEventSynchronize)(CUevent event);
typedef CUresult (*PFN_cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
typedef CUresult (*PFN_cuStreamBeginCapture_v2)(CUstream stream, int mode);
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream stream, CUgraph *graph);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph graph);

/* ---- NVRTC types (mirror nvrtc.h) ------------------------------------------------ */

typedef int nvrtcResult; /* enum nvrtcResult; NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nvrtcProgram;
#define NVRTC_SUCCESS 0

typedef const char *(*PFN_nvrtcGetErrorString)(nvrtcResult result);
typedef nvrtcResult (*PFN_nvrtcVersion)(int *major, int *minor);
typedef nvrtcResult (*PFN_nvrtcCreateProgram)(nvrtcProgram *prog, const char *src,
                                              const char *name, int num_headers,
                                              const char *const *headers,
                                              const char *const *include_names);
typedef nvrtcResult (*PFN_nvrtcDestroyProgram)(nvrtcProgram *prog);
typedef nvrtcResult (*PFN_nvrtcCompileProgram)(nvrtcProgram prog, int num_options,
                                               const char *const *options);
typedef nvrtcResult (*PFN_nvrtcGetProgramLogSize)(nvrtcProgram prog, size_t *size);
typedef nvrtcResult (*PFN_nvrtcGetProgramLog)(nvrtcProgram prog, char *log);
typedef nvrtcResult (*PFN_nvrtcGetCUBINSize)(nvrtcProgram prog, size_t *size);
typedef nvrtcResult (*PFN_nvrtcGetCUBIN)(nvrtcProgram prog, char *cubin);

/* ---- the function table ----------------------------------------------------------- */

/* Every entry point, resolved once by tileops_cuda_load. The required ones are never
 * NULL after a successful load; the "optional" ones (test helpers) may be. */
typedef struct tileops_cuda_api {
    /* driver, required */
    PFN_cuInit cuInit;
    PFN_cuDriverGetVersion cuDriverGetVersion;
    PFN_cuGetErrorName cuGetErrorName;
    PFN_cuGetErrorString cuGetErrorString;
    PFN_cuDeviceGetCount cuDeviceGetCount;
    PFN_cuDeviceGet cuDeviceGet;
    PFN_cuDeviceGetAttribute cuDeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
    PFN_cuCtxGetCurrent cuCtxGetCurrent;
    PFN_cuCtxSetCurrent cuCtxSetCurrent;
    PFN_cuModuleLoadData cuModuleLoadData;
    PFN_cuModuleGetFunction cuModuleGetFunction;
    PFN_cuModuleUnload cuModuleUnload;
    PFN_cuFuncSetAttribute cuFuncSetAttribute;
    PFN_cuLaunchKernel cuLaunchKernel;
    PFN_cuStreamIsCapturing cuStreamIsCapturing;
    /* driver, optional: launch attributes (NULL before CUDA 12: kernels then launch plainly) */
    PFN_cuLaunchKernelEx cuLaunchKernelEx;
    /* driver, optional: the bench's L2-cold timer (CUDA 11.0 and newer) */
    PFN_cuCtxResetPersistingL2Cache cuCtxResetPersistingL2Cache;
    /* driver, optional (tests) */
    PFN_cuMemAlloc_v2 cuMemAlloc;
    PFN_cuMemFree_v2 cuMemFree;
    PFN_cuMemcpyHtoD_v2 cuMemcpyHtoD;
    PFN_cuMemcpyDtoH_v2 cuMemcpyDtoH;
    PFN_cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync;
    PFN_cuMemsetD8Async cuMemsetD8Async;
    PFN_cuStreamCreate cuStreamCreate;
    PFN_cuStreamDestroy_v2 cuStreamDestroy;
    PFN_cuStreamSynchronize cuStreamSynchronize;
    PFN_cuEventCreate cuEventCreate;
    PFN_cuEventDestroy_v2 cuEventDestroy;
    PFN_cuEventRecord cuEventRecord;
    PFN_cuEventSynchronize cuEventSynchronize;
    PFN_cuEventElapsedTime cuEventElapsedTime;
    PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture;
    PFN_cuStreamEndCapture cuStreamEndCapture;
    PFN_cuGraphDestroy cuGraphDestroy;
    /* NVRTC, required */
    PFN_nvrtcGetErrorString nvrtcGetErrorString;
    PFN_nvrtcVersion nvrtcVersion;
    PFN_nvrtcCreateProgram nvrtcCreateProgram;
    PFN_nvrtcDestroyProgram nvrtcDestroyProgram;
    PFN_nvrtcCompileProgram nvrtcCompileProgram;
    PFN_nvrtcGetProgramLogSize nvrtcGetProgramLogSize;
    PFN_nvrtcGetProgramLog nvrtcGetProgramLog;
    PFN_nvrtcGetCUBINSize nvrtcGetCUBINSize;
    PFN_nvrtcGetCUBIN nvrtcGetCUBIN;
    /* facts read once at load */
    int driver_version; /* e.g. 13000 */
    int nvrtc_major, nvrtc_minor;
    char nvrtc_path[512]; /* what was opened, for messages */
} tileops_cuda_api_t;

/* The table after a successful tileops_cuda_load(), else NULL (never loads by itself). */
const tileops_cuda_api_t *tileops_cuda_api(void);

/* Fails with TILEOPS_ERR_CUDA naming `call` and the driver's error name and text. */
tileops_status_t tileops_cuda_fail_call(const char *call, CUresult rc);

/* The runtime's counters (tileops_cuda_get_stats), kept here so every layer can bump
 * them without knowing about the others. */
typedef enum tileops_cuda_counter {
    TILEOPS_STAT_NVRTC_COMPILES = 0,
    TILEOPS_STAT_DISK_HITS,
    TILEOPS_STAT_DISK_REJECTS,
    TILEOPS_STAT_MEMORY_HITS,
    TILEOPS_STAT_MODULES_LOADED,
    TILEOPS_STAT_LAUNCHES,
    TILEOPS_STAT_COUNT_
} tileops_cuda_counter_t;
void tileops_cuda_stat_add(tileops_cuda_counter_t counter, int64_t delta);

/* Monotonic milliseconds. */
double tileops_now_ms(void);

/* What $TILEOPS_NVRTC = `value` names, checked before anything is loaded (exposed for
 * tests): 1 with the library to open in out - the file itself, a bare name (no '/') for
 * the loader to search, or libnvrtc.so.13 / .12 / libnvrtc.so inside a named folder - or
 * 0 with why it cannot be used (missing, a folder without libnvrtc, not a regular file,
 * not an ELF shared library). tileops_cuda_load then says (tileops/notes.h) what was
 * asked and what it used instead. */
int tileops_nvrtc_env_check(const char *value, char *out, size_t out_size, char *why,
                            size_t why_size);

#endif /* TILEOPS_RUNTIME_LOADER_H */

/* runtime/loader.c: opening libcuda.so.1 and libnvrtc with dlopen, the function table,
 * the runtime's counters, and naming a failed driver call.
 *
 * Loading happens once per process: the first outcome, success or failure, is kept and
 * reported again by later calls, so a machine without a driver answers the same way
 * every time and never retries a slow dlopen on the hot path. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* clock_gettime; the build defines it too */
#endif
#include "runtime/loader.h"
#include "tileops/notes.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- load state ------------------------------------------------------------------- */

static pthread_mutex_t g_load_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_load_state; /* 0: not tried, 1: loaded, 2: failed */
static tileops_status_t g_load_status;
static char g_load_message[4096];
static tileops_cuda_api_t g_api;

/* ---- counters ------------------------------------------------------------------------ */

static _Atomic int64_t g_stats[TILEOPS_STAT_COUNT_];

double tileops_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void tileops_cuda_stat_add(tileops_cuda_counter_t counter, int64_t delta) {
    if ((int)counter >= 0 && counter < TILEOPS_STAT_COUNT_)
        atomic_fetch_add_explicit(&g_stats[counter], delta, memory_order_relaxed);
}

void tileops_cuda_get_stats(tileops_cuda_stats_t *out) {
    if (!out)
        return;
    out->nvrtc_compiles = atomic_load_explicit(&g_stats[TILEOPS_STAT_NVRTC_COMPILES], memory_order_relaxed);
    out->disk_hits = atomic_load_explicit(&g_stats[TILEOPS_STAT_DISK_HITS], memory_order_relaxed);
    out->disk_rejects = atomic_load_explicit(&g_stats[TILEOPS_STAT_DISK_REJECTS], memory_order_relaxed);
    out->memory_hits = atomic_load_explicit(&g_stats[TILEOPS_STAT_MEMORY_HITS], memory_order_relaxed);
    out->modules_loaded = atomic_load_explicit(&g_stats[TILEOPS_STAT_MODULES_LOADED], memory_order_relaxed);
    out->launches = atomic_load_explicit(&g_stats[TILEOPS_STAT_LAUNCHES], memory_order_relaxed);
}

const tileops_cuda_api_t *tileops_cuda_api(void) {
    return atomic_load_explicit(&g_load_state, memory_order_acquire) == 1 ? &g_api : NULL;
}

/* api: the table to name the error with (NULL: no names), also while it is being loaded. */
static tileops_status_t fail_call(const tileops_cuda_api_t *api, const char *call, CUresult rc) {
    const char *name = NULL, *text = NULL;
    if (api) {
        if (api->cuGetErrorName(rc, &name) != CUDA_SUCCESS)
            name = NULL;
        if (api->cuGetErrorString(rc, &text) != CUDA_SUCCESS)
            text = NULL;
    }
    return tileops_fail(TILEOPS_ERR_CUDA, "%s failed: %s (%d): %s", call,
                        name ? name : "CUDA_ERROR_UNKNOWN", (int)rc,
                        text ? text : "no description");
}

tileops_status_t tileops_cuda_fail_call(const char *call, CUresult rc) {
    return fail_call(tileops_cuda_api(), call, rc);
}

/* ---- loading ------------------------------------------------------------------------ */

/* dlsym into a function pointer without an object-to-function pointer conversion. */
static int resolve(void *lib, const char *symbol, void *slot, size_t slot_size) {
    void *sym = dlsym(lib, symbol);
    if (!sym || slot_size != sizeof sym)
        return 0;
    memcpy(slot, &sym, sizeof sym);
    return 1;
}

#define REQUIRE_SYM(lib, libname, field, symbol)                                             \
    do {                                                                                     \
        if (!resolve((lib), (symbol), &api->field, sizeof api->field))                       \
            return tileops_fail(TILEOPS_ERR_LIBRARY,                                         \
                                "%s has no symbol %s (driver or NVRTC too old?)", (libname), \
                                (symbol));                                                   \
    } while (0)

#define OPTIONAL_SYM(lib, field, symbol) \
    ((void)resolve((lib), (symbol), &api->field, sizeof api->field))

static tileops_status_t resolve_driver(void *lib, tileops_cuda_api_t *api) {
    const char *l = "libcuda.so.1";
    REQUIRE_SYM(lib, l, cuInit, "cuInit");
    REQUIRE_SYM(lib, l, cuDriverGetVersion, "cuDriverGetVersion");
    REQUIRE_SYM(lib, l, cuGetErrorName, "cuGetErrorName");
    REQUIRE_SYM(lib, l, cuGetErrorString, "cuGetErrorString");
    REQUIRE_SYM(lib, l, cuDeviceGetCount, "cuDeviceGetCount");
    REQUIRE_SYM(lib, l, cuDeviceGet, "cuDeviceGet");
    REQUIRE_SYM(lib, l, cuDeviceGetAttribute, "cuDeviceGetAttribute");
    REQUIRE_SYM(lib, l, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    REQUIRE_SYM(lib, l, cuCtxGetCurrent, "cuCtxGetCurrent");
    REQUIRE_SYM(lib, l, cuCtxSetCurrent, "cuCtxSetCurrent");
    REQUIRE_SYM(lib, l, cuModuleLoadData, "cuModuleLoadData");
    REQUIRE_SYM(lib, l, cuModuleGetFunction, "cuModuleGetFunction");
    REQUIRE_SYM(lib, l, cuModuleUnload, "cuModuleUnload");
    REQUIRE_SYM(lib, l, cuFuncSetAttribute, "cuFuncSetAttribute");
    REQUIRE_SYM(lib, l, cuLaunchKernel, "cuLaunchKernel");
    REQUIRE_SYM(lib, l, cuStreamIsCapturing, "cuStreamIsCapturing");
    OPTIONAL_SYM(lib, cuLaunchKernelEx, "cuLaunchKernelEx");
    OPTIONAL_SYM(lib, cuCtxResetPersistingL2Cache, "cuCtxResetPersistingL2Cache");
    OPTIONAL_SYM(lib, cuMemAlloc, "cuMemAlloc_v2");
    OPTIONAL_SYM(lib, cuMemFree, "cuMemFree_v2");
    OPTIONAL_SYM(lib, cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    OPTIONAL_SYM(lib, cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    OPTIONAL_SYM(lib, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    OPTIONAL_SYM(lib, cuMemsetD8Async, "cuMemsetD8Async");
    OPTIONAL_SYM(lib, cuStreamCreate, "cuStreamCreate");
    OPTIONAL_SYM(lib, cuStreamDestroy, "cuStreamDestroy_v2");
    OPTIONAL_SYM(lib, cuStreamSynchronize, "cuStreamSynchronize");
    OPTIONAL_SYM(lib, cuEventCreate, "cuEventCreate");
    OPTIONAL_SYM(lib, cuEventDestroy, "cuEventDestroy_v2");
    OPTIONAL_SYM(lib, cuEventRecord, "cuEventRecord");
    OPTIONAL_SYM(lib, cuEventSynchronize, "cuEventSynchronize");
    OPTIONAL_SYM(lib, cuEventElapsedTime, "cuEventElapsedTime_v2");
    if (!api->cuEventElapsedTime)
        OPTIONAL_SYM(lib, cuEventElapsedTime, "cuEventElapsedTime");
    OPTIONAL_SYM(lib, cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    OPTIONAL_SYM(lib, cuStreamEndCapture, "cuStreamEndCapture");
    OPTIONAL_SYM(lib, cuGraphDestroy, "cuGraphDestroy");
    return TILEOPS_OK;
}

static tileops_status_t resolve_nvrtc(void *lib, const char *libname, tileops_cuda_api_t *api) {
    REQUIRE_SYM(lib, libname, nvrtcGetErrorString, "nvrtcGetErrorString");
    REQUIRE_SYM(lib, libname, nvrtcVersion, "nvrtcVersion");
    REQUIRE_SYM(lib, libname, nvrtcCreateProgram, "nvrtcCreateProgram");
    REQUIRE_SYM(lib, libname, nvrtcDestroyProgram, "nvrtcDestroyProgram");
    REQUIRE_SYM(lib, libname, nvrtcCompileProgram, "nvrtcCompileProgram");
    REQUIRE_SYM(lib, libname, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
    REQUIRE_SYM(lib, libname, nvrtcGetProgramLog, "nvrtcGetProgramLog");
    REQUIRE_SYM(lib, libname, nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
    REQUIRE_SYM(lib, libname, nvrtcGetCUBIN, "nvrtcGetCUBIN");
    return TILEOPS_OK;
}

/* Copies a string into a bounded buffer, truncating. */
static void copy_bounded(char *dst, size_t size, const char *src) {
    size_t n = strlen(src);
    if (size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Appends to a bounded text buffer (silently truncating). */
static void append(char *buf, size_t size, const char *fmt, const char *a, const char *b) {
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    snprintf(buf + used, size - used, fmt, a, b);
}

static int is_elf_file(const char *path) {
    unsigned char magic[4] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    return n == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
}

int tileops_nvrtc_env_check(const char *value, char *out, size_t out_size, char *why,
                            size_t why_size) {
    struct stat sb;
    if (!value || !value[0]) {
        snprintf(why, why_size, "is empty");
        return 0;
    }
    if (!strchr(value, '/')) { /* a bare name: the dynamic loader searches for it */
        copy_bounded(out, out_size, value);
        return 1;
    }
    if (stat(value, &sb) != 0) {
        snprintf(why, why_size, "%s", errno == ENOENT ? "does not exist" : "cannot be read");
        return 0;
    }
    if (S_ISDIR(sb.st_mode)) {
        const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
        char candidate[1024];
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            int n = snprintf(candidate, sizeof candidate, "%s/%s", value, names[i]);
            if (n > 0 && (size_t)n < sizeof candidate && stat(candidate, &sb) == 0 &&
                S_ISREG(sb.st_mode) && is_elf_file(candidate)) {
                copy_bounded(out, out_size, candidate);
                return 1;
            }
        }
        snprintf(why, why_size,
                 "is a folder without libnvrtc.so.13, libnvrtc.so.12 or libnvrtc.so in it");
        return 0;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(why, why_size, "is not a regular file");
        return 0;
    }
    if (!is_elf_file(value)) {
        snprintf(why, why_size, "is not a shared library (no ELF header)");
        return 0;
    }
    copy_bounded(out, out_size, value);
    return 1;
}

/* Opens NVRTC following runtime.h's search order. env_why: "" or why $TILEOPS_NVRTC
 * (checked by tileops_nvrtc_env_check, or opened and found not to be NVRTC) was passed
 * over. */
static void *open_nvrtc(const char *hint, char *path_out, size_t path_size, char *tried,
                        size_t tried_size, char *env_why, size_t env_why_size) {
    const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12"};
    char candidate[1024];
    const char *env = getenv("TILEOPS_NVRTC");
    void *lib;

    tried[0] = '\0';
    env_why[0] = '\0';
#define TRY(path)                                                                        \
    do {                                                                                 \
        lib = dlopen((path), RTLD_NOW | RTLD_LOCAL);                                     \
        if (lib) {                                                                       \
            copy_bounded(path_out, path_size, (path));                                   \
            return lib;                                                                  \
        }                                                                                \
        const char *err_ = dlerror();                                                    \
        append(tried, tried_size, "\n  %s: %s", (path), err_ ? err_ : "cannot be opened"); \
    } while (0)

    if (env && env[0]) {
        char why[256];
        if (!tileops_nvrtc_env_check(env, candidate, sizeof candidate, why, sizeof why)) {
            snprintf(env_why, env_why_size, "%s", why);
            append(tried, tried_size, "\n  %s (TILEOPS_NVRTC): %s", env, why);
        } else if ((lib = dlopen(candidate, RTLD_NOW | RTLD_LOCAL)) == NULL) {
            const char *err = dlerror();
            snprintf(env_why, env_why_size, "cannot be loaded (%s)", err ? err : "dlopen failed");
            append(tried, tried_size, "\n  %s: %s", candidate, err ? err : "cannot be opened");
        } else if (!dlsym(lib, "nvrtcVersion")) {
            dlclose(lib);
            snprintf(env_why, env_why_size, "is not NVRTC (%.300s has no nvrtcVersion)", candidate);
            append(tried, tried_size, "\n  %s: %s", candidate, "no symbol nvrtcVersion");
        } else {
            copy_bounded(path_out, path_size, candidate);
            return lib;
        }
    }
    if (hint && hint[0]) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            int n = snprintf(candidate, sizeof candidate, "%s/%s", hint, names[i]);
            if (n > 0 && (size_t)n < sizeof candidate)
                TRY(candidate);
        }
    }
    TRY("libnvrtc.so.13");
    TRY("libnvrtc.so.12");
    TRY("libnvrtc.so");
#undef TRY
    return NULL;
}

/* One note when $TILEOPS_NVRTC was set and not used: what was asked, why, and what is
 * used instead (`instead`: a path, or NULL when CUDA builds are off, `off_why`). */
static void note_nvrtc_env(const char *why, const char *instead, const char *off_why) {
    if (!why || !why[0])
        return;
    const char *env = getenv("TILEOPS_NVRTC");
    if (instead)
        tileops_note("tileops: TILEOPS_NVRTC=%.300s %s; using %.300s instead", env ? env : "", why,
                     instead);
    else
        tileops_note("tileops: TILEOPS_NVRTC=%.300s %s; CUDA builds are off (%s)", env ? env : "",
                     why, off_why);
}

static tileops_status_t do_load(const char *nvrtc_hint) {
    tileops_cuda_api_t *api = &g_api;
    char tried[2048];
    tileops_status_t st;
    CUresult rc;

    memset(api, 0, sizeof *api);
    char env_why[512] = "";
    const char *env = getenv("TILEOPS_NVRTC");
    if (env && env[0]) { /* said even when the driver is missing */
        char resolved[1024];
        (void)tileops_nvrtc_env_check(env, resolved, sizeof resolved, env_why, sizeof env_why);
    }
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) {
        const char *err = dlerror();
        note_nvrtc_env(env_why, NULL, "libcuda.so.1, the NVIDIA driver, cannot be loaded");
        return tileops_fail(TILEOPS_ERR_LIBRARY,
                            "cannot load libcuda.so.1 (the NVIDIA driver library; no driver "
                            "installed or no GPU on this machine): %s",
                            err ? err : "dlopen failed");
    }
    st = resolve_driver(cuda, api);
    if (st != TILEOPS_OK) {
        dlclose(cuda);
        return st;
    }
    void *nvrtc = open_nvrtc(nvrtc_hint, api->nvrtc_path, sizeof api->nvrtc_path, tried,
                             sizeof tried, env_why, sizeof env_why);
    note_nvrtc_env(env_why, nvrtc ? api->nvrtc_path : NULL, "no other libnvrtc was found");
    if (!nvrtc) {
        dlclose(cuda);
        return tileops_fail(TILEOPS_ERR_LIBRARY,
                            "cannot load libnvrtc (NVRTC, the CUDA runtime compiler; install "
                            "the nvidia-cuda-nvrtc wheel or set TILEOPS_NVRTC to its path); "
                            "tried:%s",
                            tried);
    }
    st = resolve_nvrtc(nvrtc, api->nvrtc_path, api);
    if (st != TILEOPS_OK) {
        dlclose(nvrtc);
        dlclose(cuda);
        return st;
    }
    if (api->nvrtcVersion(&api->nvrtc_major, &api->nvrtc_minor) != NVRTC_SUCCESS) {
        dlclose(nvrtc);
        dlclose(cuda);
        return tileops_fail(TILEOPS_ERR_LIBRARY, "nvrtcVersion failed in %s", api->nvrtc_path);
    }
    /* From here on the libraries stay open for the life of the process. */
    rc = api->cuInit(0);
    if (rc != CUDA_SUCCESS) /* the table is not published yet: name the error with it directly */
        return fail_call(api, "cuInit", rc);
    rc = api->cuDriverGetVersion(&api->driver_version);
    if (rc != CUDA_SUCCESS)
        api->driver_version = 0;
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_load(const char *nvrtc_hint) {
    if (atomic_load_explicit(&g_load_state, memory_order_acquire) == 1)
        return TILEOPS_OK;
    pthread_mutex_lock(&g_load_mutex);
    if (atomic_load_explicit(&g_load_state, memory_order_relaxed) == 0) {
        tileops_status_t st = do_load(nvrtc_hint);
        g_load_status = st;
        if (st != TILEOPS_OK) {
            copy_bounded(g_load_message, sizeof g_load_message, tileops_last_error());
            memset(&g_api, 0, sizeof g_api);
        }
        atomic_store_explicit(&g_load_state, st == TILEOPS_OK ? 1 : 2, memory_order_release);
    }
    tileops_status_t st = g_load_status;
    pthread_mutex_unlock(&g_load_mutex);
    if (st == TILEOPS_OK)
        return TILEOPS_OK;
    /* g_load_message is written once, before the state was published. */
    return tileops_fail(st, "%s", g_load_message);
}


tileops_status_t tileops_nvrtc_version(int *major, int *minor) {
    if (!major || !minor)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_nvrtc_version: NULL output");
    tileops_status_t st = tileops_cuda_load(NULL);
    if (st != TILEOPS_OK)
        return st;
    *major = g_api.nvrtc_major;
    *minor = g_api.nvrtc_minor;
    return TILEOPS_OK;
}

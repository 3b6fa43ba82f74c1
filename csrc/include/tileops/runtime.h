/* tileops/runtime.h: the CUDA runtime of the core, in C, with no CUDA headers needed to
 * build it.
 *
 * libcuda.so.1 and libnvrtc are opened with dlopen on first use; every entry point is
 * resolved once into a table. A machine without them still builds, imports and runs
 * the CPU kernels: tileops_cuda_load() then returns TILEOPS_ERR_LIBRARY naming what is
 * missing.
 *
 * Kernels are CUDA C sources compiled by NVRTC for the device's architecture
 * (sm_90a on Hopper), specialised by -D defines. Two caches sit under a build:
 *   - compiled binaries (CUBIN) in process memory and on disk, keyed by a hash of the
 *     source, the options, the arch, the NVRTC version and the tileops version;
 *     written to a temp file then renamed; on disk each entry carries the SHA-256 of its
 *     key and an HMAC made with the cache folder's own secret, and only a private folder
 *     of this user is used (see tileops_cuda_cache_state); a corrupt, truncated, forged
 *     or misplaced entry is rebuilt;
 *   - loaded modules per device (a CUBIN is loaded once in each device's primary context).
 * A kernel handle is a small integer valid for the life of the process. */
#ifndef TILEOPS_RUNTIME_H
#define TILEOPS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include "tileops/kernel_table.h" /* tileops_arg_t, TILEOPS_MAX_KERNEL_ARGS */
#include "tileops/status.h"

/* Opens libcuda.so.1 and libnvrtc and calls cuInit. Idempotent and thread-safe; the
 * outcome of the first call is remembered. nvrtc_hint: a directory to look in first
 * (the NVIDIA wheel's lib folder the Python side found) or NULL. Search order for
 * NVRTC: $TILEOPS_NVRTC (a full path), nvrtc_hint/libnvrtc.so.{13,12}, then the loader's
 * libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so. */
tileops_status_t tileops_cuda_load(const char *nvrtc_hint);

/* Number of CUDA devices (0 if the driver is missing: then also returns an error). */
tileops_status_t tileops_cuda_device_count(int *count);
/* Compute capability of a device. */
tileops_status_t tileops_cuda_device_arch(int device, int *major, int *minor);
/* NVRTC version (after a successful load). */
tileops_status_t tileops_nvrtc_version(int *major, int *minor);

/* Where binaries are cached on disk: $TILEOPS_CACHE_DIR if set, else
 * $XDG_CACHE_HOME/tileops/<version>/ where XDG_CACHE_HOME is an absolute path, else
 * ~/.cache/tileops/<version>/ (the arch folder is added per build). Setting NULL restores
 * the default; the empty string disables the disk cache. The string is copied. */
tileops_status_t tileops_cuda_set_cache_dir(const char *dir);
/* Whether the disk cache of the current setting is in use: 1, or 0 with the reason
 * (disabled, or refused: a folder that is a symbolic link, not this user's, writable by
 * group or others, or whose secret is not a private 0600 file). Opens (making it 0700
 * when missing) and checks the folder on the first call for a setting; a refused one
 * stays off for the process and leaves one note (tileops/notes.h). dir gets the folder
 * ("" when disabled); either buffer may be NULL. */
int tileops_cuda_cache_state(char *dir, size_t dir_size, char *reason, size_t reason_size);
/* The tileops version string that enters the cache key and folder. Copied. */
tileops_status_t tileops_cuda_set_version(const char *version);

/* What one build did. */
typedef struct tileops_build_info {
    int nvrtc_ran;      /* 1 when NVRTC compiled the program in this call */
    int disk_hit;       /* 1 when the CUBIN came from the disk cache */
    int memory_hit;     /* 1 when the kernel was already loaded on this device */
    double compile_ms;  /* NVRTC time, 0 if it did not run */
    double total_ms;    /* whole call */
} tileops_build_info_t;

/* Builds (or finds) kernel `kernel_name` of `source` for `device`:
 *   options: extra NVRTC options (e.g. "-DTILE_N=4096"); the arch option and the fixed
 *            ones (-default-device, -std=c++17 is NOT used: sources are C-style) are added
 *            by the runtime, all in one place.
 *   arg_format: the kernel's parameters, one character each, fixed at build so a launch
 *            needs no parsing: 'p' pointer (uintptr_t), 'q' int64, 'i' int32, 'f' float32, 'd' float64.
 *   capture_stream: the stream the caller is about to launch on, or 0. If that stream is
 *            capturing and the kernel is not already loaded on the device, fails with
 *            TILEOPS_ERR_CAPTURING without compiling, loading or synchronising, so the
 *            capture can still be ended cleanly.
 * On success *handle is set; info (may be NULL) says what happened. On a compile failure
 * the message holds the kernel name and the full NVRTC log. */
tileops_status_t tileops_cuda_build(int device, const char *source, size_t source_len,
                                    const char *kernel_name, const char *const *options,
                                    int num_options, const char *arg_format,
                                    uintptr_t capture_stream, int *handle,
                                    tileops_build_info_t *info);

/* The arg_format a handle was built with (NULL for a bad handle). */
const char *tileops_cuda_kernel_arg_format(int handle);
/* The device a handle belongs to (-1 for a bad handle). */
int tileops_cuda_kernel_device(int handle);

/* Launches on `stream`: the caller passes torch's current stream for the device (a CUstream
 * as an integer; 0 when torch's current stream is the device's default stream, which is
 * then where torch itself launches), with the handle's device primary context
 * made current on this thread. An empty grid (any dimension 0) returns TILEOPS_OK without
 * launching. Dynamic shared memory above 48 KiB is enabled on the function on first need.
 * Never synchronises, never allocates. num_args must equal strlen(arg_format). */
tileops_status_t tileops_cuda_launch(int handle, const unsigned grid[3], const unsigned block[3],
                                     unsigned shared_bytes, uintptr_t stream,
                                     const tileops_arg_t *args, int num_args);

/* Launch flags of a kernel, honoured by every later launch of its handle:
 *   TILEOPS_LAUNCH_PDL  programmatic dependent launch (cuLaunchKernelEx with programmatic
 *                       stream serialisation): the kernel may be scheduled while the
 *                       stream's previous kernel still runs, so its launch and prologue
 *                       overlap that kernel's tail. The kernel must execute
 *                       griddepcontrol.wait before it reads anything an earlier kernel
 *                       of the stream writes, and before it writes anything one reads.
 * Set only where the device and driver can (sm_90 or newer, cuLaunchKernelEx): elsewhere
 * the flag is dropped and the kernel launches plainly (griddepcontrol is then a no-op).
 * *applied (may be NULL) gets the flags in force. A bad handle or unknown flag is
 * TILEOPS_ERR_INVALID_ARGUMENT. */
#define TILEOPS_LAUNCH_PDL 1u
tileops_status_t tileops_cuda_kernel_set_launch_flags(int handle, unsigned flags, unsigned *applied);
/* The launch flags honoured process-wide, ANDed with each kernel's (initially all:
 * TILEOPS_LAUNCH_PDL); returns the previous mask. 0 launches every kernel plainly (the
 * A/B of a measurement, or TILEOPS_PDL=0 in Python). Unknown bits are dropped. */
unsigned tileops_cuda_set_launch_mask(unsigned mask);

/* Whether a stream is being captured into a CUDA graph. */
tileops_status_t tileops_cuda_stream_is_capturing(uintptr_t stream, int *capturing);

/* Demotes every L2 line the device's primary context holds with persisting priority
 * (cuCtxResetPersistingL2Cache). A kernel torch.compile made leaves part of its input
 * in L2's persisting set-aside, through any amount of ordinary writes, so an L2-cold timer flushes and then calls this; it takes effect when
 * it returns, so synchronize first. A driver without the call is TILEOPS_ERR_LIBRARY. */
tileops_status_t tileops_cuda_reset_persisting_l2(int device);

/* Device properties the kernel classes size their launches from. */
tileops_status_t tileops_cuda_device_attributes(int device, int *sm_count,
                                                int *max_shared_per_block_optin,
                                                int *l2_bytes);

/* Counters since process start (for tests and logs). */
typedef struct tileops_cuda_stats {
    int64_t nvrtc_compiles;
    int64_t disk_hits;
    int64_t disk_rejects;   /* corrupt, truncated, forged or misplaced entries (and links,
                               FIFOs, oversized files) found and rebuilt */
    int64_t memory_hits;
    int64_t modules_loaded;
    int64_t launches;
} tileops_cuda_stats_t;
void tileops_cuda_get_stats(tileops_cuda_stats_t *out);

/* ---- pieces exposed for tests (no GPU needed) ------------------------------------ */

/* 64-bit FNV-1a over bytes, chained from `seed` (0 starts a new hash). */
uint64_t tileops_hash64(const void *data, size_t len, uint64_t seed);

/* Disk cache entry format: a header (magic, version, payload length, SHA-256 of the key,
 * HMAC-SHA256 of header and payload with the folder's secret) followed by the payload.
 * Here the key is the file's name, so an entry renamed or copied to another name is
 * refused. The folder of path must be a private folder of this user (not a symbolic
 * link); store makes its secret (.tileops-secret, 0600) when missing, writes
 * <path>.tmp.<pid>.<n> (O_EXCL, 0600) then renames it over path. Load returns
 * TILEOPS_ERR_CACHE for a missing, truncated, corrupt, forged, oversized or non-regular
 * entry or a symbolic link, without blocking (and for all but a missing one also bumps
 * disk_rejects); *data is malloc'ed, the caller frees it. */
tileops_status_t tileops_cache_store(const char *path, const void *data, size_t len);
tileops_status_t tileops_cache_load(const char *path, void **data, size_t *len);

#endif /* TILEOPS_RUNTIME_H */

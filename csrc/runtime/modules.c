/* runtime/modules.c: builds - the binary from process memory, the disk cache or NVRTC,
 * loaded once per device - and the kernel handle table they fill.
 *
 *  - Compiled binaries (CUBIN), keyed by a 64-bit FNV-1a hash of the source chained with
 *    the full NVRTC option list (fixed + caller's), the arch, the NVRTC version, the
 *    tileops version and the kernel name: kept in process memory for the life of the
 *    process, and on disk (disk_cache.c), where an entry is also bound to the SHA-256 of
 *    all of those (full_key), so a 64-bit collision can never load the wrong binary.
 *  - Loaded kernels, keyed by (binary key, device, arg format): a CUBIN is loaded once in
 *    each device's primary context; a second build on the same device is a memory hit.
 *
 * A handle is an index into a table of pages that are allocated once and never move, so
 * tileops_cuda_launch reads entries without taking a lock. Lookups and inserts in the two
 * maps take g_mutex briefly (never held across NVRTC, disk or driver calls, so memory hits
 * never wait); CUBIN misses (disk, NVRTC) are serialised by g_compile_mutex so a kernel is
 * compiled once however many threads ask; module loading is serialised by g_module_mutex
 * so a kernel is never loaded twice on one device. */
#include "runtime/modules.h"
#include "runtime/disk_cache.h"
#include "runtime/nvrtc.h"
#include "runtime/devices.h"
#include "runtime/loader.h"
#include "runtime/sha256.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- in-memory maps ----------------------------------------------------------------- */

typedef struct cubin_slot {
    uint64_t key; /* 0: empty; first, as key_map_t needs */
    void *data;
    size_t len;
} cubin_slot_t;

typedef struct handle_slot {
    uint64_t key; /* 0: empty; first, as key_map_t needs */
    int handle;
} handle_slot_t;

/* An open-addressing hash map with linear probing over slots of `slot_size` bytes that
 * each begin with their uint64_t key (0: empty). Keys are never 0 and never removed; the
 * table doubles before it is half full. Both maps below are one of these. */
typedef struct key_map {
    unsigned char *slots;
    size_t slot_size, cap, count;
} key_map_t;

static uint64_t *map_key(const key_map_t *m, size_t i) {
    return (uint64_t *)(void *)(m->slots + i * m->slot_size);
}

/* The slot holding `key`, or NULL. */
static void *map_find(const key_map_t *m, uint64_t key) {
    if (!m->cap)
        return NULL;
    for (size_t i = (size_t)key & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        uint64_t *k = map_key(m, i);
        if (*k == key)
            return k;
        if (*k == 0)
            return NULL;
    }
}

/* An empty slot for a new `key` (not in the map), with the key written; the caller fills
 * the rest. NULL when out of memory (the map is unchanged). */
static void *map_add(key_map_t *m, uint64_t key) {
    if ((m->count + 1) * 2 > m->cap) {
        key_map_t grown = {NULL, m->slot_size, m->cap ? m->cap * 2 : 64, m->count};
        grown.slots = calloc(grown.cap, grown.slot_size);
        if (!grown.slots)
            return NULL;
        for (size_t j = 0; j < m->cap; j++) {
            uint64_t *k = map_key(m, j);
            if (!*k)
                continue;
            size_t i = (size_t)*k & (grown.cap - 1);
            while (*map_key(&grown, i))
                i = (i + 1) & (grown.cap - 1);
            memcpy(map_key(&grown, i), k, m->slot_size);
        }
        free(m->slots);
        *m = grown;
    }
    size_t i = (size_t)key & (m->cap - 1);
    while (*map_key(m, i))
        i = (i + 1) & (m->cap - 1);
    uint64_t *k = map_key(m, i);
    *k = key;
    m->count++;
    return k;
}

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;      /* the two maps, the table */
static pthread_mutex_t g_module_mutex = PTHREAD_MUTEX_INITIALIZER; /* module loading */
static pthread_mutex_t g_compile_mutex = PTHREAD_MUTEX_INITIALIZER; /* disk + NVRTC */
static key_map_t g_cubins = {NULL, sizeof(cubin_slot_t), 0, 0};
static key_map_t g_handles = {NULL, sizeof(handle_slot_t), 0, 0};

static uint64_t nonzero(uint64_t k) { return k ? k : 1; }

static cubin_slot_t *cubin_find(uint64_t key) { return map_find(&g_cubins, key); }

static int cubin_insert(uint64_t key, void *data, size_t len) {
    cubin_slot_t *slot = map_add(&g_cubins, key);
    if (!slot)
        return -1;
    slot->data = data;
    slot->len = len;
    return 0;
}

static int handle_find(uint64_t key) {
    const handle_slot_t *slot = map_find(&g_handles, key);
    return slot ? slot->handle : -1;
}

static int handle_insert(uint64_t key, int handle) {
    handle_slot_t *slot = map_add(&g_handles, key);
    if (!slot)
        return -1;
    slot->handle = handle;
    return 0;
}

/* ---- the kernel handle table -------------------------------------------------------- */

#define PAGE_BITS 10
#define PAGE_ENTRIES (1 << PAGE_BITS)
#define MAX_PAGES 256 /* 262144 kernels per process */

static _Atomic(tileops_kernel_entry_t *) g_pages[MAX_PAGES];
static atomic_int g_num_kernels;

tileops_kernel_entry_t *tileops_kernel_lookup(int handle) {
    int n = atomic_load_explicit(&g_num_kernels, memory_order_acquire);
    if (handle < 0 || handle >= n)
        return NULL;
    tileops_kernel_entry_t *page =
        atomic_load_explicit(&g_pages[handle >> PAGE_BITS], memory_order_relaxed);
    return &page[handle & (PAGE_ENTRIES - 1)];
}

const char *tileops_cuda_kernel_arg_format(int handle) {
    tileops_kernel_entry_t *e = tileops_kernel_lookup(handle);
    return e ? e->arg_format : NULL;
}

int tileops_cuda_kernel_device(int handle) {
    tileops_kernel_entry_t *e = tileops_kernel_lookup(handle);
    return e ? e->device : -1;
}

tileops_status_t tileops_cuda_kernel_set_launch_flags(int handle, unsigned flags, unsigned *applied) {
    tileops_kernel_entry_t *e = tileops_kernel_lookup(handle);
    if (!e)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_kernel_set_launch_flags: bad kernel handle %d", handle);
    if (flags & ~TILEOPS_LAUNCH_PDL)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_kernel_set_launch_flags(%s): unknown flags 0x%x", e->name,
                            flags & ~TILEOPS_LAUNCH_PDL);
    if (flags & TILEOPS_LAUNCH_PDL) {
        /* programmatic dependent launch: Hopper (sm_90) on, and cuLaunchKernelEx */
        int major = 0, minor = 0;
        tileops_status_t st = tileops_cuda_device_arch(e->device, &major, &minor);
        if (st != TILEOPS_OK)
            return st;
        if (major < 9 || !tileops_cuda_api()->cuLaunchKernelEx)
            flags &= ~TILEOPS_LAUNCH_PDL;
    }
    atomic_store_explicit(&e->launch_flags, flags, memory_order_release);
    if (applied)
        *applied = flags;
    return TILEOPS_OK;
}

/* Appends an entry (g_mutex held); returns the handle or -1 when out of memory/space. */
static int kernel_add(CUfunction fn, CUmodule module, int device, const char *arg_format,
                      const char *name) {
    int index = atomic_load_explicit(&g_num_kernels, memory_order_relaxed);
    if (index >= MAX_PAGES * PAGE_ENTRIES)
        return -1;
    tileops_kernel_entry_t *page =
        atomic_load_explicit(&g_pages[index >> PAGE_BITS], memory_order_relaxed);
    if (!page) {
        page = calloc(PAGE_ENTRIES, sizeof *page);
        if (!page)
            return -1;
        atomic_store_explicit(&g_pages[index >> PAGE_BITS], page, memory_order_relaxed);
    }
    tileops_kernel_entry_t *e = &page[index & (PAGE_ENTRIES - 1)];
    e->fn = fn;
    e->module = module;
    e->device = device;
    e->num_args = (int)strlen(arg_format);
    snprintf(e->arg_format, sizeof e->arg_format, "%s", arg_format);
    snprintf(e->name, sizeof e->name, "%s", name);
    atomic_init(&e->shared_set, 0u);
    atomic_init(&e->launch_flags, 0u);
    /* publish: the entry (and its page) is complete before the count says so */
    atomic_store_explicit(&g_num_kernels, index + 1, memory_order_release);
    return index;
}

/* ---- builds ------------------------------------------------------------------------- */

static uint64_t hash_str(const char *s, uint64_t seed) {
    return tileops_hash64(s, strlen(s) + 1, seed); /* the NUL separates fields */
}

/* The hash of a kernel source is the slow part of a memory hit (FNV-1a is a serial chain,
 * ~1 ns per byte: tens of microseconds for a kernel file), and callers pass the same few
 * sources again and again. Remember the hashes of the last few sources, each with a copy
 * of the text: a hit is a memcmp (a few GB/s), never a guess from a pointer. */
#define SOURCE_MEMO 8
static pthread_mutex_t g_memo_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *text;
    size_t len;
    uint64_t hash;
} g_memo[SOURCE_MEMO];
static unsigned g_memo_next;

static uint64_t source_hash(const char *source, size_t len) {
    uint64_t h = 0;
    int found = 0;
    pthread_mutex_lock(&g_memo_mutex);
    for (int i = 0; i < SOURCE_MEMO; i++) {
        if (g_memo[i].text && g_memo[i].len == len && memcmp(g_memo[i].text, source, len) == 0) {
            h = g_memo[i].hash;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&g_memo_mutex);
    if (found)
        return h;
    h = tileops_hash64(source, len, 0);
    char *copy = malloc(len);
    if (!copy)
        return h; /* not remembered: still correct */
    memcpy(copy, source, len);
    pthread_mutex_lock(&g_memo_mutex);
    unsigned slot = g_memo_next++ % SOURCE_MEMO;
    free(g_memo[slot].text);
    g_memo[slot].text = copy;
    g_memo[slot].len = len;
    g_memo[slot].hash = h;
    pthread_mutex_unlock(&g_memo_mutex);
    return h;
}

static void sha_str(tileops_sha256_t *s, const char *text) {
    tileops_sha256_update(s, text, strlen(text) + 1); /* the NUL separates fields */
}

/* The SHA-256 of everything the 64-bit key is hashed from, in the same order: what a disk
 * entry is bound to. Computed only when the disk is consulted (a CUBIN miss). */
static void full_key_of(const char *source, size_t source_len, const char *const *fixed,
                        int num_fixed, const char *const *options, int num_options,
                        const char *arch, const char *nvrtc_version, const char *version,
                        const char *kernel_name, unsigned char out[TILEOPS_SHA256_BYTES]) {
    tileops_sha256_t s;
    uint64_t n = source_len;
    tileops_sha256_init(&s);
    tileops_sha256_update(&s, &n, sizeof n);
    tileops_sha256_update(&s, source, source_len);
    sha_str(&s, "options:");
    for (int i = 0; i < num_fixed; i++)
        sha_str(&s, fixed[i]);
    sha_str(&s, "caller options:");
    for (int i = 0; i < num_options; i++)
        sha_str(&s, options[i]);
    sha_str(&s, arch);
    sha_str(&s, nvrtc_version);
    sha_str(&s, version);
    sha_str(&s, kernel_name);
    tileops_sha256_final(&s, out);
}

static int is_identifier(const char *s) {
    if (!s || !s[0])
        return 0;
    for (const char *c = s; *c; c++) {
        int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                 (c != s && *c >= '0' && *c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

static tileops_status_t validate_build(int device, const char *source, size_t source_len,
                                       const char *kernel_name, const char *const *options,
                                       int num_options, const char *arg_format) {
    const char *where = "tileops_cuda_build";
    if (device < 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: device %d is not valid", where, device);
    if (!source || source_len == 0)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s: empty source", where);
    if (!is_identifier(kernel_name) || strlen(kernel_name) > 200)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s: kernel name \"%.64s\" is not a C identifier", where,
                            kernel_name ? kernel_name : "(null)");
    if (num_options < 0 || (num_options > 0 && !options))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s(%s): bad options (count %d)", where,
                            kernel_name, num_options);
    for (int i = 0; i < num_options; i++)
        if (!options[i])
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s(%s): option %d is NULL", where,
                                kernel_name, i);
    if (!arg_format)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "%s(%s): arg_format is NULL", where,
                            kernel_name);
    size_t n = strlen(arg_format);
    if (n > TILEOPS_MAX_KERNEL_ARGS)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "%s(%s): %zu arguments, at most %d are supported", where, kernel_name,
                            n, TILEOPS_MAX_KERNEL_ARGS);
    for (size_t i = 0; i < n; i++)
        if (!strchr(TILEOPS_ARG_FORMAT_CHARS, arg_format[i]))
            return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                                "%s(%s): arg_format \"%s\" has '%c'; use p, q, i or f", where,
                                kernel_name, arg_format, arg_format[i]);
    return TILEOPS_OK;
}

static void finish_info(tileops_build_info_t *info, const tileops_build_info_t *local, double t0) {
    if (info) {
        *info = *local;
        info->total_ms = tileops_now_ms() - t0;
    }
}

/* The kernel is already loaded on the device as handle `found`: a memory hit. */
static tileops_status_t memory_hit(int found, int *handle, tileops_build_info_t *local,
                                   tileops_build_info_t *info, double t0) {
    *handle = found;
    local->memory_hit = 1;
    tileops_cuda_stat_add(TILEOPS_STAT_MEMORY_HITS, 1);
    finish_info(info, local, t0);
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_build(int device, const char *source, size_t source_len,
                                    const char *kernel_name, const char *const *options,
                                    int num_options, const char *arg_format,
                                    uintptr_t capture_stream, int *handle,
                                    tileops_build_info_t *info) {
    double t0 = tileops_now_ms();
    tileops_build_info_t local;
    const tileops_cuda_device_info_t *dev;
    tileops_status_t st;
    char arch[16], version[128], nvrtc_version[32], arch_option[48];
    const char *fixed[TILEOPS_NVRTC_MAX_FIXED_OPTIONS];

    memset(&local, 0, sizeof local);
    if (info)
        memset(info, 0, sizeof *info);
    if (!handle)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cuda_build: handle is NULL");
    *handle = -1;
    st = validate_build(device, source, source_len, kernel_name, options, num_options, arg_format);
    if (st != TILEOPS_OK)
        return st;
    st = tileops_cuda_load(NULL);
    if (st != TILEOPS_OK)
        return st;
    st = tileops_cuda_device_info(device, &dev);
    if (st != TILEOPS_OK)
        return st;
    const tileops_cuda_api_t *api = tileops_cuda_api();

    /* the binary's key: everything that changes the CUBIN */
    tileops_nvrtc_arch_name(dev->major, dev->minor, arch, sizeof arch);
    tileops_disk_cache_version(version, sizeof version);
    snprintf(nvrtc_version, sizeof nvrtc_version, "nvrtc %d.%d", api->nvrtc_major, api->nvrtc_minor);
    int num_fixed = tileops_nvrtc_fixed_options(dev->major, dev->minor, api->nvrtc_major,
                                                api->nvrtc_minor, arch_option, sizeof arch_option,
                                                fixed);
    uint64_t key = source_hash(source, source_len);
    key = hash_str("options:", key);
    for (int i = 0; i < num_fixed; i++)
        key = hash_str(fixed[i], key);
    key = hash_str("caller options:", key);
    for (int i = 0; i < num_options; i++)
        key = hash_str(options[i], key);
    key = hash_str(arch, key);
    key = hash_str(nvrtc_version, key);
    key = hash_str(version, key);
    key = nonzero(hash_str(kernel_name, key));
    /* the loaded kernel's key: the binary, the device and the launch format */
    uint64_t hkey = tileops_hash64(&device, sizeof device, key);
    hkey = nonzero(hash_str(arg_format, hkey));

    /* 1. already loaded on this device: allowed at any time, even during capture */
    pthread_mutex_lock(&g_mutex);
    int found = handle_find(hkey);
    pthread_mutex_unlock(&g_mutex);
    if (found >= 0)
        return memory_hit(found, handle, &local, info, t0);

    /* 2. anything else must not happen while the caller's stream is capturing */
    if (capture_stream) {
        int capturing = 0;
        st = tileops_cuda_stream_is_capturing(capture_stream, &capturing);
        if (st != TILEOPS_OK)
            return st;
        if (capturing)
            return tileops_fail(TILEOPS_ERR_CAPTURING,
                                "kernel %s is not built for device %d; building during CUDA graph "
                                "capture is not allowed",
                                kernel_name, device);
    }

    /* 3. the CUBIN: process memory, else disk, else NVRTC (then stored on disk). Misses
     * are serialised by g_compile_mutex so that threads wanting the same kernel compile
     * it once (the map is checked again under it). */
    pthread_mutex_lock(&g_mutex);
    cubin_slot_t *slot = cubin_find(key);
    const void *cubin = slot ? slot->data : NULL;
    pthread_mutex_unlock(&g_mutex);
    int compile_locked = 0;
    if (!cubin) {
        pthread_mutex_lock(&g_compile_mutex);
        compile_locked = 1;
        pthread_mutex_lock(&g_mutex);
        slot = cubin_find(key);
        cubin = slot ? slot->data : NULL;
        pthread_mutex_unlock(&g_mutex);
    }
    if (!cubin) {
        void *data = NULL;
        size_t len = 0;
        unsigned char full_key[TILEOPS_SHA256_BYTES];
        full_key_of(source, source_len, fixed, num_fixed, options, num_options, arch,
                    nvrtc_version, version, kernel_name, full_key);
        if (tileops_disk_cache_get(arch, kernel_name, key, full_key, &data, &len) == TILEOPS_OK) {
            local.disk_hit = 1;
            tileops_cuda_stat_add(TILEOPS_STAT_DISK_HITS, 1);
        } else {
            st = tileops_nvrtc_compile(source, source_len, kernel_name, options, num_options,
                                       dev->major, dev->minor, &data, &len, &local.compile_ms);
            if (st != TILEOPS_OK) {
                pthread_mutex_unlock(&g_compile_mutex);
                return st;
            }
            local.nvrtc_ran = 1;
            tileops_cuda_stat_add(TILEOPS_STAT_NVRTC_COMPILES, 1);
            (void)tileops_disk_cache_put(arch, kernel_name, key, full_key, data, len); /* best effort */
            tileops_clear_error();
        }
        pthread_mutex_lock(&g_mutex);
        slot = cubin_find(key);
        if (slot) { /* another thread got there first */
            free(data);
            cubin = slot->data;
        } else if (cubin_insert(key, data, len) != 0) {
            pthread_mutex_unlock(&g_mutex);
            pthread_mutex_unlock(&g_compile_mutex);
            free(data);
            return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "tileops_cuda_build(%s): out of memory",
                                kernel_name);
        } else {
            cubin = data;
        }
        pthread_mutex_unlock(&g_mutex);
    }
    if (compile_locked)
        pthread_mutex_unlock(&g_compile_mutex);

    /* 4. load it in the device's primary context, once */
    CUcontext ctx, previous;
    int changed;
    st = tileops_cuda_device_context(device, &ctx);
    if (st != TILEOPS_OK)
        return st;
    pthread_mutex_lock(&g_module_mutex);
    pthread_mutex_lock(&g_mutex);
    found = handle_find(hkey);
    pthread_mutex_unlock(&g_mutex);
    if (found >= 0) { /* loaded by another thread meanwhile */
        pthread_mutex_unlock(&g_module_mutex);
        return memory_hit(found, handle, &local, info, t0);
    }
    st = tileops_cuda_push_context(ctx, &previous, &changed);
    if (st != TILEOPS_OK) {
        pthread_mutex_unlock(&g_module_mutex);
        return st;
    }
    CUmodule module = NULL;
    CUfunction fn = NULL;
    CUresult rc = api->cuModuleLoadData(&module, cubin);
    if (rc != CUDA_SUCCESS) {
        char call[128];
        tileops_cuda_restore_context(previous, changed);
        pthread_mutex_unlock(&g_module_mutex);
        snprintf(call, sizeof call, "cuModuleLoadData(%s, device %d)", kernel_name, device);
        return tileops_cuda_fail_call(call, rc);
    }
    rc = api->cuModuleGetFunction(&fn, module, kernel_name);
    if (rc != CUDA_SUCCESS) {
        char call[128];
        (void)api->cuModuleUnload(module);
        tileops_cuda_restore_context(previous, changed);
        pthread_mutex_unlock(&g_module_mutex);
        snprintf(call, sizeof call, "cuModuleGetFunction(%.64s)", kernel_name);
        return tileops_cuda_fail_call(call, rc);
    }
    /* Clusters of more than 8 CTAs (16 on sm_90) are non-portable: a kernel compiled with
     * them launches only once the function allows them. Allowed on every sm_90+ kernel
     * (a permission: nothing changes for the others). Best effort: should the driver
     * refuse, a launch of such a cluster fails with the driver's error, naming the kernel. */
    if (dev->major >= 9)
        (void)api->cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    tileops_cuda_restore_context(previous, changed);
    tileops_cuda_stat_add(TILEOPS_STAT_MODULES_LOADED, 1);

    pthread_mutex_lock(&g_mutex);
    int h = kernel_add(fn, module, device, arg_format, kernel_name);
    if (h >= 0)
        (void)handle_insert(hkey, h); /* out of memory: the handle works, just is not found again */
    pthread_mutex_unlock(&g_mutex);
    pthread_mutex_unlock(&g_module_mutex);
    if (h < 0) {
        /* the module stays loaded: this is out of memory or out of handles */
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY,
                            "tileops_cuda_build(%s): no room for another kernel handle", kernel_name);
    }
    *handle = h;
    finish_info(info, &local, t0);
    return TILEOPS_OK;
}

/* runtime/cache.c: the two caches under a kernel build, and the kernel handle table.
 *
 *  - Compiled binaries (CUBIN), keyed by a 64-bit FNV-1a hash of the source chained with
 *    the full NVRTC option list (fixed + caller's), the arch, the NVRTC version, the
 *    tileops version and the kernel name: kept in process memory for the life of the
 *    process, and on disk under <cache dir>/<arch>/<kernel>-<key>.cubin. A disk entry is a
 *    32-byte header (magic "TOPSCUB1", format version, payload length, payload hash) and
 *    the payload; it is written to <path>.tmp.<pid>.<n> and renamed over the path, so a
 *    reader sees an old entry, a new entry or none. No fsync: an entry cut short by a
 *    crash is caught by the length and hash checks, counted in disk_rejects and rebuilt.
 *    The disk cache is an optimisation: when its folder cannot be made or written, builds
 *    work from memory and NVRTC.
 *  - Loaded kernels, keyed by (binary key, device, arg format): a CUBIN is loaded once in
 *    each device's primary context; a second build on the same device is a memory hit.
 *
 * A handle is an index into a table of pages that are allocated once and never move, so
 * tileops_cuda_launch reads entries without taking a lock. Lookups and inserts in the two
 * maps take g_mutex briefly (never held across NVRTC, disk or driver calls, so memory hits
 * never wait); CUBIN misses (disk, NVRTC) are serialised by g_compile_mutex so a kernel is
 * compiled once however many threads ask; module loading is serialised by g_module_mutex
 * so a kernel is never loaded twice on one device. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* O_CLOEXEC, strerror_r, clock_gettime; the build defines it too */
#endif
#include "runtime/cuda_api.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- hashing ------------------------------------------------------------------------ */

#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

uint64_t tileops_hash64(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = seed ? seed : FNV64_OFFSET;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= FNV64_PRIME;
    }
    return h;
}

static uint64_t hash_str(const char *s, uint64_t seed) {
    return tileops_hash64(s, strlen(s) + 1, seed); /* the NUL separates fields */
}

/* ---- disk entries ------------------------------------------------------------------- */

#define ENTRY_MAGIC "TOPSCUB1"
#define ENTRY_FORMAT_VERSION 1u
#define ENTRY_HEADER_SIZE 32u
/* header layout, little-endian: magic[8] | u32 format version | u32 header size |
 * u64 payload length | u64 FNV-1a 64 of the payload */

static atomic_uint g_tmp_counter;

static const char *errtext(int err, char *buf, size_t size) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(err, buf, size);
#else
    if (strerror_r(err, buf, size) != 0)
        snprintf(buf, size, "errno %d", err);
    return buf;
#endif
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int write_all(int fd, const void *data, size_t len) {
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes; returns the count read (short at end of file), -1 on error. */
static ssize_t read_all(int fd, void *data, size_t len) {
    char *p = data;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

tileops_status_t tileops_cache_store(const char *path, const void *data, size_t len) {
    char err[128];
    if (!path || !path[0] || (!data && len > 0))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cache_store: bad arguments");
    size_t tmp_size = strlen(path) + 64;
    char *tmp = malloc(tmp_size);
    if (!tmp)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "tileops_cache_store: out of memory");
    unsigned n = atomic_fetch_add_explicit(&g_tmp_counter, 1u, memory_order_relaxed);
    snprintf(tmp, tmp_size, "%s.tmp.%ld.%u", path, (long)getpid(), n);

    unsigned char header[ENTRY_HEADER_SIZE];
    memcpy(header, ENTRY_MAGIC, 8);
    put_u32(header + 8, ENTRY_FORMAT_VERSION);
    put_u32(header + 12, ENTRY_HEADER_SIZE);
    put_u64(header + 16, (uint64_t)len);
    put_u64(header + 24, tileops_hash64(data, len, 0));

    tileops_status_t st = TILEOPS_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        st = tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot create %s: %s", tmp,
                          errtext(e, err, sizeof err));
    } else {
        int failed = write_all(fd, header, sizeof header) != 0 || write_all(fd, data, len) != 0;
        int e = errno;
        if (close(fd) != 0 && !failed) {
            failed = 1;
            e = errno;
        }
        if (failed) {
            unlink(tmp);
            st = tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot write %s: %s", tmp,
                              errtext(e, err, sizeof err));
        } else if (rename(tmp, path) != 0) {
            e = errno;
            unlink(tmp);
            st = tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot rename %s to %s: %s", tmp, path,
                              errtext(e, err, sizeof err));
        }
    }
    free(tmp);
    return st;
}

static tileops_status_t reject(const char *path, const char *why, unsigned long long a,
                               unsigned long long b) {
    tileops_cuda_stat_add(TILEOPS_STAT_DISK_REJECTS, 1);
    return tileops_fail(TILEOPS_ERR_CACHE, "cache: corrupt entry %s: %s (%llu vs %llu)", path,
                        why, a, b);
}

tileops_status_t tileops_cache_load(const char *path, void **data, size_t *len) {
    char err[128];
    unsigned char header[ENTRY_HEADER_SIZE];
    struct stat sb;

    if (!path || !data || !len)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cache_load: bad arguments");
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return tileops_fail(TILEOPS_ERR_CACHE, "cache: no entry %s", path);
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot open %s: %s", path,
                            errtext(e, err, sizeof err));
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: %s is not a readable file", path);
    }
    unsigned long long file_size = (unsigned long long)sb.st_size;
    if (file_size < ENTRY_HEADER_SIZE) {
        close(fd);
        return reject(path, "shorter than the header", file_size, ENTRY_HEADER_SIZE);
    }
    ssize_t got = read_all(fd, header, sizeof header);
    if (got != (ssize_t)sizeof header) {
        close(fd);
        return reject(path, "header could not be read", (unsigned long long)(got < 0 ? 0 : got),
                      ENTRY_HEADER_SIZE);
    }
    if (memcmp(header, ENTRY_MAGIC, 8) != 0) {
        close(fd);
        tileops_cuda_stat_add(TILEOPS_STAT_DISK_REJECTS, 1);
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: corrupt entry %s: bad magic", path);
    }
    uint32_t version = get_u32(header + 8), header_size = get_u32(header + 12);
    if (version != ENTRY_FORMAT_VERSION || header_size != ENTRY_HEADER_SIZE) {
        close(fd);
        return reject(path, "unknown format version", version, ENTRY_FORMAT_VERSION);
    }
    uint64_t payload_len = get_u64(header + 16), payload_hash = get_u64(header + 24);
    if (payload_len != file_size - ENTRY_HEADER_SIZE || payload_len > (uint64_t)SIZE_MAX - 1) {
        close(fd);
        return reject(path, "payload length does not match the file size",
                      (unsigned long long)payload_len, file_size - ENTRY_HEADER_SIZE);
    }
    void *buf = malloc(payload_len ? (size_t)payload_len : 1);
    if (!buf) {
        close(fd);
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "cache: out of memory reading %s", path);
    }
    got = read_all(fd, buf, (size_t)payload_len);
    close(fd);
    if (got != (ssize_t)payload_len) {
        free(buf);
        return reject(path, "payload cut short", (unsigned long long)(got < 0 ? 0 : got),
                      (unsigned long long)payload_len);
    }
    uint64_t h = tileops_hash64(buf, (size_t)payload_len, 0);
    if (h != payload_hash) {
        free(buf);
        return reject(path, "payload hash mismatch", (unsigned long long)h,
                      (unsigned long long)payload_hash);
    }
    *data = buf;
    *len = (size_t)payload_len;
    return TILEOPS_OK;
}

/* ---- cache folder and version ------------------------------------------------------- */

static pthread_mutex_t g_config_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_dir_explicit;   /* set_cache_dir was called with a non-NULL dir */
static char *g_dir;          /* that dir ("" disables the disk cache) */
static char *g_version;      /* NULL: "unknown" */

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c)
        memcpy(c, s, n);
    return c;
}

tileops_status_t tileops_cuda_set_cache_dir(const char *dir) {
    char *copy = NULL;
    if (dir) {
        copy = copy_string(dir);
        if (!copy)
            return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "tileops_cuda_set_cache_dir: out of memory");
    }
    pthread_mutex_lock(&g_config_mutex);
    free(g_dir);
    g_dir = copy;
    g_dir_explicit = dir != NULL;
    pthread_mutex_unlock(&g_config_mutex);
    return TILEOPS_OK;
}

tileops_status_t tileops_cuda_set_version(const char *version) {
    if (!version || !version[0])
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "tileops_cuda_set_version: the version must be a non-empty string");
    char *copy = copy_string(version);
    if (!copy)
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "tileops_cuda_set_version: out of memory");
    pthread_mutex_lock(&g_config_mutex);
    free(g_version);
    g_version = copy;
    pthread_mutex_unlock(&g_config_mutex);
    return TILEOPS_OK;
}

/* Copies the version (for the key) into buf. */
static void current_version(char *buf, size_t size) {
    pthread_mutex_lock(&g_config_mutex);
    snprintf(buf, size, "%s", g_version ? g_version : "unknown");
    pthread_mutex_unlock(&g_config_mutex);
}

/* The base folder (before the arch folder) into buf; 0 when the disk cache is off. */
static int base_cache_dir(char *buf, size_t size) {
    int ok = 0;
    pthread_mutex_lock(&g_config_mutex);
    if (g_dir_explicit) {
        ok = g_dir && g_dir[0] && (size_t)snprintf(buf, size, "%s", g_dir) < size;
    } else {
        const char *env = getenv("TILEOPS_CACHE_DIR");
        if (env) {
            ok = env[0] && (size_t)snprintf(buf, size, "%s", env) < size;
        } else {
            const char *home = getenv("HOME");
            if (home && home[0]) {
                /* the version becomes a folder name: keep it to a safe alphabet */
                char v[128];
                snprintf(v, sizeof v, "%s", g_version ? g_version : "unknown");
                for (char *c = v; *c; c++) {
                    int safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                               (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '+' ||
                               *c == '_';
                    if (!safe)
                        *c = '_';
                }
                if (v[0] == '.')
                    v[0] = '_';
                ok = (size_t)snprintf(buf, size, "%s/.cache/tileops/%s", home, v) < size;
            }
        }
    }
    pthread_mutex_unlock(&g_config_mutex);
    return ok;
}

/* mkdir -p; 0 on success. */
static int make_dirs(char *path) {
    struct stat sb;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return -1;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

/* The disk path of an entry, with its folder made; 0 when there is no usable folder. */
static int entry_path(const char *arch, const char *kernel_name, uint64_t key, char *buf,
                      size_t size) {
    char dir[4096];
    if (!base_cache_dir(dir, sizeof dir))
        return 0;
    size_t used = strlen(dir);
    if ((size_t)snprintf(dir + used, sizeof dir - used, "/%s", arch) >= sizeof dir - used)
        return 0;
    if (make_dirs(dir) != 0)
        return 0;
    return (size_t)snprintf(buf, size, "%s/%.64s-%016llx.cubin", dir, kernel_name,
                            (unsigned long long)key) < size;
}

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
    /* publish: the entry (and its page) is complete before the count says so */
    atomic_store_explicit(&g_num_kernels, index + 1, memory_order_release);
    return index;
}

/* ---- builds ------------------------------------------------------------------------- */

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
        if (!strchr("pqif", arg_format[i]))
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
    current_version(version, sizeof version);
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
        char path[4096];
        void *data = NULL;
        size_t len = 0;
        int have_path = entry_path(arch, kernel_name, key, path, sizeof path);
        if (have_path && tileops_cache_load(path, &data, &len) == TILEOPS_OK) {
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
            if (have_path)
                (void)tileops_cache_store(path, data, len); /* best effort */
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

/* runtime/disk_cache.c: compiled binaries on disk - the entry format, the cache folder,
 * and storing and loading an entry.
 *
 * A disk entry is a 32-byte header (magic "TOPSCUB1", format version, payload length,
 * payload hash) and the payload; it is written to <path>.tmp.<pid>.<n> and renamed over
 * the path, so a reader sees an old entry, a new entry or none. No fsync: an entry cut
 * short by a crash is caught by the length and hash checks, counted in disk_rejects and
 * rebuilt. The disk cache is an optimisation: when its folder cannot be made or written,
 * builds work from memory and NVRTC. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* O_CLOEXEC, strerror_r; the build defines it too */
#endif
#include "runtime/disk_cache.h"
#include "runtime/loader.h"

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

void tileops_disk_cache_version(char *buf, size_t size) {
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

int tileops_disk_cache_path(const char *arch, const char *kernel_name, uint64_t key, char *buf,
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

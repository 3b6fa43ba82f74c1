/* runtime/disk_cache.c: compiled binaries on disk - the entry format, the cache folder,
 * and storing and loading an entry. The cache trusts nothing it did not write itself:
 *
 *  - The folder is private: made 0700 (with every component made here), opened without
 *    following a symbolic link (the last component, every component made here, and for
 *    the default folder $XDG_CACHE_HOME/tileops/<version> (~/.cache/tileops/<version>
 *    without it) the two of tileops), and used only
 *    when it is a folder owned by this user that group and others cannot write. Else the
 *    cache is off for the process and one note (tileops/notes.h) says which folder and
 *    why. The arch subfolder is opened from the folder's descriptor the same way.
 *  - Entries are bound to their key and to the cache: the header holds the SHA-256 of
 *    the full key and an HMAC-SHA256 over the header and the payload made with the
 *    cache's secret (32 random bytes in <folder>/.tileops-secret, a regular 0600 file of
 *    this user, created once, never followed through a link). A forged entry, an entry
 *    copied under another key's name and a corrupted one all fail the MAC.
 *  - Reading never blocks and never trusts a size: entries are opened O_NOFOLLOW |
 *    O_NONBLOCK (a FIFO returns at once), fstat'ed (only regular files of this user are
 *    read), and a file above TILEOPS_CACHE_ENTRY_MAX is refused before anything is
 *    allocated.
 *  - Writing goes to a temp file created O_EXCL | O_NOFOLLOW, mode 0600, in the same
 *    folder, renamed over the entry: a reader sees an old entry, a new one or none. No
 *    fsync: an entry cut short by a crash fails its checks, is counted in disk_rejects
 *    and rebuilt.
 * The disk cache is an optimisation: when it is off, builds work from memory and NVRTC. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* O_CLOEXEC, O_NOFOLLOW, strerror_r; the build defines it too */
#endif
#include "runtime/disk_cache.h"
#include "runtime/sha256.h"
#include "runtime/loader.h"
#include "tileops/notes.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

#define ENTRY_MAGIC "TOPSCUB2"
#define ENTRY_FORMAT_VERSION 2u
#define ENTRY_HEADER_SIZE 88u
#define ENTRY_MAC_OFFSET 56u
#define SECRET_BYTES 32u
/* header layout, little-endian: magic[8] | u32 format version | u32 header size |
 * u64 payload length | SHA-256 of the key [32] | HMAC-SHA256(secret, header[0..56) ||
 * payload) [32] */

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

static void entry_mac(const unsigned char secret[SECRET_BYTES], const unsigned char *header,
                      const void *payload, size_t len, unsigned char mac[32]) {
    tileops_hmac_piece_t pieces[2] = {{header, ENTRY_MAC_OFFSET}, {payload, len}};
    tileops_hmac_sha256(secret, SECRET_BYTES, pieces, 2, mac);
}

/* Writes the entry `name` in folder dirfd: a temp file (O_EXCL | O_NOFOLLOW, 0600) renamed
 * over the name. `shown` is the folder as messages name it. */
static tileops_status_t entry_store(int dirfd, const char *shown, const char *name,
                                    const unsigned char secret[SECRET_BYTES], const void *key,
                                    size_t key_len, const void *data, size_t len) {
    char err[128], tmp[512];
    if (len > TILEOPS_CACHE_ENTRY_MAX)
        return tileops_fail(TILEOPS_ERR_CACHE,
                            "cache: %zu bytes for %s/%s is above the %zu-byte entry limit", len,
                            shown, name, TILEOPS_CACHE_ENTRY_MAX);
    unsigned n = atomic_fetch_add_explicit(&g_tmp_counter, 1u, memory_order_relaxed);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", name, (long)getpid(), n) >= sizeof tmp)
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: entry name %.64s... is too long", name);

    unsigned char header[ENTRY_HEADER_SIZE];
    memcpy(header, ENTRY_MAGIC, 8);
    put_u32(header + 8, ENTRY_FORMAT_VERSION);
    put_u32(header + 12, ENTRY_HEADER_SIZE);
    put_u64(header + 16, (uint64_t)len);
    tileops_sha256(key, key_len, header + 24);
    entry_mac(secret, header, data, len, header + ENTRY_MAC_OFFSET);

    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot create %s/%s: %s", shown, tmp,
                            errtext(e, err, sizeof err));
    }
    int failed = write_all(fd, header, sizeof header) != 0 || write_all(fd, data, len) != 0;
    int e = errno;
    if (close(fd) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    if (failed) {
        unlinkat(dirfd, tmp, 0);
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot write %s/%s: %s", shown, tmp,
                            errtext(e, err, sizeof err));
    }
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        e = errno;
        unlinkat(dirfd, tmp, 0);
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot rename %s/%s to %s: %s", shown, tmp,
                            name, errtext(e, err, sizeof err));
    }
    return TILEOPS_OK;
}

static tileops_status_t reject(const char *shown, const char *name, const char *why) {
    tileops_cuda_stat_add(TILEOPS_STAT_DISK_REJECTS, 1);
    return tileops_fail(TILEOPS_ERR_CACHE, "cache: refused entry %s/%s: %s", shown, name, why);
}

/* Reads and verifies the entry `name` of folder dirfd. */
static tileops_status_t entry_load(int dirfd, const char *shown, const char *name,
                                   const unsigned char secret[SECRET_BYTES], const void *key,
                                   size_t key_len, void **data, size_t *len) {
    char err[128], why[160];
    unsigned char header[ENTRY_HEADER_SIZE], want[32];
    struct stat sb;

    /* O_NONBLOCK: a FIFO (or a device) opens at once instead of waiting for a writer */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return tileops_fail(TILEOPS_ERR_CACHE, "cache: no entry %s/%s", shown, name);
        if (e == ELOOP)
            return reject(shown, name, "a symbolic link (not followed)");
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: cannot open %s/%s: %s", shown, name,
                            errtext(e, err, sizeof err));
    }
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return reject(shown, name, "cannot be fstat'ed");
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return reject(shown, name, "not a regular file");
    }
    if (sb.st_uid != geteuid()) {
        close(fd);
        snprintf(why, sizeof why, "owned by uid %u, not by this user (uid %u)",
                 (unsigned)sb.st_uid, (unsigned)geteuid());
        return reject(shown, name, why);
    }
    unsigned long long file_size = (unsigned long long)sb.st_size;
    if (sb.st_size < 0 || file_size < ENTRY_HEADER_SIZE ||
        file_size - ENTRY_HEADER_SIZE > TILEOPS_CACHE_ENTRY_MAX) {
        close(fd);
        snprintf(why, sizeof why, "%lld bytes, outside [%u, %zu]", (long long)sb.st_size,
                 ENTRY_HEADER_SIZE, TILEOPS_CACHE_ENTRY_MAX + ENTRY_HEADER_SIZE);
        return reject(shown, name, why);
    }
    ssize_t got = read_all(fd, header, sizeof header);
    if (got != (ssize_t)sizeof header) {
        close(fd);
        return reject(shown, name, "the header could not be read");
    }
    if (memcmp(header, ENTRY_MAGIC, 8) != 0) {
        close(fd);
        return reject(shown, name, "bad magic");
    }
    uint32_t version = get_u32(header + 8), header_size = get_u32(header + 12);
    if (version != ENTRY_FORMAT_VERSION || header_size != ENTRY_HEADER_SIZE) {
        close(fd);
        snprintf(why, sizeof why, "unknown format version %u (this build reads %u)", version,
                 ENTRY_FORMAT_VERSION);
        return reject(shown, name, why);
    }
    uint64_t payload_len = get_u64(header + 16);
    if (payload_len != file_size - ENTRY_HEADER_SIZE) {
        close(fd);
        snprintf(why, sizeof why, "payload length %llu does not match the file size %llu",
                 (unsigned long long)payload_len, file_size);
        return reject(shown, name, why);
    }
    tileops_sha256(key, key_len, want);
    if (!tileops_equal_ct(want, header + 24, 32)) {
        close(fd);
        return reject(shown, name, "made for another key");
    }
    void *buf = malloc(payload_len ? (size_t)payload_len : 1);
    if (!buf) {
        close(fd);
        return tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "cache: out of memory reading %s/%s",
                            shown, name);
    }
    got = read_all(fd, buf, (size_t)payload_len);
    close(fd);
    if (got != (ssize_t)payload_len) {
        free(buf);
        return reject(shown, name, "payload cut short");
    }
    entry_mac(secret, header, buf, (size_t)payload_len, want);
    if (!tileops_equal_ct(want, header + ENTRY_MAC_OFFSET, 32)) {
        free(buf);
        return reject(shown, name, "MAC mismatch (corrupt, or not written by this cache)");
    }
    *data = buf;
    *len = (size_t)payload_len;
    return TILEOPS_OK;
}

/* ---- folders and the secret --------------------------------------------------------- */

int tileops_disk_cache_dir_ok(const struct stat *sb, uid_t uid, char *why, size_t size) {
    if (S_ISLNK(sb->st_mode))
        snprintf(why, size, "is a symbolic link (not followed)");
    else if (!S_ISDIR(sb->st_mode))
        snprintf(why, size, "is not a folder");
    else if (sb->st_uid != uid)
        snprintf(why, size, "is owned by uid %u, not by this user (uid %u)", (unsigned)sb->st_uid,
                 (unsigned)uid);
    else if (sb->st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, size,
                 "is writable by group or others (mode %04o): anyone who can write there "
                 "could plant kernels; make it private (chmod 700)",
                 (unsigned)(sb->st_mode & 07777));
    else
        return 1;
    return 0;
}

int tileops_disk_cache_secret_ok(const struct stat *sb, uid_t uid, char *why, size_t size) {
    if (!S_ISREG(sb->st_mode))
        snprintf(why, size, "is not a regular file");
    else if (sb->st_uid != uid)
        snprintf(why, size, "is owned by uid %u, not by this user (uid %u)", (unsigned)sb->st_uid,
                 (unsigned)uid);
    else if ((sb->st_mode & 07777) != 0600)
        snprintf(why, size, "has mode %04o, not 0600", (unsigned)(sb->st_mode & 07777));
    else if (sb->st_size != (off_t)SECRET_BYTES)
        snprintf(why, size, "is %lld bytes, not %u", (long long)sb->st_size, SECRET_BYTES);
    else
        return 1;
    return 0;
}

/* Opens the folder `name` under parent (AT_FDCWD: name is a path), made 0700 when missing
 * and `create`. strict: not through a symbolic link, and it must pass the rules. A
 * component made here is always strict. Returns the descriptor, or -1 with why set. */
static int open_dir_at(int parent, const char *name, const char *shown, int strict, int create,
                       char *why, size_t size) {
    char err[128];
    int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    int fd = openat(parent, name, flags | (strict ? O_NOFOLLOW : 0));
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(parent, name, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            snprintf(why, size, "%.700s cannot be made: %s", shown, errtext(e, err, sizeof err));
            return -1;
        }
        strict = 1;
        fd = openat(parent, name, flags | O_NOFOLLOW);
    }
    if (fd < 0) {
        int e = errno;
        struct stat sb;
        if ((e == ELOOP || e == ENOTDIR) && fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
            char rule[256];
            tileops_disk_cache_dir_ok(&sb, geteuid(), rule, sizeof rule);
            snprintf(why, size, "%.700s %.250s", shown, rule);
        } else {
            snprintf(why, size, "%.700s cannot be opened: %s", shown, errtext(e, err, sizeof err));
        }
        return -1;
    }
    if (strict) {
        struct stat sb;
        char rule[256];
        if (fstat(fd, &sb) != 0 || !tileops_disk_cache_dir_ok(&sb, geteuid(), rule, sizeof rule)) {
            if (fstat(fd, &sb) != 0)
                snprintf(rule, sizeof rule, "cannot be fstat'ed");
            snprintf(why, size, "%.700s %.250s", shown, rule);
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* Opens `path` as the cache folder, walking it one component at a time: each missing one
 * made 0700, and the last `strict_last` components plus every one made here opened
 * strictly (open_dir_at). The components above (say /home/me) are the system's and may be
 * links. Returns the descriptor or -1 with why set. */
static int open_cache_folder(const char *path, int strict_last, int create, char *why,
                             size_t size) {
    char buf[4096];
    if (!path[0] || (size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) {
        snprintf(why, size, "folder name \"%.64s\" is empty or too long", path);
        return -1;
    }
    int total = 0;
    for (char *p = buf; *p; p++)
        if (*p != '/' && (p == buf || p[-1] == '/'))
            total++;
    int fd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, size, "%s cannot be opened", buf[0] == '/' ? "/" : ".");
        return -1;
    }
    int index = 0;
    char *p = buf;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = p;
        while (*end && *end != '/')
            end++;
        char saved = *end;
        *end = '\0';
        char comp[4096];
        snprintf(comp, sizeof comp, "%s", p);
        char shown[4096];
        snprintf(shown, sizeof shown, "%s", buf); /* the path up to this component */
        *end = saved;
        index++;
        int next = open_dir_at(fd, comp, shown, index > total - strict_last, create, why, size);
        close(fd);
        if (next < 0)
            return -1;
        fd = next;
        p = end;
    }
    if (index == 0) { /* "/" itself: strict too */
        struct stat sb;
        char rule[256];
        if (fstat(fd, &sb) != 0 || !tileops_disk_cache_dir_ok(&sb, geteuid(), rule, sizeof rule)) {
            snprintf(why, size, "/ %s", rule);
            close(fd);
            return -1;
        }
    }
    return fd;
}

static int random_bytes(unsigned char *out, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    if (got == n)
        return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t r = read_all(fd, out, n);
    close(fd);
    return r == (ssize_t)n ? 0 : -1;
}

/* Reads the folder's secret; when it is missing and `create`, makes one (a temp file
 * O_CREAT | O_EXCL | O_NOFOLLOW 0600 linked into place, so no reader ever sees it half
 * written, and two processes agree on the first). 1: got it; 0: no secret (and not
 * create); -1: refused, why set. */
static int folder_secret(int dirfd, const char *shown, int create,
                         unsigned char secret[SECRET_BYTES], char *why, size_t size) {
    char err[128], rule[256];
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = openat(dirfd, TILEOPS_CACHE_SECRET_NAME,
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
            struct stat sb;
            int ok = fstat(fd, &sb) == 0 && tileops_disk_cache_secret_ok(&sb, geteuid(), rule,
                                                                         sizeof rule);
            if (ok && read_all(fd, secret, SECRET_BYTES) != (ssize_t)SECRET_BYTES) {
                snprintf(rule, sizeof rule, "cannot be read");
                ok = 0;
            }
            close(fd);
            if (ok)
                return 1;
            snprintf(why, size, "the secret %.700s/%s %.250s", shown, TILEOPS_CACHE_SECRET_NAME, rule);
            return -1;
        }
        int e = errno;
        if (e == ELOOP) {
            snprintf(why, size, "the secret %.700s/%s is a symbolic link (not followed)", shown,
                     TILEOPS_CACHE_SECRET_NAME);
            return -1;
        }
        if (e != ENOENT) {
            snprintf(why, size, "the secret %.700s/%s cannot be opened: %s", shown,
                     TILEOPS_CACHE_SECRET_NAME, errtext(e, err, sizeof err));
            return -1;
        }
        if (!create)
            return 0;
        unsigned char fresh[SECRET_BYTES];
        if (random_bytes(fresh, sizeof fresh) != 0) {
            snprintf(why, size, "no random bytes for the secret (getrandom and /dev/urandom failed)");
            return -1;
        }
        char tmp[128];
        unsigned n = atomic_fetch_add_explicit(&g_tmp_counter, 1u, memory_order_relaxed);
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", TILEOPS_CACHE_SECRET_NAME, (long)getpid(), n);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            e = errno;
            snprintf(why, size, "the secret cannot be created in %.700s: %s", shown,
                     errtext(e, err, sizeof err));
            return -1;
        }
        /* the umask may have taken bits away: the rule is exactly 0600 */
        int failed = fchmod(fd, 0600) != 0 || write_all(fd, fresh, sizeof fresh) != 0;
        e = errno;
        if (close(fd) != 0 && !failed) {
            failed = 1;
            e = errno;
        }
        int linked = !failed && linkat(dirfd, tmp, dirfd, TILEOPS_CACHE_SECRET_NAME, 0) == 0;
        int link_errno = errno;
        unlinkat(dirfd, tmp, 0);
        if (failed) {
            snprintf(why, size, "the secret cannot be written in %.700s: %s", shown,
                     errtext(e, err, sizeof err));
            return -1;
        }
        if (linked) {
            memcpy(secret, fresh, sizeof fresh);
            memset(fresh, 0, sizeof fresh);
            return 1;
        }
        if (link_errno != EEXIST) {
            snprintf(why, size, "the secret cannot be put in place in %.700s: %s", shown,
                     errtext(link_errno, err, sizeof err));
            return -1;
        }
        /* another process made it first: read theirs */
    }
    snprintf(why, size, "the secret in %.700s keeps changing", shown);
    return -1;
}

/* ---- the public path-based store and load -------------------------------------------- */

/* Splits path into its folder (opened by the rules, its secret read or made) and its
 * name. Returns the folder's descriptor, or -1 with the failure recorded. */
static int open_entry_folder(const char *path, const char **name, char *dir, size_t dir_size,
                             int create_secret, unsigned char secret[SECRET_BYTES],
                             tileops_status_t *st) {
    char why[1024];
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!**name || !strcmp(*name, ".") || !strcmp(*name, "..")) {
        *st = tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "cache: \"%.200s\" names no file", path);
        return -1;
    }
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n >= dir_size) {
        *st = tileops_fail(TILEOPS_ERR_CACHE, "cache: path too long");
        return -1;
    }
    if (slash) {
        memcpy(dir, path, n);
        dir[n] = '\0';
        if (n == 0)
            snprintf(dir, dir_size, "/");
    } else {
        snprintf(dir, dir_size, ".");
    }
    int fd = open_cache_folder(dir, 1, 0, why, sizeof why);
    if (fd < 0) {
        *st = tileops_fail(TILEOPS_ERR_CACHE, "cache: refusing the folder: %s", why);
        return -1;
    }
    int got = folder_secret(fd, dir, create_secret, secret, why, sizeof why);
    if (got <= 0) {
        close(fd);
        *st = got == 0 ? tileops_fail(TILEOPS_ERR_CACHE, "cache: no entry %s (the folder has no "
                                                         "cache secret)", path)
                       : tileops_fail(TILEOPS_ERR_CACHE, "cache: refusing the folder: %s", why);
        return -1;
    }
    return fd;
}

tileops_status_t tileops_cache_store(const char *path, const void *data, size_t len) {
    char dir[4096];
    const char *name;
    unsigned char secret[SECRET_BYTES];
    tileops_status_t st = TILEOPS_OK;
    if (!path || !path[0] || (!data && len > 0))
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cache_store: bad arguments");
    int fd = open_entry_folder(path, &name, dir, sizeof dir, 1, secret, &st);
    if (fd < 0)
        return st;
    st = entry_store(fd, dir, name, secret, name, strlen(name), data, len);
    close(fd);
    memset(secret, 0, sizeof secret);
    return st;
}

tileops_status_t tileops_cache_load(const char *path, void **data, size_t *len) {
    char dir[4096];
    const char *name;
    unsigned char secret[SECRET_BYTES];
    tileops_status_t st = TILEOPS_OK;
    if (!path || !path[0] || !data || !len)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "tileops_cache_load: bad arguments");
    *data = NULL;
    *len = 0;
    int fd = open_entry_folder(path, &name, dir, sizeof dir, 0, secret, &st);
    if (fd < 0)
        return st;
    st = entry_load(fd, dir, name, secret, name, strlen(name), data, len);
    close(fd);
    memset(secret, 0, sizeof secret);
    return st;
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

/* The base folder into buf and how many of its last components are the cache's own
 * (opened strictly); 0 when the disk cache is off, with why set. */
static int base_cache_dir(char *buf, size_t size, int *strict_last, char *why, size_t why_size) {
    int ok = 0;
    *strict_last = 1;
    pthread_mutex_lock(&g_config_mutex);
    if (g_dir_explicit) {
        ok = g_dir && g_dir[0] && (size_t)snprintf(buf, size, "%s", g_dir) < size;
        if (!ok)
            snprintf(why, why_size, "disabled (the cache folder was set to \"\")");
    } else {
        const char *env = getenv("TILEOPS_CACHE_DIR");
        if (env) {
            ok = env[0] && (size_t)snprintf(buf, size, "%s", env) < size;
            if (!ok)
                snprintf(why, why_size, "disabled (TILEOPS_CACHE_DIR is %s)",
                         env[0] ? "too long" : "empty");
        } else {
            /* $XDG_CACHE_HOME/tileops/<version>, or ~/.cache/tileops/<version>; the XDG
             * base directory rules ignore a relative $XDG_CACHE_HOME */
            const char *xdg = getenv("XDG_CACHE_HOME");
            const char *home = getenv("HOME");
            const char *base = NULL, *sub = "";
            if (xdg && xdg[0] == '/') {
                base = xdg;
            } else if (home && home[0]) {
                base = home;
                sub = "/.cache";
            }
            if (base) {
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
                ok = (size_t)snprintf(buf, size, "%s%s/tileops/%s", base, sub, v) < size;
                *strict_last = 2; /* tileops/<version> are ours */
                if (!ok)
                    snprintf(why, why_size, "off (%s is too long)",
                             base == xdg ? "$XDG_CACHE_HOME" : "$HOME");
            } else {
                snprintf(why, why_size,
                         "off (no TILEOPS_CACHE_DIR, no absolute XDG_CACHE_HOME and no $HOME)");
            }
        }
    }
    pthread_mutex_unlock(&g_config_mutex);
    return ok;
}

/* The cache folder of the current setting, opened and checked once per setting: a
 * refused folder stays refused for the process (one note), a good one stays open. */
static pthread_mutex_t g_root_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int resolved;          /* path/on/reason describe the current setting */
    char path[4096];       /* the folder ("" when the cache is disabled) */
    int fd;                /* its descriptor when on */
    int on;
    unsigned char secret[SECRET_BYTES];
    char reason[1024];     /* why it is off */
} g_root = {0, "", -1, 0, {0}, ""};

/* Brings g_root up to date (g_root_mutex held). */
static void resolve_root(void) {
    char path[4096], why[1024];
    int strict_last;
    why[0] = '\0';
    int have = base_cache_dir(path, sizeof path, &strict_last, why, sizeof why);
    if (!have)
        path[0] = '\0';
    if (g_root.resolved && strcmp(g_root.path, path) == 0)
        return;
    if (g_root.fd >= 0)
        close(g_root.fd);
    g_root.fd = -1;
    g_root.on = 0;
    g_root.resolved = 1;
    memset(g_root.secret, 0, sizeof g_root.secret);
    snprintf(g_root.path, sizeof g_root.path, "%s", path);
    if (!have) {
        snprintf(g_root.reason, sizeof g_root.reason, "%s", why);
        return;
    }
    int fd = open_cache_folder(path, strict_last, 1, why, sizeof why);
    if (fd >= 0 && folder_secret(fd, path, 1, g_root.secret, why, sizeof why) != 1) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        snprintf(g_root.reason, sizeof g_root.reason, "refused: %.1000s", why);
        tileops_note("tileops: the kernel disk cache %s is off for this process: %s. Kernels "
                     "are compiled again in each process.",
                     path, why);
        return;
    }
    g_root.fd = fd;
    g_root.on = 1;
    g_root.reason[0] = '\0';
}

int tileops_cuda_cache_state(char *dir, size_t dir_size, char *reason, size_t reason_size) {
    pthread_mutex_lock(&g_root_mutex);
    resolve_root();
    int on = g_root.on;
    if (dir && dir_size)
        snprintf(dir, dir_size, "%s", g_root.path);
    if (reason && reason_size)
        snprintf(reason, reason_size, "%s", g_root.reason);
    pthread_mutex_unlock(&g_root_mutex);
    return on;
}

/* The arch folder of the current cache, opened strictly (made 0700 when missing): a
 * descriptor and the secret, or -1 (the cache is off, or the arch folder was refused,
 * which turns it off). */
static int open_arch_folder(const char *arch, unsigned char secret[SECRET_BYTES], char *shown,
                            size_t shown_size) {
    char why[1024];
    int fd = -1;
    pthread_mutex_lock(&g_root_mutex);
    resolve_root();
    if (g_root.on) {
        snprintf(shown, shown_size, "%s/%s", g_root.path, arch);
        fd = open_dir_at(g_root.fd, arch, shown, 1, 1, why, sizeof why);
        if (fd >= 0) {
            memcpy(secret, g_root.secret, SECRET_BYTES);
        } else {
            close(g_root.fd);
            g_root.fd = -1;
            g_root.on = 0;
            memset(g_root.secret, 0, sizeof g_root.secret);
            snprintf(g_root.reason, sizeof g_root.reason, "refused: %.1000s", why);
            tileops_note("tileops: the kernel disk cache %s is off for this process: %s. "
                         "Kernels are compiled again in each process.",
                         g_root.path, why);
        }
    }
    pthread_mutex_unlock(&g_root_mutex);
    return fd;
}

static int entry_name(const char *arch, const char *kernel_name, uint64_t key, char *buf,
                      size_t size) {
    if (!arch || !arch[0] || strchr(arch, '/') || !strcmp(arch, ".") || !strcmp(arch, "..") ||
        !kernel_name || strchr(kernel_name, '/'))
        return 0;
    return (size_t)snprintf(buf, size, "%.64s-%016llx.cubin", kernel_name,
                            (unsigned long long)key) < size;
}

tileops_status_t tileops_disk_cache_get(const char *arch, const char *kernel_name, uint64_t key,
                                        const unsigned char full_key[32], void **data,
                                        size_t *len) {
    char name[128], shown[4200];
    unsigned char secret[SECRET_BYTES];
    *data = NULL;
    *len = 0;
    if (!entry_name(arch, kernel_name, key, name, sizeof name))
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: no entry name for %.64s", kernel_name);
    int fd = open_arch_folder(arch, secret, shown, sizeof shown);
    if (fd < 0)
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: the disk cache is off");
    tileops_status_t st = entry_load(fd, shown, name, secret, full_key, 32, data, len);
    close(fd);
    memset(secret, 0, sizeof secret);
    return st;
}

tileops_status_t tileops_disk_cache_put(const char *arch, const char *kernel_name, uint64_t key,
                                        const unsigned char full_key[32], const void *data,
                                        size_t len) {
    char name[128], shown[4200];
    unsigned char secret[SECRET_BYTES];
    if (!entry_name(arch, kernel_name, key, name, sizeof name))
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: no entry name for %.64s", kernel_name);
    int fd = open_arch_folder(arch, secret, shown, sizeof shown);
    if (fd < 0)
        return tileops_fail(TILEOPS_ERR_CACHE, "cache: the disk cache is off");
    tileops_status_t st = entry_store(fd, shown, name, secret, full_key, 32, data, len);
    close(fd);
    memset(secret, 0, sizeof secret);
    return st;
}

/* tests/c/test_runtime_cache.c: the CUDA runtime's pieces that need no GPU.
 *
 * FNV-1a hashing (known values, chaining, sensitivity); the disk cache entry format
 * (round trip, and truncated / corrupted / wrong-magic / empty / missing entries each
 * refused with TILEOPS_ERR_CACHE, corrupt ones counted in disk_rejects, missing ones not;
 * no temp file left behind, also with threads storing the same entry at once); the NVRTC
 * option rules; and, on a machine without libcuda, that loading fails cleanly with
 * TILEOPS_ERR_LIBRARY naming libcuda.so.1 (the same answer every time, from any thread)
 * and that build / launch / queries validate their arguments and fail without crashing.
 * Ends with the line "N passed, M failed"; exit status 1 on any failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* mkdtemp, pwrite, truncate; the Makefile defines it too */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/loader.h"
#include "runtime/nvrtc.h"
#include "runtime/modules.h"
#include "tileops/runtime.h"
#include "tileops/status.h"
#include "check.h"

static char g_dir[256];

static void path_in_dir(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", g_dir, name);
}

static int64_t rejects(void) {
    tileops_cuda_stats_t s;
    tileops_cuda_get_stats(&s);
    return s.disk_rejects;
}

static int count_temp_files(void) {
    int n = 0;
    DIR *d = opendir(g_dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp."))
            n++;
    closedir(d);
    return n;
}

static void remove_dir(void) {
    DIR *d = opendir(g_dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(g_dir);
}

static long file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* Rewrites one byte of a file. */
static int poke(const char *path, long offset, unsigned char value) {
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    int ok = pwrite(fd, &value, 1, offset) == 1;
    close(fd);
    return ok ? 0 : -1;
}

static unsigned char peek(const char *path, long offset) {
    unsigned char v = 0;
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        if (pread(fd, &v, 1, offset) != 1)
            v = 0;
        close(fd);
    }
    return v;
}

/* ---- hashing ------------------------------------------------------------------------ */

static void test_hash(void) {
    /* FNV-1a 64 reference values */
    CHECK(tileops_hash64("", 0, 0) == 0xcbf29ce484222325ull, "hash of nothing");
    CHECK(tileops_hash64("a", 1, 0) == 0xaf63dc4c8601ec8cull, "hash of \"a\": %016llx",
          (unsigned long long)tileops_hash64("a", 1, 0));
    CHECK(tileops_hash64("foobar", 6, 0) == 0x85944171f73967e8ull, "hash of \"foobar\": %016llx",
          (unsigned long long)tileops_hash64("foobar", 6, 0));
    /* chaining: hash(a) then b from that seed == hash(ab) */
    uint64_t h1 = tileops_hash64("foo", 3, 0);
    CHECK(tileops_hash64("bar", 3, h1) == tileops_hash64("foobar", 6, 0), "chaining");
    /* stable across calls; sensitive to every byte and bit */
    char buf[4096];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i * 131 + 7);
    uint64_t base = tileops_hash64(buf, sizeof buf, 0);
    CHECK(base == tileops_hash64(buf, sizeof buf, 0), "stable");
    int all_differ = 1;
    for (size_t i = 0; i < sizeof buf; i += 97) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (char)(1 << bit);
            if (tileops_hash64(buf, sizeof buf, 0) == base)
                all_differ = 0;
            buf[i] ^= (char)(1 << bit);
        }
    }
    CHECK(all_differ, "a flipped bit changes the hash");
    CHECK(tileops_hash64(buf, sizeof buf - 1, 0) != base, "length changes the hash");
    CHECK(tileops_hash64(buf, sizeof buf, 12345) != base, "the seed changes the hash");
}

/* ---- disk entries ------------------------------------------------------------------- */

static void test_store_load(void) {
    char path[512];
    void *data = NULL;
    size_t len = 0;
    path_in_dir(path, sizeof path, "entry.cubin");

    /* round trip, 1 MiB of pseudo-random bytes */
    size_t n = (size_t)1 << 20;
    unsigned char *payload = malloc(n);
    uint32_t s = 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        payload[i] = (unsigned char)(s >> 24);
    }
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store: %s", tileops_last_error());
    CHECK(file_size(path) == (long)n + 88, "entry size %ld", file_size(path));
    CHECK(count_temp_files() == 0, "no temp file left after store");
    int64_t r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_OK, "load: %s", tileops_last_error());
    CHECK(data && len == n && memcmp(data, payload, n) == 0, "round trip");
    free(data);
    data = NULL;
    CHECK(rejects() == r0, "a good entry is no reject");

    /* overwrite with a smaller payload: rename replaces it */
    CHECK(tileops_cache_store(path, "hello", 5) == TILEOPS_OK, "overwrite");
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_OK && len == 5 &&
              memcmp(data, "hello", 5) == 0,
          "overwritten entry");
    free(data);
    data = NULL;

    /* an empty payload is a valid entry */
    char empty_path[512];
    path_in_dir(empty_path, sizeof empty_path, "empty-payload.cubin");
    CHECK(tileops_cache_store(empty_path, NULL, 0) == TILEOPS_OK, "store empty payload");
    CHECK(tileops_cache_load(empty_path, &data, &len) == TILEOPS_OK && len == 0,
          "load empty payload");
    free(data);
    data = NULL;

    /* missing: TILEOPS_ERR_CACHE, not a reject */
    char missing[512];
    path_in_dir(missing, sizeof missing, "missing.cubin");
    r0 = rejects();
    CHECK(tileops_cache_load(missing, &data, &len) == TILEOPS_ERR_CACHE && data == NULL && len == 0,
          "missing entry");
    CHECK(rejects() == r0, "a missing entry is no reject");

    /* truncated payload */
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store again");
    CHECK(truncate(path, (off_t)(n + 32 - 1)) == 0, "truncate");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE && data == NULL,
          "truncated entry refused");
    CHECK(rejects() == r0 + 1, "truncated entry counted");
    CHECK(strstr(tileops_last_error(), "entry.cubin") != NULL, "message names the entry: %s",
          tileops_last_error());

    /* truncated inside the header */
    CHECK(truncate(path, 20) == 0, "truncate to 20 bytes");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE, "header cut short refused");
    CHECK(rejects() == r0 + 1, "header cut short counted");

    /* one flipped payload byte */
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store again");
    CHECK(poke(path, 32 + 4321, (unsigned char)(peek(path, 32 + 4321) ^ 0x10)) == 0, "flip");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE && data == NULL,
          "flipped payload byte refused");
    CHECK(rejects() == r0 + 1, "flipped byte counted");

    /* a flipped byte in the stored hash */
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store again");
    CHECK(poke(path, 24, (unsigned char)(peek(path, 24) ^ 0x01)) == 0, "flip hash");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE, "bad stored hash refused");
    CHECK(rejects() == r0 + 1, "bad stored hash counted");

    /* wrong magic */
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store again");
    CHECK(poke(path, 0, 'X') == 0, "magic");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE, "wrong magic refused");
    CHECK(rejects() == r0 + 1, "wrong magic counted");

    /* unknown format version */
    CHECK(tileops_cache_store(path, payload, n) == TILEOPS_OK, "store again");
    CHECK(poke(path, 8, 99) == 0, "version");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE, "unknown version refused");
    CHECK(rejects() == r0 + 1, "unknown version counted");

    /* zero-length file */
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0, "open for truncation");
    if (fd >= 0)
        close(fd);
    CHECK(file_size(path) == 0, "zero-length file");
    r0 = rejects();
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE && data == NULL,
          "zero-length entry refused");
    CHECK(rejects() == r0 + 1, "zero-length entry counted");

    /* extra bytes after the payload */
    CHECK(tileops_cache_store(path, "abc", 3) == TILEOPS_OK, "store small");
    fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0 && write(fd, "z", 1) == 1, "append");
    if (fd >= 0)
        close(fd);
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_ERR_CACHE, "trailing bytes refused");

    /* a folder that does not exist: an error, nothing left behind */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/no/such/dir/entry.cubin", g_dir);
    CHECK(tileops_cache_store(bad, "abc", 3) == TILEOPS_ERR_CACHE, "store into a missing folder");
    /* argument checks */
    CHECK(tileops_cache_store(NULL, "abc", 3) == TILEOPS_ERR_INVALID_ARGUMENT, "store NULL path");
    CHECK(tileops_cache_store(path, NULL, 3) == TILEOPS_ERR_INVALID_ARGUMENT, "store NULL data");
    CHECK(tileops_cache_load(path, NULL, &len) == TILEOPS_ERR_INVALID_ARGUMENT, "load NULL out");
    CHECK(count_temp_files() == 0, "no temp files left (%d)", count_temp_files());
    free(payload);
}

typedef struct store_job {
    const char *path;
    int id, ok;
} store_job_t;

static void *store_thread(void *arg) {
    store_job_t *j = arg;
    char payload[3000];
    memset(payload, 'a' + j->id, sizeof payload);
    j->ok = 1;
    for (int i = 0; i < 20; i++)
        if (tileops_cache_store(j->path, payload, sizeof payload) != TILEOPS_OK)
            j->ok = 0;
    return NULL;
}

static void test_concurrent_store(void) {
    char path[512];
    path_in_dir(path, sizeof path, "shared.cubin");
    pthread_t t[8];
    store_job_t jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i].path = path;
        jobs[i].id = i;
        pthread_create(&t[i], NULL, store_thread, &jobs[i]);
    }
    int all_ok = 1;
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        all_ok &= jobs[i].ok;
    }
    CHECK(all_ok, "concurrent stores succeed");
    void *data = NULL;
    size_t len = 0;
    CHECK(tileops_cache_load(path, &data, &len) == TILEOPS_OK && len == 3000, "entry intact");
    int uniform = data != NULL;
    for (size_t i = 1; data && i < len; i++)
        if (((char *)data)[i] != ((char *)data)[0])
            uniform = 0;
    CHECK(uniform, "one writer's payload, whole");
    free(data);
    CHECK(count_temp_files() == 0, "no temp files left by concurrent stores");
}

/* ---- NVRTC options -------------------------------------------------------------------- */

static void test_nvrtc_options(void) {
    const char *o[TILEOPS_NVRTC_MAX_FIXED_OPTIONS];
    char arch[48], name[16];
    int n = tileops_nvrtc_fixed_options(9, 0, 13, 0, arch, sizeof arch, o);
    CHECK(n == 3 && !strcmp(o[0], "--gpu-architecture=sm_90a") && !strcmp(o[1], "-default-device") &&
              !strcmp(o[2], "--minimal"),
          "Hopper with NVRTC 13.0: %d options, %s", n, o[0]);
    n = tileops_nvrtc_fixed_options(8, 6, 12, 3, arch, sizeof arch, o);
    CHECK(n == 2 && !strcmp(o[0], "--gpu-architecture=sm_86"), "sm_86 with NVRTC 12.3: %d, %s", n,
          o[0]);
    n = tileops_nvrtc_fixed_options(8, 0, 12, 4, arch, sizeof arch, o);
    CHECK(n == 3 && !strcmp(o[2], "--minimal"), "--minimal from NVRTC 12.4");
    for (int i = 0; i < n; i++)
        CHECK(!strstr(o[i], "fast_math") && !strstr(o[i], "lineinfo") && !strstr(o[i], "-std"),
              "no fast math, line info or -std: %s", o[i]);
    tileops_nvrtc_arch_name(10, 0, name, sizeof name);
    CHECK(!strcmp(name, "sm_100a"), "arch name %s", name);
    tileops_nvrtc_arch_name(7, 5, name, sizeof name);
    CHECK(!strcmp(name, "sm_75"), "arch name %s", name);
}

/* ---- without a GPU -------------------------------------------------------------------- */

static void *load_thread(void *arg) {
    int *st = arg;
    *st = (int)tileops_cuda_load(NULL);
    return NULL;
}

static void test_no_driver(void) {
    CHECK(tileops_cuda_api() == NULL, "no table before loading");
    tileops_status_t st1 = tileops_cuda_load(NULL);
    if (st1 == TILEOPS_OK) {
        printf("note: libcuda and NVRTC load on this machine; skipping the no-driver checks\n");
        return;
    }
    char first[4096];
    snprintf(first, sizeof first, "%s", tileops_last_error());
    CHECK(st1 == TILEOPS_ERR_LIBRARY, "load: %s (%s)", tileops_status_name(st1), first);
    CHECK(strstr(first, "libcuda.so.1") != NULL, "message names libcuda.so.1: %s", first);
    tileops_clear_error();
    tileops_status_t st2 = tileops_cuda_load("/nonexistent/hint");
    CHECK(st2 == st1 && strcmp(first, tileops_last_error()) == 0,
          "second load: same outcome and message");
    CHECK(tileops_cuda_api() == NULL, "no table after a failed load");

    pthread_t t[4];
    int sts[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, load_thread, &sts[i]);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(sts[i] == (int)st1, "load from thread %d: %d", i, sts[i]);
    }

    int count = 7, major = 1, minor = 1, a = 0, b = 0, c = 0, capturing = 5;
    CHECK(tileops_cuda_device_count(&count) == TILEOPS_ERR_LIBRARY && count == 0, "device count");
    CHECK(tileops_cuda_device_arch(0, &major, &minor) == TILEOPS_ERR_LIBRARY, "device arch");
    CHECK(tileops_nvrtc_version(&major, &minor) == TILEOPS_ERR_LIBRARY, "nvrtc version");
    CHECK(tileops_cuda_device_attributes(0, &a, &b, &c) == TILEOPS_ERR_LIBRARY, "attributes");
    CHECK(tileops_cuda_stream_is_capturing(1234, &capturing) == TILEOPS_ERR_LIBRARY && capturing == 0,
          "is capturing");
    CHECK(tileops_cuda_device_count(NULL) == TILEOPS_ERR_INVALID_ARGUMENT, "count NULL");
    CHECK(tileops_cuda_stream_is_capturing(1, NULL) == TILEOPS_ERR_INVALID_ARGUMENT,
          "capturing NULL");

    /* build: argument checks first, then the missing driver */
    const char *src = "extern \"C\" __global__ void k(float *p) { p[0] = 1.0f; }";
    size_t len = strlen(src);
    const char *opts[2] = {"-DX=1", NULL};
    int h = 99;
    tileops_build_info_t info;
    memset(&info, 0x55, sizeof info);
    st1 = tileops_cuda_build(0, src, len, "k", opts, 1, "p", 0, &h, &info);
    CHECK(st1 == TILEOPS_ERR_LIBRARY && h == -1, "valid build without a driver: %s",
          tileops_status_name(st1));
    CHECK(info.nvrtc_ran == 0 && info.disk_hit == 0 && info.memory_hit == 0, "info cleared");
    /* a build refused for its arguments (no capture stream, no info) */
#define CHECK_REFUSED(what, device, source, source_len, name, options, num_options, format, handle) \
    CHECK(tileops_cuda_build(device, source, source_len, name, options, num_options, format, 0,   \
                             handle, NULL) == TILEOPS_ERR_INVALID_ARGUMENT,                       \
          what)
    CHECK_REFUSED("NULL handle", 0, src, len, "k", opts, 1, "p", NULL);
    CHECK_REFUSED("NULL source", 0, NULL, len, "k", opts, 1, "p", &h);
    CHECK_REFUSED("empty source", 0, src, 0, "k", opts, 1, "p", &h);
    CHECK_REFUSED("negative device", -1, src, len, "k", opts, 1, "p", &h);
    CHECK_REFUSED("NULL kernel name", 0, src, len, NULL, opts, 1, "p", &h);
    CHECK_REFUSED("kernel name not an identifier", 0, src, len, "9k", opts, 1, "p", &h);
    CHECK_REFUSED("kernel name with punctuation", 0, src, len, "k;rm", opts, 1, "p", &h);
    CHECK_REFUSED("NULL option", 0, src, len, "k", opts, 2, "p", &h);
    CHECK_REFUSED("NULL options with a count", 0, src, len, "k", NULL, 1, "p", &h);
    CHECK_REFUSED("negative option count", 0, src, len, "k", opts, -1, "p", &h);
    CHECK_REFUSED("NULL arg format", 0, src, len, "k", opts, 1, NULL, &h);
    CHECK_REFUSED("unknown arg format letter", 0, src, len, "k", opts, 1, "pz", &h);
    CHECK(strstr(tileops_last_error(), "'z'") != NULL, "message names the letter: %s",
          tileops_last_error());
    CHECK_REFUSED("25 arguments", 0, src, len, "k", opts, 1, "ppppppppppppppppppppppppp", &h);
#undef CHECK_REFUSED
    CHECK(tileops_cuda_build(0, src, len, "k", NULL, 0, "", 0, &h, NULL) == TILEOPS_ERR_LIBRARY,
          "no options, no arguments: valid");

    /* launch and handle queries with no kernel ever built */
    tileops_arg_t args[2];
    memset(args, 0, sizeof args);
    unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    int handles[] = {-1, 0, 1, 4096, 1 << 30};
    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) {
        CHECK(tileops_cuda_launch(handles[i], grid, block, 0, 1, args, 1) ==
                  TILEOPS_ERR_INVALID_ARGUMENT,
              "launch of handle %d", handles[i]);
        CHECK(tileops_cuda_kernel_arg_format(handles[i]) == NULL, "arg format of %d", handles[i]);
        CHECK(tileops_cuda_kernel_device(handles[i]) == -1, "device of %d", handles[i]);
    }
    CHECK(strstr(tileops_last_error(), "handle") != NULL, "launch message: %s", tileops_last_error());
    CHECK(tileops_cuda_launch(0, NULL, block, 0, 1, args, 1) == TILEOPS_ERR_INVALID_ARGUMENT,
          "launch with NULL grid");
    CHECK(tileops_kernel_lookup(0) == NULL, "no entry 0");

    tileops_cuda_stats_t s;
    tileops_cuda_get_stats(&s);
    CHECK(s.nvrtc_compiles == 0 && s.modules_loaded == 0 && s.launches == 0 && s.memory_hits == 0,
          "nothing compiled, loaded or launched");
    tileops_cuda_get_stats(NULL);
}

static void test_config(void) {
    CHECK(tileops_cuda_set_version(NULL) == TILEOPS_ERR_INVALID_ARGUMENT, "NULL version");
    CHECK(tileops_cuda_set_version("") == TILEOPS_ERR_INVALID_ARGUMENT, "empty version");
    CHECK(tileops_cuda_set_version("0.1.0+test") == TILEOPS_OK, "version");
    CHECK(tileops_cuda_set_version("0.2.0") == TILEOPS_OK, "version again");
    CHECK(tileops_cuda_set_cache_dir(g_dir) == TILEOPS_OK, "cache dir");
    CHECK(tileops_cuda_set_cache_dir("") == TILEOPS_OK, "disable the disk cache");
    CHECK(tileops_cuda_set_cache_dir(NULL) == TILEOPS_OK, "default cache dir");
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/tileops-rt-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) {
        printf("cannot create a temp folder: %s\n", strerror(errno));
        printf("0 passed, 1 failed\n");
        return 1;
    }
    test_hash();
    test_store_load();
    test_concurrent_store();
    test_nvrtc_options();
    test_config();
    test_no_driver();
    test_config(); /* frees and replaces the strings set before */
    tileops_cuda_set_cache_dir(NULL);
    remove_dir();
    CHECK(access(g_dir, F_OK) != 0, "temp folder removed");
    return check_summary();
}

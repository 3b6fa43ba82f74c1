/* tests/c/test_disk_cache_attacks.c: the disk cache against someone who can reach its
 * folder, and the settings the core cannot honour as given. No GPU needed.
 *
 *  - SHA-256 and HMAC-SHA256 known answers (FIPS 180-4 examples, RFC 4231 cases 1-3, 6, 7)
 *    and incremental updates equal to one shot.
 *  - Entries (tileops_cache_store/load, keyed by file name): a forged entry (old format with
 *    a valid FNV checksum; new format with the right key hash and a MAC of another secret),
 *    an entry copied under another name, a corrupted payload byte, a symbolic link to a
 *    valid entry, a FIFO (returns at once: alarm-guarded), a 6 GiB sparse file with a
 *    matching header (refused from its size, fast), an entry of another owner (as root),
 *    an oversized store: all refused. A folder that is group/world writable, a symlink,
 *    another user's (as root), or has a secret of the wrong mode or a symlinked secret: refused.
 *  - The build's cache (tileops_disk_cache_get/put and tileops_cuda_cache_state): entries
 *    bound to the full key; a symlinked arch folder, a world-writable folder, a file, a
 *    symlinked folder and a secret of mode 0644 each turn the cache off with exactly one
 *    note naming the folder; the default folder and everything made for it are 0700.
 *  - The ownership rules as functions of a stat result (another uid, modes).
 *  - TILEOPS_NVRTC naming a folder without libnvrtc, a text file, a missing path (and a
 *    note from tileops_cuda_load saying so); TILEOPS_NUM_THREADS too big or not a number.
 * Ends with "N passed, M failed"; exit status 1 on any failure. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/disk_cache.h"
#include "runtime/loader.h"
#include "runtime/sha256.h"
#include "tileops/cpu.h"
#include "tileops/notes.h"
#include "tileops/runtime.h"
#include "tileops/status.h"
#include "check.h"

#if defined(__GNUC__) && !defined(__clang__)
/* test paths are short temp paths; snprintf cuts them safely if not */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

static char g_root[256]; /* a private temp folder holding every case's folders */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void hex(const unsigned char *d, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static int64_t rejects(void) {
    tileops_cuda_stats_t s;
    tileops_cuda_get_stats(&s);
    return s.disk_rejects;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static void rm_rf(const char *p) { nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* A fresh private folder <root>/<name>. */
static void make_dir(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", g_root, name);
    mkdir(buf, 0700);
    chmod(buf, 0700);
}

static int write_file(const char *path, const void *data, size_t len, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0)
        return -1;
    int ok = write(fd, data, len) == (ssize_t)len;
    close(fd);
    chmod(path, mode);
    return ok ? 0 : -1;
}

static long read_file(const char *path, unsigned char *buf, size_t size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size);
    close(fd);
    return (long)n;
}

static int load_ok(const char *path, const void *want, size_t want_len) {
    void *data = NULL;
    size_t len = 0;
    tileops_status_t st = tileops_cache_load(path, &data, &len);
    int ok = st == TILEOPS_OK && len == want_len && (!want_len || memcmp(data, want, len) == 0);
    free(data);
    return ok;
}

/* Loads and expects a refusal whose message holds `needle` (NULL: any). */
static int load_refused(const char *path, const char *needle) {
    void *data = (void *)1;
    size_t len = 7;
    tileops_status_t st = tileops_cache_load(path, &data, &len);
    int ok = st == TILEOPS_ERR_CACHE && data == NULL && len == 0 &&
             (!needle || strstr(tileops_last_error(), needle));
    if (!ok)
        printf("  (load %s: %s: %s)\n", path, tileops_status_name(st), tileops_last_error());
    free(st == TILEOPS_OK ? data : NULL);
    return ok;
}

/* How many pending notes hold `needle`; takes every pending note. */
static int notes_with(const char *needle) {
    char note[TILEOPS_NOTE_MAX];
    int n = 0;
    while (tileops_take_note(note, sizeof note))
        if (strstr(note, needle))
            n++;
    return n;
}

/* ---- SHA-256 and HMAC ---------------------------------------------------------------- */

static void test_sha256(void) {
    static const struct {
        const char *msg, *want;
    } kat[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    unsigned char d[32];
    char h[65];
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        tileops_sha256(kat[i].msg, strlen(kat[i].msg), d);
        hex(d, 32, h);
        CHECK(!strcmp(h, kat[i].want), "sha256(\"%.20s\") = %s", kat[i].msg, h);
    }
    /* one million 'a', fed in uneven pieces */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    tileops_sha256_t s;
    tileops_sha256_init(&s);
    size_t off = 0, step = 1;
    while (off < sizeof a) {
        size_t n = step < sizeof a - off ? step : sizeof a - off;
        tileops_sha256_update(&s, a + off, n);
        off += n;
        step = step * 3 % 1031 + 1;
    }
    tileops_sha256_final(&s, d);
    hex(d, 32, h);
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
          "sha256 of a million 'a' in pieces: %s", h);
    /* every length 0..200 across block edges: pieces == one shot */
    unsigned char buf[200], one[32], two[32];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + 11);
    int same = 1;
    for (size_t n = 0; n <= sizeof buf; n++) {
        tileops_sha256(buf, n, one);
        tileops_sha256_init(&s);
        tileops_sha256_update(&s, buf, n / 3);
        tileops_sha256_update(&s, buf + n / 3, n - n / 3);
        tileops_sha256_final(&s, two);
        same &= memcmp(one, two, 32) == 0;
    }
    CHECK(same, "incremental == one shot for lengths 0..200");

    /* RFC 4231 */
    unsigned char k20[20], kaa[131], dd[50];
    memset(k20, 0x0b, sizeof k20);
    memset(kaa, 0xaa, sizeof kaa);
    memset(dd, 0xdd, sizeof dd);
    const char *big1 = "Test Using Larger Than Block-Size Key - Hash Key First";
    const char *big2 = "This is a test using a larger than block-size key and a larger than "
                       "block-size data. The key needs to be hashed before being used by the "
                       "HMAC algorithm.";
    struct {
        const void *key;
        size_t key_len;
        const void *msg;
        size_t msg_len;
        const char *want;
    } rfc[] = {
        {k20, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", 4, "what do ya want for nothing?", 28,
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {kaa, 20, dd, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {kaa, 131, big1, strlen(big1), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {kaa, 131, big2, strlen(big2), "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
        tileops_hmac_piece_t p[2] = {{rfc[i].msg, rfc[i].msg_len / 2},
                                     {(const char *)rfc[i].msg + rfc[i].msg_len / 2,
                                      rfc[i].msg_len - rfc[i].msg_len / 2}};
        tileops_hmac_sha256(rfc[i].key, rfc[i].key_len, p, 2, d);
        hex(d, 32, h);
        CHECK(!strcmp(h, rfc[i].want), "HMAC RFC 4231 #%zu: %s", i, h);
    }
    CHECK(tileops_equal_ct("abcd", "abcd", 4) && !tileops_equal_ct("abcd", "abce", 4), "equal_ct");
}

/* ---- entries ------------------------------------------------------------------------- */

static void test_entries(void) {
    char dir[512], a[600], b[600], p[600], secret[600];
    unsigned char raw[4096];
    const char payload[] = "a CUBIN, pretend";
    make_dir(dir, sizeof dir, "entries");
    snprintf(a, sizeof a, "%s/a.cubin", dir);
    snprintf(b, sizeof b, "%s/b.cubin", dir);
    snprintf(secret, sizeof secret, "%s/%s", dir, TILEOPS_CACHE_SECRET_NAME);

    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "store: %s",
          tileops_last_error());
    CHECK(load_ok(a, payload, sizeof payload), "round trip");
    struct stat sb;
    CHECK(lstat(secret, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 07777) == 0600 &&
              sb.st_size == 32,
          "the secret is a 32-byte 0600 file");
    CHECK(lstat(a, &sb) == 0 && (sb.st_mode & 07777) == 0600, "the entry is 0600 (%o)",
          (unsigned)(sb.st_mode & 07777));
    long n = read_file(a, raw, sizeof raw);
    CHECK(n == 88 + (long)sizeof payload, "entry size %ld", n);

    /* copied under another name: bound to the key */
    write_file(b, raw, (size_t)n, 0600);
    int64_t r0 = rejects();
    CHECK(load_refused(b, "another key"), "an entry copied to another key's name is refused");
    CHECK(rejects() == r0 + 1, "counted as a reject");

    /* forged, new format: right key hash, MAC made with another secret */
    unsigned char forged[4096];
    memcpy(forged, raw, (size_t)n);
    unsigned char other_secret[32];
    memset(other_secret, 0x42, sizeof other_secret);
    const char evil[] = "an evil CUBIN, pretend";
    size_t forged_len = 88 + sizeof evil;
    memcpy(forged + 88, evil, sizeof evil);
    for (int i = 0; i < 8; i++)
        forged[16 + i] = (unsigned char)((uint64_t)sizeof evil >> (8 * i));
    tileops_hmac_piece_t pieces[2] = {{forged, 56}, {evil, sizeof evil}};
    tileops_hmac_sha256(other_secret, 32, pieces, 2, forged + 56);
    write_file(a, forged, forged_len, 0600);
    CHECK(load_refused(a, "MAC"), "a forged entry (MAC of another secret) is refused");

    /* forged, old format with a valid FNV-1a checksum */
    unsigned char old[64];
    memcpy(old, "TOPSCUB1", 8);
    uint32_t v1 = 1, hs = 32;
    uint64_t plen = sizeof evil, fnv = tileops_hash64(evil, sizeof evil, 0);
    for (int i = 0; i < 4; i++) {
        old[8 + i] = (unsigned char)(v1 >> (8 * i));
        old[12 + i] = (unsigned char)(hs >> (8 * i));
    }
    for (int i = 0; i < 8; i++) {
        old[16 + i] = (unsigned char)(plen >> (8 * i));
        old[24 + i] = (unsigned char)(fnv >> (8 * i));
    }
    memcpy(old + 32, evil, sizeof evil);
    write_file(a, old, 32 + sizeof evil, 0600);
    CHECK(load_refused(a, NULL), "an old-format entry with a valid checksum is refused");

    /* one corrupted payload byte */
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "store again");
    n = read_file(a, raw, sizeof raw);
    raw[88 + 3] ^= 0x01;
    write_file(a, raw, (size_t)n, 0600);
    CHECK(load_refused(a, "MAC"), "a corrupted payload byte is refused");
    raw[88 + 3] ^= 0x01;

    /* a symbolic link to a valid entry (same folder, same name, moved aside) */
    char hidden[512], target[600];
    snprintf(hidden, sizeof hidden, "%s/aside", dir);
    mkdir(hidden, 0700);
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "store again");
    snprintf(target, sizeof target, "%s/a.cubin", hidden);
    CHECK(rename(a, target) == 0 && symlink("aside/a.cubin", a) == 0, "entry made a symlink");
    r0 = rejects();
    CHECK(load_refused(a, "symbolic link"), "a symlinked entry is not followed");
    CHECK(rejects() == r0 + 1, "counted as a reject");
    /* a store replaces the link itself, never writes through it */
    CHECK(tileops_cache_store(a, "new", 3) == TILEOPS_OK, "store over the link");
    CHECK(lstat(a, &sb) == 0 && S_ISREG(sb.st_mode), "the link was replaced by a file");
    CHECK(read_file(target, raw, sizeof raw) == 88 + (long)sizeof payload,
          "the link's target is untouched");
    unlink(a);

    /* a FIFO: a miss at once (an alarm kills the test if the open blocks) */
    snprintf(p, sizeof p, "%s/fifo.cubin", dir);
    CHECK(mkfifo(p, 0600) == 0, "mkfifo");
    alarm(10);
    double t0 = now_s();
    CHECK(load_refused(p, "not a regular file"), "a FIFO is refused");
    CHECK(now_s() - t0 < 1.0, "without waiting (%.3f s)", now_s() - t0);
    alarm(0);
    unlink(p);

    /* a 6 GiB sparse file with a matching header: refused from its size, fast */
    snprintf(p, sizeof p, "%s/big.cubin", dir);
    CHECK(tileops_cache_store(p, payload, sizeof payload) == TILEOPS_OK, "store");
    n = read_file(p, raw, sizeof raw);
    uint64_t big = ((uint64_t)6 << 30) - 88;
    for (int i = 0; i < 8; i++)
        raw[16 + i] = (unsigned char)(big >> (8 * i));
    int fd = open(p, O_WRONLY | O_TRUNC);
    int sparse = fd >= 0 && write(fd, raw, 88) == 88 && ftruncate(fd, (off_t)6 << 30) == 0;
    if (fd >= 0)
        close(fd);
    if (sparse) {
        t0 = now_s();
        CHECK(load_refused(p, "bytes"), "a 6 GiB entry is refused");
        CHECK(now_s() - t0 < 0.5, "from its size alone (%.3f s)", now_s() - t0);
    } else {
        printf("note: no 6 GiB sparse file here (%s); skipped\n", strerror(errno));
    }
    unlink(p);

    /* a store above the limit is refused before anything is read */
    static const char small[1] = {0};
    CHECK(tileops_cache_store(p, small, TILEOPS_CACHE_ENTRY_MAX + 1) == TILEOPS_ERR_CACHE,
          "an oversized store is refused");
    CHECK(access(p, F_OK) != 0, "and nothing written");

    /* another owner's entry (root can make one) */
    if (geteuid() == 0) {
        CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "store");
        CHECK(chown(a, 12345, 12345) == 0, "chown");
        CHECK(load_refused(a, "owned by uid 12345"), "another user's entry is refused");
        unlink(a);
    }

    /* the folder: group/world writable, a symlink, another owner's */
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "store");
    chmod(dir, 0770);
    CHECK(load_refused(a, "writable by group or others"), "a group-writable folder is refused");
    chmod(dir, 0777);
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_ERR_CACHE &&
              strstr(tileops_last_error(), "writable by group or others"),
          "a world-writable folder is refused for stores: %s", tileops_last_error());
    chmod(dir, 0700);
    CHECK(load_ok(a, payload, sizeof payload), "private again: good");
    char link_dir[512], via_link[600];
    snprintf(link_dir, sizeof link_dir, "%s/entries-link", g_root);
    CHECK(symlink(dir, link_dir) == 0, "symlink to the folder");
    snprintf(via_link, sizeof via_link, "%s/a.cubin", link_dir);
    CHECK(load_refused(via_link, "symbolic link"), "a symlinked folder is not followed");
    if (geteuid() == 0) {
        CHECK(chown(dir, 12345, 12345) == 0, "chown folder");
        CHECK(load_refused(a, "owned by uid 12345"), "another user's folder is refused");
        CHECK(chown(dir, 0, 0) == 0, "chown back");
    }

    /* the secret: wrong mode, a symlink, another owner's */
    chmod(secret, 0644);
    CHECK(load_refused(a, "mode 0644"), "a 0644 secret is refused");
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_ERR_CACHE,
          "and no store with it");
    chmod(secret, 0600);
    CHECK(load_ok(a, payload, sizeof payload), "0600 again: good");
    char aside_secret[600];
    snprintf(aside_secret, sizeof aside_secret, "%s/secret-aside", hidden);
    CHECK(rename(secret, aside_secret) == 0 && symlink(aside_secret, secret) == 0,
          "secret made a symlink");
    CHECK(load_refused(a, "symbolic link"), "a symlinked secret is not followed");
    unlink(secret);
    CHECK(load_refused(a, "no cache secret"), "no secret: no entry can be valid");
    CHECK(tileops_cache_store(a, payload, sizeof payload) == TILEOPS_OK, "a store makes a new one");
    CHECK(load_ok(a, payload, sizeof payload), "good with the new secret");
}

/* ---- the rules on stat results ------------------------------------------------------- */

static void test_rules(void) {
    struct stat sb;
    char why[256];
    uid_t me = 1000;
    memset(&sb, 0, sizeof sb);
    sb.st_mode = S_IFDIR | 0700;
    sb.st_uid = me;
    CHECK(tileops_disk_cache_dir_ok(&sb, me, why, sizeof why), "private folder: ok");
    sb.st_mode = S_IFDIR | 0755;
    CHECK(tileops_disk_cache_dir_ok(&sb, me, why, sizeof why), "0755 folder of ours: ok");
    sb.st_uid = me + 1;
    CHECK(!tileops_disk_cache_dir_ok(&sb, me, why, sizeof why) && strstr(why, "owned by uid 1001"),
          "another user's folder: %s", why);
    sb.st_uid = me;
    sb.st_mode = S_IFDIR | 01777;
    CHECK(!tileops_disk_cache_dir_ok(&sb, me, why, sizeof why) && strstr(why, "writable"),
          "sticky world-writable folder: %s", why);
    sb.st_mode = S_IFDIR | 0720;
    CHECK(!tileops_disk_cache_dir_ok(&sb, me, why, sizeof why), "group-writable folder");
    sb.st_mode = S_IFLNK | 0777;
    CHECK(!tileops_disk_cache_dir_ok(&sb, me, why, sizeof why) && strstr(why, "symbolic"),
          "a link: %s", why);
    sb.st_mode = S_IFREG | 0700;
    CHECK(!tileops_disk_cache_dir_ok(&sb, me, why, sizeof why) && strstr(why, "not a folder"),
          "a file: %s", why);

    sb.st_mode = S_IFREG | 0600;
    sb.st_size = 32;
    CHECK(tileops_disk_cache_secret_ok(&sb, me, why, sizeof why), "a good secret");
    sb.st_uid = me + 1;
    CHECK(!tileops_disk_cache_secret_ok(&sb, me, why, sizeof why), "another user's secret");
    sb.st_uid = me;
    sb.st_mode = S_IFREG | 0640;
    CHECK(!tileops_disk_cache_secret_ok(&sb, me, why, sizeof why) && strstr(why, "0640"),
          "a 0640 secret: %s", why);
    sb.st_mode = S_IFREG | 0400;
    CHECK(!tileops_disk_cache_secret_ok(&sb, me, why, sizeof why), "a 0400 secret");
    sb.st_mode = S_IFREG | 0600;
    sb.st_size = 31;
    CHECK(!tileops_disk_cache_secret_ok(&sb, me, why, sizeof why), "a short secret");
    sb.st_mode = S_IFIFO | 0600;
    sb.st_size = 32;
    CHECK(!tileops_disk_cache_secret_ok(&sb, me, why, sizeof why), "a FIFO secret");
}

/* ---- the build's cache ---------------------------------------------------------------- */

static int cache_on(char *reason, size_t size) {
    char dir[4096];
    return tileops_cuda_cache_state(dir, sizeof dir, reason, size);
}

static void test_build_cache(void) {
    char dir[512], reason[1100], p[700];
    unsigned char k1[32], k2[32];
    void *data = NULL;
    size_t len = 0;
    memset(k1, 1, sizeof k1);
    memset(k2, 2, sizeof k2);
    notes_with("");

    make_dir(dir, sizeof dir, "build");
    CHECK(tileops_cuda_set_cache_dir(dir) == TILEOPS_OK, "set cache dir");
    CHECK(cache_on(reason, sizeof reason) == 1, "a private folder is used: %s", reason);
    CHECK(tileops_disk_cache_put("sm_90a", "k", 0x1234, k1, "cubin", 5) == TILEOPS_OK, "put: %s",
          tileops_last_error());
    CHECK(tileops_disk_cache_get("sm_90a", "k", 0x1234, k1, &data, &len) == TILEOPS_OK &&
              len == 5 && !memcmp(data, "cubin", 5),
          "get");
    free(data);
    data = NULL;
    struct stat sb;
    snprintf(p, sizeof p, "%s/sm_90a", dir);
    CHECK(lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
          "the arch folder is 0700");
    CHECK(tileops_disk_cache_get("sm_90a", "k", 0x1234, k2, &data, &len) == TILEOPS_ERR_CACHE &&
              strstr(tileops_last_error(), "another key"),
          "same file name, another full key: refused (%s)", tileops_last_error());
    CHECK(tileops_disk_cache_get("sm_90a", "k", 0x9999, k1, &data, &len) == TILEOPS_ERR_CACHE,
          "no such entry: a miss");
    CHECK(notes_with("") == 0, "no notes while all is well");

    /* the arch folder swapped for a symlink to a copy */
    char real[600];
    snprintf(real, sizeof real, "%s/real", dir);
    CHECK(rename(p, real) == 0 && symlink("real", p) == 0, "arch folder made a symlink");
    CHECK(tileops_disk_cache_get("sm_90a", "k", 0x1234, k1, &data, &len) == TILEOPS_ERR_CACHE &&
              data == NULL,
          "a symlinked arch folder is not followed");
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "symbolic link"),
          "and the cache is off: %s", reason);
    CHECK(tileops_disk_cache_put("sm_90a", "k", 0x1234, k1, "x", 1) == TILEOPS_ERR_CACHE,
          "no store either");
    CHECK(tileops_disk_cache_get("sm_80", "k", 0x1234, k1, &data, &len) == TILEOPS_ERR_CACHE,
          "nor another arch");
    CHECK(notes_with(dir) == 1, "one note naming the folder");
    (void)cache_on(reason, sizeof reason);
    (void)tileops_disk_cache_get("sm_90a", "k", 0x1234, k1, &data, &len);
    CHECK(notes_with("") == 0, "and only one");

    /* a world-writable folder: off, one note */
    make_dir(dir, sizeof dir, "shared");
    chmod(dir, 0777);
    tileops_cuda_set_cache_dir(dir);
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "writable by group or others"),
          "a world-writable folder is refused: %s", reason);
    CHECK(tileops_disk_cache_put("sm_90a", "k", 1, k1, "x", 1) == TILEOPS_ERR_CACHE, "no store");
    snprintf(p, sizeof p, "%s/sm_90a", dir);
    CHECK(access(p, F_OK) != 0, "nothing made in it");
    CHECK(notes_with(dir) == 1, "one note naming it");
    (void)cache_on(reason, sizeof reason);
    CHECK(notes_with("") == 0, "only one");

    /* a file where the folder should be */
    snprintf(p, sizeof p, "%s/a-file", g_root);
    write_file(p, "x", 1, 0600);
    tileops_cuda_set_cache_dir(p);
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "not a folder"),
          "a file as the folder: %s", reason);
    CHECK(notes_with("a-file") == 1, "one note");

    /* the folder is a symlink to a private folder */
    make_dir(dir, sizeof dir, "private");
    snprintf(p, sizeof p, "%s/private-link", g_root);
    symlink(dir, p);
    tileops_cuda_set_cache_dir(p);
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "symbolic link"),
          "a symlinked folder: %s", reason);
    CHECK(notes_with("private-link") == 1, "one note");

    /* a secret of mode 0644 */
    make_dir(dir, sizeof dir, "loose-secret");
    snprintf(p, sizeof p, "%s/%s", dir, TILEOPS_CACHE_SECRET_NAME);
    write_file(p, "0123456789abcdef0123456789abcdef", 32, 0644);
    tileops_cuda_set_cache_dir(dir);
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "mode 0644"),
          "a 0644 secret: %s", reason);
    CHECK(notes_with("loose-secret") == 1, "one note");

    /* disabled: off, no note */
    tileops_cuda_set_cache_dir("");
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "disabled"), "disabled: %s",
          reason);
    CHECK(notes_with("") == 0, "disabling is no note");

    /* the default folder: everything made for it is 0700 */
    char home[512], q[700];
    make_dir(home, sizeof home, "home");
    chmod(home, 0755);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *old_env = getenv("TILEOPS_CACHE_DIR") ? strdup(getenv("TILEOPS_CACHE_DIR")) : NULL;
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("HOME", home, 1);
    unsetenv("TILEOPS_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    tileops_cuda_set_version("9.9.9");
    tileops_cuda_set_cache_dir(NULL);
    CHECK(cache_on(reason, sizeof reason) == 1, "the default folder: %s", reason);
    const char *made[] = {".cache", ".cache/tileops", ".cache/tileops/9.9.9"};
    for (int i = 0; i < 3; i++) {
        snprintf(q, sizeof q, "%s/%s", home, made[i]);
        CHECK(lstat(q, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
              "%s made 0700 (%o)", made[i], (unsigned)(sb.st_mode & 0777));
    }
    /* $XDG_CACHE_HOME, when absolute, takes the place of ~/.cache */
    char xdg[512], got[4096];
    make_dir(xdg, sizeof xdg, "xdg-cache");
    setenv("XDG_CACHE_HOME", xdg, 1);
    CHECK(tileops_cuda_cache_state(got, sizeof got, reason, sizeof reason) == 1,
          "the XDG folder: %s", reason);
    snprintf(q, sizeof q, "%s/tileops/9.9.9", xdg);
    CHECK(strcmp(got, q) == 0, "XDG_CACHE_HOME=%s gives %s", xdg, got);
    CHECK(lstat(q, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700,
          "%s made 0700", q);
    /* a relative one is ignored, as the XDG base directory rules say */
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    CHECK(tileops_cuda_cache_state(got, sizeof got, reason, sizeof reason) == 1, "%s", reason);
    snprintf(q, sizeof q, "%s/.cache/tileops/9.9.9", home);
    CHECK(strcmp(got, q) == 0, "a relative XDG_CACHE_HOME is ignored: %s", got);
    unsetenv("XDG_CACHE_HOME");
    /* a second home where tileops/ is a symlink (made by someone else): refused */
    make_dir(home, sizeof home, "home2");
    snprintf(q, sizeof q, "%s/.cache", home);
    mkdir(q, 0700);
    snprintf(q, sizeof q, "%s/.cache/tileops", home);
    symlink(dir, q);
    setenv("HOME", home, 1);
    CHECK(cache_on(reason, sizeof reason) == 0 && strstr(reason, "symbolic link"),
          "a symlinked ~/.cache/tileops: %s", reason);
    notes_with("");
    if (old_home)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    if (old_env)
        setenv("TILEOPS_CACHE_DIR", old_env, 1);
    if (old_xdg)
        setenv("XDG_CACHE_HOME", old_xdg, 1);
    free(old_home);
    free(old_env);
    free(old_xdg);
    tileops_cuda_set_cache_dir("");
}

/* ---- settings that cannot be honoured ------------------------------------------------ */

static void test_settings(void) {
    char out[1024], why[512], dir[512], p[700];
    make_dir(dir, sizeof dir, "nvrtc-folder");
    CHECK(!tileops_nvrtc_env_check(dir, out, sizeof out, why, sizeof why) &&
              strstr(why, "folder without libnvrtc"),
          "a folder without libnvrtc: %s", why);
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    write_file(p, "not a library\n", 14, 0644);
    CHECK(!tileops_nvrtc_env_check(p, out, sizeof out, why, sizeof why) && strstr(why, "ELF"),
          "a text file: %s", why);
    snprintf(p, sizeof p, "%s/missing.so", dir);
    CHECK(!tileops_nvrtc_env_check(p, out, sizeof out, why, sizeof why) &&
              strstr(why, "does not exist"),
          "a missing path: %s", why);
    snprintf(p, sizeof p, "%s/libnvrtc.so.12", dir);
    write_file(p, "\x7f" "ELF....", 8, 0644);
    CHECK(tileops_nvrtc_env_check(dir, out, sizeof out, why, sizeof why) && !strcmp(out, p),
          "a folder with libnvrtc.so.12: %s", out);
    CHECK(tileops_nvrtc_env_check("libnvrtc.so.12", out, sizeof out, why, sizeof why) &&
              !strcmp(out, "libnvrtc.so.12"),
          "a bare name is left to the loader");

    /* the load says so, once, even when the driver is missing */
    snprintf(p, sizeof p, "%s/missing.so", dir);
    setenv("TILEOPS_NVRTC", p, 1);
    notes_with("");
    tileops_status_t st = tileops_cuda_load(NULL);
    char note[TILEOPS_NOTE_MAX];
    int found = 0;
    while (tileops_take_note(note, sizeof note))
        if (strstr(note, "TILEOPS_NVRTC=") && strstr(note, "missing.so") &&
            strstr(note, "does not exist") &&
            (strstr(note, "CUDA builds are off") || strstr(note, "instead")))
            found++;
    CHECK(found == 1, "one note for TILEOPS_NVRTC (load: %s)", tileops_status_name(st));
    (void)tileops_cuda_load(NULL);
    CHECK(notes_with("") == 0, "and only one");
    unsetenv("TILEOPS_NVRTC");

    int n = 0;
    CHECK(tileops_cpu_parse_num_threads("100000", 8, &n, why, sizeof why) == 1 && n == 8 &&
              strstr(why, "using 8 threads"),
          "a huge count is capped: %d, %s", n, why);
    CHECK(tileops_cpu_parse_num_threads("lots", 8, &n, why, sizeof why) == 1 && n == 8 &&
              strstr(why, "not a whole number >= 1; ignored"),
          "not a number: %d, %s", n, why);
    CHECK(tileops_cpu_parse_num_threads(" \t ", 8, &n, why, sizeof why) == 0 && n == 8 && !why[0],
          "blank is unset: %d, %s", n, why);
    CHECK(tileops_cpu_parse_num_threads("0", 8, &n, why, sizeof why) == 1 && n == 8, "zero");
    CHECK(tileops_cpu_parse_num_threads("-3", 8, &n, why, sizeof why) == 1 && n == 8, "negative");
    CHECK(tileops_cpu_parse_num_threads("99999999999999999999", 8, &n, why, sizeof why) == 1 &&
              n == 8 && strstr(why, "more than the 8 CPUs"),
          "overflow is a huge count: %s", why);
    CHECK(tileops_cpu_parse_num_threads("3", 8, &n, why, sizeof why) == 0 && n == 3, "3 of 8");
    CHECK(tileops_cpu_parse_num_threads(" 8\n", 8, &n, why, sizeof why) == 0 && n == 8, "8 of 8");
    CHECK(tileops_cpu_parse_num_threads(NULL, 8, &n, why, sizeof why) == 0 && n == 8, "unset");
    CHECK(tileops_cpu_parse_num_threads("", 2, &n, why, sizeof why) == 0 && n == 2, "empty");
}

int main(void) {
    snprintf(g_root, sizeof g_root, "%s/tileops-attacks-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_root)) {
        printf("cannot create a temp folder: %s\n0 passed, 1 failed\n", strerror(errno));
        return 1;
    }
    test_sha256();
    test_rules();
    test_entries();
    test_build_cache();
    test_settings();
    tileops_cuda_set_cache_dir(NULL);
    rm_rf(g_root);
    CHECK(access(g_root, F_OK) != 0, "temp folder removed");
    return check_summary();
}

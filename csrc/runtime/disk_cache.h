/* runtime/disk_cache.h: the fifth layer of the CUDA runtime - where compiled binaries
 * live on disk. The entry format and its store/load are public (tileops/runtime.h:
 * tileops_cache_store, tileops_cache_load, tileops_hash64), as are the folder and
 * version settings and the cache's state; this header adds what the build above needs
 * to store and find an entry, and the ownership rules (exposed for tests).
 * Knows nothing of NVRTC, modules or devices: an entry is bytes under a key. */
#ifndef TILEOPS_RUNTIME_DISK_CACHE_H
#define TILEOPS_RUNTIME_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tileops/status.h"

/* The largest payload an entry may hold (a CUBIN is tens of KiB); a bigger file is
 * refused from its size alone, before anything is read or allocated. */
#define TILEOPS_CACHE_ENTRY_MAX ((size_t)64 << 20)

/* The name of the per-cache secret (32 random bytes, mode 0600) in the cache folder. */
#define TILEOPS_CACHE_SECRET_NAME ".tileops-secret"

/* The tileops version that enters the cache key ("unknown" until set), copied into buf. */
void tileops_disk_cache_version(char *buf, size_t size);

/* The entry of (arch, kernel name, key) - <cache dir>/<arch>/<kernel>-<key>.cubin - bound
 * to full_key (the SHA-256 of everything the key was hashed from): loaded (*data is
 * malloc'ed) or stored. TILEOPS_ERR_CACHE when there is no valid entry or no usable cache
 * (a miss: builds then work from memory and NVRTC). The arch folder is made 0700 when
 * missing; one that is a symbolic link or not private turns the cache off for the process
 * (with a note, tileops/notes.h). */
tileops_status_t tileops_disk_cache_get(const char *arch, const char *kernel_name, uint64_t key,
                                        const unsigned char full_key[32], void **data,
                                        size_t *len);
tileops_status_t tileops_disk_cache_put(const char *arch, const char *kernel_name, uint64_t key,
                                        const unsigned char full_key[32], const void *data,
                                        size_t len);

/* The rules, on an lstat/fstat result, for `uid` (the effective user): 1 when the folder
 * may hold a cache (a folder, owned by uid, not writable by group or others), 1 when the
 * secret may be used (a regular file owned by uid, mode exactly 0600, 32 bytes); else 0
 * with the reason in why. */
int tileops_disk_cache_dir_ok(const struct stat *sb, uid_t uid, char *why, size_t size);
int tileops_disk_cache_secret_ok(const struct stat *sb, uid_t uid, char *why, size_t size);

#endif /* TILEOPS_RUNTIME_DISK_CACHE_H */

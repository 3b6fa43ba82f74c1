/* runtime/disk_cache.h: the fourth layer of the CUDA runtime - where compiled binaries
 * live on disk. The entry format and its store/load are public (tileops/runtime.h:
 * tileops_cache_store, tileops_cache_load, tileops_hash64), as are the folder and
 * version settings; this header adds what the build above needs to name an entry.
 * Knows nothing of NVRTC, modules or devices: an entry is bytes under a key. */
#ifndef TILEOPS_RUNTIME_DISK_CACHE_H
#define TILEOPS_RUNTIME_DISK_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The tileops version that enters the cache key ("unknown" until set), copied into buf. */
void tileops_disk_cache_version(char *buf, size_t size);

/* The disk path of the entry (arch, kernel name, key) into buf, with its folder made:
 * <cache dir>/<arch>/<kernel>-<key>.cubin. 0 when there is no usable folder (the disk
 * cache is off, or the folder cannot be made): builds then work from memory and NVRTC. */
int tileops_disk_cache_path(const char *arch, const char *kernel_name, uint64_t key, char *buf,
                            size_t size);

#endif /* TILEOPS_RUNTIME_DISK_CACHE_H */

/* runtime/nvrtc.h: the third layer of the CUDA runtime - compiling one CUDA C program
 * to a CUBIN, and the one place the fixed NVRTC options are decided (the build above
 * hashes exactly these into its cache key). Knows nothing of caches or modules. */
#ifndef TILEOPS_RUNTIME_NVRTC_H
#define TILEOPS_RUNTIME_NVRTC_H

#include <stddef.h>
#include "tileops/status.h"

/* The architecture name the runtime compiles for: "sm_90a" for major >= 9, else "sm_86"
 * style. buf must hold at least 16 bytes. */
void tileops_nvrtc_arch_name(int major, int minor, char *buf, size_t size);

/* The fixed NVRTC options for an arch, in order; arch_buf (>= 48 bytes) holds the
 * storage of the arch option. Returns the count (<= TILEOPS_NVRTC_MAX_FIXED_OPTIONS).
 * This is the one place the fixed options are decided: the cache key hashes exactly
 * these plus the caller's options. */
#define TILEOPS_NVRTC_MAX_FIXED_OPTIONS 4
int tileops_nvrtc_fixed_options(int major, int minor, int nvrtc_major, int nvrtc_minor,
                                char *arch_buf, size_t arch_buf_size,
                                const char *out[TILEOPS_NVRTC_MAX_FIXED_OPTIONS]);

/* Compiles `source` to a CUBIN for (major, minor), after a successful tileops_cuda_load.
 * *cubin is malloc'ed (caller frees). On failure: TILEOPS_ERR_COMPILE with kernel name,
 * options and the whole log. */
tileops_status_t tileops_nvrtc_compile(const char *source, size_t source_len,
                                       const char *kernel_name, const char *const *options,
                                       int num_options, int major, int minor, void **cubin,
                                       size_t *cubin_len, double *compile_ms);

#endif /* TILEOPS_RUNTIME_NVRTC_H */

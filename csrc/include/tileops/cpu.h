/* tileops/cpu.h: what every CPU kernel shares - the core's own thread pool and the SIMD
 * path chosen at run time. The kernels themselves are not declared here: each op's C file
 * (csrc/ops/<family>/) registers them in the kernel table (tileops/kernel_table.h), so
 * this header does not grow per op.
 *
 * The pool is the core's own (pthreads), not OpenMP, so it never fights torch's runtime
 * for threads; a kernel spreads its rows over it, each worker taking a contiguous range. */
#ifndef TILEOPS_CPU_H
#define TILEOPS_CPU_H

#include <stddef.h>
#include <stdint.h>
#include "tileops/status.h"

/* ---- thread pool ---------------------------------------------------------------- */

/* Number of threads kernels use (the caller's thread counts as one). Default: the
 * environment variable TILEOPS_NUM_THREADS if set, else the CPUs this process may run on. */
int tileops_cpu_num_threads(void);
/* Sets it (n >= 1). Safe to call between kernel calls from any thread. */
tileops_status_t tileops_cpu_set_num_threads(int n);
/* The default's rule (exposed for tests): `value` (TILEOPS_NUM_THREADS, may be NULL) as a
 * thread count capped at `cpus`, the CPUs this process may run on, into *out; cpus when
 * it is unset. Returns 1 with why set when the value could not be honoured as given (not
 * a whole number >= 1, or above cpus), which the pool then leaves as a note
 * (tileops/notes.h); else 0. */
int tileops_cpu_parse_num_threads(const char *value, int cpus, int *out, char *why,
                                  size_t why_size);

/* Runs fn(ctx, begin, end) over [0, count) split into at most num_threads contiguous
 * ranges, in parallel, and returns when all are done. Work below min_per_thread items per
 * thread uses fewer threads. Re-entrant calls (fn calling parallel_for) run serially. */
typedef void (*tileops_range_fn)(void *ctx, int64_t begin, int64_t end);
void tileops_cpu_parallel_for(int64_t count, int64_t min_per_thread, tileops_range_fn fn, void *ctx);

/* ---- SIMD -------------------------------------------------------------------------- */

/* Which SIMD path the fast kernels take: "avx512_bf16" (AVX-512 with AVX512_BF16's
 * converts), "avx512", "avx2", or "scalar": the best this CPU has, capped by the
 * environment variable TILEOPS_CPU_SIMD (one of those names, any case), which runs a
 * lower CPU's paths on this one. */
const char *tileops_cpu_simd_level(void);
/* TILEOPS_CPU_SIMD's rule (exposed for tests): `value` (may be NULL) as a cap on what
 * the CPU has (hw_level a tileops_simd level, hw_bf16 whether it has AVX512_BF16) into
 * *level and *bf16; unset or blank leaves the CPU's. Returns 1 with why set when the value
 * could not be honoured (no such name, or above the CPU's: the CPU's best is used), which
 * detection then leaves as a note (tileops/notes.h); else 0. */
int tileops_cpu_parse_simd(const char *value, int hw_level, int hw_bf16, int *level, int *bf16, char *why,
                           size_t why_size);

#endif /* TILEOPS_CPU_H */

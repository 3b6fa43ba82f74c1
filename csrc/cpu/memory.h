/* cpu/memory.h: what the CPU kernels know about the memory they write (internal).
 *
 * A large new output (glibc maps each allocation of 32 MiB or more afresh) faults in one
 * 4 KiB page at a time as it is first written, which costs more than a norm kernel's own
 * work; asking for transparent huge pages over its 2 MiB-aligned interior before the first
 * write makes that one fault per 2 MiB (2048 x 4096 fp32 into a new output: ~12 -> ~5 ms,
 * dev/NOTES.md). TILEOPS_CPU_HUGEPAGES=0 turns the advice off. */
#ifndef TILEOPS_CPU_MEMORY_H
#define TILEOPS_CPU_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/* Whether the `bytes` at p are new, not in memory yet (probed at the first, middle and last
 * byte with mincore; where it cannot tell, it says no). A new extent of at least
 * `advise_min_bytes` also gets the huge-page advice (unless TILEOPS_CPU_HUGEPAGES=0). The
 * advice moves no data and a failure changes nothing but the time. */
int tileops_cpu_fresh_output(void *p, int64_t bytes, int64_t advise_min_bytes);

/* A buffer of at least `bytes` owned by the calling thread and kept between calls (grown,
 * never shrunk; freed when the thread exits), for a kernel's per-row scratch: glibc maps a
 * large allocation afresh and its first touch faults page by page, so a top-k row's 2.5 MB
 * of scratch malloc'd per call cost ~0.5 ms, six times the selection. Its contents mean
 * nothing from one call to the next, and a thread uses it for one kernel at a time. NULL
 * when there is no memory (the previous buffer is kept). */
void *tileops_cpu_scratch(size_t bytes);

/* What C can check of a buffer it is given as a raw address, once the sizes are known to
 * fit int64: that the address is a multiple of the element size (`align`), and that the
 * buffer's `bytes` do not run past the top of the address space (pointer arithmetic over
 * it would wrap). NULL when both hold, else what is wrong, for the kernel's message.
 * Whether `bytes` of memory are really there is beyond C: a kernel entry gets addresses,
 * not allocations, so the Python layer checks each tensor's extent before it passes the
 * data pointer. */
static inline const char *tileops_cpu_extent_problem(const void *p, int64_t bytes, int64_t align) {
    uintptr_t a = (uintptr_t)p;
    if (align > 1 && a % (uintptr_t)align != 0)
        return "is not aligned to its element size";
    if (bytes > 0 && (uint64_t)bytes - 1 > (uint64_t)(UINTPTR_MAX - a))
        return "runs past the end of the address space";
    return NULL;
}

#endif /* TILEOPS_CPU_MEMORY_H */

/* cpu/memory.h: what the CPU kernels know about the memory they write (internal).
 *
 * A large new output (glibc maps each allocation of 32 MiB or more afresh) faults in one
 * 4 KiB page at a time as it is first written, which costs more than a norm kernel's own
 * work; asking for transparent huge pages over its 2 MiB-aligned interior before the first
 * write makes that one fault per 2 MiB (2048 x 4096 fp32 into a new output: ~12 -> ~5 ms,
 * dev/NOTES.md). TILEOPS_CPU_HUGEPAGES=0 turns the advice off. */
#ifndef TILEOPS_CPU_MEMORY_H
#define TILEOPS_CPU_MEMORY_H

#include <stdint.h>

/* Whether the `bytes` at p are new, not in memory yet (probed at the first, middle and last
 * byte with mincore; where it cannot tell, it says no). A new extent of at least
 * `advise_min_bytes` also gets the huge-page advice (unless TILEOPS_CPU_HUGEPAGES=0). The
 * advice moves no data and a failure changes nothing but the time. */
int tileops_cpu_fresh_output(void *p, int64_t bytes, int64_t advise_min_bytes);

#endif /* TILEOPS_CPU_MEMORY_H */

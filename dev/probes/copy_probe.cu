/* dev/probes/copy_probe.cu: the floor a row op is measured against, written the
 * way the RMSNorm kernels move bytes (16-byte vectors, PROBE_UNROLL in flight per thread, one
 * block per PROBE_THREADS * PROBE_UNROLL vectors, no grid stride). Built by
 * dev/probe_copy.py through the tileops runtime (NVRTC --minimal, no headers).
 *   probe_copy(x, y, n16):  y = x over n16 16-byte vectors
 *   probe_read(x, y, n16):  reads x, writes one word per block (the DRAM read floor) */
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#endif
#ifndef PROBE_THREADS
#error "copy_probe.cu needs -DPROBE_THREADS and -DPROBE_UNROLL"
#endif

static __attribute__((device)) __inline__ unsigned probe_tid(void) {
    unsigned r;
    asm("mov.u32 %0, %%tid.x;" : "=r"(r));
    return r;
}
static __attribute__((device)) __inline__ unsigned probe_ctaid(void) {
    unsigned r;
    asm("mov.u32 %0, %%ctaid.x;" : "=r"(r));
    return r;
}

extern "C" __global__ void __launch_bounds__(PROBE_THREADS)
probe_copy(const char *x, char *y, long long n16) {
    unsigned a[PROBE_UNROLL][4];
    long long base = (long long)probe_ctaid() * PROBE_THREADS * PROBE_UNROLL + probe_tid();
#pragma unroll
    for (int u = 0; u < PROBE_UNROLL; u++) {
        long long i = base + (long long)u * PROBE_THREADS;
        if (i < n16)
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(a[u][0]), "=r"(a[u][1]), "=r"(a[u][2]), "=r"(a[u][3])
                         : "l"(x + i * 16));
    }
#pragma unroll
    for (int u = 0; u < PROBE_UNROLL; u++) {
        long long i = base + (long long)u * PROBE_THREADS;
        if (i < n16)
            asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
                         :
                         : "l"(y + i * 16), "r"(a[u][0]), "r"(a[u][1]), "r"(a[u][2]), "r"(a[u][3])
                         : "memory");
    }
}

extern "C" __global__ void __launch_bounds__(PROBE_THREADS)
probe_read(const char *x, char *y, long long n16) {
    unsigned acc = 0;
    long long base = (long long)probe_ctaid() * PROBE_THREADS * PROBE_UNROLL + probe_tid();
    unsigned a[PROBE_UNROLL][4];
#pragma unroll
    for (int u = 0; u < PROBE_UNROLL; u++) {
        long long i = base + (long long)u * PROBE_THREADS;
        a[u][0] = a[u][1] = a[u][2] = a[u][3] = 0;
        if (i < n16)
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(a[u][0]), "=r"(a[u][1]), "=r"(a[u][2]), "=r"(a[u][3])
                         : "l"(x + i * 16));
    }
#pragma unroll
    for (int u = 0; u < PROBE_UNROLL; u++)
        acc ^= a[u][0] ^ a[u][1] ^ a[u][2] ^ a[u][3];
    if (acc == 0x9e3779b9u) /* almost never: keeps the loads without a real output */
        ((unsigned *)y)[probe_ctaid()] = acc;
}

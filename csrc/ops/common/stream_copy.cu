/* ops/common/stream_copy.cu: a plain copy kernel, the bench's copy floor on CUDA from
 * tileops.bench.COPY_KERNEL_FROM bytes (not an op's kernel: no launch rule selects it).
 * Self-contained C-style CUDA C for NVRTC (no include).
 *
 * Why: torch's same-dtype copy_ is a cudaMemcpyAsync, and in the hot timer's CUDA graph a
 * memcpy node of 512 MiB and more ran 1.22-1.24x slower than the same copy L2-cold on an
 * H100 (536.9 MB: 440.7 against 361.4 us), where this kernel took 355.2 hot and 358.5
 * L2-cold (dev/NOTES.md, session 41; dev/time_floor.py, whose 1 : 1 build with one group a
 * thread was the fastest of 1 / 2 / 4). Below that size the two are within 0.5 %.
 *
 * Thread t of block b copies the 16-byte word g = b x 256 + t; grid = ceil(groups / 256).
 * Parameters (arg_format "ppq"): (const char *src, char *dst, long long groups): 16 x groups
 * bytes, both 16-byte aligned. */
extern "C" __global__ void __launch_bounds__(256) tileops_stream_copy(const char *src, char *dst, long long groups) {
    const long long g = (long long)blockIdx.x * 256 + threadIdx.x;
    if (g >= groups)
        return;
    unsigned a, b, c, d;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(src + 16 * g));
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst + 16 * g), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
}

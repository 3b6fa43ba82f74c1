/* dev/cuda/stream_floor_lab.cu: the floor of a streaming op with its own mix of reads and
 * writes (dev/time_floor.py; not a build the launch rules select). Self-contained C-style
 * CUDA C for NVRTC (no include).
 *
 * Why: the bench's copy floor is dst.copy_(src) of half the op's bytes, read and written
 * alike. An op whose writes are twice its reads (softmax of bf16 logits into float32) or
 * half of them (the gated activations read gate and up, write one) moves the same total in
 * another mix, and on an H100 torch's own bf16 -> float32 conversion of exactly softmax's
 * bytes took 1.33-1.49x that copy's time L2-cold (dev/NOTES.md, session 38). A floor of the
 * op's own mix says which it is: this kernel reads TILEOPS_READS 16-byte words a group and
 * writes TILEOPS_WRITES, every word it writes made from what it read:
 *   1 / 1  a copy;
 *   1 / 2  bf16 -> float32 (8 bfloat16 in, 8 floats out, exact: the bits shifted up 16);
 *   2 / 1  the XOR of two streams' words (src's first `groups` words and its next `groups`);
 *   1 / 0  reads only (argmax's mix, session 41): a thread XORs the 4 words of each of its
 *          groups (0 for a group past the end) into one 4-byte word, stored at dst + 4 (b x
 *          TILEOPS_THREADS + t): 4 bytes written for TILEOPS_UNROLL x 16 read.
 * Thread t of block b takes the groups g = (b x TILEOPS_UNROLL + u) x TILEOPS_THREADS + t for
 * u < TILEOPS_UNROLL, all its loads issued before the first store; grid = ceil(groups /
 * (TILEOPS_THREADS x TILEOPS_UNROLL)).
 *
 * Parameters (arg_format "ppq"): (const char *src, char *dst, long long groups); src holds
 * TILEOPS_READS x groups words, dst TILEOPS_WRITES x groups, group g's at dst + 16 W g (1 / 0:
 * dst holds grid x TILEOPS_THREADS 4-byte words).
 * TILEOPS_CLUSTER C > 1 (1 / 0 only; session 43): the grid (a multiple of C) launched in
 * clusters of C, every thread passing one release / acquire cluster barrier between its
 * XOR and its store, as argmax's exchange does: what a cluster launch and its barrier add
 * to the read-only floor (argmax at B = 32, clusters of 8, ran 1.8x the copy hot). */
#if !defined(TILEOPS_READS) || !defined(TILEOPS_WRITES) || !defined(TILEOPS_THREADS) || !defined(TILEOPS_UNROLL)
#error "stream_floor_lab.cu needs -DTILEOPS_READS, -DTILEOPS_WRITES, -DTILEOPS_THREADS, -DTILEOPS_UNROLL"
#endif
#if !((TILEOPS_READS == 1 && TILEOPS_WRITES <= 2 && TILEOPS_WRITES >= 0) || (TILEOPS_READS == 2 && TILEOPS_WRITES == 1))
#error "stream_floor_lab.cu: TILEOPS_READS / TILEOPS_WRITES must be 1 / 1, 1 / 2, 2 / 1 or 1 / 0"
#endif

#ifndef TILEOPS_CLUSTER
#define TILEOPS_CLUSTER 1
#endif
#if TILEOPS_CLUSTER > 1 && TILEOPS_WRITES != 0
#error "stream_floor_lab.cu: TILEOPS_CLUSTER > 1 with the read-only mix (1 / 0) only"
#endif
#if TILEOPS_CLUSTER > 1
#define FLOOR_CLUSTER_DIMS __attribute__((cluster_dims(TILEOPS_CLUSTER, 1, 1)))
#else
#define FLOOR_CLUSTER_DIMS
#endif

struct floor_v4 {
    unsigned a[4];
};

__device__ __forceinline__ struct floor_v4 floor_ld16(const char *p) {
    struct floor_v4 v;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p));
    return v;
}

__device__ __forceinline__ void floor_st16(char *p, struct floor_v4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3])
                 : "memory");
}

extern "C" __global__ void __launch_bounds__(TILEOPS_THREADS) FLOOR_CLUSTER_DIMS tileops_stream_floor(const char *src, char *dst,
                                                                                   long long groups) {
    const long long g0 = (long long)blockIdx.x * (TILEOPS_THREADS * TILEOPS_UNROLL) + threadIdx.x;
    struct floor_v4 in[TILEOPS_UNROLL][TILEOPS_READS];
#pragma unroll
    for (int u = 0; u < TILEOPS_UNROLL; u++) {
        const long long g = g0 + (long long)u * TILEOPS_THREADS;
        if (g < groups) {
#pragma unroll
            for (int r = 0; r < TILEOPS_READS; r++)
                in[u][r] = floor_ld16(src + 16 * ((long long)r * groups + g));
        }
#if TILEOPS_WRITES == 0
        else {
            in[u][0].a[0] = in[u][0].a[1] = in[u][0].a[2] = in[u][0].a[3] = 0u;
        }
#endif
    }
#if TILEOPS_WRITES == 0
    unsigned x = 0u;
#pragma unroll
    for (int u = 0; u < TILEOPS_UNROLL; u++)
#pragma unroll
        for (int k = 0; k < 4; k++)
            x ^= in[u][0].a[k];
#if TILEOPS_CLUSTER > 1
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
#endif
    asm volatile("st.global.u32 [%0], %1;" ::"l"(dst + 4 * ((long long)blockIdx.x * TILEOPS_THREADS + threadIdx.x)),
                 "r"(x)
                 : "memory");
    return;
#endif
#pragma unroll
    for (int u = 0; u < TILEOPS_UNROLL; u++) {
        const long long g = g0 + (long long)u * TILEOPS_THREADS;
        if (g >= groups)
            continue;
#if TILEOPS_WRITES == 2
        /* element 2k + h of the 8 bfloat16 (word k's low half first) -> float 2k + h */
#pragma unroll
        for (int w = 0; w < 2; w++) {
            struct floor_v4 o;
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const unsigned word = in[u][0].a[2 * w + k];
                o.a[2 * k] = word << 16;
                o.a[2 * k + 1] = word & 0xffff0000u;
            }
            floor_st16(dst + 16 * (2 * g + w), o);
        }
#elif TILEOPS_READS == 2
        struct floor_v4 o;
#pragma unroll
        for (int k = 0; k < 4; k++)
            o.a[k] = in[u][0].a[k] ^ in[u][1].a[k];
        floor_st16(dst + 16 * g, o);
#else
        floor_st16(dst + 16 * g, in[u][0]);
#endif
    }
}

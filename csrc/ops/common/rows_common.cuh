/* ops/common/rows_common.cuh: what the CUDA C kernels of every family share (the norm
 * family's rms_norm.cu and norm_rows.cuh, the activation family's gated_act.cuh): the CUDA
 * keywords without a header, the checks of the common defines and the derived quantities,
 * 16-byte groups and their loads and stores, dtype conversions, the fixed rounded fp32
 * arithmetic and the fixed-order row sums. A kernel source includes it as
 * "../common/rows_common.cuh" (the runtime splices it in before NVRTC sees the source, so
 * no include path is needed; common/ is the one folder outside its own a source may
 * include from).
 *
 * Defines it needs (checked here): TILEOPS_DTYPE (0 float32, 1 float16, 2 bfloat16),
 * TILEOPS_N (row length >= 1), TILEOPS_VEC (1 or G), TILEOPS_THREADS (a multiple of 32,
 * <= 1024); optional TILEOPS_MIN_BLOCKS (the second __launch_bounds__ argument, 0: none).
 * Derived: TILEOPS_E (element bytes), TILEOPS_G = 16 / E (elements per group),
 * TILEOPS_NG (groups per row, the last may be partial), TILEOPS_NGF (full groups),
 * TILEOPS_TAIL (elements of the partial group, 0 when none), TILEOPS_WARPS,
 * TILEOPS_BOUNDS (the kernels' __launch_bounds__). */
#ifndef TILEOPS_ROWS_COMMON_CUH
#define TILEOPS_ROWS_COMMON_CUH

/* ---- no headers: the few CUDA keywords the kernels need, if the compiler lacks them --- */
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#endif
#ifndef __forceinline__
#define __forceinline__ __inline__ __attribute__((always_inline))
#endif

/* ---- common defines ------------------------------------------------------------------ */
#if !defined(TILEOPS_DTYPE) || !defined(TILEOPS_N) || !defined(TILEOPS_VEC) || !defined(TILEOPS_THREADS)
#error "the row kernels need -DTILEOPS_DTYPE, -DTILEOPS_N, -DTILEOPS_VEC, -DTILEOPS_THREADS"
#endif
#if TILEOPS_DTYPE == 0
#define TILEOPS_E 4
#elif TILEOPS_DTYPE == 1 || TILEOPS_DTYPE == 2
#define TILEOPS_E 2
#else
#error "TILEOPS_DTYPE must be 0 (float32), 1 (float16) or 2 (bfloat16)"
#endif
#define TILEOPS_G (16 / TILEOPS_E)
#if TILEOPS_N < 1
#error "TILEOPS_N must be >= 1"
#endif
#if TILEOPS_VEC != 1 && TILEOPS_VEC != TILEOPS_G
#error "TILEOPS_VEC must be 1 (scalar path) or 16 / element size (vector path)"
#endif
#if TILEOPS_THREADS < 32 || TILEOPS_THREADS > 1024 || TILEOPS_THREADS % 32 != 0
#error "TILEOPS_THREADS must be a multiple of 32 in [32, 1024]"
#endif
#ifndef TILEOPS_MIN_BLOCKS
#define TILEOPS_MIN_BLOCKS 0
#endif
#if TILEOPS_MIN_BLOCKS < 0 || TILEOPS_MIN_BLOCKS * TILEOPS_THREADS > 2048
#error "TILEOPS_MIN_BLOCKS must be >= 0 with TILEOPS_MIN_BLOCKS * TILEOPS_THREADS <= 2048"
#endif
#if TILEOPS_MIN_BLOCKS
#define TILEOPS_BOUNDS __launch_bounds__(TILEOPS_THREADS, TILEOPS_MIN_BLOCKS)
#else
#define TILEOPS_BOUNDS __launch_bounds__(TILEOPS_THREADS)
#endif

#define TILEOPS_NG ((TILEOPS_N + TILEOPS_G - 1) / TILEOPS_G) /* groups per row */
#define TILEOPS_NGF (TILEOPS_N / TILEOPS_G)                   /* full groups */
#define TILEOPS_TAIL (TILEOPS_N - TILEOPS_NGF * TILEOPS_G)     /* elements of the last */
#define TILEOPS_FULL(g) (TILEOPS_TAIL == 0 || (g) < TILEOPS_NGF) /* group g has G elements */
#define TILEOPS_WARPS (TILEOPS_THREADS / 32)

/* unused: each specialisation uses only some helpers */
#define TILEOPS_DEV static __device__ __forceinline__ __attribute__((unused))

/* One 16-byte group: G elements packed in four 32-bit words (for the half types element
 * 2k is the low half of word k). */
struct __attribute__((aligned(16))) tileops_v4 {
    unsigned int a[4];
};

/* ---- thread indices and barriers (PTX special registers, no builtin header) ----------- */
/* NAME(): the special register REG (one mov; no builtin header names them) */
#define TILEOPS_SREG(NAME, REG)                                                                    \
    TILEOPS_DEV unsigned NAME(void) {                                                              \
        unsigned r;                                                                                \
        asm("mov.u32 %0, %%" REG ";" : "=r"(r));                                                   \
        return r;                                                                                  \
    }
TILEOPS_SREG(tileops_tid, "tid.x")
TILEOPS_SREG(tileops_ntid, "ntid.x")
TILEOPS_SREG(tileops_ctaid, "ctaid.x")
TILEOPS_SREG(tileops_nctaid, "nctaid.x")
/* grid.y's block index and size (RoPE splits a token's heads, paged decode a sequence's
 * chunks over grid.y) */
TILEOPS_SREG(tileops_ctaid_y, "ctaid.y")
TILEOPS_SREG(tileops_nctaid_y, "nctaid.y")
#undef TILEOPS_SREG
TILEOPS_DEV void tileops_barrier(void) { asm volatile("bar.sync 0;" ::: "memory"); }
/* Programmatic dependent launch (sm_90+; no-ops before, and when the kernel was launched
 * plainly). tileops_grid_wait: waits until the stream's previous kernel has completed and
 * its memory is visible; a kernel built with runtime.build(pdl=True) calls it before it
 * touches anything an earlier kernel writes or reads. tileops_launch_dependents: lets the
 * stream's next kernel, if launched with PDL, be scheduled now (it still waits in
 * tileops_grid_wait for this one to finish). TILEOPS_PDL_PROLOGUE, the first statement of
 * every kernel built with pdl=True: the wait, then the next kernel let in, so a chain of
 * kernels overlaps each one's launch and CTA start with the tail of the one before while
 * no kernel reads or writes memory before its predecessor has finished. */
TILEOPS_DEV void tileops_grid_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
TILEOPS_DEV void tileops_launch_dependents(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#define TILEOPS_PDL_PROLOGUE()       \
    do {                             \
        tileops_grid_wait();         \
        tileops_launch_dependents(); \
    } while (0)
TILEOPS_DEV float tileops_shfl_xor(float v, int offset) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(offset));
    return r;
}
/* The same instruction rsqrtf() compiles to without fast math (2 ulp, subnormals kept). */
TILEOPS_DEV float tileops_rsqrt(float v) {
    float r;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
/* 2^v and log2(v): the SFU's approximations (2 ulp; ex2 flushes subnormal results to 0) */
TILEOPS_DEV float tileops_ex2(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
TILEOPS_DEV float tileops_lg2(float v) {
    float r;
    asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
TILEOPS_DEV float tileops_as_float(unsigned u) {
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
}
TILEOPS_DEV unsigned tileops_as_uint(float f) {
    unsigned u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
    return u;
}

/* ---- global memory access ------------------------------------------------------------ */
TILEOPS_DEV struct tileops_v4 tileops_ld16(const char *p) {
    struct tileops_v4 v;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p));
    return v;
}
/* read-only data (weight, bias): the non-coherent path, kept in L1 */
TILEOPS_DEV struct tileops_v4 tileops_ld16_nc(const char *p) {
    struct tileops_v4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.a[0]), "=r"(v.a[1]), "=r"(v.a[2]), "=r"(v.a[3])
                 : "l"(p));
    return v;
}
TILEOPS_DEV void tileops_st16(char *p, struct tileops_v4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3])
                 : "memory");
}
/* evict-first store (a last pass over a long row: keeps L2 for the rows still to be read) */
TILEOPS_DEV void tileops_st16_cs(char *p, struct tileops_v4 v) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.a[0]), "r"(v.a[1]), "r"(v.a[2]), "r"(v.a[3])
                 : "memory");
}

TILEOPS_DEV struct tileops_v4 tileops_zero4(void) {
    struct tileops_v4 v;
    v.a[0] = 0u;
    v.a[1] = 0u;
    v.a[2] = 0u;
    v.a[3] = 0u;
    return v;
}

/* Group g of a row, element by element: the first `count` elements, zeros after. Only
 * element alignment is needed. */
TILEOPS_DEV struct tileops_v4 tileops_ld_group_scalar(const char *row, long long g, int count) {
    struct tileops_v4 v = tileops_zero4();
#if TILEOPS_E == 4
    const unsigned *p = (const unsigned *)row + g * 4;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < count)
            v.a[k] = p[k];
#else
    const unsigned short *p = (const unsigned short *)row + g * 8;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < count)
            v.a[k >> 1] |= (unsigned)p[k] << (16 * (k & 1));
#endif
    return v;
}

TILEOPS_DEV void tileops_st_group_scalar(char *row, long long g, int count, struct tileops_v4 v) {
#if TILEOPS_E == 4
    unsigned *p = (unsigned *)row + g * 4;
#pragma unroll
    for (int k = 0; k < 4; k++)
        if (k < count)
            p[k] = v.a[k];
#else
    unsigned short *p = (unsigned short *)row + g * 8;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < count)
            p[k] = (unsigned short)(v.a[k >> 1] >> (16 * (k & 1)));
#endif
}

/* Loads group g (< NG) of a row: 16-byte load on the vector path, element loads for the
 * tail and on the scalar path. nc: read-only data. */
TILEOPS_DEV struct tileops_v4 tileops_ld_group(const char *row, long long g, int nc) {
#if TILEOPS_VEC == 1
    (void)nc;
    /* a constant count for full groups: no per-element predicates */
    if (TILEOPS_FULL(g))
        return tileops_ld_group_scalar(row, g, TILEOPS_G);
    return tileops_ld_group_scalar(row, g, TILEOPS_TAIL);
#else
    if (TILEOPS_FULL(g))
        return nc ? tileops_ld16_nc(row + g * 16) : tileops_ld16(row + g * 16);
    return tileops_ld_group_scalar(row, g, TILEOPS_TAIL);
#endif
}

TILEOPS_DEV void tileops_st_group(char *row, long long g, struct tileops_v4 v, int evict_first) {
#if TILEOPS_VEC == 1
    (void)evict_first;
    if (TILEOPS_FULL(g))
        tileops_st_group_scalar(row, g, TILEOPS_G, v);
    else
        tileops_st_group_scalar(row, g, TILEOPS_TAIL, v);
#else
    if (TILEOPS_FULL(g)) {
        if (evict_first)
            tileops_st16_cs(row + g * 16, v);
        else
            tileops_st16(row + g * 16, v);
    } else {
        tileops_st_group_scalar(row, g, TILEOPS_TAIL, v);
    }
#endif
}

/* ---- conversions ---------------------------------------------------------------------- */
/* group -> G floats */
TILEOPS_DEV void tileops_unpack(struct tileops_v4 v, float *f) {
#if TILEOPS_DTYPE == 0
#pragma unroll
    for (int k = 0; k < 4; k++)
        f[k] = tileops_as_float(v.a[k]);
#else
#if TILEOPS_DTYPE == 1
#define TILEOPS_UNPACK2 "{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
#else
#define TILEOPS_UNPACK2 "{ shl.b32 %0, %2, 16; and.b32 %1, %2, 0xffff0000; }"
#endif
    /* volatile: the compiler must not keep the unpacked floats alive across the row's
     * reduction (twice the registers of the packed halves); unpacking again is cheap */
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float lo, hi;
        asm volatile(TILEOPS_UNPACK2 : "=f"(lo), "=f"(hi) : "r"(v.a[k]));
        f[2 * k] = lo;
        f[2 * k + 1] = hi;
    }
#endif
}

#if TILEOPS_DTYPE == 2 && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 800)
/* float -> bfloat16 bits, round to nearest even, NaN kept quiet (before sm_80) */
TILEOPS_DEV unsigned tileops_bf16_bits(float f) {
    unsigned u = tileops_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x0040u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}
#endif

/* two floats -> one word of the dtype's pair (lo in the low half) */
TILEOPS_DEV unsigned tileops_pack2(float lo, float hi) {
    unsigned r;
#if TILEOPS_DTYPE == 1
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("{ .reg .b16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h}; }"
        : "=r"(r)
        : "f"(lo), "f"(hi));
#endif
#elif TILEOPS_DTYPE == 2
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    r = tileops_bf16_bits(lo) | (tileops_bf16_bits(hi) << 16);
#endif
#else
    r = tileops_as_uint(lo);
    (void)hi;
#endif
    return r;
}

/* G floats -> group */
TILEOPS_DEV struct tileops_v4 tileops_pack(const float *f) {
    struct tileops_v4 v;
#if TILEOPS_DTYPE == 0
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = tileops_as_uint(f[k]);
#else
#pragma unroll
    for (int k = 0; k < 4; k++)
        v.a[k] = tileops_pack2(f[2 * k], f[2 * k + 1]);
#endif
    return v;
}

/* a group of G copies of v */
TILEOPS_DEV struct tileops_v4 tileops_splat(float v) {
    float f[TILEOPS_G];
#pragma unroll
    for (int k = 0; k < TILEOPS_G; k++)
        f[k] = v;
    return tileops_pack(f);
}

/* ---- fixed-order fp32 arithmetic and row sums ---------------------------------------- */

/* Rounded fp32 arithmetic the compiler may schedule but not re-associate or contract
 * differently from one kernel to another: the sums below have one fixed shape. */
TILEOPS_DEV float tileops_mul(float a, float b) {
    float r;
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
TILEOPS_DEV float tileops_fma(float a, float b, float c) {
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
    return r;
}
TILEOPS_DEV float tileops_add(float a, float b) {
    float r;
    asm("add.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

TILEOPS_DEV float tileops_sub(float a, float b) {
    float r;
    asm("sub.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
/* IEEE division, correctly rounded (the activations' tileops_div is div.full, 2 ulp) */
TILEOPS_DEV float tileops_div_rn(float a, float b) {
    float r;
    asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

/* |v|, min, max (min / max return the other operand for a NaN, as x86's do not: a NaN a
 * still reaches the result through the final product with a) */
TILEOPS_DEV float tileops_absf(float v) {
    float r;
    asm("abs.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
TILEOPS_DEV float tileops_minf(float a, float b) {
    float r;
    asm("min.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
TILEOPS_DEV float tileops_maxf(float a, float b) {
    float r;
    asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

/* acc + the G / 2 pair sums p, added pairwise (a fixed tree), then into acc in one add */
TILEOPS_DEV float tileops_add_pairs(const float *p, float acc) {
#if TILEOPS_G == 8
    float s = tileops_add(tileops_add(p[0], p[1]), tileops_add(p[2], p[3]));
#else
    float s = tileops_add(p[0], p[1]);
#endif
    return tileops_add(acc, s);
}

/* acc + the sum of squares of G floats, as a fixed pairwise tree: pairs (2k, 2k+1) as
 * fma(f[2k+1], f[2k+1], f[2k] * f[2k]), then the pair sums pairwise, then one add to acc.
 * A thread's dependent chain is then log2(G) + 1 + its group count, not G x groups
 * (what a single-row call waits on). */
TILEOPS_DEV float tileops_sumsq_f(const float *f, float acc) {
    float p[TILEOPS_G / 2];
#pragma unroll
    for (int k = 0; k < TILEOPS_G / 2; k++)
        p[k] = tileops_fma(f[2 * k + 1], f[2 * k + 1], tileops_mul(f[2 * k], f[2 * k]));
    return tileops_add_pairs(p, acc);
}

/* acc + the sum of squares of a group's elements (zeros past a tail add nothing) */
TILEOPS_DEV float tileops_sumsq(struct tileops_v4 v, float acc) {
    float f[TILEOPS_G];
    tileops_unpack(v, f);
    return tileops_sumsq_f(f, acc);
}

/* float -> one element of the dtype, round to nearest even */
TILEOPS_DEV void tileops_st_elem(char *row, long long i, float v) {
#if TILEOPS_DTYPE == 0
    ((float *)row)[i] = v;
#elif TILEOPS_DTYPE == 1
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    ((unsigned short *)row)[i] = h;
#else
    ((unsigned short *)row)[i] = (unsigned short)(tileops_pack2(v, 0.0f) & 0xffffu);
#endif
}

/* one element of the dtype -> float */
TILEOPS_DEV float tileops_ld_elem(const char *row, long long i) {
#if TILEOPS_DTYPE == 0
    return ((const float *)row)[i];
#elif TILEOPS_DTYPE == 1
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(((const unsigned short *)row)[i]));
    return f;
#else
    return tileops_as_float((unsigned)((const unsigned short *)row)[i] << 16);
#endif
}

/* v summed over each group of `width` lanes (a power of two <= 32) by an xor butterfly,
 * the steps 16, 8, ... 1 below width: every lane of the group gets the same total. */
TILEOPS_DEV float tileops_butterfly(float v, int width) {
#pragma unroll
    for (int off = 16; off >= 1; off >>= 1)
        if (off < width)
            v += tileops_shfl_xor(v, off);
    return v;
}

/* The smallest power of two >= nw (nw >= 1; constant after inlining). */
TILEOPS_DEV int tileops_pow2ceil(int nw) {
    int pw = 1;
    while (pw < nw)
        pw <<= 1;
    return pw;
}

/* Sum over the RT threads of a row, the same fixed order for every row. RT <= 32: an
 * xor butterfly inside the row's lanes. RT > 32: a butterfly in each warp, the per-warp
 * sums through red[] (one barrier; all threads of the block must call it), a butterfly
 * over them. red: TILEOPS_WARPS floats, not reused before the next barrier. Every thread
 * of the row returns the same total. */
TILEOPS_DEV float tileops_row_sum(float v, float *red, unsigned tid, int rt) {
    if (rt <= 32)
        return tileops_butterfly(v, rt);
    v = tileops_butterfly(v, 32);
    unsigned warp = tid >> 5, lane = tid & 31u;
    if (lane == 0)
        red[warp] = v;
    tileops_barrier();
    unsigned first = (tid / (unsigned)rt) * (unsigned)(rt / 32);
    /* the nw per-warp sums sit in every group of pw lanes (pw = pow2ceil(nw)), so a
     * butterfly of log2(pw) steps leaves the total in all 32 lanes; it adds the same
     * values in the same pairs as a full 5-step one (whose extra steps added zeros) */
    const int nw = rt / 32;
    const int pw = tileops_pow2ceil(nw);
    const unsigned l = lane & (unsigned)(pw - 1);
    float p = l < (unsigned)nw ? red[first + l] : 0.0f;
    return tileops_butterfly(p, pw);
}
#endif /* TILEOPS_ROWS_COMMON_CUH */

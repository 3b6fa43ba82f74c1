/* sampling_rows.c: the row machinery of the sampling family's selection kernels
 * (sampling_rows.h). The vector passes are written once over cpu/vec16.h and compiled once
 * per instruction set (this file includes itself); the level is chosen at run time. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/sampling/sampling_cpu.h"
#include "ops/sampling/sampling_rows.h"
#include "cpu/simd.h"
#include "cpu/vec16.h"

typedef struct rows_fns {
    float (*keys)(const void *x, int dt, int64_t n, float *z, uint32_t *keys, int *nan);
    void (*exp)(const float *z, int64_t n, float m, float *w);
} rows_fns_t;

#define VEC16_SELF "ops/sampling/sampling_rows.c"
#include "cpu/dispatch_levels.h"

static const rows_fns_t *fns(void) {
    const int level = tileops_cpu_simd_active();
    return VEC16_AT_LEVEL(level, fns);
}

float sampling_row_keys(const void *x, int dt, int64_t n, float *z, uint32_t *keys, int *nan) {
    return fns()->keys(x, dt, n, z, keys, nan);
}

void sampling_row_exp(const float *z, int64_t n, float m, float *w) { fns()->exp(z, n, m, w); }

/* Radix selection over digits of 11, 11 and 10 bits from the top. The first pass, over
 * every key, counts into four histograms in turn (keys of logits share a few top digits:
 * one histogram would make each add wait on the last add to the same bin), then keeps the
 * keys of the chosen digit; the later passes see only those. */
#define SEL_PASSES 3
static const int sel_shift[SEL_PASSES] = {21, 10, 0}, sel_width[SEL_PASSES] = {11, 11, 10};

uint32_t sampling_select(const uint32_t *keys, int64_t n, int64_t k, uint32_t *scratch, int64_t *above) {
    uint32_t count[4][2048]; /* on the stack (32 KB): a _Thread_local array in the shared object
                                costs a TLS lookup an add where the compiler does not hoist it */
    const uint32_t *cur = keys;
    int64_t m = n, gt = 0;
    uint32_t prefix = 0;
    for (int p = 0; p < SEL_PASSES; p++) {
        const int shift = sel_shift[p];
        const uint32_t mask = (1u << sel_width[p]) - 1u, bins = mask + 1u;
        memset(count, 0, sizeof count);
        int64_t i = 0;
        for (; i + 4 <= m; i += 4) {
            count[0][(cur[i] >> shift) & mask]++;
            count[1][(cur[i + 1] >> shift) & mask]++;
            count[2][(cur[i + 2] >> shift) & mask]++;
            count[3][(cur[i + 3] >> shift) & mask]++;
        }
        for (; i < m; i++)
            count[0][(cur[i] >> shift) & mask]++;
        /* the digit holding the k-th largest: gt + (keys in higher digits) < k <= that + its count */
        int64_t acc = 0;
        uint32_t d = bins - 1;
        for (; d > 0; d--) {
            const int64_t c = (int64_t)count[0][d] + count[1][d] + count[2][d] + count[3][d];
            if (gt + acc + c >= k)
                break;
            acc += c;
        }
        gt += acc;
        prefix |= d << shift;
        int64_t w = 0; /* keep the keys with that digit (w <= i: in place is safe) */
        for (int64_t j = 0; j < m; j++)
            if (((cur[j] >> shift) & mask) == d)
                scratch[w++] = cur[j];
        cur = scratch;
        m = w;
    }
    *above = gt;
    return prefix;
}

/* ranks of the elements of keys [i0, i1) at or above floor, appended to cand from m */
static int64_t keep_above(const uint32_t *keys, int64_t i0, int64_t i1, uint32_t floor, uint64_t *cand, int64_t m) {
    for (int64_t i = i0; i < i1; i++)
        if (keys[i] >= floor)
            cand[m++] = sampling_rank(keys[i], i);
    return m;
}

int64_t sampling_candidates(const uint32_t *keys, int64_t n, int64_t k, uint64_t *cand, uint32_t *tmp) {
    enum { STRIDE = 16, BLOCK = 64 };
    const int64_t s = n / STRIDE;
    uint32_t floor = 0;
    if (s >= 256 && k <= n / 32) {
        for (int64_t j = 0; j < s; j++)
            tmp[j] = keys[STRIDE * j + STRIDE / 2];
        const int64_t expect = (k + STRIDE - 1) / STRIDE;
        int64_t margin = 8;
        while (margin * margin < 16 * expect) /* ~4 standard deviations of the sample's count */
            margin++;
        int64_t above;
        if (expect + margin <= s)
            floor = sampling_select(tmp, s, expect + margin, tmp, &above);
    }
    if (floor != 0) {
        /* blocks with no key at or above the floor (most of them) cost a vector compare */
        int64_t m = 0, i = 0;
        for (; i + BLOCK <= n; i += BLOCK) {
            int any = 0;
            for (int j = 0; j < BLOCK; j++)
                any |= keys[i + j] >= floor;
            if (any)
                m = keep_above(keys, i, i + BLOCK, floor, cand, m);
        }
        m = keep_above(keys, i, n, floor, cand, m);
        if (m >= k)
            return m;
    }
    return n; /* every element: cand not written */
}

#else /* ---- VEC16_ISA: one instruction set's passes (this file includes itself) -------- */

#include "cpu/vec16.h"

static TGT float ISA(keys_impl)(const void *x, int dt, int64_t n, float *z, uint32_t *keys, int *nan) {
    VF mx = ISA(vset1)(-INFINITY);
    int any_nan = 0;
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        VF v = c == 16 ? ISA(vload)(x, i, dt) : ISA(vload_n)(x, i, dt, c);
        any_nan |= ISA(vfirst_nan)(v) >= 0;
        mx = ISA(vmax)(c == 16 ? v : ISA(vfill_n)(v, c, -INFINITY), mx); /* v first: a NaN lane keeps mx */
        (void)ISA(vstore_n)(z, i, F32, v, c);
    }
    if (keys != NULL)
        for (int64_t i = 0; i < n; i++)
            keys[i] = sampling_key(z[i]);
    _Alignas(64) float lanes[16];
    (void)ISA(vstore_n)(lanes, 0, F32, mx, 16);
    float m = lanes[0];
    for (int k = 1; k < 16; k++)
        m = lanes[k] > m ? lanes[k] : m;
    *nan = any_nan;
    return m;
}

static TGT float ISA(keys)(const void *x, int dt, int64_t n, float *z, uint32_t *keys, int *nan) {
    if (dt == F32)
        return ISA(keys_impl)(x, F32, n, z, keys, nan);
    if (dt == F16)
        return ISA(keys_impl)(x, F16, n, z, keys, nan);
    return ISA(keys_impl)(x, BF16, n, z, keys, nan);
}

static TGT void ISA(exp)(const float *z, int64_t n, float m, float *w) {
    const VF mv = ISA(vset1)(m);
    for (int64_t i = 0; i < n; i += 16) {
        const int c = n - i < 16 ? (int)(n - i) : 16;
        VF v = c == 16 ? ISA(vload)(z, i, F32) : ISA(vload_n)(z, i, F32, c);
        (void)ISA(vstore_n)(w, i, F32, ISA(vexp)(ISA(vsub)(v, mv)), c);
    }
}

static const rows_fns_t ISA(fns) = {ISA(keys), ISA(exp)};

#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME

#endif /* VEC16_ISA */

/* sampling_rows.c: the row machinery of the sampling family's selection kernels
 * (sampling_rows.h). The vector passes are written once over cpu/vec16.h and compiled once
 * per instruction set (this file includes itself); the level is chosen at run time. */
#ifndef VEC16_ISA /* ---- the first pass through this file: everything but the vector code */

#include <math.h>
#include <stdint.h>

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

uint32_t sampling_select(const uint32_t *keys, int64_t n, int64_t k, uint32_t *scratch, int64_t *above) {
    const uint32_t *cur = keys;
    int64_t m = n, gt = 0;
    uint32_t prefix = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t count[256] = {0};
        for (int64_t i = 0; i < m; i++)
            count[(cur[i] >> shift) & 255u]++;
        /* the digit holding the k-th largest: gt + (keys in higher digits) < k <= that + count[d] */
        int64_t acc = 0;
        int d = 255;
        for (; d > 0; d--) {
            if (gt + acc + count[d] >= k)
                break;
            acc += count[d];
        }
        gt += acc;
        prefix |= (uint32_t)d << shift;
        int64_t w = 0; /* keep the keys with that digit (w <= i: in place is safe) */
        for (int64_t i = 0; i < m; i++)
            if (((cur[i] >> shift) & 255u) == (uint32_t)d)
                scratch[w++] = cur[i];
        cur = scratch;
        m = w;
    }
    *above = gt;
    return prefix;
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

/* dtype.c: element sizes and names of the dtype codes, and the IEEE binary16 <->
 * binary32 conversions.
 *
 * The conversions are done on the bit patterns in portable C so the scalar reference
 * kernels and the tests get exactly the result of a hardware converter (F16C's
 * round-to-nearest-even, quiet NaN) on any machine and with any compiler flags. */
#include <stdint.h>
#include <string.h>

#include "tileops/dtype.h"

size_t tileops_dtype_size(int dtype) {
    switch (dtype) {
    case TILEOPS_FLOAT32: return 4;
    case TILEOPS_FLOAT16: return 2;
    case TILEOPS_BFLOAT16: return 2;
    case TILEOPS_INT32: return 4;
    case TILEOPS_INT64: return 8;
    case TILEOPS_UINT8: return 1;
    case TILEOPS_BOOL: return 1;
    default: return 0;
    }
}

const char *tileops_dtype_name(int dtype) {
    switch (dtype) {
    case TILEOPS_FLOAT32: return "float32";
    case TILEOPS_FLOAT16: return "float16";
    case TILEOPS_BFLOAT16: return "bfloat16";
    case TILEOPS_INT32: return "int32";
    case TILEOPS_INT64: return "int64";
    case TILEOPS_UINT8: return "uint8";
    case TILEOPS_BOOL: return "bool";
    default: return "unknown";
    }
}

float tileops_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        /* Infinity, or NaN with its payload kept in the top mantissa bits. */
        u = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        u = sign | ((exp + (127 - 15)) << 23) | (mant << 13);
    } else if (mant == 0) {
        u = sign;
    } else {
        /* Subnormal half: every one is a normal float, so shift the leading one up to
         * the implicit position and lower the exponent by as much. */
        int32_t e = 127 - 15 + 1;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            e--;
        }
        u = sign | ((uint32_t)e << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds m >> shift to nearest, ties to even (shift in 1..31). */
static uint32_t shift_round_even(uint32_t m, unsigned shift) {
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

uint16_t tileops_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: set the quiet bit as F16C does, keep the payload's top */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    /* 65520 is halfway between the largest half (65504) and 2^16: ties-to-even
     * rounds it, and everything above, to infinity. */
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) {
        /* Normal range: a carry out of the mantissa correctly bumps the exponent. */
        uint32_t r = shift_round_even(a, 13) - ((uint32_t)(127 - 15) << 10);
        return (uint16_t)(sign | r);
    }
    /* 2^-25 is halfway between 0 and the smallest subnormal; its tie goes to 0. */
    if (a <= 0x33000000u)
        return sign;
    /* Subnormal half: units of 2^-24. The value is mant * 2^(e-150), so the count of
     * units is mant >> (126 - e); rounding up to 0x400 yields the smallest normal. */
    uint32_t e = a >> 23;
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(mant, 126u - e));
}

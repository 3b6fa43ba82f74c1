/* tileops/dtype.h: element types the kernels understand, and the scalar conversions
 * shared by the CPU reference kernels and tests. The codes are part of the ABI with
 * the Python layer (src/tileops/_dtypes.py maps torch dtypes onto them). */
#ifndef TILEOPS_DTYPE_H
#define TILEOPS_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Codes are dense from 0 so tables can be indexed by them; the binding publishes every
 * code with its name (_C.DTYPE_CODES), so adding one here needs no Python edit. Integer
 * types exist for index and mask operands; a float-only kernel must check
 * tileops_dtype_is_float, not the range of codes. */
typedef enum tileops_dtype {
    TILEOPS_FLOAT32 = 0,
    TILEOPS_FLOAT16 = 1,
    TILEOPS_BFLOAT16 = 2,
    TILEOPS_INT32 = 3,
    TILEOPS_INT64 = 4,
    TILEOPS_UINT8 = 5,
    TILEOPS_BOOL = 6, /* one byte, 0 or 1, as torch.bool */
    TILEOPS_DTYPE_COUNT_ = 7
} tileops_dtype_t;

/* Size in bytes of one element, 0 for an unknown code. */
size_t tileops_dtype_size(int dtype);
/* The name as torch spells it ("float32", "int64", "bool", ...), or "unknown". */
const char *tileops_dtype_name(int dtype);

/* Whether a code is one of the floating-point types (float32, float16, bfloat16). */
static inline int tileops_dtype_is_float(int dtype) {
    return dtype == TILEOPS_FLOAT32 || dtype == TILEOPS_FLOAT16 || dtype == TILEOPS_BFLOAT16;
}

/* Scalar conversions, round-to-nearest-even, NaN and infinities preserved. */
static inline float tileops_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t tileops_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet, keep the sign */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tileops_f16_to_f32(uint16_t h);
uint16_t tileops_f32_to_f16(float f);

#endif /* TILEOPS_DTYPE_H */

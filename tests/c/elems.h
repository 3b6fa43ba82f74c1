/* tests/c/elems.h: element i of a float32 / float16 / bfloat16 buffer read as a float, and
 * written from one (rounded to nearest even), for the C tests' inputs and checks. */
#ifndef TILEOPS_TEST_ELEMS_H
#define TILEOPS_TEST_ELEMS_H

#include <stdint.h>

#include "tileops/dtype.h"

static inline float elem_get(const void *p, int64_t i, int dt) {
    if (dt == TILEOPS_FLOAT16) return tileops_f16_to_f32(((const uint16_t *)p)[i]);
    if (dt == TILEOPS_BFLOAT16) return tileops_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static inline void elem_put(void *p, int64_t i, int dt, float v) {
    if (dt == TILEOPS_FLOAT16) ((uint16_t *)p)[i] = tileops_f32_to_f16(v);
    else if (dt == TILEOPS_BFLOAT16) ((uint16_t *)p)[i] = tileops_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

#endif /* TILEOPS_TEST_ELEMS_H */

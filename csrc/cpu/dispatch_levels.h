/* cpu/dispatch_levels.h: private to the core - the per-instruction-set builds of a CPU
 * kernel file written over cpu/vec16.h, and the choice among them at run time.
 *
 * Such a file has two parts: `#ifndef VEC16_ISA` (everything but the vector code) and
 * `#else` (the vector code, its names written ISA(name)). Its first part includes this
 * header with its own path (from csrc/) defined, at the point the vector code must stand:
 *
 *     #define VEC16_SELF "ops/sampling/argmax.c"
 *     #include "cpu/dispatch_levels.h"
 *
 * which includes that file again once per instruction set the target has: VEC16_SCALAR
 * everywhere, VEC16_AVX2 and VEC16_AVX512 on x86, each pass defining name_scalar,
 * name_avx2, name_avx512 (the file #undefs VF, ISA, TGT and ISA_NAME after each pass, see
 * cpu/vec16.h). Then
 *
 *     VEC16_AT_LEVEL(level, name)
 *
 * is the address of the variant of the level (a tileops_simd_t, cpu/simd.h): &name_avx512,
 * &name_avx2, or &name_scalar for any other level and off x86; a function's address is its
 * pointer, a table's a pointer to it. `level` is read more than once: pass a variable. The
 * header may be included by several such files of one translation unit (it #undefs
 * VEC16_SELF). */
#include "cpu/simd.h"
#include "cpu/vec16.h"

#ifndef VEC16_SELF
#error "cpu/dispatch_levels.h: define VEC16_SELF as the including file's path from csrc/"
#endif
#ifdef VEC16_ISA
#error "cpu/dispatch_levels.h: include it from the file's first part (VEC16_ISA undefined)"
#endif

#define VEC16_ISA VEC16_SCALAR
#include VEC16_SELF
#undef VEC16_ISA
#if VEC16_X86
#define VEC16_ISA VEC16_AVX2
#include VEC16_SELF
#undef VEC16_ISA
#define VEC16_ISA VEC16_AVX512
#include VEC16_SELF
#undef VEC16_ISA
#endif
#undef VEC16_SELF

#ifndef TILEOPS_CPU_DISPATCH_LEVELS_H
#define TILEOPS_CPU_DISPATCH_LEVELS_H
#if VEC16_X86
#define VEC16_AT_LEVEL(level, name)                                                                \
    ((level) == TILEOPS_SIMD_AVX512 ? &name##_avx512 : (level) == TILEOPS_SIMD_AVX2 ? &name##_avx2 \
                                                                                    : &name##_scalar)
#else
#define VEC16_AT_LEVEL(level, name) ((void)(level), &name##_scalar)
#endif
#endif /* TILEOPS_CPU_DISPATCH_LEVELS_H */

/* cpu/simd.h: private to the core and its C tests (implemented in cpu/simd.c, used by
 * every op's CPU file) - which SIMD path the CPU kernels take, and a way for tests to
 * force a lower one so every path gets exercised on a machine that would otherwise only
 * ever run the best. */
#ifndef TILEOPS_CPU_SIMD_H
#define TILEOPS_CPU_SIMD_H

#include <stdatomic.h>

#include "tileops/status.h"

typedef enum tileops_simd {
    TILEOPS_SIMD_SCALAR = 0,
    TILEOPS_SIMD_AVX2 = 1,   /* AVX2 + FMA + F16C */
    TILEOPS_SIMD_AVX512 = 2  /* AVX-512 F + BW + VL (and the AVX2 set) */
} tileops_simd_t;

/* The best level this CPU (and OS) supports. */
int tileops_cpu_simd_detect(void);
/* The level kernels use now: the detected one unless overridden. */
int tileops_cpu_simd_active(void);
/* Forces a level for the whole process (tests only); -1 restores the detected one.
 * A level above the detected one is refused with TILEOPS_ERR_UNSUPPORTED. */
tileops_status_t tileops_cpu_simd_override(int level);
/* Whether a level is forced now: a kernel then takes it literally, without the speed
 * choices it makes on its own (they give the same bits, but tests ask for a path). */
int tileops_cpu_simd_overridden(void);
/* 1 on CPUs where fp16 rows in cache run faster through the AVX2 code than the AVX-512
 * code (AMD Zen 4: its 512-bit half conversions are slower than two 256-bit ones). Only
 * a speed hint: both paths of a kernel must give the same bits. */
int tileops_cpu_simd_f16_prefers_avx2(void);

/* 1 when the AVX-512 kernels round fp32 to bf16 by AVX512_BF16's VCVTNEPS2BF16 (one
 * instruction where the integer rounding takes nine; cpu/vec16.h's narrow, which takes
 * the integer path for a vector holding a subnormal, the one input the instruction
 * rounds differently: the same bits either way). Set by tileops_cpu_simd_detect; read
 * in the kernels' loops, so a plain flag. */
extern atomic_int tileops_cpu_bf16_cvt;
/* Tests: 0 turns the instruction off, 1 on where the CPU has it (else
 * TILEOPS_ERR_UNSUPPORTED), -1 back to what detection found. */
tileops_status_t tileops_cpu_simd_bf16_cvt_override(int on);

#endif /* TILEOPS_CPU_SIMD_H */

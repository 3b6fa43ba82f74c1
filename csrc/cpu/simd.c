/* simd.c: which SIMD path the CPU kernels of every op take, decided once per process
 * from the CPU's features, and the override tests use to run the lower paths.
 *
 * Shared by all ops so a process has one answer (what `tileops info` reports is what
 * every kernel does) and the CPU is probed once. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "tileops/cpu.h"
#include "cpu/simd.h"
#include "tileops/notes.h"

static atomic_int g_detected = -1;
static atomic_int g_override = -1;
static atomic_int g_f16_avx2 = 0;
static atomic_int g_bf16_cvt = 0; /* what detection found (under TILEOPS_CPU_SIMD's cap) */
static atomic_int g_noted = 0;     /* TILEOPS_CPU_SIMD's note given */
atomic_int tileops_cpu_bf16_cvt = 0;

#if defined(__x86_64__) || defined(__i386__)
/* Straight from CPUID and XGETBV rather than __builtin_cpu_supports: clang before 16
 * does not know "f16c", and the answer of the builtin depends on the compiler's runtime
 * library (one that does not fill in the CPU model says "no" to everything). */
#define CPUID_ECX1_FMA (1u << 12)
#define CPUID_ECX1_OSXSAVE (1u << 27)
#define CPUID_ECX1_AVX (1u << 28)
#define CPUID_ECX1_F16C (1u << 29)
#define CPUID_EBX7_AVX2 (1u << 5)
#define CPUID_EBX7_AVX512F (1u << 16)
#define CPUID_EBX7_AVX512BW (1u << 30)
#define CPUID_EBX7_AVX512VL (1u << 31)
#define CPUID_EAX7_1_AVX512BF16 (1u << 5)
#define XCR0_YMM 0x06u  /* SSE and AVX state saved by the OS */
#define XCR0_ZMM 0xe0u  /* opmask, upper ZMM halves, ZMM16-31 */

static unsigned xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return lo;
}

static int detect_x86(int *amd, int *bf16) {
    unsigned a, b, c, d;
    *amd = 0;
    *bf16 = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return TILEOPS_SIMD_SCALAR;
    unsigned max_leaf = a;
    /* "AuthenticAMD" in EBX, EDX, ECX */
    *amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;
    if (max_leaf < 7 || !__get_cpuid(1, &a, &b, &c, &d))
        return TILEOPS_SIMD_SCALAR;
    unsigned need1 = CPUID_ECX1_FMA | CPUID_ECX1_OSXSAVE | CPUID_ECX1_AVX | CPUID_ECX1_F16C;
    if ((c & need1) != need1)
        return TILEOPS_SIMD_SCALAR;
    unsigned xcr = xcr0();
    if ((xcr & XCR0_YMM) != XCR0_YMM)
        return TILEOPS_SIMD_SCALAR;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & CPUID_EBX7_AVX2))
        return TILEOPS_SIMD_SCALAR;
    unsigned need7 = CPUID_EBX7_AVX512F | CPUID_EBX7_AVX512BW | CPUID_EBX7_AVX512VL;
    if ((b & need7) == need7 && (xcr & XCR0_ZMM) == XCR0_ZMM) {
        if (a >= 1) { /* leaf 7's subleaf count */
            __cpuid_count(7, 1, a, b, c, d);
            *bf16 = (a & CPUID_EAX7_1_AVX512BF16) != 0;
        }
        return TILEOPS_SIMD_AVX512;
    }
    return TILEOPS_SIMD_AVX2;
}
#endif

/* TILEOPS_CPU_SIMD's names, lowest first: each allows what the ones before it do. */
static const char *const k_simd_names[] = {"scalar", "avx2", "avx512", "avx512_bf16"};
enum { SIMD_NAME_AVX512_BF16 = 3, SIMD_NAMES = 4 };

int tileops_cpu_parse_simd(const char *value, int hw_level, int hw_bf16, int *level, int *bf16, char *why,
                           size_t why_size) {
    *level = hw_level;
    *bf16 = hw_level == TILEOPS_SIMD_AVX512 && hw_bf16;
    if (why && why_size)
        why[0] = '\0';
    const int hw = *bf16 ? SIMD_NAME_AVX512_BF16 : hw_level;
    if (value == NULL)
        return 0;
    size_t b = strspn(value, " \t\n"), e = strlen(value);
    while (e > b && strchr(" \t\n", value[e - 1]))
        e--;
    if (e == b)
        return 0;
    int want = -1;
    for (int i = 0; i < SIMD_NAMES; i++)
        if (strlen(k_simd_names[i]) == e - b && strncasecmp(value + b, k_simd_names[i], e - b) == 0)
            want = i;
    if (want < 0) {
        if (why)
            snprintf(why, why_size, "TILEOPS_CPU_SIMD=%.64s is not one of scalar, avx2, avx512, avx512_bf16; "
                     "using %s (the best this CPU has)", value, k_simd_names[hw]);
        return 1;
    }
    if (want > hw) {
        if (why)
            snprintf(why, why_size, "TILEOPS_CPU_SIMD=%.64s is above what this CPU has; using %s", value,
                     k_simd_names[hw]);
        return 1;
    }
    *level = want == SIMD_NAME_AVX512_BF16 ? TILEOPS_SIMD_AVX512 : want;
    *bf16 = want == SIMD_NAME_AVX512_BF16;
    return 0;
}

int tileops_cpu_simd_detect(void) {
    int lvl = atomic_load_explicit(&g_detected, memory_order_relaxed);
    if (lvl >= 0)
        return lvl;
    int hw = TILEOPS_SIMD_SCALAR, hw_bf16 = 0, bf16 = 0;
#if defined(__x86_64__) || defined(__i386__)
    int amd;
    hw = detect_x86(&amd, &hw_bf16);
    /* Zen 4 converts 16 halves per 512-bit instruction more slowly than two 256-bit
     * ones; measured there, the AVX2 path is about 1.4x faster for fp16 rows in cache
     * (1 x 4096: 0.40 vs 0.56 us). */
    atomic_store_explicit(&g_f16_avx2, amd, memory_order_relaxed);
#endif
    /* TILEOPS_CPU_SIMD caps what the kernels use (as ATEN_CPU_CAPABILITY does torch's):
     * a lower CPU's paths, and their speed, on this one. A value it cannot honour is a
     * note, said once: detection runs once, the first to store wins. */
    char why[256];
    if (tileops_cpu_parse_simd(getenv("TILEOPS_CPU_SIMD"), hw, hw_bf16, &lvl, &bf16, why, sizeof why)) {
        if (!atomic_exchange(&g_noted, 1))
            tileops_note("tileops: %s", why);
    }
    atomic_store_explicit(&g_bf16_cvt, bf16, memory_order_relaxed);
    atomic_store_explicit(&tileops_cpu_bf16_cvt, bf16, memory_order_relaxed);
    atomic_store_explicit(&g_detected, lvl, memory_order_relaxed);
    return lvl;
}

int tileops_cpu_simd_active(void) {
    int o = atomic_load_explicit(&g_override, memory_order_relaxed);
    return o >= 0 ? o : tileops_cpu_simd_detect();
}

int tileops_cpu_simd_overridden(void) {
    return atomic_load_explicit(&g_override, memory_order_relaxed) >= 0;
}

int tileops_cpu_simd_f16_prefers_avx2(void) {
    tileops_cpu_simd_detect();
    return atomic_load_explicit(&g_f16_avx2, memory_order_relaxed);
}

tileops_status_t tileops_cpu_simd_override(int level) {
    if (level < -1 || level > TILEOPS_SIMD_AVX512)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT,
                            "simd_override: level must be -1, 0, 1 or 2, got %d", level);
    if (level > tileops_cpu_simd_detect())
        return tileops_fail(TILEOPS_ERR_UNSUPPORTED,
                            "simd_override: level %d is above what this CPU supports (%d)",
                            level, tileops_cpu_simd_detect());
    atomic_store(&g_override, level);
    return TILEOPS_OK;
}

tileops_status_t tileops_cpu_simd_bf16_cvt_override(int on) {
    if (on < -1 || on > 1)
        return tileops_fail(TILEOPS_ERR_INVALID_ARGUMENT, "simd_bf16_cvt_override: expected -1, 0 or 1, got %d", on);
    tileops_cpu_simd_detect();
    const int have = atomic_load_explicit(&g_bf16_cvt, memory_order_relaxed);
    if (on == 1 && !have)
        return tileops_fail(TILEOPS_ERR_UNSUPPORTED, "simd_bf16_cvt_override: this CPU has no AVX512_BF16");
    atomic_store(&tileops_cpu_bf16_cvt, on < 0 ? have : on);
    return TILEOPS_OK;
}

const char *tileops_cpu_simd_level(void) {
    switch (tileops_cpu_simd_active()) {
    case TILEOPS_SIMD_AVX512:
        return atomic_load_explicit(&tileops_cpu_bf16_cvt, memory_order_relaxed) ? "avx512_bf16" : "avx512";
    case TILEOPS_SIMD_AVX2: return "avx2";
    default: return "scalar";
    }
}

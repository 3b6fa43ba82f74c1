/* test_cpu_simd.c: the SIMD level the core detects agrees with the CPU flags the kernel
 * reports in /proc/cpuinfo (which leave out what the OS does not enable), whatever
 * compiler and compiler runtime built the core: a detection that depends on the runtime
 * filling in the CPU model would silently fall to the scalar path. Also the override
 * rules: no level above the detected one, -1 restores it; TILEOPS_CPU_SIMD's cap;
 * AVX512_BF16 found as the flags say, and the AVX-512 narrow giving the integer
 * rounding's bits with VCVTNEPS2BF16 on. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/simd.h"
#include "cpu/vec16.h"
#include "tileops/cpu.h"
#include "check.h"

#if VEC16_X86
/* AVX2's 16-lane bf16 rounding, stored and kept in registers (both skip the NaN rule where
 * no lane is NaN: one test for 16 lanes) */
#define VEC16_ISA VEC16_AVX2
#include "cpu/vec16.h"
static TGT void avx2_bf16(const uint32_t *u, int m, uint16_t *stored, uint32_t *rounded) {
    VF v = ISA(vload)(u, 0, F32);
    (void)ISA(vstore_n)(stored, 0, BF16, v, m);
    VF r = ISA(vround)(v, BF16);
    _mm256_storeu_ps((float *)rounded, r.lo);
    _mm256_storeu_ps((float *)rounded + 8, r.hi);
}
#undef VF
#undef ISA
#undef TGT
#undef ISA_NAME
#undef VEC16_ISA
#define VEC16_ISA VEC16_AVX512
#include "cpu/vec16.h"
#endif

/* Whether the "flags" line of the first processor in /proc/cpuinfo lists `flag`; -1 when
 * the file or the line cannot be read. */
static int cpuinfo_has(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    static char line[1 << 16];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 0;
        for (char *tok = strtok(strchr(line, ':') + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
            if (strcmp(tok, flag) == 0)
                found = 1;
        break;
    }
    fclose(f);
    return found;
}

static void test_detection_matches_cpuinfo(void) {
#if defined(__x86_64__) || defined(__i386__)
    const char *avx2_set[] = {"avx", "avx2", "fma", "f16c"};
    const char *avx512_set[] = {"avx512f", "avx512bw", "avx512vl"};
    int have2 = 1, have512 = 1;
    for (size_t i = 0; i < sizeof avx2_set / sizeof *avx2_set; i++) {
        int h = cpuinfo_has(avx2_set[i]);
        if (h < 0) {
            printf("no flags line in /proc/cpuinfo: detection not compared\n");
            return;
        }
        have2 &= h;
    }
    for (size_t i = 0; i < sizeof avx512_set / sizeof *avx512_set; i++)
        have512 &= cpuinfo_has(avx512_set[i]) == 1;
    int expected = !have2 ? TILEOPS_SIMD_SCALAR : have512 ? TILEOPS_SIMD_AVX512 : TILEOPS_SIMD_AVX2;
    int got = tileops_cpu_simd_detect();
    printf("detected %s; /proc/cpuinfo has the AVX2 set: %s, the AVX-512 set: %s\n",
           tileops_cpu_simd_level(), have2 ? "yes" : "no", have512 ? "yes" : "no");
    CHECK(got == expected, "detected level %d, /proc/cpuinfo says %d", got, expected);
#else
    CHECK(tileops_cpu_simd_detect() == TILEOPS_SIMD_SCALAR, "not x86: scalar");
#endif
}

static void test_override_rules(void) {
    int best = tileops_cpu_simd_detect();
    CHECK(tileops_cpu_simd_override(best + 1) != TILEOPS_OK || best == TILEOPS_SIMD_AVX512,
          "a level above the detected one is refused");
    CHECK(tileops_cpu_simd_override(TILEOPS_SIMD_SCALAR) == TILEOPS_OK, "scalar can always be forced");
    CHECK(tileops_cpu_simd_active() == TILEOPS_SIMD_SCALAR && tileops_cpu_simd_overridden(),
          "the forced level is active");
    CHECK(strcmp(tileops_cpu_simd_level(), "scalar") == 0, "its name");
    CHECK(tileops_cpu_simd_override(-1) == TILEOPS_OK && tileops_cpu_simd_active() == best &&
              !tileops_cpu_simd_overridden(),
          "-1 restores the detected level");
    CHECK(tileops_cpu_simd_override(-2) != TILEOPS_OK, "-2 is refused");
}

#if VEC16_X86
/* The 16 bf16 words narrow gives for the 16 floats whose bits are u[], through the
 * instruction (on = 1) or the integer rounding (on = 0). */
static TGT void narrow16(const uint32_t *u, int on, uint16_t *out) {
    tileops_cpu_simd_bf16_cvt_override(on);
    _mm256_storeu_si256((__m256i *)out, ISA(narrow)(_mm512_loadu_ps((const float *)u), BF16));
}

static TGT int instruction_reads_subnormals_as_zero(void) {
    const uint32_t u[16] = {0x00400000u, 0x80000001u}; /* 2^-127, -2^-149 */
    uint16_t h[16];
    __m256i r;
    __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(_mm512_loadu_ps((const float *)u)));
    _mm256_storeu_si256((__m256i *)h, r);
    return h[0] == 0 && h[1] == 0x8000;
}
#endif

/* TILEOPS_CPU_SIMD: a name (any case, blanks around it) caps the CPU's level; unset or
 * blank leaves it; an unknown name or one above the CPU is said (why) and leaves it. */
static void test_parse_simd(void) {
    static const struct {
        const char *value;
        int hw, hw_bf16, level, bf16, noted;
    } cases[] = {
        {NULL, 2, 1, 2, 1, 0},          {"", 2, 1, 2, 1, 0},           {" \t", 1, 0, 1, 0, 0},
        {"avx2", 2, 1, 1, 0, 0},        {" AVX512 ", 2, 1, 2, 0, 0},   {"avx512_bf16", 2, 1, 2, 1, 0},
        {"scalar", 2, 1, 0, 0, 0},      {"Scalar", 0, 0, 0, 0, 0},     {"avx512_bf16", 2, 0, 2, 0, 1},
        {"avx512", 1, 0, 1, 0, 1},      {"avx2", 0, 0, 0, 0, 1},       {"sse4", 2, 1, 2, 1, 1},
        {"avx", 1, 0, 1, 0, 1},         {"avx2x", 1, 0, 1, 0, 1},      {"avx2", 1, 1, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char why[256] = "unset";
        int level = -1, bf16 = -1;
        int noted = tileops_cpu_parse_simd(cases[i].value, cases[i].hw, cases[i].hw_bf16, &level, &bf16, why,
                                           sizeof why);
        CHECK(noted == cases[i].noted && level == cases[i].level && bf16 == cases[i].bf16,
              "TILEOPS_CPU_SIMD='%s' on level %d (bf16 %d): got level %d bf16 %d noted %d, expected %d %d %d",
              cases[i].value ? cases[i].value : "(unset)", cases[i].hw, cases[i].hw_bf16, level, bf16, noted,
              cases[i].level, cases[i].bf16, cases[i].noted);
        CHECK(noted ? strstr(why, "TILEOPS_CPU_SIMD=") != NULL && strstr(why, "using ") != NULL : why[0] == '\0',
              "case %zu's reason '%s'", i, why);
    }
}

/* AVX2's bf16 rounding against the scalar rule, lane by lane: NaNs whose low half would
 * carry into the top one without the NaN rule (0x7fffffff would round to -0, the
 * signaling 0x7f80ffff to +inf), each alone among finite lanes, in either half, and
 * vectors without a NaN (ties, infinities, subnormals); partial stores too. */
static void test_avx2_bf16_nan(void) {
#if VEC16_X86
    if (tileops_cpu_simd_detect() < TILEOPS_SIMD_AVX2) {
        printf("no AVX2 here: its bf16 rounding not run\n");
        return;
    }
    static const uint32_t nans[] = {0x7fffffffu, 0xffffffffu, 0x7f80ffffu, 0xff808000u, 0x7fc00000u,
                                    0x7f800001u, 0x7fbfffffu, 0xffc0ffffu};
    static const uint32_t finite[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x7f800000u,
                                      0x0000ffffu, 0x80018000u, 0xc2f6ff01u};
    long bad = 0;
    for (int nan = -1; nan < (int)(sizeof nans / sizeof *nans); nan++)
        for (int lane = 0; lane < 16; lane++)
            for (int m = 16; m >= 1; m -= 5) {
                uint32_t u[16], rounded[16];
                uint16_t stored[16];
                for (int k = 0; k < 16; k++)
                    u[k] = finite[(k + lane) % 8] ^ (uint32_t)(k & 1) << 31;
                if (nan >= 0)
                    u[lane] = nans[nan];
                for (int k = 0; k < 16; k++)
                    stored[k] = 0xdead;
                avx2_bf16(u, m, stored, rounded);
                for (int k = 0; k < 16; k++) {
                    float f;
                    memcpy(&f, &u[k], sizeof f);
                    const uint16_t want = tileops_f32_to_bf16(f);
                    bad += stored[k] != (k < m ? want : 0xdead) || rounded[k] != (uint32_t)want << 16;
                }
            }
    CHECK(bad == 0, "AVX2 bf16 rounding: %ld lanes differ from tileops_f32_to_bf16", bad);
#endif
}

/* Every upper half (sign, exponent, 7 mantissa bits) with 16 lower halves that meet every
 * rounding case (ties both ways, just below and above, odd and even kept bits); NaNs,
 * infinities and subnormals among them, each vector of one upper half so a subnormal one
 * takes the integer path, and vectors of normals with one subnormal lane. */
static void test_bf16_cvt(void) {
#if VEC16_X86
    tileops_cpu_simd_detect(); /* sets tileops_cpu_bf16_cvt */
    /* /proc/cpuinfo naming the flag (with the AVX-512 level) means detection must find it;
     * a kernel too old to name it says nothing either way */
    const int listed = cpuinfo_has("avx512_bf16") == 1 && tileops_cpu_simd_detect() == TILEOPS_SIMD_AVX512;
    CHECK(!listed || tileops_cpu_bf16_cvt, "/proc/cpuinfo lists avx512_bf16, detection did not find it");
    CHECK(tileops_cpu_bf16_cvt == 0 || tileops_cpu_simd_detect() == TILEOPS_SIMD_AVX512,
          "AVX512_BF16 used below the AVX-512 level");
    const int have = tileops_cpu_bf16_cvt;
    CHECK((tileops_cpu_simd_bf16_cvt_override(1) == TILEOPS_OK) == have, "on: allowed only with the instruction");
    CHECK(tileops_cpu_simd_bf16_cvt_override(2) != TILEOPS_OK, "2 is refused");
    if (!have) {
        printf("no AVX512_BF16 here: the instruction path not compared\n");
        tileops_cpu_simd_bf16_cvt_override(-1);
        return;
    }
    CHECK(instruction_reads_subnormals_as_zero(), "VCVTNEPS2BF16 rounds 2^-127 and -2^-149 to +-0 (why the "
          "integer path takes subnormals)");
    static const uint16_t lows[16] = {0x0000, 0x0001, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff,
                                      0x4000, 0xc000, 0x7f00, 0x80ff, 0x1234, 0xedcb, 0x8fff, 0x00ff};
    long bad = 0;
    for (uint32_t hi = 0; hi < 0x10000u; hi++) {
        uint32_t u[16];
        uint16_t a[16], b[16];
        for (int k = 0; k < 16; k++)
            u[k] = hi << 16 | lows[k];
        narrow16(u, 1, a);
        narrow16(u, 0, b);
        bad += memcmp(a, b, sizeof a) != 0;
        u[hi % 16] = (hi & 0x8000u) << 16 | (hi & 0x7fu) << 16 | lows[hi % 16]; /* one lane subnormal or 0 */
        narrow16(u, 1, a);
        narrow16(u, 0, b);
        bad += memcmp(a, b, sizeof a) != 0;
    }
    CHECK(bad == 0, "%ld vectors narrowed by VCVTNEPS2BF16 differ from the integer rounding", bad);
    tileops_cpu_simd_bf16_cvt_override(-1);
#endif
}

int main(void) {
    unsetenv("TILEOPS_CPU_SIMD"); /* detection, read once, compared with the CPU's own flags */
    test_parse_simd();
    test_detection_matches_cpuinfo();
    test_override_rules();
    test_bf16_cvt();
    test_avx2_bf16_nan();
    return check_summary();
}

/* test_cpu_simd.c: the SIMD level the core detects agrees with the CPU flags the kernel
 * reports in /proc/cpuinfo (which leave out what the OS does not enable), whatever
 * compiler and compiler runtime built the core: a detection that depends on the runtime
 * filling in the CPU model would silently fall to the scalar path. Also the override
 * rules: no level above the detected one, -1 restores it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/simd.h"
#include "tileops/cpu.h"
#include "check.h"

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

int main(void) {
    test_detection_matches_cpuinfo();
    test_override_rules();
    return check_summary();
}

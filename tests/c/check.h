/* tests/c/check.h: the counting CHECK of the C test programs. A failed check prints its
 * file, line and message and the program goes on; check_summary() prints the closing
 * line "N passed, M failed" and returns the exit status. */
#ifndef TILEOPS_TEST_CHECK_H
#define TILEOPS_TEST_CHECK_H

#include <stdio.h>

static int g_pass, g_fail;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (cond) {                                        \
            g_pass++;                                      \
        } else {                                           \
            g_fail++;                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
        }                                                  \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}

#endif /* TILEOPS_TEST_CHECK_H */

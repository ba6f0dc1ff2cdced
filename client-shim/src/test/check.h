/* A minimal assertion harness for the C tests: counts checks and ends with the plain
 * "N passed, N failed" line that CI reads. */
#ifndef VMC_CHECK_H
#define VMC_CHECK_H
#include <stdio.h>

static int checks_passed, checks_failed;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (cond) {                                              \
            checks_passed++;                                     \
        } else {                                                 \
            checks_failed++;                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
            printf(__VA_ARGS__);                                 \
            printf("\n");                                        \
        }                                                        \
    } while (0)

static inline int check_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, checks_passed, checks_failed);
    return checks_failed ? 1 : 0;
}
#endif

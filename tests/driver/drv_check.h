/* What the small driver-API test programs (drv_hostmap.c, drv_threads.c) share: a call that must succeed
 * (else its error's name and exit 2), and a value check printed as "what: ok" or "what: WRONG". */
#ifndef DRV_CHECK_H
#define DRV_CHECK_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult e_ = (call);                                                                      \
        if (e_ != CUDA_SUCCESS) {                                                                  \
            const char *n_ = "?";                                                                  \
            cuGetErrorName(e_, &n_);                                                               \
            printf("%s: %s\n", #call, n_);                                                         \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static void check(int ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok)
        failures++;
}

#endif

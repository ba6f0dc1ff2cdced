/* What the small driver-API test programs (drv_hostmap.c, drv_threads.c) share: a call that must succeed
 * (else its error's name and exit 2), a value check printed as "what: ok" or "what: WRONG", and where their
 * kernels are. */
#ifndef DRV_CHECK_H
#define DRV_CHECK_H

#include <cuda.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* cuInit, then device 0's primary context current on this thread: how these programs start. */
__attribute__((unused)) static CUcontext use_primary_context(void) {
    CUdevice dev;
    CUcontext ctx;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    return ctx;
}

static void check(int ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok)
        failures++;
}

#ifndef DRV_CHECK_NO_KERNELS
/* The path of drv_kernels.cubin, which is built beside the program. */
static const char *kernels_cubin(char *argv0) {
    static char self[4096], path[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    snprintf(path, sizeof path, "%s/drv_kernels.cubin", n > 0 ? dirname(self) : dirname(argv0));
    return path;
}
#endif

#endif

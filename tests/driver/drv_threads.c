/* Two threads take turns launching onto one stream through the driver API, handing a token to each other
 * between launches (PyTorch's forward and autograd threads do this on one stream). CUDA runs a stream's work
 * in the order it was issued, so the log the kernel keeps must alternate exactly. Through vmcuda each thread
 * has its own connection; the worker keeps the client's order across them (PROTOCOL.md "Calls from several
 * threads"). CI runs it against the stand-in driver, whose launches run when the worker dispatches them. */
#include "drv_check.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 2000

static CUcontext ctx;
static CUfunction append;
static CUstream stream;
static CUdeviceptr dlog;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;

static void take_turns(int me, int sign) {
    for (int i = 1; i <= ROUNDS; i++) {
        pthread_mutex_lock(&lock);
        while (turn != me)
            pthread_cond_wait(&turn_changed, &lock);
        pthread_mutex_unlock(&lock);
        int v = sign * i;
        void *args[] = {&dlog, &v};
        CU(cuLaunchKernel(append, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
        pthread_mutex_lock(&lock);
        turn = !me;
        pthread_cond_broadcast(&turn_changed);
        pthread_mutex_unlock(&lock);
    }
}

static void *other(void *arg) {
    (void)arg;
    CU(cuCtxSetCurrent(ctx));
    take_turns(1, -1);
    return NULL;
}

int main(int argc, char **argv) {
    (void)argc;
    const char *path = kernels_cubin(argv[0]);
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CUmodule module;
    CU(cuModuleLoad(&module, path));
    CU(cuModuleGetFunction(&append, module, "append"));
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU(cuMemAlloc_v2(&dlog, (1 + 2 * ROUNDS) * sizeof(int)));
    CU(cuMemsetD32_v2(dlog, 0, 1 + 2 * ROUNDS));
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    take_turns(0, 1);
    pthread_join(t, NULL);
    CU(cuStreamSynchronize(stream));
    static int log[1 + 2 * ROUNDS];
    CU(cuMemcpyDtoH_v2(log, dlog, sizeof log));
    int first_wrong = -1;
    for (int k = 0; k < 2 * ROUNDS && first_wrong < 0; k++)
        if (log[1 + k] != (k % 2 == 0 ? k / 2 + 1 : -(k / 2 + 1)))
            first_wrong = k;
    printf("launches that ran: %d of %d\n", log[0], 2 * ROUNDS);
    check(first_wrong < 0, "launches of two threads in the order they were issued");
    if (first_wrong >= 0)
        fprintf(stderr, "drv_threads: first out of order at %d\n", first_wrong);
    CU(cuMemFree_v2(dlog));
    CU(cuStreamDestroy_v2(stream));
    CU(cuModuleUnload(module));
    CU(cuDevicePrimaryCtxRelease_v2(dev));
    return failures == 0 && log[0] == 2 * ROUNDS ? 0 : 1;
}

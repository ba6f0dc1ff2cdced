/* A program that forks after it has used the GPU (a pre-fork server, Python's multiprocessing with "fork"):
 * the child's CUDA calls fail, as CUDA's do in such a child, and the parent goes on undisturbed, its copies
 * intact, also while the child tries. Through vmcuda the child must not write into the parent's connections
 * (with calls through shared memory the two would overwrite each other's bytes) and must not keep the worker
 * from seeing the parent go. CI runs it against the stand-in driver, the GPU scripts natively and through
 * vmcuda. */
#define DRV_CHECK_NO_KERNELS
#include "drv_check.h"
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

enum { N = 1 << 16 };

/* Copies a pattern to the device and back `rounds` times: 1 when every byte came back. */
static int round_trips(CUdeviceptr d, int rounds) {
    static unsigned char out[N], in[N];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++)
            out[i] = (unsigned char)(i * 7 + r);
        CU(cuMemcpyHtoD_v2(d, out, N));
        memset(in, 0, N);
        CU(cuMemcpyDtoH_v2(in, d, N));
        if (memcmp(in, out, N) != 0)
            return 0;
    }
    return 1;
}

int main(void) {
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent_v2(ctx));
    CUdeviceptr d;
    CU(cuMemAlloc_v2(&d, N));
    check(round_trips(d, 3), "copies before the fork");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        CUdeviceptr x = 0;
        CUresult a = cuMemAlloc_v2(&x, 4096);
        _exit(a != CUDA_SUCCESS ? 0 : 1); /* its verdict in its exit code: one writer of stdout */
    }
    check(round_trips(d, 200), "the parent's copies while the child tries");
    int status = 0;
    waitpid(child, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's allocation fails");
    check(round_trips(d, 3), "copies after the child is gone");
    CU(cuMemFree_v2(d));
    CU(cuCtxPopCurrent_v2(NULL));
    CU(cuDevicePrimaryCtxRelease_v2(dev));
    printf("%s\n", failures ? "drv_fork: FAIL" : "drv_fork: PASS");
    return failures ? 1 : 0;
}

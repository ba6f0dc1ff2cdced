// A hostile tenant past its memory quota: the program's static constructor, which runs inside the worker on
// the appliance, opens NVIDIA's driver itself and allocates 2 GiB of device memory there, where the worker
// library's count does not see it. The daemon's own check (worker.quota_check_s: it reads each worker's GPU
// memory from the driver) must kill the session: main, on the client, then sees its calls fail with
// cudaErrorDevicesUnavailable after "lost the appliance session". The kernel, never launched, makes the
// executable a shipped program whose constructors run on the appliance. Usage: quota_bypass [SECONDS]
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void unused(int *p) { *p = 0; }

typedef int (*init_fn)(unsigned);
typedef int (*device_get_fn)(int *, int);
typedef int (*retain_fn)(void **, int);
typedef int (*set_current_fn)(void *);
typedef int (*alloc_fn)(unsigned long long *, size_t);

__attribute__((constructor)) static void grab_past_the_quota(void) {
    if (!getenv("VMCUDA_SESSION_ID")) return; /* on the client: nothing to grab */
    void *drv = dlopen("libcuda.so.1", RTLD_NOW);
    if (!drv) return;
    int dev = 0;
    void *ctx = NULL;
    unsigned long long ptr = 0;
    int r = ((init_fn)dlsym(drv, "cuInit"))(0);
    if (!r) r = ((device_get_fn)dlsym(drv, "cuDeviceGet"))(&dev, 0);
    if (!r) r = ((retain_fn)dlsym(drv, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
    if (!r) r = ((set_current_fn)dlsym(drv, "cuCtxSetCurrent"))(ctx);
    if (!r) r = ((alloc_fn)dlsym(drv, "cuMemAlloc_v2"))(&ptr, (size_t)2 << 30);
    fprintf(stderr, "quota_bypass: 2 GiB straight from the driver in the worker: %s\n", r ? "refused" : "allocated");
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 20;
    void *p = NULL;
    printf("cudaMalloc 64 MiB: %s\n", cudaGetErrorName(cudaMalloc(&p, 64 << 20)));
    cudaError_t last = cudaSuccess;
    for (int i = 0; i < seconds * 4; i++) {
        usleep(250000);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != last) printf("after %.2f s: %s\n", (i + 1) / 4.0, cudaGetErrorName(e));
        last = e;
        if (e != cudaSuccess) break;
    }
    if (last == cudaSuccess) printf("still running after %d s\n", seconds);
    fflush(stdout);
    return 0;
}

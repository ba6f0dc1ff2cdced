/* Mapped host memory through the driver API, the way zero-copy programs use it: memory allocated mapped
 * (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP) and memory of the program's own registered as mapped
 * (cuMemHostRegister with CU_MEMHOSTREGISTER_DEVICEMAP), written by a kernel through the address
 * cuMemHostGetDevicePointer gives, read by the host with no copy; the registered memory keeps its contents
 * when registered and unregistered. Through vmcuda this needs the co-located path (over TCP it is refused),
 * so the test scripts run it co-located only; CI runs it against the stand-in driver. */
#include "drv_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fill(p, n, v): p[i] = v + i, one thread per element */
static void fill(CUfunction f, CUdeviceptr p, int n, float v) {
    void *args[] = {&p, &n, &v};
    CU(cuLaunchKernel(f, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL));
    CU(cuCtxSynchronize());
}

static int filled(const float *p, int n, float v) {
    for (int i = 0; i < n; i++)
        if (p[i] != v + (float)i)
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    (void)argc;
    const char *path = kernels_cubin(argv[0]);

    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    int can_map = 0;
    CU(cuDeviceGetAttribute(&can_map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
    check(can_map == 1, "the device can map host memory");
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent_v2(ctx));
    CUmodule module;
    CU(cuModuleLoad(&module, path));
    CUfunction f;
    CU(cuModuleGetFunction(&f, module, "fill"));

    /* allocated mapped */
    enum { N = 1 << 16 };
    float *m = NULL;
    CU(cuMemHostAlloc((void **)&m, N * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr dm = 0, inside = 0;
    CU(cuMemHostGetDevicePointer_v2(&dm, m, 0));
    CU(cuMemHostGetDevicePointer_v2(&inside, m + 100, 0));
    check(inside == dm + 100 * sizeof(float), "the device address of an address inside mapped memory");
    fill(f, dm, N, 1.0f);
    check(filled(m, N, 1.0f), "a kernel wrote allocated mapped memory");
    fill(f, dm + 8 * sizeof(float), 8, 100.0f);
    check(m[7] == 8.0f && m[8] == 100.0f && m[15] == 107.0f && m[16] == 17.0f, "a kernel wrote part of it");
    CU(cuMemFreeHost(m));

    /* the program's own memory, registered mapped: it keeps what it held */
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *raw = malloc(N * sizeof(float) + 3 * (size_t)page);
    float *r = (float *)(((uintptr_t)raw + (uintptr_t)page) & ~(uintptr_t)(page - 1));
    unsigned char *before = (unsigned char *)r - 1; /* the byte before the range, on another page */
    *before = 0x5a;
    for (int i = 0; i < N; i++)
        r[i] = -(float)i;
    CU(cuMemHostRegister_v2(r, N * sizeof(float), CU_MEMHOSTREGISTER_DEVICEMAP));
    check(filled(r, N, 0.0f) == 0 && r[5] == -5.0f && r[N - 1] == -(float)(N - 1) && *before == 0x5a,
          "registered memory keeps its contents");
    check(cuMemHostRegister_v2(r + 16, 64, CU_MEMHOSTREGISTER_DEVICEMAP) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
          "registering part of it again is refused");
    CUdeviceptr dr = 0;
    CU(cuMemHostGetDevicePointer_v2(&dr, r, 0));
    fill(f, dr, N, 5.0f);
    check(filled(r, N, 5.0f) && *before == 0x5a, "a kernel wrote registered mapped memory");
    r[0] = 42.0f; /* the host writes, the GPU reads: a device-to-device copy of it */
    CUdeviceptr copy;
    CU(cuMemAlloc_v2(&copy, sizeof(float)));
    CU(cuMemcpyDtoD_v2(copy, dr, sizeof(float)));
    float back = 0;
    CU(cuMemcpyDtoH_v2(&back, copy, sizeof back));
    check(back == 42.0f, "the GPU read what the host wrote");
    CU(cuMemFree_v2(copy));
    CU(cuMemHostUnregister(r));
    check(cuMemHostUnregister(r) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "unregistering twice is refused");
    check(r[0] == 42.0f && r[1] == 6.0f && r[N - 1] == 5.0f + (float)(N - 1), "unregistered memory keeps its contents");
    r[2] = 7.5f;
    check(r[2] == 7.5f, "and stays writable");
    free(raw);

    /* managed memory: one pointer for the host and for kernels */
    float *u = NULL;
    CU(cuMemAllocManaged((CUdeviceptr *)&u, N * sizeof(float), CU_MEM_ATTACH_GLOBAL));
    for (int i = 0; i < N; i++)
        u[i] = -1.0f;
    CUmemLocation on_gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CU(cuMemAdvise_v2((CUdeviceptr)u, N * sizeof(float), CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_gpu));
    CU(cuMemPrefetchAsync_v2((CUdeviceptr)u, N * sizeof(float), on_gpu, 0, 0));
    fill(f, (CUdeviceptr)u, N, 3.0f);
    check(filled(u, N, 3.0f), "a kernel wrote managed memory the host reads");
    int is_managed = 0;
    CU(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)(u + 10)));
    check(is_managed == 1, "the driver calls it managed");
    u[1] = 11.0f;
    CU(cuMemcpyDtoH_v2(&back, (CUdeviceptr)(u + 1), sizeof back));
    check(back == 11.0f, "a copy from it sees what the host wrote");
    CU(cuMemFree_v2((CUdeviceptr)u));

    CU(cuModuleUnload(module));
    CU(cuCtxPopCurrent_v2(NULL));
    CU(cuDevicePrimaryCtxRelease_v2(dev));
    printf("%s\n", failures ? "drv_hostmap: FAIL" : "drv_hostmap: PASS");
    return failures ? 1 : 0;
}

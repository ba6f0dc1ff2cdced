// Device management and version queries.
#include "vmc_check.h"
#include <string.h>

__global__ void touch(int *p) { *p = 42; }

int main()
{
    // Version queries first: they need no GPU, so even a GPU-less run prints them.
    int runtime = 0, driver = 0;
    CK(cudaRuntimeGetVersion(&runtime));
    printf("runtime version: %d.%d\n", runtime / 1000, (runtime % 1000) / 10);
    CK(cudaDriverGetVersion(&driver));
    printf("driver version >= runtime version: %s\n", driver >= runtime ? "yes" : "no");

    int count = 0;
    CK(cudaGetDeviceCount(&count));
    vmc_check(count >= 1, "device count", "at least one device: %s", count >= 1 ? "yes" : "no");

    CK(cudaSetDevice(0));
    int dev = -1;
    CK(cudaGetDevice(&dev));
    vmc_check(dev == 0, "cudaGetDevice", "%d", dev);

    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("name: %s\n", prop.name);
    printf("compute capability: %d.%d\n", prop.major, prop.minor);
    vmc_check(prop.totalGlobalMem > 0, "totalGlobalMem", "> 0: %s", prop.totalGlobalMem > 0 ? "yes" : "no");
    printf("multiProcessorCount: %d\n", prop.multiProcessorCount);
    printf("warpSize: %d maxThreadsPerBlock: %d\n", prop.warpSize, prop.maxThreadsPerBlock);

    // Attributes must agree with the properties structure.
    int sms = 0, major = 0, minor = 0, maxThreads = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    CK(cudaDeviceGetAttribute(&maxThreads, cudaDevAttrMaxThreadsPerBlock, 0));
    vmc_check(sms == prop.multiProcessorCount, "attribute MultiProcessorCount", "%d", sms);
    vmc_check(major == prop.major && minor == prop.minor, "attribute ComputeCapability", "%d.%d", major, minor);
    vmc_check(maxThreads == prop.maxThreadsPerBlock, "attribute MaxThreadsPerBlock", "%d", maxThreads);
    CK_EXPECT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, count), cudaErrorInvalidDevice);
    CK_EXPECT(cudaSetDevice(count), cudaErrorInvalidDevice);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidDevice); // failed calls also set the last error
    CK(cudaGetDevice(&dev));
    vmc_check(dev == 0, "device unchanged after invalid cudaSetDevice", "%d", dev);

    // Flags can be changed on the active primary context since CUDA 11.
    CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    unsigned int flags = 0;
    CK(cudaGetDeviceFlags(&flags));
    vmc_check((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync,
              "cudaGetDeviceFlags", "schedule = BlockingSync: %s",
              (flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync ? "yes" : "no");

    int *d = NULL, h = 0;
    CK(cudaMalloc(&d, sizeof(int)));
    touch<<<1, 1>>>(d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    vmc_check(h == 42, "kernel before reset", "%d", h);
    CK(cudaFree(d));

    // After a reset the device must be usable again (a fresh primary context).
    CK(cudaDeviceReset());
    d = NULL;
    h = 0;
    CK(cudaMalloc(&d, sizeof(int)));
    touch<<<1, 1>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    vmc_check(h == 42, "kernel after cudaDeviceReset", "%d", h);
    CK(cudaFree(d));
    CK(cudaDeviceSynchronize());
    return vmc_finish("device");
}

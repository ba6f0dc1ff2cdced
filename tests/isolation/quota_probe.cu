// Allocates MIB MiB in steps of STEP MiB until an allocation fails, frees everything and allocates
// again: with a tenant quota (tenant.NAME.max_memory_bytes) the failure is cudaErrorMemoryAllocation at
// the quota, and freeing gives the quota back. Usage: quota_probe [MIB] [STEP]
// As a hostile tenant would, its static constructor (which runs in the worker on the appliance) removes
// VMCUDA_MEMORY_QUOTA from the environment before any CUDA call; the quota must hold all the same. The
// kernel, never launched, makes the executable a shipped program whose constructors run there.
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

__global__ void unused(int *p) { *p = 0; }

__attribute__((constructor)) static void drop_the_quota(void) { unsetenv("VMCUDA_MEMORY_QUOTA"); }

int main(int argc, char **argv)
{
    long total = argc > 1 ? atol(argv[1]) : 1024, step = argc > 2 ? atol(argv[2]) : 64;
    void *p[4096];
    int n = 0;
    cudaError_t e = cudaSuccess;
    long got = 0;
    while (got < total && n < 4096) {
        e = cudaMalloc(&p[n], (size_t)step << 20);
        if (e != cudaSuccess) break;
        n++;
        got += step;
    }
    printf("allocated %ld MiB, then: %s (last error %s)\n", got, cudaGetErrorName(e), cudaGetErrorName(cudaGetLastError()));
    for (int i = 0; i < n; i++) cudaFree(p[i]);
    e = cudaMalloc(&p[0], (size_t)step << 20);
    printf("after freeing: %s\n", cudaGetErrorName(e));
    if (e == cudaSuccess) cudaFree(p[0]);
    return 0;
}

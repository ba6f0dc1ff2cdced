// Allocates MIB MiB in steps of STEP MiB until an allocation fails, frees everything and allocates
// again: with a tenant quota (tenant.NAME.max_memory_bytes) the failure is cudaErrorMemoryAllocation at
// the quota, and freeing gives the quota back. Usage: quota_probe [MIB] [STEP]
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

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

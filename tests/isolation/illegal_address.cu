// A kernel that writes through a wild pointer: on a GPU the launch's error is cudaErrorIllegalAddress
// and it is sticky for this process's context. Through vmcuda the same error reaches the program, and
// other sessions on the same GPU are not disturbed (tests/gpu/run-on-device.sh runs one beside it).
#include <stdio.h>
#include <cuda_runtime.h>

__global__ void wild(int *p) { p[threadIdx.x] = 1; }

int main()
{
    wild<<<1, 32>>>((int *)0x10);
    cudaError_t e = cudaDeviceSynchronize();
    printf("after the wild write: %s\n", cudaGetErrorName(e));
    int *d = NULL;
    cudaError_t again = cudaMalloc(&d, 4);
    printf("next call (sticky): %s\n", cudaGetErrorName(again));
    return e == cudaSuccess ? 1 : 0;
}

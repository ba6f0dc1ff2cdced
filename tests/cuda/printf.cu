// Device printf: 1000 lines from one thread (so their order is fixed), then
// formatted values of several types, interleaved with host output.
#include "vmc_check.h"

__global__ void many_lines(int n)
{
    // Only thread 0 of block 0 prints: order across blocks is not defined.
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int i = 0; i < n; i++)
            printf("device line %d of %d from block %d thread %d grid %d\n", i, n, blockIdx.x, threadIdx.x, gridDim.x);
}

__global__ void formats(int i, float f, double d, long long ll, unsigned u, char c, const char *label)
{
    printf("formats: %d %.3f %.6e %lld %u %x %c [%8s] %%\n", i, f, d, ll, u, u, c, "pad");
    printf("formats: label \"%s\"\n", label == NULL ? "(null)" : "device string");
}

int main()
{
    printf("host: before first kernel\n");
    fflush(stdout); // host stdio buffering must not reorder lines around device output

    many_lines<<<4, 32>>>(1000);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    fflush(stdout);

    printf("host: between kernels\n");
    fflush(stdout);
    formats<<<1, 1>>>(-42, 3.14159f, 6.02214076e23, 1234567890123ll, 3735928559u, 'Z', NULL);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    fflush(stdout);

    printf("host: after kernels\n");
    return vmc_finish("printf");
}

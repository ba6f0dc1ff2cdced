// __device__ and __constant__ variables: cudaMemcpyToSymbol/FromSymbol (with
// offsets, sync and async), cudaGetSymbolAddress/Size, kernels using them.
#include "vmc_check.h"

#define N 256
__device__ int dev_values[N];
__device__ unsigned long long dev_counter;
__constant__ float const_coef[16];

// out[i] = dev_values[i] * const_coef[i % 16]; also counts the threads.
__global__ void scale(float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        out[i] = dev_values[i] * const_coef[i % 16];
        atomicAdd(&dev_counter, 1ull);
    }
}

int main()
{
    int values[N];
    float coef[16];
    for (int i = 0; i < N; i++) values[i] = i - 100;
    for (int i = 0; i < 16; i++) coef[i] = 0.5f * (float)(i + 1);

    size_t size = 0;
    CK(cudaGetSymbolSize(&size, dev_values));
    vmc_check(size == sizeof values, "cudaGetSymbolSize dev_values", "%zu", size);
    CK(cudaGetSymbolSize(&size, const_coef));
    vmc_check(size == sizeof coef, "cudaGetSymbolSize const_coef", "%zu", size);

    CK(cudaMemcpyToSymbol(dev_values, values, sizeof values));
    CK(cudaMemcpyToSymbol(const_coef, coef, sizeof coef));
    unsigned long long zero = 0;
    CK(cudaMemcpyToSymbol(dev_counter, &zero, sizeof zero));

    float *d_out = NULL, out[N];
    CK(cudaMalloc(&d_out, sizeof out));
    scale<<<(N + 63) / 64, 64>>>(d_out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
        if (out[i] != values[i] * coef[i % 16]) bad = i;
    vmc_check(bad < 0, "kernel reads __device__ and __constant__", "first bad index %d", bad);
    unsigned long long counter = 0;
    CK(cudaMemcpyFromSymbol(&counter, dev_counter, sizeof counter));
    vmc_check(counter == N, "cudaMemcpyFromSymbol counter", "%llu", counter);

    // Offsets: overwrite elements 10..19 only, read back 8..21.
    int ten[10], back[14];
    for (int i = 0; i < 10; i++) ten[i] = 1000 + i;
    CK(cudaMemcpyToSymbol(dev_values, ten, sizeof ten, 10 * sizeof(int)));
    CK(cudaMemcpyFromSymbol(back, dev_values, sizeof back, 8 * sizeof(int)));
    printf("dev_values[8..21]:");
    for (int i = 0; i < 14; i++) printf(" %d", back[i]);
    printf("\n");
    vmc_check(back[0] == values[8] && back[2] == 1000 && back[11] == 1009 && back[13] == values[21],
              "symbol copy with offset", "boundaries intact");

    // The symbol's device address works with plain cudaMemcpy, both directions.
    int *addr = NULL;
    CK(cudaGetSymbolAddress((void **)&addr, dev_values));
    int first = 0;
    CK(cudaMemcpy(&first, addr + 10, sizeof first, cudaMemcpyDeviceToHost));
    vmc_check(first == 1000, "cudaGetSymbolAddress + cudaMemcpy", "%d", first);
    int v = -7;
    CK(cudaMemcpy(addr, &v, sizeof v, cudaMemcpyHostToDevice));
    CK(cudaMemcpyFromSymbol(&first, dev_values, sizeof first));
    vmc_check(first == -7, "write through symbol address", "%d", first);

    // Async symbol copies on a stream.
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float c2[16], c2back[16];
    for (int i = 0; i < 16; i++) c2[i] = -1.25f * i;
    CK(cudaMemcpyToSymbolAsync(const_coef, c2, sizeof c2, 0, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyFromSymbolAsync(c2back, const_coef, sizeof c2back, 0, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    vmc_check(c2back[0] == 0.0f && c2back[15] == -18.75f, "async symbol copies", "%.2f %.2f", c2back[0], c2back[15]);
    CK(cudaStreamDestroy(s));

    // A symbol copy past the end is an invalid value.
    CK_EXPECT(cudaMemcpyToSymbol(const_coef, coef, sizeof coef, 4), cudaErrorInvalidValue);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidValue);

    CK(cudaFree(d_out));
    CK(cudaDeviceSynchronize());
    return vmc_finish("symbols");
}

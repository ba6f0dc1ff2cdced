// Device printf in volume: 100,000 lines from one thread (their order is fixed), interleaved with host
// output across several kernels and synchronizations. Through vmcuda the worker's output is forwarded
// in order before each reply.
#include "vmc_check.h"

#define LINES 100000

__global__ void many(int n, int tag) {
    for (int i = 0; i < n; i++) printf("k%d %d\n", tag, i);
}

int main() {
    size_t fifo = 0;
    CK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 16u << 20));
    CK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
    vmc_check(fifo >= (16u << 20), "printf FIFO size", ">= 16 MiB");
    printf("host: before\n");
    fflush(stdout);
    many<<<1, 1>>>(LINES, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    fflush(stdout);
    for (int k = 1; k <= 5; k++) {
        printf("host: round %d\n", k);
        fflush(stdout);
        many<<<1, 1>>>(100 * k, k);
        CK(cudaStreamSynchronize(0));
        fflush(stdout);
    }
    printf("host: after\n");
    return vmc_finish("printf_big");
}

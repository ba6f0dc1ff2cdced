// Relocatable device code (-rdc=true, as NVIDIA's CMake builds with CUDA_SEPARABLE_COMPILATION): this
// unit's kernel calls a __device__ function of another unit (rdc_units/rdc_device.cu), whose own kernel
// and __device__ variable are used from here too. tests/cuda/Makefile links both with -rdc=true.
#include "vmc_check.h"

extern __device__ int rdc_twice(int x);
extern __device__ int rdc_offset;
void rdc_launch_other(int *v, int n); // host code of the other unit launches its kernel

__global__ void here(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = rdc_twice(i) + rdc_offset;
}

int main() {
    const int n = 1000;
    int *d = NULL, h[n];
    CK(cudaMalloc((void **)&d, sizeof h));
    int off = 7;
    CK(cudaMemcpyToSymbol(rdc_offset, &off, sizeof off));
    here<<<(n + 127) / 128, 128>>>(d, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += h[i] != 2 * i + 7;
    vmc_check(wrong == 0, "a kernel calling a __device__ function of another unit", "%d wrong", wrong);
    rdc_launch_other(d, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < n; i++) wrong += h[i] != 4 * i + 7;
    vmc_check(wrong == 0, "the other unit's kernel", "%d wrong", wrong);
    int back = 0;
    CK(cudaMemcpyFromSymbol(&back, rdc_offset, sizeof back));
    vmc_check(back == 7, "a __device__ variable of the other unit", "%d", back);
    CK(cudaFree(d));
    return vmc_finish("rdc");
}

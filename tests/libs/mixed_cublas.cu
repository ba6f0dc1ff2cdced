// One program mixing its own kernels, cudaMalloc'd memory and cuBLAS on the same pointers: the
// library's calls must reach the same context as the program's.
#include <cublas_v2.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

__global__ void fill(float *p, int n, float base) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = base + (float)(i % 13);
}

__global__ void square(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * p[i];
}

int main() {
    const int n = 1 << 16;
    float *x, *y;
    CHECK_CUDA(cudaMalloc(&x, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y, n * sizeof(float)));
    fill<<<(n + 255) / 256, 256>>>(x, n, 1.0f);
    fill<<<(n + 255) / 256, 256>>>(y, n, -2.0f);
    CHECK_CUDA(cudaGetLastError());
    cublasHandle_t h;
    CHECK_LIB(cublasCreate(&h));
    float a = 3.0f, dot = 0;
    CHECK_LIB(cublasSaxpy(h, n, &a, x, 1, y, 1)); // y = 3x + y
    square<<<(n + 255) / 256, 256>>>(y, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_LIB(cublasSdot(h, n, x, 1, y, 1, &dot));
    std::vector<float> hy(n);
    CHECK_CUDA(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    double cdot = 0;
    bool same = true;
    for (int i = 0; i < n; i++) {
        float xv = 1.0f + (float)(i % 13), yv = -2.0f + (float)(i % 13);
        float want = (3 * xv + yv) * (3 * xv + yv);
        same = same && hy[i] == want;
        cdot += (double)xv * want;
    }
    printf("own kernels + cuBLAS on shared pointers: y %s, dot %.1f (cpu %.1f)\n", same ? "exact" : "WRONG", dot, cdot);
    CHECK_LIB(cublasDestroy(h));
    cudaFree(x); cudaFree(y);
    bool ok = same && fabs(dot - cdot) < 1e-3 * fabs(cdot);
    printf("%s\n", ok ? "mixed_cublas: PASS" : "mixed_cublas: FAIL");
    return ok ? 0 : 1;
}

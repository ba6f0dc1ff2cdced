// The demo's sample: an ordinary CUDA program that knows nothing about vmcuda.
// Built with: nvcc -cudart shared -gencode arch=compute_90,code=[sm_90,compute_90]
#include <cstdio>
#include <vector>

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static int fail(const char *what, cudaError_t e) {
    printf("%s failed: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
}

int main() {
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess) return fail("cudaGetDeviceCount", e);
    cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess) return fail("cudaGetDeviceProperties", e);
    printf("GPU 0 of %d: %s (compute capability %d.%d)\n", devices, prop.name, prop.major, prop.minor);

    const int n = 1 << 24;
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) { a[i] = i; b[i] = 2.0f * i; }
    float *da, *db, *dc;
    if ((e = cudaMalloc(&da, n * sizeof(float))) != cudaSuccess) return fail("cudaMalloc", e);
    cudaMalloc(&db, n * sizeof(float));
    cudaMalloc(&dc, n * sizeof(float));
    cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    if ((e = cudaGetLastError()) != cudaSuccess) return fail("vector_add launch", e);
    if ((e = cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess) return fail("cudaMemcpy", e);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += c[i] != 3.0f * i;
    printf("vector_add of %d floats: %s\n", n, wrong ? "WRONG" : "correct");
    cudaFree(da); cudaFree(db); cudaFree(dc);
    return wrong ? 1 : 0;
}

// A runtime-API program built the way users build them: nvcc's default, static cudart. The runtime inside
// it reaches the GPU through libcuda.so.1, vmcuda's driver front end. Its kernels are extern "C" with the
// names the CPU-only test double of tests/driver/fake knows, so that CI can run it end to end; on the GPU
// machine it runs on the real driver and must print what a native run prints.
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            printf("%s: %s (%s)\n", #x, cudaGetErrorName(e_), cudaGetErrorString(e_));              \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)

extern "C" __global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void fill(float *p, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + (float)i;
}

static int failures;
static void check(bool ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok) failures++;
}

int main() {
    int runtime = 0, count = 0;
    CK(cudaRuntimeGetVersion(&runtime));
    printf("runtime version: %d.%d\n", runtime / 1000, runtime % 1000 / 10);
    CK(cudaGetDeviceCount(&count));
    printf("devices: at least one: %s\n", count > 0 ? "yes" : "no");
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    check(prop.major >= 7 && prop.multiProcessorCount > 0 && prop.warpSize == 32, "cudaGetDeviceProperties");

    const int n = 100000;
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) { a[i] = (float)i; b[i] = (float)(n - i); }
    float *da, *db, *dc;
    CK(cudaMalloc(&da, n * sizeof(float)));
    CK(cudaMalloc(&db, n * sizeof(float)));
    CK(cudaMalloc(&dc, n * sizeof(float)));
    CK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost));
    bool ok = true;
    for (int i = 0; i < n; i++) ok = ok && c[i] == (float)n;
    check(ok, "vector add through the static runtime");

    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, s));
    fill<<<(n + 127) / 128, 128, 0, s>>>(dc, n, 0.5f);
    CK(cudaEventRecord(e1, s));
    CK(cudaMemcpyAsync(c, dc, sizeof c, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    float ms = -1;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ok = ms >= 0;
    for (int i = 0; i < n; i++) ok = ok && c[i] == 0.5f + (float)i;
    check(ok, "a kernel and an async copy on a stream, events");

    CK(cudaMemset(dc, 0, sizeof c));
    CK(cudaMemcpy(c, dc, 16, cudaMemcpyDeviceToHost));
    check(c[0] == 0.0f && c[3] == 0.0f, "cudaMemset");
    CK(cudaMemcpy(db, da, sizeof a, cudaMemcpyDefault)); // unified addressing: the runtime tells the kinds
    CK(cudaMemcpy(c, db, sizeof c, cudaMemcpyDefault));
    ok = true;
    for (int i = 0; i < n; i++) ok = ok && c[i] == (float)i;
    check(ok, "cudaMemcpyDefault device to device and to host");

    float *pitched;
    size_t pitch;
    static float rows[20][30];
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 30; x++) rows[y][x] = (float)(y * 100 + x);
    CK(cudaMallocPitch(&pitched, &pitch, 30 * sizeof(float), 20));
    CK(cudaMemcpy2D(pitched, pitch, rows, sizeof rows[0], 30 * sizeof(float), 20, cudaMemcpyHostToDevice));
    static float back[20][30];
    CK(cudaMemcpy2D(back, sizeof back[0], pitched, pitch, 30 * sizeof(float), 20, cudaMemcpyDeviceToHost));
    check(memcmp(rows, back, sizeof rows) == 0, "cudaMemcpy2D through pitched memory");

    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(pitched));
    CK(cudaStreamDestroy(s));
    printf("%s\n", failures ? "rt_static: FAIL" : "rt_static: PASS");
    return failures ? 1 : 0;
}

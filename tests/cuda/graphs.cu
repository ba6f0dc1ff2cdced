// CUDA graphs through stream capture: kernels, device-to-device copies and memsets captured on a
// stream (global and thread-local capture modes), instantiated once and launched many times, on the
// capturing stream and another one; an empty graph; capture state queries. (Copies from or to this
// process's memory cannot be captured through vmcuda: README "What is supported".)
#include <string.h>
#include "vmc_check.h"

#define N (1 << 16)

__global__ void add_one(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += 1;
}

__global__ void scale_into(int *dst, const int *src, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * k;
}

int main() {
    int *a = NULL, *b = NULL, *c = NULL;
    int *h = (int *)malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) h[i] = i;
    CK(cudaMalloc((void **)&a, N * sizeof(int)));
    CK(cudaMalloc((void **)&b, N * sizeof(int)));
    CK(cudaMalloc((void **)&c, N * sizeof(int)));
    CK(cudaMemcpy(a, h, N * sizeof(int), cudaMemcpyHostToDevice));
    cudaStream_t s, s2;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreate(&s2));
    // warm-up outside capture
    add_one<<<1, 1, 0, s>>>(c, 1);
    scale_into<<<1, 1, 0, s>>>(c, c, 1, 1);
    CK(cudaStreamSynchronize(s));

    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
    CK(cudaStreamIsCapturing(s, &cs));
    vmc_check(cs == cudaStreamCaptureStatusNone, "not capturing before", "status %d", (int)cs);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamIsCapturing(s, &cs));
    vmc_check(cs == cudaStreamCaptureStatusActive, "capturing after cudaStreamBeginCapture", "status %d", (int)cs);
    add_one<<<(N + 255) / 256, 256, 0, s>>>(a, N);                   // a += 1
    CK(cudaMemsetAsync(b, 0, N * sizeof(int), s));                      // b = 0
    CK(cudaMemcpyAsync(b, a, N / 2 * sizeof(int), cudaMemcpyDeviceToDevice, s)); // b[0..N/2) = a
    scale_into<<<(N + 255) / 256, 256, 0, s>>>(c, b, N, 3);          // c = 3 b
    cudaGraph_t g = NULL;
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaStreamIsCapturing(s, &cs));
    vmc_check(cs == cudaStreamCaptureStatusNone, "not capturing after cudaStreamEndCapture", "status %d", (int)cs);
    cudaGraphExec_t ge = NULL;
    CK(cudaGraphInstantiate(&ge, g, 0));
    const int R = 10;
    for (int r = 0; r < R; r++) CK(cudaGraphLaunch(ge, r % 2 ? s2 : s));
    CK(cudaDeviceSynchronize());
    // the launches on s and s2 are not ordered with each other, but each launch only adds to a
    CK(cudaMemcpy(h, a, N * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += h[i] != i + R;
    vmc_check(wrong == 0, "a captured kernel launched 10 times", "a[i] = i + 10, %d wrong", wrong);
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, c, N * sizeof(int), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < N; i++) wrong += h[i] != (i < N / 2 ? 3 * (i + R + 1) : 0);
    vmc_check(wrong == 0, "captured memset + device copy + kernel", "c = 3 * a on the first half, 0 after; %d wrong", wrong);
    unsigned long long gflags = 99;
    CK(cudaGraphExecGetFlags(ge, &gflags));
    vmc_check(gflags == 0, "cudaGraphExecGetFlags", "%llu", gflags);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));

    // thread-local capture mode; the graph is cloned and the clone launched
    CK(cudaStreamBeginCapture(s2, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < 5; k++) add_one<<<(N + 255) / 256, 256, 0, s2>>>(b, N);
    CK(cudaStreamEndCapture(s2, &g));
    cudaGraph_t clone = NULL;
    CK(cudaGraphClone(&clone, g));
    CK(cudaGraphInstantiateWithFlags(&ge, clone, 0));
    CK(cudaMemset(b, 0, N * sizeof(int)));
    CK(cudaGraphUpload(ge, s2));
    CK(cudaGraphLaunch(ge, s2));
    CK(cudaGraphLaunch(ge, s2));
    CK(cudaStreamSynchronize(s2));
    CK(cudaMemcpy(h, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < N; i++) wrong += h[i] != 10;
    vmc_check(wrong == 0, "thread-local capture, cloned graph, launched twice", "b[i] = 10, %d wrong", wrong);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(clone));
    CK(cudaGraphDestroy(g));

    // an empty graph
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    vmc_check(1, "an empty graph", "instantiated and launched");

    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(s2));
    free(h);
    return vmc_finish("graphs");
}

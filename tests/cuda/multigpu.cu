// Several GPUs in one session (VMCUDA_GPUS=k binds k GPUs; natively: every visible GPU): each device
// computes its own part, peer access is queried (and enabled where possible) for every pair, and
// buffers travel between devices with cudaMemcpyPeer(Async). The program adapts to the device count
// and prints nothing that depends on it, so one GPU and eight give the same output.
#include <string.h>
#include "vmc_check.h"

#define N (1 << 20)
#define MAXDEV 16

__global__ void mark(int *v, int n, int dev) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = dev * 1000003 + i;
}

int main() {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n > MAXDEV) n = MAXDEV;
    int *buf[MAXDEV];
    cudaStream_t s[MAXDEV];
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamCreate(&s[d]));
        CK(cudaMalloc((void **)&buf[d], N * sizeof(int)));
        mark<<<(N + 255) / 256, 256, 0, s[d]>>>(buf[d], N, d);
        CK(cudaGetLastError());
    }
    int *h = (int *)malloc(N * sizeof(int));
    int wrong = 0, current_ok = 1;
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        int cur = -1;
        CK(cudaGetDevice(&cur));
        current_ok &= cur == d;
        int sd = -1;
        CK(cudaStreamGetDevice(s[d], &sd));
        current_ok &= sd == d;
        CK(cudaStreamSynchronize(s[d]));
        CK(cudaMemcpy(h, buf[d], N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != d * 1000003 + i;
    }
    vmc_check(wrong == 0 && current_ok, "every device computed its own buffer", "cudaSetDevice/cudaGetDevice agree");

    // peer access: query every ordered pair; enable where possible; the answer must be symmetric in use
    int queries_ok = 1;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            int can = -1;
            CK(cudaDeviceCanAccessPeer(&can, a, b));
            queries_ok &= can == 0 || can == 1;
            if (can) {
                CK(cudaSetDevice(a));
                cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
                queries_ok &= e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
                if (e != cudaSuccess) cudaGetLastError();
            }
        }
    vmc_check(queries_ok, "peer access queries for every pair", "answers are 0 or 1, enabling works");

    // peer copies: device d's buffer to device (d+1)%n, synchronously and asynchronously
    wrong = 0;
    for (int d = 0; d < n; d++) {
        int to = (d + 1) % n;
        int *tmp = NULL;
        CK(cudaSetDevice(to));
        CK(cudaMalloc((void **)&tmp, N * sizeof(int)));
        CK(cudaMemcpyPeer(tmp, to, buf[d], d, N * sizeof(int)));
        CK(cudaMemcpy(h, tmp, N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != d * 1000003 + i;
        CK(cudaMemsetAsync(tmp, 0, N * sizeof(int), s[to]));
        CK(cudaMemcpyPeerAsync(tmp, to, buf[d], d, N / 2 * sizeof(int), s[to]));
        CK(cudaStreamSynchronize(s[to]));
        CK(cudaMemcpy(h, tmp, N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != (i < N / 2 ? d * 1000003 + i : 0);
        CK(cudaFree(tmp));
    }
    vmc_check(wrong == 0, "cudaMemcpyPeer and cudaMemcpyPeerAsync between devices", "%d wrong", wrong);

    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFree(buf[d]));
        CK(cudaStreamDestroy(s[d]));
    }
    CK(cudaSetDevice(0));
    free(h);
    return vmc_finish("multigpu");
}

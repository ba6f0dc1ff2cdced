// Built with --default-stream per-thread (tests/cuda/Makefile: *_ptds.cu): every runtime call that
// names the default stream goes through its _ptsz/_ptds entry point, and each host thread's default
// stream is its own. Four threads use only their default streams: launches, copies, memsets, 2-D
// copies, events, a host callback and stream capture of the per-thread stream.
#include <atomic>
#include <pthread.h>
#include <string.h>
#include "vmc_check.h"

#define THREADS 4
#define N (64 * 1024)

__global__ void twice_plus(int *v, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 2 * v[i] + k;
}

static std::atomic<int> callbacks;
static void CUDART_CB count_it(void *) { callbacks++; }

struct job {
    int id, wrong;
    cudaError_t err;
};

static void *work(void *arg) {
    job *j = (job *)arg;
    int *d = NULL, *d2 = NULL;
    int *h = (int *)malloc(N * sizeof(int));
    cudaEvent_t ev;
    cudaError_t e = cudaMalloc((void **)&d, N * sizeof(int));
    if (e == cudaSuccess) e = cudaMalloc((void **)&d2, N * sizeof(int));
    if (e == cudaSuccess) e = cudaEventCreate(&ev);
    if (e == cudaSuccess) e = cudaMemsetAsync(d, 0, N * sizeof(int), 0);
    for (int r = 0; r < 4 && e == cudaSuccess; r++) {
        twice_plus<<<(N + 255) / 256, 256>>>(d, N, j->id + r);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaLaunchHostFunc(0, count_it, NULL);
    if (e == cudaSuccess) e = cudaEventRecord(ev, 0);
    if (e == cudaSuccess) e = cudaEventSynchronize(ev);
    // capture the per-thread default stream into a graph and run it twice
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    if (e == cudaSuccess) e = cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) {
        twice_plus<<<(N + 255) / 256, 256, 0, cudaStreamPerThread>>>(d, N, 1);
        e = cudaStreamEndCapture(cudaStreamPerThread, &g);
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&ge, g, 0);
    if (e == cudaSuccess) e = cudaGraphLaunch(ge, 0);
    if (e == cudaSuccess) e = cudaGraphLaunch(ge, 0);
    if (e == cudaSuccess) e = cudaMemcpy2DAsync(d2, 256 * sizeof(int), d, 256 * sizeof(int), 256 * sizeof(int), N / 256,
                                                cudaMemcpyDeviceToDevice, 0);
    if (e == cudaSuccess) e = cudaMemcpy(h, d2, N * sizeof(int), cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaStreamSynchronize(0);
    j->err = e;
    if (e == cudaSuccess)
        for (int i = 0; i < N; i++) {
            int x = 0;
            for (int r = 0; r < 4; r++) x = 2 * x + j->id + r;
            x = 2 * (2 * x + 1) + 1;
            j->wrong += h[i] != x;
        }
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    cudaFree(d);
    cudaFree(d2);
    free(h);
    return NULL;
}

int main() {
    CK(cudaFree(0));
    pthread_t t[THREADS];
    job jobs[THREADS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].id = i;
        pthread_create(&t[i], NULL, work, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        if (jobs[i].err != cudaSuccess) vmc_cuda_fail("a thread's per-thread default stream work", jobs[i].err);
    int wrong = 0;
    for (int i = 0; i < THREADS; i++) wrong += jobs[i].wrong;
    vmc_check(wrong == 0, "per-thread default streams", "%d threads, %d wrong values", THREADS, wrong);
    vmc_check(callbacks == THREADS, "host callbacks on per-thread default streams", "%d ran", callbacks.load());
    return vmc_finish("stream_ptds");
}

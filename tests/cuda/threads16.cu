// 16 host threads, each with two streams of its own: kernels, async copies both ways, events between
// the streams, all at once. Through vmcuda each thread has its own connection and worker thread.
#include <pthread.h>
#include <string.h>
#include "vmc_check.h"

#define THREADS 16
#define N (256 * 1024)

__global__ void step(int *v, int n, int add) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * 3 + add;
}

struct job {
    int id, wrong;
    cudaError_t err;
};

static void *work(void *arg) {
    job *j = (job *)arg;
    int *h = NULL, *d = NULL;
    cudaStream_t a, b;
    cudaEvent_t ev;
    cudaError_t e = cudaMallocHost((void **)&h, N * sizeof(int));
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaMalloc((void **)&d, N * sizeof(int));
    for (int i = 0; e == cudaSuccess && i < N; i++) h[i] = i ^ j->id;
    if (e == cudaSuccess) e = cudaMemcpyAsync(d, h, N * sizeof(int), cudaMemcpyHostToDevice, a);
    for (int r = 0; r < 6 && e == cudaSuccess; r++) {
        cudaStream_t s = r % 2 ? b : a, other = r % 2 ? a : b;
        step<<<(N + 255) / 256, 256, 0, s>>>(d, N, j->id + r);
        e = cudaEventRecord(ev, s);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(other, ev, 0);
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(h, d, N * sizeof(int), cudaMemcpyDeviceToHost, a);
    if (e == cudaSuccess) e = cudaStreamSynchronize(a);
    j->err = e;
    if (e == cudaSuccess)
        for (int i = 0; i < N; i++) {
            int x = i ^ j->id;
            for (int r = 0; r < 6; r++) x = x * 3 + j->id + r;
            j->wrong += x != h[i];
        }
    if (d) cudaFree(d);
    if (h) cudaFreeHost(h);
    if (e == cudaSuccess) {
        cudaStreamDestroy(a);
        cudaStreamDestroy(b);
        cudaEventDestroy(ev);
    }
    return NULL;
}

int main() {
    CK(cudaSetDevice(0));
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
        if (jobs[i].err != cudaSuccess) vmc_cuda_fail("a worker thread's CUDA calls", jobs[i].err);
    int wrong = 0;
    for (int i = 0; i < THREADS; i++) wrong += jobs[i].wrong;
    vmc_check(wrong == 0, "16 threads x 2 streams with events between them", "%d wrong values", wrong);
    return vmc_finish("threads16");
}

// Several host threads using CUDA at once: each has its own current device, last error and
// per-thread state, as natively. Through vmcuda every thread gets its own connection (JOIN) and
// its own worker thread.
#include <pthread.h>
#include <string.h>
#include "vmc_check.h"

#define THREADS 8
#define N (1 << 20)

__global__ void scale(int *v, int n, int factor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * factor + factor;
}

struct job {
    int id;
    int wrong;
    cudaError_t own_error;     // what this thread's bad launch left in its last error
    cudaError_t error_before;  // this thread's last error before that (must be success)
    cudaError_t first_error;
};

static void *work(void *arg) {
    struct job *j = (struct job *)arg;
    int *host = (int *)malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) host[i] = i + j->id;
    int *dev = NULL;
    cudaStream_t s;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaStreamCreate(&s);
    if (e == cudaSuccess) e = cudaMalloc(&dev, N * sizeof(int));
    if (e == cudaSuccess) e = cudaMemcpyAsync(dev, host, N * sizeof(int), cudaMemcpyHostToDevice, s);
    for (int r = 0; r < 10 && e == cudaSuccess; r++) {
        scale<<<(N + 255) / 256, 256, 0, s>>>(dev, N, 2);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(host, dev, N * sizeof(int), cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    j->first_error = e;
    if (e == cudaSuccess) {
        for (int i = 0; i < N; i++) {
            long long x = i + j->id;
            for (int r = 0; r < 10; r++) x = x * 2 + 2;
            if ((int)x != host[i]) j->wrong++;
        }
        j->error_before = cudaGetLastError();
        if (j->id % 2 == 0) scale<<<1, 4096>>>(dev, N, 1);  // invalid block size: only this thread sees it
        j->own_error = cudaGetLastError();
        cudaFree(dev);
        cudaStreamDestroy(s);
    }
    free(host);
    return NULL;
}

int main() {
    pthread_t t[THREADS];
    struct job jobs[THREADS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].id = i;
        pthread_create(&t[i], NULL, work, &jobs[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        if (jobs[i].first_error != cudaSuccess) vmc_cuda_fail("thread work", jobs[i].first_error);
    }
    for (int i = 0; i < THREADS; i++) {
        char name[64];
        snprintf(name, sizeof name, "thread %d results", i);
        vmc_check(jobs[i].wrong == 0, name, "%d wrong of %d", jobs[i].wrong, N);
        snprintf(name, sizeof name, "thread %d last error", i);
        vmc_check(jobs[i].error_before == cudaSuccess &&
                      jobs[i].own_error == (i % 2 == 0 ? cudaErrorInvalidValue : cudaSuccess),
                  name, "before %s, after own launch %s", cudaGetErrorName(jobs[i].error_before),
                  cudaGetErrorName(jobs[i].own_error));
    }
    return vmc_finish("threads");
}

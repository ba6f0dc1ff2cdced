// Native probe: which calls, made by ANOTHER thread while the main thread captures a non-blocking stream in the
// global mode, end that capture? Each action runs on a fresh thread, in the default (global) mode and in the
// relaxed mode. The worker's own helper and connection threads make these calls behind a program's back.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void *pre_pinned, *pre_registered, *pre_region;
static void *dev_buf;

static cudaError_t act(int which) {
    void *p = NULL;
    switch (which) {
    case 0: return cudaHostAlloc(&p, 4 << 20, cudaHostAllocPortable);
    case 1: return cudaFreeHost(pre_pinned);
    case 2: {
        p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return cudaHostRegister(p, 4 << 20, cudaHostRegisterPortable);
    }
    case 3: return cudaHostUnregister(pre_registered);
    case 4: {
        p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return cudaHostRegister(p, 1 << 20, cudaHostRegisterPortable | cudaHostRegisterMapped);
    }
    case 5: return cudaHostUnregister(pre_region);
    case 6: {
        CUresult r = cuMemHostAlloc(&p, 4 << 20, CU_MEMHOSTALLOC_PORTABLE);
        return r == CUDA_SUCCESS ? cudaSuccess : (cudaError_t)r;
    }
    case 7: return cudaMalloc(&p, 1 << 20);
    case 8: {
        cudaStream_t s;
        cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        return e ? e : cudaStreamDestroy(s);
    }
    case 9: {
        static char host[64];
        cudaStream_t s;
        cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        if (!e) e = cudaMemcpyAsync(host, dev_buf, 64, cudaMemcpyDeviceToHost, s);
        if (!e) e = cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
        return e;
    }
    case 10: {
        static char host[64];
        return cudaMemcpy(host, dev_buf, 64, cudaMemcpyDeviceToHost);
    }
    }
    return cudaErrorInvalidValue;
}
static const char *names[] = {"cudaHostAlloc 4MiB", "cudaFreeHost",          "mmap+cudaHostRegister 4MiB",
                              "cudaHostUnregister", "cudaHostRegister mapped", "cudaHostUnregister mapped",
                              "cuMemHostAlloc",     "cudaMalloc",            "stream create+destroy",
                              "copy on own stream+sync", "cudaMemcpy legacy"};

struct job { int which, relaxed; cudaError_t result; };
static void *run(void *arg) {
    struct job *j = (struct job *)arg;
    cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    if (j->relaxed) cudaThreadExchangeStreamCaptureMode(&m);
    j->result = act(j->which);
    if (j->relaxed) cudaThreadExchangeStreamCaptureMode(&m);
    return NULL;
}

int main() {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *other;
    cudaMalloc(&other, 4096);
    cudaMalloc(&dev_buf, 4096);
    for (int relaxed = 0; relaxed < 2; relaxed++)
        for (int w = 0; w <= 10; w++) {
            cudaHostAlloc(&pre_pinned, 4 << 20, cudaHostAllocPortable);
            pre_registered = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            cudaHostRegister(pre_registered, 4 << 20, cudaHostRegisterPortable);
            pre_region = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            cudaHostRegister(pre_region, 1 << 20, cudaHostRegisterPortable | cudaHostRegisterMapped);
            cudaDeviceSynchronize();
            cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
            cudaMemsetAsync(other, 1, 4096, s);
            struct job j = {w, relaxed, cudaSuccess};
            pthread_t t;
            pthread_create(&t, NULL, run, &j);
            pthread_join(t, NULL);
            cudaGraph_t g = NULL;
            cudaError_t end = cudaStreamEndCapture(s, &g);
            printf("%-8s %-28s -> %-34s capture ends %s\n", relaxed ? "relaxed" : "global", names[w],
                   cudaGetErrorName(j.result), cudaGetErrorName(end));
            if (g) cudaGraphDestroy(g);
            cudaGetLastError();
            if (w != 1) cudaFreeHost(pre_pinned);
            if (w != 3) cudaHostUnregister(pre_registered);
            if (w != 5) cudaHostUnregister(pre_region);
        }
    // the same for the capturing thread's own stream being the legacy-blocking kind is not the worker's case
    return 0;
}

// Native experiment: how much of a synchronous small call's time is the return path? The "worker" thread
// enqueues a copy and either (E) synchronizes and then answers through a shared word, as vmcuda's worker
// does through its pipe, or (D) also has the GPU write a completion word after the copy
// (cuStreamWriteValue32) that the "client" thread spins on directly.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <atomic>

#define CK(x) do { cudaError_t e_ = (x); if (e_) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define DK(x) do { CUresult e_ = (x); if (e_) { const char *s_; cuGetErrorString(e_, &s_); printf("%s: %s\n", #x, s_); exit(1); } } while (0)

static double now_us() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }

struct shared {
    alignas(64) std::atomic<unsigned> request{0};
    alignas(64) std::atomic<unsigned> reply{0};
    alignas(64) std::atomic<int> quit{0};
    int mode;          // 0: sync + reply word; 1: GPU flag
    size_t bytes; int to_device;
    void *dev, *pinned;
    volatile unsigned *flag; CUdeviceptr flag_dev;
};

static void *worker(void *arg) {
    shared *s = (shared *)arg;
    CK(cudaSetDevice(0));
    unsigned seen = 0;
    while (!s->quit.load(std::memory_order_acquire)) {
        unsigned r = s->request.load(std::memory_order_acquire);
        if (r == seen) { __builtin_ia32_pause(); continue; }
        seen = r;
        if (s->to_device) CK(cudaMemcpyAsync(s->dev, s->pinned, s->bytes, cudaMemcpyHostToDevice, 0));
        else CK(cudaMemcpyAsync(s->pinned, s->dev, s->bytes, cudaMemcpyDeviceToHost, 0));
        if (s->mode == 1) DK(cuStreamWriteValue32(CU_STREAM_LEGACY, s->flag_dev, r, 0));
        CK(cudaStreamSynchronize(0));
        s->reply.store(r, std::memory_order_release);
    }
    return NULL;
}

static double run(shared *s, int mode, size_t bytes, int to_device, int n) {
    s->mode = mode; s->bytes = bytes; s->to_device = to_device;
    double best = 1e30, sum = 0;
    for (int i = 0; i < n; i++) {
        unsigned r = s->request.load() + 1;
        double t0 = now_us();
        s->request.store(r, std::memory_order_release);
        if (mode == 1) { while (*s->flag != r) __builtin_ia32_pause(); }
        else { while (s->reply.load(std::memory_order_acquire) != r) __builtin_ia32_pause(); }
        double t = now_us() - t0;
        sum += t; if (t < best) best = t;
        // let the worker finish its sync and answer before the next request (mode 1 returns earlier)
        while (s->reply.load(std::memory_order_acquire) != r) __builtin_ia32_pause();
    }
    return sum / n;
}

int main() {
    CK(cudaSetDevice(0));
    shared s;
    size_t max = 1 << 20;
    CK(cudaMalloc(&s.dev, max));
    CK(cudaHostAlloc(&s.pinned, max, cudaHostAllocMapped));
    unsigned *flag;
    CK(cudaHostAlloc((void **)&flag, 64, cudaHostAllocMapped));
    *flag = 0; s.flag = flag;
    CK(cudaHostGetDevicePointer((void **)&s.flag_dev, flag, 0));
    char *pageable = (char *)malloc(max);
    memset(pageable, 1, max);
    const int N = 3000;
    size_t sizes[] = {4, 4096, 65536, 1 << 20};
    for (size_t b : sizes) {
        for (int dir = 0; dir < 2; dir++) {
            // native references on this thread
            double t0 = now_us();
            for (int i = 0; i < N; i++) CK(cudaMemcpy(dir ? s.dev : pageable, dir ? pageable : s.dev, b, dir ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
            double native_pageable = (now_us() - t0) / N;
            t0 = now_us();
            for (int i = 0; i < N; i++) CK(cudaMemcpy(dir ? s.dev : s.pinned, dir ? s.pinned : s.dev, b, dir ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
            double native_pinned = (now_us() - t0) / N;
            printf("%s %8zu B: native pageable %7.2f us, native pinned %7.2f us\n", dir ? "h2d" : "d2h", b, native_pageable, native_pinned);
        }
    }
    pthread_t t;
    pthread_create(&t, NULL, worker, &s);
    for (int round = 0; round < 3; round++)
        for (size_t b : sizes)
            for (int dir = 0; dir < 2; dir++) {
                double e = run(&s, 0, b, dir, N), d = run(&s, 1, b, dir, N);
                printf("round %d %s %8zu B: two threads, answer after sync %7.2f us; GPU-written flag %7.2f us\n", round, dir ? "h2d" : "d2h", b, e, d);
            }
    s.quit = 1;
    pthread_join(t, NULL);
    return 0;
}

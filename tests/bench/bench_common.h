// What the benchmark programs share: stop at the first CUDA error, and a monotonic clock in seconds.
#ifndef VMCUDA_BENCH_COMMON_H
#define VMCUDA_BENCH_COMMON_H

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s failed: %s\n", #x, cudaGetErrorString(e_));                    \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static inline double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#endif

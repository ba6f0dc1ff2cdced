// Microbenchmarks of the CUDA calls vmcuda remotes. The same binary runs natively and through
// vmcuda; tests/bench/compare.sh puts the two outputs side by side with ratios.
// Output: one "metric<TAB>value<TAB>unit" line per measurement, nothing else on stdout.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "bench_common.h"


__global__ void empty_kernel() {}


static void report(const char *metric, double value, const char *unit) { printf("%s\t%.3f\t%s\n", metric, value, unit); }

// Best of `reps` timings of `count`-byte copies, in GB/s (1e9 bytes/s).
static double copy_rate(void *dst, const void *src, size_t count, cudaMemcpyKind kind, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        CK(cudaMemcpy(dst, src, count, kind));
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    return count / best / 1e9;
}

// Mean time of 1000 back-to-back `count`-byte copies after 50 unmeasured ones, in microseconds.
static double copy_mean_us(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
    for (int i = 0; i < 50; i++) CK(cudaMemcpy(dst, src, count, kind));
    double t0 = now_s();
    for (int i = 0; i < 1000; i++) CK(cudaMemcpy(dst, src, count, kind));
    return (now_s() - t0) / 1000 * 1e6;
}

static int reps_for(size_t bytes) { return bytes >= (256u << 20) ? 3 : bytes >= (16u << 20) ? 5 : 20; }

int main(int argc, char **argv) {
    size_t max_bytes = argc > 1 ? strtoull(argv[1], nullptr, 10) : (1ull << 30);
    CK(cudaSetDevice(0));
    CK(cudaFree(nullptr));
    char *dev;
    CK(cudaMalloc(&dev, max_bytes));
    char *pageable = (char *)malloc(max_bytes);
    memset(pageable, 1, max_bytes);
    char *pinned;
    CK(cudaMallocHost(&pinned, max_bytes));
    memset(pinned, 2, max_bytes);

    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        char name[96];
        int reps = reps_for(bytes);
        snprintf(name, sizeof name, "h2d_pageable_%zuKiB", bytes >> 10);
        report(name, copy_rate(dev, pageable, bytes, cudaMemcpyHostToDevice, reps), "GB/s");
        snprintf(name, sizeof name, "d2h_pageable_%zuKiB", bytes >> 10);
        report(name, copy_rate(pageable, dev, bytes, cudaMemcpyDeviceToHost, reps), "GB/s");
        snprintf(name, sizeof name, "h2d_pinned_%zuKiB", bytes >> 10);
        report(name, copy_rate(dev, pinned, bytes, cudaMemcpyHostToDevice, reps), "GB/s");
        snprintf(name, sizeof name, "d2h_pinned_%zuKiB", bytes >> 10);
        report(name, copy_rate(pinned, dev, bytes, cudaMemcpyDeviceToHost, reps), "GB/s");
    }

    // Small copies back to back: the mean of 1000 after 50 unmeasured. The best of 20 above favours a native
    // copy that finds no earlier DMA in flight (a pageable copy to the device returns once its bytes are staged,
    // and the next one waits for that DMA first), which a program copying in a loop does not see.
    for (size_t bytes = 4096; bytes <= (256u << 10) && bytes <= max_bytes; bytes *= 4) {
        char name[96];
        snprintf(name, sizeof name, "h2d_pageable_%zuKiB_loop_mean", bytes >> 10);
        report(name, copy_mean_us(dev, pageable, bytes, cudaMemcpyHostToDevice), "us");
        snprintf(name, sizeof name, "d2h_pageable_%zuKiB_loop_mean", bytes >> 10);
        report(name, copy_mean_us(pageable, dev, bytes, cudaMemcpyDeviceToHost), "us");
    }

    // Small synchronous calls: one round trip each through vmcuda.
    const int calls = 2000;
    int value;
    double t0 = now_s();
    for (int i = 0; i < calls; i++) CK(cudaMemcpy(&value, dev, 4, cudaMemcpyDeviceToHost));
    report("memcpy_4B_d2h_latency", (now_s() - t0) / calls * 1e6, "us");
    t0 = now_s();
    for (int i = 0; i < calls; i++) CK(cudaMemcpy(dev, &value, 4, cudaMemcpyHostToDevice));
    report("memcpy_4B_h2d_latency", (now_s() - t0) / calls * 1e6, "us");
    t0 = now_s();
    for (int i = 0; i < calls; i++) CK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0));
    report("device_get_attribute_latency", (now_s() - t0) / calls * 1e6, "us");
    // A call that does nothing on an idle GPU: natively a fraction of a microsecond, through vmcuda one
    // round trip between the client and its worker (the co-located path's call pipe, or the socket).
    CK(cudaDeviceSynchronize());
    t0 = now_s();
    for (int i = 0; i < calls; i++) CK(cudaStreamQuery(0));
    report("sync_call_round_trip", (now_s() - t0) / calls * 1e6, "us");
    cudaDeviceProp prop;
    t0 = now_s();
    for (int i = 0; i < 200; i++) CK(cudaGetDeviceProperties(&prop, 0));
    report("get_device_properties_latency", (now_s() - t0) / 200 * 1e6, "us");

    // Launches: asynchronous throughput, then launch + synchronize latency.
    const int launches = 10000;
    empty_kernel<<<1, 1>>>();
    CK(cudaDeviceSynchronize());
    t0 = now_s();
    for (int i = 0; i < launches; i++) empty_kernel<<<1, 1>>>();
    CK(cudaDeviceSynchronize());
    report("launch_async_per_kernel", (now_s() - t0) / launches * 1e6, "us");
    t0 = now_s();
    for (int i = 0; i < 2000; i++) {
        empty_kernel<<<1, 1>>>();
        CK(cudaDeviceSynchronize());
    }
    report("launch_plus_sync_latency", (now_s() - t0) / 2000 * 1e6, "us");

    CK(cudaFreeHost(pinned));
    CK(cudaFree(dev));
    free(pageable);
    return 0;
}

// Benchmark of what the driver front end adds to a library-heavy program, run natively and through
// vmcuda side by side by tests/gpu/run-driver-on-device.sh:
//   init     cublasCreate + first SGEMM (module loads by content, first launches)
//   sgemm    SGEMM N x N x N, REPS times on one stream, one synchronize: GFLOP/s
//   small    CALLS SGEMMs of 16 x 16 x 16, each followed by nothing (asynchronous launches), then one
//            synchronize: microseconds per call (the per-call cost of a forwarded launch)
//   synced   CALLS/10 SGEMMs of 16 x 16 x 16, each followed by cudaStreamSynchronize: microseconds per
//            round trip
// Usage: bench_cublas [N] [REPS] [CALLS]     (defaults 4096 20 10000)
// Output: one "metric value unit" line per measurement, and a checksum line that must match native.
#include <cublas_v2.h>
#include <time.h>
#include <vector>
#include "lib_check.h"

static double now_s() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? atoi(argv[1]) : 4096;
    const int reps = argc > 2 ? atoi(argv[2]) : 20;
    const int calls = argc > 3 ? atoi(argv[3]) : 10000;
    if (n < 16 || reps < 1 || calls < 10) {
        fprintf(stderr, "usage: bench_cublas [N>=16] [REPS>=1] [CALLS>=10]\n");
        return 2;
    }
    const size_t bytes = (size_t)n * n * sizeof(float);
    std::vector<float> host((size_t)n * n);
    // multiples of 1/8 in [-6/8, 6/8]: every product and sum of the 4096 x 4096 SGEMM is exact in float,
    // so the checksum does not depend on the order cuBLAS sums in
    for (size_t i = 0; i < host.size(); i++) host[i] = (float)((int)(i % 13) - 6) / 8.0f;

    double t0 = now_s();
    cublasHandle_t h;
    CHECK_LIB(cublasCreate(&h));
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    CHECK_LIB(cublasSetStream(h, s));
    float *a, *b, *c;
    CHECK_CUDA(cudaMalloc(&a, bytes));
    CHECK_CUDA(cudaMalloc(&b, bytes));
    CHECK_CUDA(cudaMalloc(&c, bytes));
    CHECK_CUDA(cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, host.data(), bytes, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("init_and_first_sgemm %.3f s\n", now_s() - t0);

    t0 = now_s();
    for (int r = 0; r < reps; r++)
        CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK_CUDA(cudaStreamSynchronize(s));
    double dt = now_s() - t0;
    printf("sgemm_%d %.1f GFLOP/s\n", n, 2.0 * n * n * (double)n * reps / dt / 1e9);

    t0 = now_s();
    for (int i = 0; i < calls; i++)
        CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, a, 16, b, 16, &zero, c, 16));
    CHECK_CUDA(cudaStreamSynchronize(s));
    printf("small_sgemm_async %.2f us/call\n", (now_s() - t0) / calls * 1e6);

    t0 = now_s();
    for (int i = 0; i < calls / 10; i++) {
        CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, a, 16, b, 16, &zero, c, 16));
        CHECK_CUDA(cudaStreamSynchronize(s));
    }
    printf("small_sgemm_synced %.2f us/call\n", (now_s() - t0) / (calls / 10) * 1e6);

    // the result of the last large product must be what the native run computes
    CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    CHECK_CUDA(cudaMemcpy(host.data(), c, bytes, cudaMemcpyDeviceToHost));
    double sum = 0;
    for (size_t i = 0; i < host.size(); i += 97) sum += host[i];
    fprintf(stderr, "checksum %.6e\n", sum);
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
    CHECK_LIB(cublasDestroy(h));
    return 0;
}

// A matrix multiply shaped like the vmCUDA paper's Table 1 workload: C = A * B on N x N floats
// (default 4096: 64 MiB per matrix; A and B host->device, C device->host = 201 MB moved) with a
// tiled shared-memory kernel (32 x 32 tiles; no cuBLAS: vmcuda does not remote library calls).
//
//   matmul [N (multiple of 32)] [REPEATS]
//
// stdout (deterministic, identical natively and through vmcuda): the problem, the double-precision
// sum of all of C, and the check of a 256-element sample against a CPU reference (double precision).
// Exit status 1 when the check fails.
// stderr: timing lines "metric<TAB>value<TAB>unit" (mm_h2d_s, mm_kernel_s, mm_d2h_s, mm_gflops).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "bench_common.h"


#define TILE 32


__global__ void sgemm_tiled(int n, const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        as[ty][tx] = a[(size_t)row * n + k0 + tx];
        bs[ty][tx] = b[(size_t)(k0 + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    c[(size_t)row * n + col] = acc;
}

static uint64_t rng = 0xD1B54A32D192ED03ull;
static float uniform() { // xorshift64* in [-1, 1): the same numbers on every machine
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    uint64_t v = rng * 0x2545F4914F6CDD1Dull;
    return (float)((v >> 40) * (2.0 / 16777216.0) - 1.0);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    int repeats = argc > 2 ? atoi(argv[2]) : 1;
    if (n < TILE || n % TILE || repeats < 1) {
        fprintf(stderr, "usage: matmul [N: a multiple of %d] [REPEATS >= 1]\n", TILE);
        return 2;
    }
    size_t elems = (size_t)n * n, bytes = elems * sizeof(float);
    printf("matmul: C = A * B, %d x %d floats, %d repeat(s), %.3f MB moved per repeat (A, B in; C out)\n", n, n,
           repeats, 3.0 * bytes / 1e6);
    std::vector<float> a(elems), b(elems), c(elems);
    for (size_t i = 0; i < elems; i++) a[i] = uniform();
    for (size_t i = 0; i < elems; i++) b[i] = uniform();
    float *d_a, *d_b, *d_c;
    CK(cudaMalloc(&d_a, bytes));
    CK(cudaMalloc(&d_b, bytes));
    CK(cudaMalloc(&d_c, bytes));

    double t_h2d = 0, t_kernel = 0, t_d2h = 0;
    for (int rep = 0; rep < repeats; rep++) {
        double t0 = now_s();
        CK(cudaMemcpy(d_a, a.data(), bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_b, b.data(), bytes, cudaMemcpyHostToDevice));
        double t1 = now_s();
        sgemm_tiled<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(n, d_a, d_b, d_c);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        double t2 = now_s();
        CK(cudaMemcpy(c.data(), d_c, bytes, cudaMemcpyDeviceToHost));
        double t3 = now_s();
        t_h2d += t1 - t0;
        t_kernel += t2 - t1;
        t_d2h += t3 - t2;
    }

    double sum = 0;
    for (size_t i = 0; i < elems; i++) sum += c[i];
    int bad = 0;
    uint64_t pick = 12345;
    for (int j = 0; j < 256; j++) {
        pick = pick * 6364136223846793005ull + 1442695040888963407ull;
        int row = (int)((pick >> 33) % n), col = (int)((pick >> 13) % n);
        double ref = 0, mag = 0;
        for (int k = 0; k < n; k++) {
            double p = (double)a[(size_t)row * n + k] * b[(size_t)k * n + col];
            ref += p;
            mag += fabs(p);
        }
        if (fabs(ref - c[(size_t)row * n + col]) > 1e-4 * mag + 1e-6) bad++;
    }
    printf("matmul: sum(C)=%.6e\n", sum);
    printf("matmul: sample 256 vs CPU: %s (%d mismatches)\n", bad ? "FAIL" : "ok", bad);
    fprintf(stderr, "mm_h2d_s\t%.6f\ts\nmm_kernel_s\t%.6f\ts\nmm_d2h_s\t%.6f\ts\nmm_gflops\t%.1f\tGFLOP/s\n", t_h2d,
            t_kernel, t_d2h, 2.0 * n * (double)n * n * repeats / t_kernel / 1e9);
    CK(cudaFree(d_a));
    CK(cudaFree(d_b));
    CK(cudaFree(d_c));
    return bad ? 1 : 0;
}

// Black-Scholes European option pricing, shaped like the vmCUDA paper's Table 1 workload: each
// iteration copies 3 input arrays of N floats host->device (stock price, strike, years), prices N
// calls and N puts with the standard CND polynomial, and copies the 2 result arrays back: 5 * 4 * N
// bytes per iteration. Default N = 19,000,000 and 5 iterations = 1.90 GB moved in total.
//
//   blackscholes [N] [ITERATIONS]
//
// stdout (deterministic, identical natively and through vmcuda): the problem, per iteration the
// double-precision sums of all calls and puts and the check of a 4096-option sample against a CPU
// reference (double precision). Exit status 1 when a check fails.
// stderr: timing lines "metric<TAB>value<TAB>unit" (bs_h2d_s, bs_kernel_s, bs_d2h_s, bs_gpu_total_s).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "bench_common.h"



__device__ inline float cnd_gpu(float d) {
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f, A5 = 1.330274429f;
    const float RSQRT2PI = 0.39894228040143267793994605993438f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float cnd = RSQRT2PI * expf(-0.5f * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0 ? 1.0f - cnd : cnd;
}

__global__ void black_scholes(float *call, float *put, const float *s, const float *x, const float *t, float r,
                              float v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float sqrt_t = sqrtf(t[i]);
        float d1 = (logf(s[i] / x[i]) + (r + 0.5f * v * v) * t[i]) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float cnd1 = cnd_gpu(d1), cnd2 = cnd_gpu(d2);
        float exp_rt = expf(-r * t[i]);
        call[i] = s[i] * cnd1 - x[i] * exp_rt * cnd2;
        put[i] = x[i] * exp_rt * (1.0f - cnd2) - s[i] * (1.0f - cnd1);
    }
}

static double cnd_cpu(double d) {
    const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
    const double RSQRT2PI = 0.39894228040143267793994605993438;
    double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    double cnd = RSQRT2PI * exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))));
    return d > 0 ? 1.0 - cnd : cnd;
}

static void black_scholes_cpu(double &call, double &put, double s, double x, double t, double r, double v) {
    double sqrt_t = sqrt(t);
    double d1 = (log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t);
    double d2 = d1 - v * sqrt_t;
    double cnd1 = cnd_cpu(d1), cnd2 = cnd_cpu(d2);
    double exp_rt = exp(-r * t);
    call = s * cnd1 - x * exp_rt * cnd2;
    put = x * exp_rt * (1.0 - cnd2) - s * (1.0 - cnd1);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(float lo, float hi) { // xorshift64*: the same numbers on every machine
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    uint64_t v = rng * 0x2545F4914F6CDD1Dull;
    return lo + (hi - lo) * (float)((v >> 40) * (1.0 / 16777216.0));
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 19000000;
    int iterations = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 4096 || iterations < 1) {
        fprintf(stderr, "usage: blackscholes [N >= 4096] [ITERATIONS >= 1]\n");
        return 2;
    }
    const float volatility = 0.30f;
    size_t bytes = (size_t)n * sizeof(float);
    printf("blackscholes: %d options, %d iterations, %.3f GB moved (3 arrays in, 2 out per iteration)\n", n,
           iterations, 5.0 * bytes * iterations / 1e9);

    std::vector<float> s(n), x(n), t(n), call(n), put(n);
    for (int i = 0; i < n; i++) {
        s[i] = uniform(5.0f, 30.0f);
        x[i] = uniform(1.0f, 100.0f);
        t[i] = uniform(0.25f, 10.0f);
    }
    float *d_s, *d_x, *d_t, *d_call, *d_put;
    CK(cudaMalloc(&d_s, bytes));
    CK(cudaMalloc(&d_x, bytes));
    CK(cudaMalloc(&d_t, bytes));
    CK(cudaMalloc(&d_call, bytes));
    CK(cudaMalloc(&d_put, bytes));

    double t_h2d = 0, t_kernel = 0, t_d2h = 0, t_all = now_s();
    int failed = 0;
    for (int it = 0; it < iterations; it++) {
        float r = 0.02f + 0.005f * it;
        double t0 = now_s();
        CK(cudaMemcpy(d_s, s.data(), bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_t, t.data(), bytes, cudaMemcpyHostToDevice));
        double t1 = now_s();
        black_scholes<<<1024, 256>>>(d_call, d_put, d_s, d_x, d_t, r, volatility, n);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        double t2 = now_s();
        CK(cudaMemcpy(call.data(), d_call, bytes, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(put.data(), d_put, bytes, cudaMemcpyDeviceToHost));
        double t3 = now_s();
        t_h2d += t1 - t0;
        t_kernel += t2 - t1;
        t_d2h += t3 - t2;

        double sum_call = 0, sum_put = 0, max_err = 0;
        for (int i = 0; i < n; i++) {
            sum_call += call[i];
            sum_put += put[i];
        }
        for (int j = 0; j < 4096; j++) {
            int i = (int)((long long)j * (n - 1) / 4095);
            double c, p;
            black_scholes_cpu(c, p, s[i], x[i], t[i], r, volatility);
            max_err = fmax(max_err, fmax(fabs(c - call[i]), fabs(p - put[i])));
        }
        bool ok = max_err < 1e-3; // prices are 0..100; float vs double reference
        failed += !ok;
        printf("iteration %d: r=%.3f sum(call)=%.6e sum(put)=%.6e sample 4096 vs CPU: %s\n", it, r, sum_call, sum_put,
               ok ? "ok" : "FAIL");
    }
    double total = now_s() - t_all;
    printf("blackscholes: %s\n", failed ? "FAILED" : "all iterations match the CPU reference");
    fprintf(stderr, "bs_h2d_s\t%.6f\ts\nbs_kernel_s\t%.6f\ts\nbs_d2h_s\t%.6f\ts\nbs_gpu_total_s\t%.6f\ts\n", t_h2d,
            t_kernel, t_d2h, total);
    CK(cudaFree(d_s));
    CK(cudaFree(d_x));
    CK(cudaFree(d_t));
    CK(cudaFree(d_call));
    CK(cudaFree(d_put));
    return failed ? 1 : 0;
}

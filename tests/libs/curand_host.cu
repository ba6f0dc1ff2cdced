// cuRAND host API: a seeded generator fills device memory; the same seed gives the same numbers, so
// the printed values compare byte for byte with a native run.
#include <curand.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

int main() {
    const size_t n = 1 << 20;
    float *d;
    CHECK_CUDA(cudaMalloc(&d, n * sizeof(float)));
    curandGenerator_t g;
    CHECK_LIB(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    CHECK_LIB(curandSetPseudoRandomGeneratorSeed(g, 1234ULL));
    CHECK_LIB(curandGenerateUniform(g, d, n));
    std::vector<float> h(n);
    CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    double mean = 0;
    for (size_t i = 0; i < n; i++) mean += h[i];
    mean /= n;
    printf("uniform: %.6f %.6f %.6f %.6f ... mean %.4f\n", h[0], h[1], h[2], h[n - 1], mean);
    CHECK_LIB(curandGenerateNormal(g, d, n, 0.0f, 1.0f));
    CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
    double m2 = 0, var = 0;
    for (size_t i = 0; i < n; i++) m2 += h[i];
    m2 /= n;
    for (size_t i = 0; i < n; i++) var += (h[i] - m2) * (h[i] - m2);
    var /= n;
    printf("normal: %.6f %.6f ... mean %.3f variance %.3f\n", h[0], h[1], fabs(m2) < 0.0005 ? 0.0 : m2, var);
    unsigned int *u;
    CHECK_CUDA(cudaMalloc(&u, 1024 * sizeof(unsigned int)));
    curandGenerator_t q;
    CHECK_LIB(curandCreateGenerator(&q, CURAND_RNG_QUASI_SOBOL32));
    CHECK_LIB(curandSetQuasiRandomGeneratorDimensions(q, 1));
    CHECK_LIB(curandGenerate(q, u, 1024));
    std::vector<unsigned int> hu(1024);
    CHECK_CUDA(cudaMemcpy(hu.data(), u, 1024 * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    printf("sobol32: %u %u %u %u\n", hu[0], hu[1], hu[2], hu[3]);
    CHECK_LIB(curandDestroyGenerator(g));
    CHECK_LIB(curandDestroyGenerator(q));
    cudaFree(d); cudaFree(u);
    bool ok = fabs(mean - 0.5) < 0.01 && fabs(var - 1.0) < 0.01;
    printf("%s\n", ok ? "curand_host: PASS" : "curand_host: FAIL");
    return ok ? 0 : 1;
}

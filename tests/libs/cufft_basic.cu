// cuFFT: 1-D complex forward and inverse (round trip), and a 2-D real-to-complex transform whose peaks
// are known from the input's frequencies.
#include <cufft.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

int main() {
    const int n = 1024;
    std::vector<cufftComplex> x(n), y(n);
    for (int i = 0; i < n; i++) {
        x[i].x = (float)(cos(2 * M_PI * 5 * i / n) + 0.5 * cos(2 * M_PI * 40 * i / n));
        x[i].y = 0;
    }
    cufftComplex *d;
    CHECK_CUDA(cudaMalloc(&d, n * sizeof(cufftComplex)));
    CHECK_CUDA(cudaMemcpy(d, x.data(), n * sizeof(cufftComplex), cudaMemcpyHostToDevice));
    cufftHandle plan;
    CHECK_LIB(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
    CHECK_LIB(cufftExecC2C(plan, d, d, CUFFT_FORWARD));
    CHECK_CUDA(cudaMemcpy(y.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
    int peaks[4], np = 0;
    for (int i = 0; i < n && np < 4; i++)
        if (hypot(y[i].x, y[i].y) > n / 8.0) peaks[np++] = i;
    printf("c2c 1-D %d: %d peaks at", n, np);
    for (int i = 0; i < np; i++) printf(" %d (|X| = %.1f)", peaks[i], hypot(y[peaks[i]].x, y[peaks[i]].y));
    printf("\n");
    CHECK_LIB(cufftExecC2C(plan, d, d, CUFFT_INVERSE));
    CHECK_CUDA(cudaMemcpy(y.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(y[i].x / n - x[i].x) + fabs(y[i].y / n));
    printf("c2c round trip: max error %s 1e-5\n", err < 1e-5 ? "<" : ">=");
    CHECK_LIB(cufftDestroy(plan));

    const int rows = 64, cols = 64;
    std::vector<float> r(rows * cols);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) r[i * cols + j] = (float)cos(2 * M_PI * (3.0 * i / rows + 7.0 * j / cols));
    float *dr;
    cufftComplex *dk;
    const int ccols = cols / 2 + 1;
    CHECK_CUDA(cudaMalloc(&dr, r.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dk, rows * ccols * sizeof(cufftComplex)));
    CHECK_CUDA(cudaMemcpy(dr, r.data(), r.size() * sizeof(float), cudaMemcpyHostToDevice));
    cufftHandle p2;
    CHECK_LIB(cufftPlan2d(&p2, rows, cols, CUFFT_R2C));
    CHECK_LIB(cufftExecR2C(p2, dr, dk));
    std::vector<cufftComplex> k(rows * ccols);
    CHECK_CUDA(cudaMemcpy(k.data(), dk, k.size() * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
    int best = 0;
    for (int i = 1; i < rows * ccols; i++)
        if (hypot(k[i].x, k[i].y) > hypot(k[best].x, k[best].y)) best = i;
    printf("r2c 2-D %dx%d: strongest bin (%d, %d), |X| = %.1f\n", rows, cols, best / ccols, best % ccols,
           hypot(k[best].x, k[best].y));
    CHECK_LIB(cufftDestroy(p2));
    cudaFree(d); cudaFree(dr); cudaFree(dk);
    // a real signal's spectrum is symmetric: cos at 5 and 40 cycles gives bins 5, 40, n-40 and n-5
    bool ok = np == 4 && peaks[0] == 5 && peaks[1] == 40 && peaks[2] == n - 40 && peaks[3] == n - 5 && err < 1e-5 &&
              best / ccols == 3 && best % ccols == 7;
    printf("%s\n", ok ? "cufft_basic: PASS" : "cufft_basic: FAIL");
    return ok ? 0 : 1;
}

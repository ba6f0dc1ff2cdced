// cuSOLVER dense: LU factorisation with partial pivoting and a solve (getrf/getrs), and a Cholesky
// factorisation (potrf), on a diagonally dominant system whose solution is known.
#include <cusolverDn.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

int main() {
    const int n = 64;
    std::vector<double> a(n * n), x(n), b(n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) a[i + j * n] = i == j ? 2.0 * n : 1.0 / (1 + abs(i - j));
    for (int i = 0; i < n; i++) x[i] = (i % 5) - 2;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += a[i + j * n] * x[j];
        b[i] = s;
    }
    cusolverDnHandle_t h;
    CHECK_LIB(cusolverDnCreate(&h));
    double *da, *db, *work;
    int *ipiv, *info;
    CHECK_CUDA(cudaMalloc(&da, n * n * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&db, n * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&ipiv, n * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&info, sizeof(int)));
    CHECK_CUDA(cudaMemcpy(da, a.data(), n * n * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, b.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    int lwork = 0;
    CHECK_LIB(cusolverDnDgetrf_bufferSize(h, n, n, da, n, &lwork));
    CHECK_CUDA(cudaMalloc(&work, lwork * sizeof(double)));
    CHECK_LIB(cusolverDnDgetrf(h, n, n, da, n, work, ipiv, info));
    CHECK_LIB(cusolverDnDgetrs(h, CUBLAS_OP_N, n, 1, da, n, ipiv, db, n, info));
    int hinfo = -1;
    std::vector<double> got(n);
    CHECK_CUDA(cudaMemcpy(&hinfo, info, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(got.data(), db, n * sizeof(double), cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(got[i] - x[i]));
    printf("getrf+getrs %d: info %d, x[0..3] = %.4f %.4f %.4f %.4f, max error %s 1e-10\n", n, hinfo, got[0], got[1],
           got[2], got[3], err < 1e-10 ? "<" : ">=");

    CHECK_CUDA(cudaMemcpy(da, a.data(), n * n * sizeof(double), cudaMemcpyHostToDevice));
    int lw2 = 0;
    CHECK_LIB(cusolverDnDpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, da, n, &lw2));
    double *work2;
    CHECK_CUDA(cudaMalloc(&work2, lw2 * sizeof(double)));
    CHECK_LIB(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, n, da, n, work2, lw2, info));
    std::vector<double> l(n * n);
    CHECK_CUDA(cudaMemcpy(&hinfo, info, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(l.data(), da, n * n * sizeof(double), cudaMemcpyDeviceToHost));
    double rec = 0; // L L^T against A
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int k = 0; k <= j; k++) s += l[i + k * n] * l[j + k * n];
            rec = fmax(rec, fabs(s - a[i + j * n]));
        }
    printf("potrf %d: info %d, L[0][0] = %.6f, max |L L^T - A| %s 1e-9\n", n, hinfo, l[0], rec < 1e-9 ? "<" : ">=");
    CHECK_LIB(cusolverDnDestroy(h));
    cudaFree(da); cudaFree(db); cudaFree(work); cudaFree(work2); cudaFree(ipiv); cudaFree(info);
    bool ok = err < 1e-10 && rec < 1e-9 && hinfo == 0;
    printf("%s\n", ok ? "cusolver_dense: PASS" : "cusolver_dense: FAIL");
    return ok ? 0 : 1;
}

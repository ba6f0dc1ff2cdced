// cuSPARSE generic API: a CSR matrix (the 1-D Laplacian) times a vector, and a few conjugate-gradient
// iterations built from SpMV and cuBLAS level-1 calls, as NVIDIA's conjugateGradient sample does.
#include <cublas_v2.h>
#include <cusparse.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

int main() {
    const int n = 1000;
    std::vector<int> rowptr(n + 1), cols;
    std::vector<float> vals;
    for (int i = 0; i < n; i++) {
        rowptr[i] = (int)cols.size();
        if (i > 0) { cols.push_back(i - 1); vals.push_back(-1.0f); }
        cols.push_back(i); vals.push_back(4.0f);
        if (i < n - 1) { cols.push_back(i + 1); vals.push_back(-1.0f); }
    }
    rowptr[n] = (int)cols.size();
    const int nnz = (int)cols.size();
    int *drow, *dcol;
    float *dval, *dx, *dy, *dr, *dp, *dap;
    CHECK_CUDA(cudaMalloc(&drow, (n + 1) * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dcol, nnz * sizeof(int)));
    CHECK_CUDA(cudaMalloc(&dval, nnz * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dx, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dy, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dr, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dp, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dap, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(drow, rowptr.data(), (n + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dcol, cols.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dval, vals.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; i++) x[i] = (float)((i % 9) - 4);
    CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    cusparseHandle_t sp;
    CHECK_LIB(cusparseCreate(&sp));
    cusparseSpMatDescr_t A;
    cusparseDnVecDescr_t vx, vy;
    CHECK_LIB(cusparseCreateCsr(&A, n, n, nnz, drow, dcol, dval, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    CHECK_LIB(cusparseCreateDnVec(&vx, n, dx, CUDA_R_32F));
    CHECK_LIB(cusparseCreateDnVec(&vy, n, dy, CUDA_R_32F));
    float one = 1.0f, zero = 0.0f;
    size_t bytes = 0;
    CHECK_LIB(cusparseSpMV_bufferSize(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                                      CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
    void *buf;
    CHECK_CUDA(cudaMalloc(&buf, bytes ? bytes : 1));
    CHECK_LIB(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                           CUSPARSE_SPMV_ALG_DEFAULT, buf));
    CHECK_CUDA(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    double maxdiff = 0;
    for (int i = 0; i < n; i++) {
        double s = 4.0 * x[i] - (i > 0 ? x[i - 1] : 0) - (i < n - 1 ? x[i + 1] : 0);
        maxdiff = fmax(maxdiff, fabs(s - y[i]));
    }
    printf("csr spmv %d (nnz %d): max |gpu - cpu| = %g\n", n, nnz, maxdiff);

    // CG on A x = y (solution: the x above), from x0 = 0
    cublasHandle_t bl;
    CHECK_LIB(cublasCreate(&bl));
    CHECK_CUDA(cudaMemset(dx, 0, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(dr, dy, n * sizeof(float), cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(dp, dr, n * sizeof(float), cudaMemcpyDeviceToDevice));
    cusparseDnVecDescr_t vp, vap;
    CHECK_LIB(cusparseCreateDnVec(&vp, n, dp, CUDA_R_32F));
    CHECK_LIB(cusparseCreateDnVec(&vap, n, dap, CUDA_R_32F));
    float rr = 0;
    CHECK_LIB(cublasSdot(bl, n, dr, 1, dr, 1, &rr));
    int it = 0;
    for (; it < 100 && rr > 1e-8f; it++) {
        CHECK_LIB(cusparseSpMV(sp, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vp, &zero, vap, CUDA_R_32F,
                               CUSPARSE_SPMV_ALG_DEFAULT, buf));
        float pap = 0;
        CHECK_LIB(cublasSdot(bl, n, dp, 1, dap, 1, &pap));
        float alpha = rr / pap, nalpha = -alpha;
        CHECK_LIB(cublasSaxpy(bl, n, &alpha, dp, 1, dx, 1));
        CHECK_LIB(cublasSaxpy(bl, n, &nalpha, dap, 1, dr, 1));
        float rr_new = 0;
        CHECK_LIB(cublasSdot(bl, n, dr, 1, dr, 1, &rr_new));
        float beta = rr_new / rr;
        CHECK_LIB(cublasSscal(bl, n, &beta, dp, 1));
        CHECK_LIB(cublasSaxpy(bl, n, &one, dr, 1, dp, 1));
        rr = rr_new;
    }
    std::vector<float> sol(n);
    CHECK_CUDA(cudaMemcpy(sol.data(), dx, n * sizeof(float), cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(sol[i] - x[i]));
    printf("cg: converged in %s 100 iterations, max error %s 1e-3\n", it < 100 ? "<" : ">=", err < 1e-3 ? "<" : ">=");
    cusparseDestroySpMat(A); cusparseDestroyDnVec(vx); cusparseDestroyDnVec(vy);
    cusparseDestroyDnVec(vp); cusparseDestroyDnVec(vap);
    CHECK_LIB(cusparseDestroy(sp));
    CHECK_LIB(cublasDestroy(bl));
    cudaFree(drow); cudaFree(dcol); cudaFree(dval); cudaFree(dx); cudaFree(dy); cudaFree(dr); cudaFree(dp);
    cudaFree(dap); cudaFree(buf);
    bool ok = maxdiff == 0 && it < 100 && err < 1e-3;
    printf("%s\n", ok ? "cusparse_spmv: PASS" : "cusparse_spmv: FAIL");
    return ok ? 0 : 1;
}

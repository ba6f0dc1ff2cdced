// cuBLASLt: descriptors, a heuristic query and one FP32 matmul with a bias-free epilogue, checked
// against the CPU (small-integer inputs, exact results).
#include <cublasLt.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

int main() {
    const int m = 128, n = 96, k = 64;
    std::vector<float> a(m * k), b(k * n), c(m * n);
    for (int i = 0; i < m * k; i++) a[i] = (float)((i % 7) - 3);
    for (int i = 0; i < k * n; i++) b[i] = (float)((i % 5) - 2);
    float *da, *db, *dc;
    void *workspace;
    size_t ws = 4 << 20;
    CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dc, c.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&workspace, ws));
    CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));

    cublasLtHandle_t lt;
    CHECK_LIB(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    CHECK_LIB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK_LIB(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
    CHECK_LIB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
    CHECK_LIB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
    cublasLtMatmulPreference_t pref;
    CHECK_LIB(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_LIB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t heur[4];
    int found = 0;
    CHECK_LIB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 4, heur, &found));
    printf("cublasLt heuristic: %s\n", found > 0 ? "at least one algorithm" : "none");
    float alpha = 1.0f, beta = 0.0f;
    CHECK_LIB(cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &beta, dc, lc, dc, lc, found ? &heur[0].algo : NULL,
                             workspace, ws, 0));
    CHECK_CUDA(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double maxdiff = 0, sum = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int q = 0; q < k; q++) s += (double)a[i + q * m] * b[q + j * k];
            maxdiff = fmax(maxdiff, fabs(s - c[i + j * m]));
            sum += c[i + j * m];
        }
    printf("cublasLtMatmul %dx%dx%d: max |gpu - cpu| = %g, sum = %.1f\n", m, n, k, maxdiff, sum);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(workspace);
    printf("%s\n", maxdiff == 0 ? "cublaslt_matmul: PASS" : "cublaslt_matmul: FAIL");
    return maxdiff == 0 ? 0 : 1;
}

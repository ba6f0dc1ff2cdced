// cuBLAS through the library's own runtime: level-1/2/3 calls, both pointer modes, a user stream,
// batched and strided-batched GEMM. Inputs are small integers so every float result is exact and
// can be checked against the CPU.
#include <cublas_v2.h>
#include <math.h>
#include <vector>
#include "lib_check.h"

static float val(int i, int j, int salt) { return (float)(((i * 7 + j * 3 + salt) % 9) - 4); }

static void cpu_gemm(int n, const float *a, const float *b, float *c) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += (double)a[i + k * n] * b[k + j * n];
            c[i + j * n] = (float)s;
        }
}

int main() {
    cublasHandle_t h;
    CHECK_LIB(cublasCreate(&h));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_LIB(cublasSetStream(h, stream));

    // SGEMM 256 x 256
    const int n = 256;
    std::vector<float> a(n * n), b(n * n), c(n * n), ref(n * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) { a[i + j * n] = val(i, j, 1); b[i + j * n] = val(i, j, 2); }
    float *da, *db, *dc;
    CHECK_CUDA(cudaMalloc(&da, n * n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&db, n * n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dc, n * n * sizeof(float)));
    CHECK_LIB(cublasSetMatrix(n, n, sizeof(float), a.data(), n, da, n));
    CHECK_LIB(cublasSetMatrix(n, n, sizeof(float), b.data(), n, db, n));
    float one = 1.0f, zero = 0.0f;
    CHECK_LIB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n));
    CHECK_LIB(cublasGetMatrix(n, n, sizeof(float), dc, n, c.data(), n));
    cpu_gemm(n, a.data(), b.data(), ref.data());
    double maxdiff = 0, sum = 0;
    for (int i = 0; i < n * n; i++) { maxdiff = fmax(maxdiff, fabs(c[i] - ref[i])); sum += c[i]; }
    printf("sgemm %d: max |gpu - cpu| = %g, sum = %.1f\n", n, maxdiff, sum);

    // DGEMM 64 x 64, transposed A
    const int m = 64;
    std::vector<double> x(m * m), y(m * m), z(m * m);
    for (int i = 0; i < m * m; i++) { x[i] = (i % 5) - 2; y[i] = (i % 3) - 1; }
    double *dx, *dy, *dz;
    CHECK_CUDA(cudaMalloc(&dx, m * m * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&dy, m * m * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&dz, m * m * sizeof(double)));
    CHECK_CUDA(cudaMemcpy(dx, x.data(), m * m * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, y.data(), m * m * sizeof(double), cudaMemcpyHostToDevice));
    double d1 = 1.0, d0 = 0.0;
    CHECK_LIB(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, m, m, &d1, dx, m, dy, m, &d0, dz, m));
    CHECK_CUDA(cudaMemcpy(z.data(), dz, m * m * sizeof(double), cudaMemcpyDeviceToHost));
    double dmax = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double s = 0;
            for (int k = 0; k < m; k++) s += x[k + i * m] * y[k + j * m];
            dmax = fmax(dmax, fabs(s - z[i + j * m]));
        }
    printf("dgemm T,N %d: max |gpu - cpu| = %g\n", m, dmax);

    // level 1, host pointer mode: axpy, dot, amax, nrm2, scal
    const int len = 10000;
    std::vector<float> v(len), w(len);
    for (int i = 0; i < len; i++) { v[i] = (float)((i % 11) - 5); w[i] = (float)((i % 4) - 1); }
    float *dv, *dw;
    CHECK_CUDA(cudaMalloc(&dv, len * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dw, len * sizeof(float)));
    CHECK_LIB(cublasSetVector(len, sizeof(float), v.data(), 1, dv, 1));
    CHECK_LIB(cublasSetVector(len, sizeof(float), w.data(), 1, dw, 1));
    float two = 2.0f, dot = 0, nrm = 0;
    int amax = 0;
    CHECK_LIB(cublasSaxpy(h, len, &two, dv, 1, dw, 1));
    CHECK_LIB(cublasSdot(h, len, dv, 1, dw, 1, &dot));
    CHECK_LIB(cublasIsamax(h, len, dw, 1, &amax));
    CHECK_LIB(cublasSnrm2(h, len, dv, 1, &nrm));
    double cdot = 0;
    for (int i = 0; i < len; i++) cdot += (double)v[i] * (w[i] + 2 * v[i]);
    printf("saxpy+sdot: %.1f (cpu %.1f), isamax %d, snrm2 %.2f\n", dot, cdot, amax, nrm);

    // device pointer mode: the result stays on the GPU
    float *ddot;
    CHECK_CUDA(cudaMalloc(&ddot, sizeof(float)));
    CHECK_LIB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_LIB(cublasSdot(h, len, dv, 1, dv, 1, ddot));
    CHECK_LIB(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    float hdot = 0;
    CHECK_CUDA(cudaMemcpyAsync(&hdot, ddot, sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    printf("sdot device pointer mode: %.1f\n", hdot);

    // SGEMV
    CHECK_LIB(cublasSgemv(h, CUBLAS_OP_N, 100, 100, &one, da, n, dv, 1, &zero, dw, 1));
    std::vector<float> gv(100);
    CHECK_CUDA(cudaMemcpy(gv.data(), dw, 100 * sizeof(float), cudaMemcpyDeviceToHost));
    double gmax = 0;
    for (int i = 0; i < 100; i++) {
        double s = 0;
        for (int k = 0; k < 100; k++) s += (double)a[i + k * n] * v[k];
        gmax = fmax(gmax, fabs(s - gv[i]));
    }
    printf("sgemv 100: max |gpu - cpu| = %g\n", gmax);

    // batched and strided-batched SGEMM: 16 products of 32 x 32
    const int bs = 32, batch = 16;
    std::vector<float> ba(bs * bs * batch), bb(bs * bs * batch), bc(bs * bs * batch);
    for (int i = 0; i < bs * bs * batch; i++) { ba[i] = (float)((i % 7) - 3); bb[i] = (float)((i % 5) - 2); }
    float *dba, *dbb, *dbc;
    CHECK_CUDA(cudaMalloc(&dba, ba.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dbb, bb.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dbc, bc.size() * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(dba, ba.data(), ba.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dbb, bb.data(), bb.size() * sizeof(float), cudaMemcpyHostToDevice));
    std::vector<float *> pa(batch), pb(batch), pc(batch);
    for (int i = 0; i < batch; i++) { pa[i] = dba + i * bs * bs; pb[i] = dbb + i * bs * bs; pc[i] = dbc + i * bs * bs; }
    float **dpa, **dpb, **dpc;
    CHECK_CUDA(cudaMalloc(&dpa, batch * sizeof(float *)));
    CHECK_CUDA(cudaMalloc(&dpb, batch * sizeof(float *)));
    CHECK_CUDA(cudaMalloc(&dpc, batch * sizeof(float *)));
    CHECK_CUDA(cudaMemcpy(dpa, pa.data(), batch * sizeof(float *), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dpb, pb.data(), batch * sizeof(float *), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dpc, pc.data(), batch * sizeof(float *), cudaMemcpyHostToDevice));
    CHECK_LIB(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, bs, bs, bs, &one, dpa, bs, dpb, bs, &zero, dpc, bs, batch));
    CHECK_CUDA(cudaMemcpy(bc.data(), dbc, bc.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double bmax = 0;
    std::vector<float> one_ref(bs * bs);
    for (int k = 0; k < batch; k++) {
        cpu_gemm(bs, &ba[k * bs * bs], &bb[k * bs * bs], one_ref.data());
        for (int i = 0; i < bs * bs; i++) bmax = fmax(bmax, fabs(one_ref[i] - bc[k * bs * bs + i]));
    }
    printf("sgemmBatched %d x %d: max |gpu - cpu| = %g\n", batch, bs, bmax);
    CHECK_CUDA(cudaMemset(dbc, 0, bc.size() * sizeof(float)));
    CHECK_LIB(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, bs, bs, bs, &one, dba, bs, bs * bs, dbb, bs,
                                        bs * bs, &zero, dbc, bs, bs * bs, batch));
    CHECK_CUDA(cudaMemcpy(bc.data(), dbc, bc.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double smax = 0;
    for (int k = 0; k < batch; k++) {
        cpu_gemm(bs, &ba[k * bs * bs], &bb[k * bs * bs], one_ref.data());
        for (int i = 0; i < bs * bs; i++) smax = fmax(smax, fabs(one_ref[i] - bc[k * bs * bs + i]));
    }
    printf("sgemmStridedBatched %d x %d: max |gpu - cpu| = %g\n", batch, bs, smax);

    CHECK_LIB(cublasDestroy(h));
    CHECK_CUDA(cudaStreamDestroy(stream));
    cudaFree(da); cudaFree(db); cudaFree(dc); cudaFree(dx); cudaFree(dy); cudaFree(dz);
    cudaFree(dv); cudaFree(dw); cudaFree(ddot); cudaFree(dba); cudaFree(dbb); cudaFree(dbc);
    cudaFree(dpa); cudaFree(dpb); cudaFree(dpc);
    bool ok = maxdiff == 0 && dmax == 0 && bmax == 0 && smax == 0 && gmax == 0 && dot == (float)cdot;
    printf("%s\n", ok ? "cublas_basic: PASS" : "cublas_basic: FAIL");
    return ok ? 0 : 1;
}

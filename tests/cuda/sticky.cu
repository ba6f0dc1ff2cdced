// Errors: a launch that fails asynchronously (cudaGetLastError reports it once, the context lives on),
// a device-side assert (the sticky cudaErrorAssert, then every call fails until cudaDeviceReset), a
// trap, and what the runtime answers after each. The program prints what it observes; the runtime's
// "Assertion ... failed" message goes to stderr (through vmcuda: the worker's stderr, forwarded).
#include <assert.h>
#include "vmc_check.h"

__global__ void fill(int *v, int k) { v[threadIdx.x] = k; }
__global__ void must_be(const int *v, int k) { assert(v[threadIdx.x] == k); }
__global__ void trap_now() { __trap(); }

static void show(const char *what, cudaError_t e) { printf("%-44s %s\n", what, cudaGetErrorName(e)); }

int main() {
    int *d = NULL;
    int h[32];
    CK(cudaMalloc((void **)&d, sizeof h));
    fill<<<1, 32>>>(d, 5);
    must_be<<<1, 32>>>(d, 5); // passes
    CK(cudaDeviceSynchronize());

    // asynchronous, not sticky: reported by cudaGetLastError once
    fill<<<1, 4096>>>(d, 1);
    show("bad launch configuration, cudaGetLastError:", cudaGetLastError());
    show("... again:", cudaGetLastError());
    show("cudaDeviceSynchronize after it:", cudaDeviceSynchronize());
    fill<<<1, 32>>>(d, 6);
    show("a good launch after it:", cudaDeviceSynchronize());
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    vmc_check(h[31] == 6, "the context survived a bad launch", "h[31] = %d", h[31]);

    // an assert: sticky
    must_be<<<1, 32>>>(d, 7);
    cudaError_t e = cudaDeviceSynchronize();
    show("device assert, cudaDeviceSynchronize:", e);
    vmc_check(e == cudaErrorAssert, "a failed device assert", "cudaDeviceSynchronize returns cudaErrorAssert");
    show("cudaGetLastError:", cudaGetLastError());
    show("cudaPeekAtLastError:", cudaPeekAtLastError());
    int *d2 = NULL;
    show("cudaMalloc after it:", cudaMalloc((void **)&d2, 64));
    show("cudaMemcpy after it:", cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    fill<<<1, 32>>>(d, 8);
    show("a launch after it (cudaGetLastError):", cudaGetLastError());
    show("cudaDeviceReset:", cudaDeviceReset());
    show("cudaGetLastError after the reset:", cudaGetLastError());
    e = cudaMalloc((void **)&d, sizeof h);
    show("cudaMalloc after the reset:", e);
    if (e == cudaSuccess) {
        fill<<<1, 32>>>(d, 9);
        show("a launch after the reset:", cudaDeviceSynchronize());
        show("cudaMemcpy after the reset:", cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
        printf("value after the reset: %d\n", h[0]);
    }

    // a trap: sticky too
    trap_now<<<1, 1>>>();
    show("trap, cudaDeviceSynchronize:", cudaDeviceSynchronize());
    show("cudaGetLastError:", cudaGetLastError());
    show("cudaMemset after it:", cudaMemset(d, 0, 4));
    show("cudaDeviceReset:", cudaDeviceReset());
    int v = 0;
    show("cudaRuntimeGetVersion:", cudaRuntimeGetVersion(&v));
    printf("runtime version: %d\n", v);
    show("cudaDriverGetVersion:", cudaDriverGetVersion(&v));
    printf("driver version is known: %s\n", v > 0 ? "yes" : "no");
    show("cudaMalloc after the second reset:", cudaMalloc((void **)&d, 64));
    return vmc_finish("sticky");
}

// Zero-copy (mapped) host memory, as NVIDIA's simpleZeroCopy uses it: page-locked host memory allocated
// mapped, its device address from cudaHostGetDevicePointer, kernels that read and write it with no copy,
// the host seeing what a kernel wrote once the kernel is done. Through vmcuda this works on the co-located
// path only (the worker maps the client's pages); over TCP it is refused (the test scripts run this program
// co-located only).
#include <stdint.h>
#include <string.h>
#include "vmc_check.h"

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

__global__ void count_up(unsigned *flag, int rounds) {
    for (int r = 0; r < rounds; r++) atomicAdd(flag, 1u);
}

int main() {
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    vmc_check(prop.canMapHostMemory == 1, "the device can map host memory", "%d", prop.canMapHostMemory);
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));

    const int n = 1 << 20;
    float *a = NULL, *b = NULL, *c = NULL;
    CK(cudaHostAlloc((void **)&a, n * sizeof(float), cudaHostAllocMapped));
    CK(cudaHostAlloc((void **)&b, n * sizeof(float), cudaHostAllocMapped | cudaHostAllocPortable));
    CK(cudaHostAlloc((void **)&c, n * sizeof(float), cudaHostAllocMapped | cudaHostAllocWriteCombined));
    unsigned flags = 0;
    CK(cudaHostGetFlags(&flags, b));
    vmc_check((flags & (cudaHostAllocMapped | cudaHostAllocPortable)) == (cudaHostAllocMapped | cudaHostAllocPortable),
              "cudaHostGetFlags of mapped memory", "mapped and portable");
    for (int i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)(i % 1000);
    }
    memset(c, 0, n * sizeof(float));
    float *da = NULL, *db = NULL, *dc = NULL;
    CK(cudaHostGetDevicePointer((void **)&da, a, 0));
    CK(cudaHostGetDevicePointer((void **)&db, b, 0));
    CK(cudaHostGetDevicePointer((void **)&dc, c, 0));
    float *inside = NULL;
    CK(cudaHostGetDevicePointer((void **)&inside, a + 1000, 0));
    vmc_check(inside == da + 1000, "the device address of an address inside the allocation", "offset kept");
    CK_EXPECT(cudaHostGetDevicePointer((void **)&inside, a, 1), cudaErrorInvalidValue);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidValue); // recorded as the last error, as every error is

    vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += c[i] != a[i] + b[i];
    vmc_check(wrong == 0, "a kernel wrote host memory with no copy", "%d of %d wrong", wrong, n);

    // the host changes its input; the next kernel reads the new values
    for (int i = 0; i < n; i++) a[i] = -a[i];
    vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaDeviceSynchronize());
    wrong = 0;
    for (int i = 0; i < n; i++) wrong += c[i] != b[i] - (float)i;
    vmc_check(wrong == 0, "a kernel read what the host wrote since", "%d of %d wrong", wrong, n);

    // atomics on a mapped counter, across a stream
    unsigned *counter = NULL, *dcounter = NULL;
    CK(cudaHostAlloc((void **)&counter, sizeof *counter, cudaHostAllocMapped));
    *counter = 7;
    CK(cudaHostGetDevicePointer((void **)&dcounter, counter, 0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    count_up<<<4, 32, 0, s>>>(dcounter, 10);
    CK(cudaStreamSynchronize(s));
    vmc_check(*counter == 7 + 4 * 32 * 10, "atomics on a mapped counter", "%u", *counter);

    // copies from and to mapped memory work as from any page-locked memory
    float *dev = NULL;
    CK(cudaMalloc((void **)&dev, n * sizeof(float)));
    CK(cudaMemcpyAsync(dev, b, n * sizeof(float), cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(c, dev, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    vmc_check(memcmp(b, c, n * sizeof(float)) == 0, "copies through mapped memory", "4 MiB round trip");

    // the program's own memory registered mapped (what NVIDIA's simpleStreams does on Linux): it keeps its
    // contents, kernels write it through its device address, and it keeps what they wrote when unregistered
    const int rn = 1 << 18;
    char *raw = (char *)malloc(rn * sizeof(float) + 8192);
    float *r = (float *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095);
    for (int i = 0; i < rn; i++) r[i] = -1.0f;
    CK(cudaHostRegister(r, rn * sizeof(float), cudaHostRegisterMapped));
    vmc_check(r[0] == -1.0f && r[rn - 1] == -1.0f, "registered memory keeps its contents", "-1 at both ends");
    float *dr = NULL;
    CK(cudaHostGetDevicePointer((void **)&dr, r, 0));
    vector_add<<<(rn + 255) / 256, 256>>>(da, db, dr, rn); // a and b still hold -i and (i % 1000) / 2
    CK(cudaDeviceSynchronize());
    wrong = 0;
    for (int i = 0; i < rn; i++) wrong += r[i] != b[i] - (float)i;
    vmc_check(wrong == 0, "a kernel wrote registered mapped memory", "%d of %d wrong", wrong, rn);
    CK(cudaHostUnregister(r));
    vmc_check(r[7] == b[7] - 7.0f, "unregistered memory keeps what the kernel wrote", "r[7] = %g", r[7]);
    free(raw);

    CK(cudaFreeHost(a));
    CK_EXPECT(cudaFreeHost(a), cudaErrorInvalidValue);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    CK(cudaFreeHost(b));
    CK(cudaFreeHost(c));
    CK(cudaFreeHost(counter));
    CK(cudaFree(dev));
    CK(cudaStreamDestroy(s));
    return vmc_finish("zero_copy");
}

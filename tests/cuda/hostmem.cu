// Host memory: cudaHostAlloc flags, cudaHostRegister/Unregister (and their errors), copies from and to
// registered memory. Mapped (zero-copy) and managed memory cannot reach a GPU in another machine:
// vmcuda refuses them with cudaErrorNotSupported (README "What is supported"); natively they work.
// This program accepts either outcome and prints the same line for both; what happened goes to stderr.
#include <string.h>
#include "vmc_check.h"

#define N (3 << 20)

__global__ void bump(unsigned char *v, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = (unsigned char)(v[i] + 1);
}

int main() {
    unsigned char *dev = NULL;
    CK(cudaMalloc(&dev, N));

    unsigned char *portable = NULL, *wc = NULL;
    unsigned flags = 0;
    CK(cudaHostAlloc((void **)&portable, N, cudaHostAllocPortable));
    CK(cudaHostGetFlags(&flags, portable));
    // On 64-bit (unified addressing) systems CUDA reports every host allocation as mapped too.
    vmc_check((flags & ~cudaHostAllocMapped) == cudaHostAllocPortable, "cudaHostAlloc(Portable) flags", "%u", flags);
    CK(cudaHostAlloc((void **)&wc, N, cudaHostAllocWriteCombined));
    CK(cudaHostGetFlags(&flags, wc));
    vmc_check((flags & ~cudaHostAllocMapped) == cudaHostAllocWriteCombined, "cudaHostAlloc(WriteCombined) flags", "%u", flags);

    // Registered memory: ordinary malloc'd pages, locked, used for async copies.
    unsigned char *reg = (unsigned char *)malloc(N);
    for (size_t i = 0; i < N; i++) reg[i] = vmc_pattern(i, 7);
    CK(cudaHostRegister(reg, N, cudaHostRegisterDefault));
    CK_EXPECT(cudaHostRegister(reg + 4096, 4096, cudaHostRegisterDefault), cudaErrorHostMemoryAlreadyRegistered);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMemcpyAsync(dev, reg, N, cudaMemcpyHostToDevice, s));
    bump<<<(N + 255) / 256, 256, 0, s>>>(dev, N);
    CK(cudaMemcpyAsync(portable, dev, N, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    size_t bad = N;
    for (size_t i = 0; i < N; i++)
        if (portable[i] != (unsigned char)(vmc_pattern(i, 7) + 1)) { bad = i; break; }
    vmc_check(bad == N, "copies through registered and portable memory", "%d MiB, first mismatch %zu", N >> 20, bad);
    memset(reg, 0, N);
    CK(cudaMemcpy(reg, dev, N, cudaMemcpyDeviceToHost));
    vmc_check(reg[5] == (unsigned char)(vmc_pattern(5, 7) + 1), "copy into registered memory", "byte 5 = %u", reg[5]);
    CK(cudaHostUnregister(reg));
    CK_EXPECT(cudaHostUnregister(reg), cudaErrorHostMemoryNotRegistered);
    free(reg);

    // Mapped (zero-copy) memory: works natively, refused through vmcuda.
    unsigned char *mapped = NULL;
    cudaError_t e = cudaHostAlloc((void **)&mapped, 4096, cudaHostAllocMapped);
    int mapped_ok = 0;
    if (e == cudaSuccess) {
        unsigned char *mapped_dev = NULL;
        memset(mapped, 41, 4096);
        e = cudaHostGetDevicePointer((void **)&mapped_dev, mapped, 0);
        if (e == cudaSuccess) {
            bump<<<16, 256>>>(mapped_dev, 4096);
            e = cudaDeviceSynchronize();
            mapped_ok = e == cudaSuccess && mapped[100] == 42;
        }
        cudaFreeHost(mapped);
    }
    fprintf(stderr, "hostmem: mapped memory: %s\n", mapped_ok ? "zero-copy works" : cudaGetErrorName(e));
    vmc_check(mapped_ok || e == cudaErrorNotSupported, "mapped host memory",
              "zero-copy works natively or is refused with cudaErrorNotSupported");

    // Managed memory: likewise.
    int *managed = NULL;
    e = cudaMallocManaged((void **)&managed, 4096, cudaMemAttachGlobal);
    int managed_ok = 0;
    if (e == cudaSuccess) {
        managed[3] = 41;
        bump<<<1, 32>>>((unsigned char *)managed + 12, 1); // the low byte of managed[3]
        e = cudaDeviceSynchronize();
        managed_ok = e == cudaSuccess && managed[3] == 42;
        cudaFree(managed);
    }
    fprintf(stderr, "hostmem: managed memory: %s\n", managed_ok ? "works" : cudaGetErrorName(e));
    vmc_check(managed_ok || e == cudaErrorNotSupported, "managed memory",
              "works natively or is refused with cudaErrorNotSupported");

    CK(cudaFreeHost(portable));
    CK(cudaFreeHost(wc));
    CK(cudaFree(dev));
    CK(cudaStreamDestroy(s));
    return vmc_finish("hostmem");
}

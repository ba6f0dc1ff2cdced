// One session must not reach another's device memory, even knowing its address. `stale_pointer hold SECONDS`
// allocates 64 MiB, fills it with 0xA5, prints the device address and keeps the session (and the memory) for
// SECONDS; `stale_pointer read ADDRESS` (another session, on the same GPU) tries to read that address: with
// cudaMemcpy and with a kernel. Each CUDA context has an address space of its own, so neither may return the other
// session's bytes (natively between processes, as through vmcuda between workers): both fail, or at most see memory of
// the reader's own that happens to lie at the same address.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>

static const size_t BYTES = 64u << 20;

__global__ void peek(const unsigned char *p, unsigned char *out) { *out = p[threadIdx.x]; }

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hold") == 0) {
        unsigned char *d = NULL;
        cudaError_t e = cudaMalloc(&d, BYTES);
        if (e == cudaSuccess)
            e = cudaMemset(d, 0xA5, BYTES);
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
        printf("held at %p: %s\n", (void *)d, cudaGetErrorName(e));
        fflush(stdout);
        sleep(atoi(argv[2]));
        return e == cudaSuccess ? 0 : 1;
    }
    if (argc == 3 && strcmp(argv[1], "read") == 0) {
        unsigned char *other = (unsigned char *)strtoull(argv[2], NULL, 16);
        unsigned char host[4096];
        memset(host, 0, sizeof host);
        cudaError_t copy = cudaMemcpy(host, other, sizeof host, cudaMemcpyDeviceToHost);
        int leaked = copy == cudaSuccess && host[0] == 0xA5 && host[4095] == 0xA5;
        printf("cudaMemcpy from the other session's address: %s%s\n", cudaGetErrorName(copy), leaked ? " LEAKED ITS BYTES" : "");
        unsigned char *out = NULL;
        unsigned char seen = 0;
        cudaError_t kernel = cudaMalloc(&out, 1);
        if (kernel == cudaSuccess) {
            peek<<<1, 1>>>(other, out);
            kernel = cudaDeviceSynchronize();
        }
        if (kernel == cudaSuccess && cudaMemcpy(&seen, out, 1, cudaMemcpyDeviceToHost) == cudaSuccess && seen == 0xA5)
            leaked = 1;
        printf("a kernel reading it: %s%s\n", cudaGetErrorName(kernel), seen == 0xA5 ? " LEAKED ITS BYTES" : "");
        return leaked ? 2 : 0;
    }
    fprintf(stderr, "usage: stale_pointer hold SECONDS | read ADDRESS\n");
    return 64;
}

// Streams 1 GiB host-to-device, then device-to-host, ROUNDS times (default: forever), printing each
// step on stderr: the client is meant to be killed (SIGKILL) in the middle of a copy. Without a GPU the
// device pointer is NULL and the worker still consumes the H2D stream (PROTOCOL.md "Bulk data").
// Usage: big_copy [ROUNDS] [h2d|d2h|both]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : -1;
    const char *mode = argc > 2 ? argv[2] : "both";
    size_t n = (size_t)1 << 30;
    char *h = (char *)malloc(n);
    if (!h) { fprintf(stderr, "no host memory\n"); return 3; }
    memset(h, 0x5a, n);
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, n);
    fprintf(stderr, "big_copy: cudaMalloc 1 GiB: %s\n", cudaGetErrorName(e));
    for (long r = 0; rounds < 0 || r < rounds; r++) {
        if (strcmp(mode, "d2h") != 0) {
            e = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
            fprintf(stderr, "big_copy: round %ld H2D: %s\n", r, cudaGetErrorName(e));
        }
        // no appliance session at all: nothing streams, and looping on would only fill the log
        if (e == cudaErrorNoDevice || e == cudaErrorDevicesUnavailable)
            return 2;
        if (strcmp(mode, "h2d") != 0) {
            e = cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
            fprintf(stderr, "big_copy: round %ld D2H: %s\n", r, cudaGetErrorName(e));
        }
    }
    cudaFree(d);
    printf("big_copy done\n");
    return 0;
}

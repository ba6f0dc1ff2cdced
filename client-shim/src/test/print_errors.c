/* Prints every error code's name and text; built once against NVIDIA's runtime and once against the
 * shim, the two outputs must be identical. */
#include <stdio.h>
#include <cuda_runtime_api.h>

int main(void) {
    for (int code = 0; code < 1100; code++)
        printf("%d %s %s\n", code, cudaGetErrorName((cudaError_t)code), cudaGetErrorString((cudaError_t)code));
    return 0;
}

// main() of the bomb programs: keeps the session alive for SECONDS (argv[1], default 5), making one CUDA call a
// second and printing its result, so the client shows whether its session survived what the constructor did.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 5;
    for (int i = 0; i < seconds; i++) {
        int count = -1;
        cudaError_t e = cudaGetDeviceCount(&count);
        printf("call %d: %s\n", i, cudaGetErrorName(e));
        fflush(stdout);
        sleep(1);
    }
    printf("done\n");
    return 0;
}

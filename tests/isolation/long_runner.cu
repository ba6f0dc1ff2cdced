// A session that lasts: ITERATIONS small CUDA calls, PAUSE_MS apart; with a third argument the program
// sleeps that many ms without CUDA calls before its last call (idle release). Prints one line per call.
// Usage: long_runner ITERATIONS PAUSE_MS [IDLE_MS]
// It defines a kernel (never launched) so that its executable is shipped and cached: the tests that use it
// are about program sessions (a rewritten binary, the cache that outlives a daemon restart).
// Each call is cudaMemGetInfo: its answer changes, so it always reaches the worker (the client keeps the
// device count and attributes after their first answer, so those would not notice a lost worker).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void tick(int *counter) { atomicAdd(counter, 1); }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int pause_ms = argc > 2 ? atoi(argv[2]) : 100;
    int idle_ms = argc > 3 ? atoi(argv[3]) : 0;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n; i++) {
        size_t free_bytes = 0, total_bytes = 0;
        e = cudaMemGetInfo(&free_bytes, &total_bytes);
        printf("call %d: %s\n", i, cudaGetErrorName(e));
        fflush(stdout);
        usleep(pause_ms * 1000);
    }
    if (idle_ms > 0) {
        usleep(idle_ms * 1000);
        size_t free_bytes = 0, total_bytes = 0;
        e = cudaMemGetInfo(&free_bytes, &total_bytes);
        printf("after idle: %s\n", cudaGetErrorName(e));
    }
    printf("done\n");
    return 0;
}

// A client that dies inside a host callback (cudaLaunchHostFunc): the worker's stream is then blocked on a
// callback whose client is gone, with a kernel queued behind it and 256 MiB of device memory held. The worker
// must notice the lost connection, drop the callback and end the session, giving the memory back
// (tests/gpu/run-on-device.sh "client SIGKILLed inside a host callback").
// Prints "in the callback" on stderr, waits a second (so the script can see the worker), then SIGKILLs itself.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void touch(int *p) { p[threadIdx.x] += 1; }

static void CUDART_CB die(void *) {
    fprintf(stderr, "die_in_callback: in the callback\n");
    sleep(1);
    kill(getpid(), SIGKILL);
}

int main() {
    int *d = NULL;
    cudaError_t e = cudaMalloc(&d, 256u << 20);
    fprintf(stderr, "die_in_callback: cudaMalloc 256 MiB: %s\n", cudaGetErrorName(e));
    if (e != cudaSuccess)
        return 2;
    cudaStream_t s;
    cudaStreamCreate(&s);
    touch<<<1, 32, 0, s>>>(d);
    cudaLaunchHostFunc(s, die, NULL);
    touch<<<1, 32, 0, s>>>(d); // queued behind the callback: never runs
    cudaStreamSynchronize(s);
    fprintf(stderr, "die_in_callback: still alive after the callback (unexpected)\n");
    return 1;
}

// Opens a vmcuda session with one CUDA call and keeps it until stdin closes, so that a test can hold many
// sessions of a pool at once (tests/src/test/java/io/vmcuda/tests/PoolTest.java). Each line read from stdin
// makes one more call; every call's result is printed, so the test sees a session that is still there
// (the appliance's answer) from one that is gone (cudaErrorDevicesUnavailable).
#include <cuda_runtime.h>
#include <stdio.h>

static void call(const char *what) {
    int n = -1;
    cudaError_t e = cudaGetDeviceCount(&n);
    printf("%s: %s, %d device(s)\n", what, cudaGetErrorName(e), e == cudaSuccess ? n : 0);
    fflush(stdout);
}

int main() {
    call("first call");
    char line[64];
    while (fgets(line, sizeof line, stdin))
        call("call");
    return 0;
}

// Page-locked memory across fork(): what a child process sees of its parent's cudaMallocHost memory and
// whether its writes reach the parent, and that the parent's copies still work after the fork. Frameworks fork
// workers (PyTorch's DataLoader) while holding page-locked buffers. This program prints what happened,
// natively or through vmcuda, so that the GPU machine's run compares the two.
#include <sys/wait.h>
#include <unistd.h>
#include "vmc_check.h"

int main() {
    int *pinned = NULL, *dev = NULL;
    CK(cudaMallocHost((void **)&pinned, 1 << 20));
    CK(cudaMalloc(&dev, sizeof(int)));
    pinned[0] = 42;
    CK(cudaMemcpy(dev, pinned, sizeof(int), cudaMemcpyHostToDevice));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("the child reads %d, then writes 7\n", pinned[0]);
        fflush(stdout);
        pinned[0] = 7;
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFSIGNALED(status))
        printf("the child was killed by signal %d\n", WTERMSIG(status));
    else
        printf("the child exited with %d\n", WEXITSTATUS(status));
    // natively (driver 580) the child's write shows here: NVIDIA maps page-locked memory shared
    printf("after the child wrote 7, the parent reads %d\n", pinned[0]);
    // the parent's memory still is what the GPU copies from
    pinned[0] = 43;
    int back = 0;
    CK(cudaMemcpy(dev, pinned, sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(&back, dev, sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(back == 43, "a copy from the parent's page-locked memory after the fork", "%d", back);
    CK(cudaFreeHost(pinned));
    CK(cudaFree(dev));
    return vmc_finish("fork_pinned");
}

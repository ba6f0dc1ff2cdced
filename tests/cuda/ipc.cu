/*
 * CUDA IPC between processes, as simpleIPC and PyTorch's multiprocessing use it: the parent exports a device
 * buffer and an interprocess event, two child processes (this program again), one after the other, open both, wait
 * for the event, add 1 to every byte and check what they read; the parent then sees both children's writes. Through vmcuda each process has
 * its own worker: the handles are made by one worker's driver and opened by another's. Also: a process cannot open
 * its own handle, and a corrupted handle is refused without harm, as natively.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmc_pattern_kernels.cuh"

#define BYTES (4u << 20)

struct handles {
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t event;
};

/* The k-th child: the buffer holds the pattern plus k - 1 when it opens it. */
static int child(int fd, int k) {
    struct handles h;
    if (read(fd, &h, sizeof h) != (ssize_t)sizeof h) {
        printf("child: no handles\n");
        return 1;
    }
    void *p = NULL;
    cudaEvent_t ready;
    CK(cudaIpcOpenMemHandle(&p, h.mem, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaIpcOpenEventHandle(&ready, h.event));
    CK(cudaStreamWaitEvent(0, ready, 0)); /* the parent's fill, recorded before it exported the event */
    add_one<<<64, 256>>>((unsigned char *)p, BYTES);
    CK(cudaGetLastError());
    unsigned char *host = (unsigned char *)malloc(BYTES);
    CK(cudaMemcpy(host, p, BYTES, cudaMemcpyDefault)); /* the opened buffer is device memory to this process */
    vmc_check(first_not_plus(host, BYTES, 1, k) == BYTES, "child", "%d reads the parent's bytes and the increments so far", k);
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, p));
    vmc_check(a.type == cudaMemoryTypeDevice, "child", "the opened buffer is device memory (type %d)", (int)a.type);

    cudaIpcMemHandle_t bad = h.mem;
    memset(bad.reserved + 48, 0, 8); /* the driver's object handles: nothing of this machine's */
    void *q = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&q, bad, cudaIpcMemLazyEnablePeerAccess);
    printf("child: a corrupted handle: %s\n", cudaGetErrorName(e));
    vmc_check(e != cudaSuccess, "child", "a corrupted handle is refused");
    cudaGetLastError();

    CK(cudaIpcCloseMemHandle(p));
    CK(cudaEventDestroy(ready));
    free(host);
    return vmc_finish("ipc (child)");
}

/* Runs this program as the k-th child with the handles on a pipe; 1 when it exited 0. */
static int run_child(const char *argv0, const struct handles *h, int k) {
    int pipefd[2];
    if (pipe(pipefd) != 0 || write(pipefd[1], h, sizeof *h) != (ssize_t)sizeof *h) return 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[1]);
        char fd[16], kth[16];
        snprintf(fd, sizeof fd, "%d", pipefd[0]);
        snprintf(kth, sizeof kth, "%d", k);
        execl("/proc/self/exe", argv0, "--child", fd, kth, (char *)NULL);
        _exit(127);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--child")) return child(atoi(argv[2]), atoi(argv[3]));

    unsigned char *d = NULL;
    CK(cudaMalloc(&d, BYTES));
    fill<<<64, 256>>>(d, BYTES, 1);
    CK(cudaGetLastError());
    cudaEvent_t ready;
    CK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming | cudaEventInterprocess));
    CK(cudaEventRecord(ready, 0));
    struct handles h;
    CK(cudaIpcGetMemHandle(&h.mem, d));
    CK(cudaIpcGetEventHandle(&h.event, ready));

    void *own = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&own, h.mem, cudaIpcMemLazyEnablePeerAccess);
    printf("parent: opening its own handle: %s\n", cudaGetErrorName(e));
    vmc_check(e != cudaSuccess, "parent", "a process cannot open its own handle");
    cudaGetLastError();

    for (int k = 1; k <= 2; k++)
        vmc_check(run_child(argv[0], &h, k), "parent", "child %d opened, changed and checked the buffer", k);

    unsigned char *host = (unsigned char *)malloc(BYTES);
    CK(cudaMemcpy(host, d, BYTES, cudaMemcpyDeviceToHost));
    vmc_check(first_not_plus(host, BYTES, 1, 2) == BYTES, "parent", "sees both children's writes");
    CK(cudaEventDestroy(ready));
    CK(cudaFree(d));
    free(host);
    return vmc_finish("ipc");
}

/*
 * CUDA IPC between two processes, as simpleIPC and PyTorch's multiprocessing use it: the parent exports a device
 * buffer and an interprocess event, a child process (this program again) opens both, waits for the event, adds 1
 * to every byte and checks what it read; the parent then sees the child's writes. Through vmcuda each process has
 * its own worker: the handles are made by one worker's driver and opened by another's. Also: a process cannot open
 * its own handle, and a corrupted handle is refused without harm, as natively.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmc_check.h"

#define BYTES (4u << 20)

__global__ void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)((i * 2654435761u + seed * 97u + (i >> 13)) & 0xff); /* vmc_pattern */
}

__global__ void add_one(unsigned char *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(p[i] + 1);
}

struct handles {
    cudaIpcMemHandle_t mem;
    cudaIpcEventHandle_t event;
};

static size_t first_not_plus_one(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(vmc_pattern(i, seed) + 1)) return i;
    return n;
}

static int child(int fd) {
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
    vmc_check(first_not_plus_one(host, BYTES, 1) == BYTES, "child", "reads the parent's bytes and its own increment");
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

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--child")) return child(atoi(argv[2]));

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

    int pipefd[2];
    if (pipe(pipefd) != 0 || write(pipefd[1], &h, sizeof h) != (ssize_t)sizeof h) {
        printf("parent: pipe failed\n");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[1]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", pipefd[0]);
        execl("/proc/self/exe", argv[0], "--child", fd, (char *)NULL);
        _exit(127);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    int st = 0;
    waitpid(pid, &st, 0);
    vmc_check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "parent", "the child process opened, changed and checked the buffer (status %d)", st);

    unsigned char *host = (unsigned char *)malloc(BYTES);
    CK(cudaMemcpy(host, d, BYTES, cudaMemcpyDeviceToHost));
    vmc_check(first_not_plus_one(host, BYTES, 1) == BYTES, "parent", "sees the child's writes");
    CK(cudaEventDestroy(ready));
    CK(cudaFree(d));
    free(host);
    return vmc_finish("ipc");
}

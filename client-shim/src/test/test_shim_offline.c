/* The shim without an appliance, as an application sees it: every call fails with CUDA's
 * no-device error, functions not supported yet say so, and local answers match NVIDIA's runtime.
 * Linked against the shim's libcudart.so.13. The Makefile checks what it prints on stderr. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "check.h"

extern unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
extern cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);

int main(void) {
    int n = -1;
    CHECK(cudaGetDeviceCount(&n) == cudaErrorNoDevice, "cudaGetDeviceCount without an appliance");
    void *p = NULL;
    CHECK(cudaMalloc(&p, 16) == cudaErrorNoDevice && p == NULL, "cudaMalloc without an appliance");
    CHECK(cudaMallocHost(&p, 16) == cudaErrorNoDevice, "cudaMallocHost without an appliance");
    char host[4];
    CHECK(cudaMemcpy(host, host, 4, cudaMemcpyHostToHost) == cudaSuccess, "host-to-host copies need no appliance");

    CHECK(cudaDestroyExternalMemory(NULL) == cudaErrorNotSupported, "unsupported function returns cudaErrorNotSupported");
    CHECK(cudaDestroyExternalMemory(NULL) == cudaErrorNotSupported, "and again");
    /* served through the driver front end, which has no appliance either */
    cudaMemPool_t pool;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    CHECK(cudaMemPoolCreate(&pool, &props) == cudaErrorNoDevice, "cudaMemPoolCreate without an appliance");
    cudaGraphNode_t node;
    CHECK(cudaGraphAddEmptyNode(&node, NULL, NULL, 0) == cudaErrorNoDevice, "cudaGraphAddEmptyNode without an appliance");
    struct cudaMemPoolPtrExportData data;
    CHECK(cudaMemPoolExportPointer(&data, p) == cudaErrorNoDevice, "cudaMemPoolExportPointer without an appliance");
    int fd = -1;
    CHECK(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0) == cudaErrorNoDevice && fd == -1,
          "cudaMemPoolExportToShareableHandle without an appliance");
    cudaIpcMemHandle_t ipc;
    CHECK(cudaIpcGetMemHandle(&ipc, (void *)0x1000) == cudaErrorNoDevice, "cudaIpcGetMemHandle without an appliance");
    void *opened = NULL;
    CHECK(cudaIpcOpenMemHandle(&opened, ipc, cudaIpcMemLazyEnablePeerAccess) == cudaErrorNoDevice && !opened,
          "cudaIpcOpenMemHandle without an appliance");

    int v = 0;
    CHECK(cudaRuntimeGetVersion(&v) == cudaSuccess && v == CUDART_VERSION, "runtime version %d", v);
    CHECK(strcmp(cudaGetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice") == 0, "error name");

    dim3 grid = {4, 2, 1}, block = {128, 1, 1}, g2, b2;
    size_t shmem = 0;
    void *stream = NULL;
    CHECK(__cudaPopCallConfiguration(&g2, &b2, &shmem, &stream) == cudaErrorMissingConfiguration, "pop on empty stack");
    CHECK(__cudaPushCallConfiguration(grid, block, 99, (struct CUstream_st *)0x10) == 0, "push");
    CHECK(__cudaPopCallConfiguration(&g2, &b2, &shmem, &stream) == cudaSuccess, "pop");
    CHECK(g2.x == 4 && g2.y == 2 && b2.x == 128 && shmem == 99 && stream == (void *)0x10, "configuration round trip");
    return check_summary("test_shim_offline");
}

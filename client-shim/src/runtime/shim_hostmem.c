/* Host memory the GPU would reach directly: registered (page-locked) ranges, mapped (zero-copy) pointers
 * and managed memory.
 *   cudaHostRegister / cudaHostUnregister: kept in this process (page-locked where RLIMIT_MEMLOCK allows,
 *     recorded so that overlapping registrations and unregistering fail as natively); copies from and to
 *     such memory are ordinary bulk transfers.
 *   Mapped memory on the co-located path: cudaHostAlloc(cudaHostAllocMapped) lives in memory this process
 *     shares with its worker, and cudaHostRegister(cudaHostRegisterMapped) makes the program's pages such
 *     memory in place (hostmap.h); cudaHostGetDevicePointer gives its GPU address. Over TCP, and for
 *     managed memory (cudaMallocManaged), the appliance's GPU would have to reach this process's private
 *     memory: they return cudaErrorNotSupported with one line saying why.
 * Like the native calls, each first makes sure the device context can exist (the worker's answer), so a
 * machine without a usable GPU reports the same error. */
#include <cuda_runtime_api.h>

#include <stdint.h>

#include "hostmap.h"
#include "hostmem.h"
#include "shim_call.h"
#include "shim_hostmem.h"
#include "shim_shm.h"
#include "shim_unsupported.h"

static const char *const ACROSS_MACHINES =
    "the appliance's GPU reads and writes this process's memory only when it is allocated mapped on the "
    "co-located path (copy with cudaMemcpy instead)";

/* Each answer is also this thread's last error when it is one (shim_call.h). */
#define ANSWER(status) ((cudaError_t)vmc_local_error(status))

static cudaError_t host_register(void *ptr, size_t size, unsigned int flags) {
    if (!ptr || !size)
        return cudaErrorInvalidValue;
    cudaError_t st = vmc_context_check();
    if (st != cudaSuccess)
        return st;
    int mapped = (flags & cudaHostRegisterMapped) != 0;
    if ((flags & cudaHostRegisterIoMemory) || (mapped && !vmc_shm_colocated())) {
        static int told;
        vmc_not_supported_because("cudaHostRegister with cudaHostRegisterMapped/IoMemory (mapped host memory)",
                                  ACROSS_MACHINES, &told);
        return cudaErrorNotSupported;
    }
    /* mapped, co-located: the pages become memory shared with the worker, in place (hostmap.h) */
    st = vmc_host_register(ptr, size, flags);
    if (st == cudaSuccess && mapped && (st = vmc_hostmap_register(ptr, size)) != cudaSuccess)
        vmc_host_unregister(ptr);
    return st;
}

__attribute__((visibility("default"))) cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    return ANSWER(host_register(ptr, size, flags));
}

static cudaError_t host_unregister(void *ptr) {
    cudaError_t st = vmc_host_unregister(ptr);
    if (st == cudaSuccess)
        vmc_hostmap_unregister(ptr);
    return st;
}

__attribute__((visibility("default"))) cudaError_t cudaHostUnregister(void *ptr) { return ANSWER(host_unregister(ptr)); }

static cudaError_t host_device_pointer(void **pDevice, void *pHost, unsigned int flags) {
    if (!pDevice || flags)
        return cudaErrorInvalidValue;
    *pDevice = NULL;
    cudaError_t st = vmc_context_check();
    if (st != cudaSuccess)
        return st;
    uint64_t device = 0;
    if (vmc_hostmap_device_pointer(pHost, &device)) {
        *pDevice = (void *)(uintptr_t)device;
        return cudaSuccess;
    }
    unsigned registered_flags = 0;
    if (!vmc_host_alloc_find(pHost, NULL, NULL, NULL) && !vmc_registered_flags(pHost, &registered_flags))
        return cudaErrorInvalidValue; /* not page-locked memory at all, as natively */
    static int told;
    vmc_not_supported_because("cudaHostGetDevicePointer of page-locked memory not allocated with cudaHostAllocMapped",
                              ACROSS_MACHINES, &told);
    return cudaErrorNotSupported;
}

__attribute__((visibility("default"))) cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    return ANSWER(host_device_pointer(pDevice, pHost, flags));
}

static cudaError_t malloc_managed(void **devPtr) {
    if (!devPtr)
        return cudaErrorInvalidValue;
    *devPtr = NULL;
    cudaError_t st = vmc_context_check();
    if (st != cudaSuccess)
        return st;
    static int told;
    vmc_not_supported_because("cudaMallocManaged (managed memory)",
                              "its pages would migrate between this machine and the appliance's GPU; "
                              "use cudaMalloc and explicit copies", &told);
    return cudaErrorNotSupported;
}

__attribute__((visibility("default"))) cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    (void)size;
    (void)flags;
    return ANSWER(malloc_managed(devPtr));
}

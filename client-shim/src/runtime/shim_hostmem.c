/* Host memory the GPU would reach directly: registered (page-locked) ranges, mapped (zero-copy) pointers
 * and managed memory.
 *   cudaHostRegister / cudaHostUnregister: kept in this process (page-locked where RLIMIT_MEMLOCK allows,
 *     recorded so that overlapping registrations and unregistering fail as natively); copies from and to
 *     such memory are ordinary bulk transfers.
 *   Mapped memory: cudaHostAlloc(cudaHostAllocMapped) on the co-located path lives in memory this
 *     process shares with its worker (hostmap.h), and cudaHostGetDevicePointer gives its GPU address.
 *     Registering existing memory as mapped (cudaHostRegisterMapped) and managed memory (cudaMallocManaged)
 *     would have the appliance's GPU read and write this process's private memory: they return
 *     cudaErrorNotSupported with one line saying why.
 * Like the native calls, each first makes sure the device context can exist (the worker's answer), so a
 * machine without a usable GPU reports the same error. */
#include <cuda_runtime_api.h>

#include <stdint.h>

#include "hostmap.h"
#include "hostmem.h"
#include "shim_call.h"
#include "shim_hostmem.h"
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
    if (flags & (cudaHostRegisterMapped | cudaHostRegisterIoMemory)) {
        static int told;
        vmc_not_supported_because("cudaHostRegister with cudaHostRegisterMapped/IoMemory (mapped host memory)",
                                  ACROSS_MACHINES, &told);
        return cudaErrorNotSupported;
    }
    return vmc_host_register(ptr, size, flags);
}

__attribute__((visibility("default"))) cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    return ANSWER(host_register(ptr, size, flags));
}

__attribute__((visibility("default"))) cudaError_t cudaHostUnregister(void *ptr) { return ANSWER(vmc_host_unregister(ptr)); }

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

/* Host memory the GPU would reach directly: registered (page-locked) ranges, mapped (zero-copy) pointers
 * and managed memory.
 *   cudaHostRegister / cudaHostUnregister: kept in this process (page-locked where RLIMIT_MEMLOCK allows,
 *     recorded so that overlapping registrations and unregistering fail as natively); copies from and to
 *     such memory are ordinary bulk transfers.
 *   Mapped memory (cudaHostRegisterMapped, cudaHostGetDevicePointer) and managed memory
 *     (cudaMallocManaged) would have the appliance's GPU read and write this machine's memory directly:
 *     not possible across machines, so they return cudaErrorNotSupported with one line saying why.
 * Like the native calls, each first makes sure the device context can exist (the worker's answer), so a
 * machine without a usable GPU reports the same error. */
#include <cuda_runtime_api.h>

#include "hostmem.h"
#include "shim_hostmem.h"
#include "shim_unsupported.h"

static const char *const ACROSS_MACHINES =
    "the appliance's GPU cannot read or write this machine's memory directly (copy with cudaMemcpy instead)";

__attribute__((visibility("default"))) cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
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

__attribute__((visibility("default"))) cudaError_t cudaHostUnregister(void *ptr) { return vmc_host_unregister(ptr); }

__attribute__((visibility("default"))) cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    (void)pHost;
    (void)flags;
    if (!pDevice)
        return cudaErrorInvalidValue;
    *pDevice = NULL;
    cudaError_t st = vmc_context_check();
    if (st != cudaSuccess)
        return st;
    static int told;
    vmc_not_supported_because("cudaHostGetDevicePointer (mapped, zero-copy host memory)", ACROSS_MACHINES, &told);
    return cudaErrorNotSupported;
}

__attribute__((visibility("default"))) cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    (void)size;
    (void)flags;
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

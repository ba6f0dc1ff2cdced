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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>

#include "shim_call.h"
#include "shim_hostmem.h"
#include "shim_ranges.h"
#include "shim_unsupported.h"
#include "vmc_api.h"

static struct vmc_range_set registered = VMC_RANGE_SET_INIT;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

int vmc_registered_flags(const void *p, unsigned int *flags) {
    struct vmc_range r;
    if (!vmc_ranges_find(&registered, p, &r))
        return 0;
    *flags = r.tag;
    return 1;
}

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
    pthread_mutex_lock(&register_lock);
    struct vmc_range r;
    const char *p = ptr;
    if (vmc_ranges_find(&registered, p, &r) || vmc_ranges_find(&registered, p + size - 1, &r)) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorHostMemoryAlreadyRegistered;
    }
    /* A range inside [ptr, ptr+size) that contains neither end. */
    for (size_t off = 0; off < size; off += 4096)
        if (vmc_ranges_find(&registered, p + off, &r)) {
            pthread_mutex_unlock(&register_lock);
            return cudaErrorHostMemoryAlreadyRegistered;
        }
    if (vmc_ranges_add(&registered, ptr, size, flags) != 0) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&register_lock);
    (void)mlock(ptr, size);
    return cudaSuccess;
}

__attribute__((visibility("default"))) cudaError_t cudaHostUnregister(void *ptr) {
    struct vmc_range r;
    pthread_mutex_lock(&register_lock);
    if (!ptr || !vmc_ranges_find(&registered, ptr, &r) || r.base != (uintptr_t)ptr) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorHostMemoryNotRegistered;
    }
    vmc_ranges_remove(&registered, ptr);
    pthread_mutex_unlock(&register_lock);
    munlock(ptr, r.size);
    return cudaSuccess;
}

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

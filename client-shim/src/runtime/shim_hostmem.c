/* Host memory the GPU would reach directly: registered (page-locked) ranges, mapped (zero-copy) pointers
 * and managed memory.
 *   cudaHostRegister / cudaHostUnregister: kept in this process (page-locked where RLIMIT_MEMLOCK allows,
 *     recorded so that overlapping registrations and unregistering fail as natively); copies from and to
 *     such memory are ordinary bulk transfers.
 *   Mapped memory on the co-located path: cudaHostAlloc(cudaHostAllocMapped) lives in memory this process
 *     shares with its worker, and cudaHostRegister(cudaHostRegisterMapped) makes the program's pages such
 *     memory in place (hostmap.h); cudaHostGetDevicePointer gives its GPU address. Over TCP the appliance's
 *     GPU would have to reach this process's private memory: they return cudaErrorNotSupported with one
 *     line saying why.
 *   Managed memory (cudaMallocManaged and its hints): mapped memory too, on the co-located path (managed.h).
 * Like the native calls, each first makes sure the device context can exist (the worker's answer), so a
 * machine without a usable GPU reports the same error. */
#include <cuda_runtime_api.h>

#include <stdint.h>
#include <string.h>

#include "hostmap.h"
#include "hostmem.h"
#include "managed.h"
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

/* ---- managed memory (managed.h): co-located only ---- */

static cudaError_t malloc_managed(void **devPtr, size_t size, unsigned int flags) {
    if (!devPtr)
        return cudaErrorInvalidValue;
    *devPtr = NULL;
    cudaError_t st = vmc_context_check();
    int device = 0;
    if (st == cudaSuccess)
        st = cudaGetDevice(&device);
    return st != cudaSuccess ? st : vmc_managed_alloc(devPtr, size, flags, device);
}

__attribute__((visibility("default"))) cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    return ANSWER(malloc_managed(devPtr, size, flags));
}

/* Prefetches, advice and stream attachment change where managed pages live and who may touch them when; these
 * pages stay where they are, shared, so each is accepted for managed memory and changes nothing but speed.
 * Other memory is refused as natively. */
static cudaError_t managed_hint(const void *devPtr, size_t count) {
    return devPtr && vmc_managed_contains(devPtr, count) ? cudaSuccess : cudaErrorInvalidValue;
}

__attribute__((visibility("default"))) cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count,
                                                                       struct cudaMemLocation location,
                                                                       unsigned int flags, cudaStream_t stream) {
    (void)location, (void)flags, (void)stream;
    return ANSWER(managed_hint(devPtr, count));
}

extern cudaError_t cudaMemPrefetchAsync_ptsz(const void *, size_t, struct cudaMemLocation, unsigned int, cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count,
                                                                            struct cudaMemLocation location,
                                                                            unsigned int flags, cudaStream_t stream) {
    (void)location, (void)flags, (void)stream;
    return ANSWER(managed_hint(devPtr, count));
}

__attribute__((visibility("default"))) cudaError_t cudaMemAdvise(const void *devPtr, size_t count,
                                                                enum cudaMemoryAdvise advice,
                                                                struct cudaMemLocation location) {
    (void)advice, (void)location;
    return ANSWER(managed_hint(devPtr, count));
}

__attribute__((visibility("default"))) cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr,
                                                                           size_t length, unsigned int flags) {
    (void)stream, (void)flags;
    return ANSWER(managed_hint(devPtr, length));
}

extern cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t, void *, size_t, unsigned int);
__attribute__((visibility("default"))) cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *devPtr,
                                                                                size_t length, unsigned int flags) {
    (void)stream, (void)flags;
    return ANSWER(managed_hint(devPtr, length));
}

cudaError_t vmc_forward_cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);

/* Managed memory is answered here (the worker knows it as registered host memory); the rest by the worker. */
__attribute__((visibility("default"))) cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                                                           const void *ptr) {
    void *base;
    size_t size;
    int device;
    if (!attributes || !ptr || !vmc_managed_find(ptr, &base, &size, &device))
        return vmc_forward_cudaPointerGetAttributes(attributes, ptr);
    memset(attributes, 0, sizeof *attributes);
    attributes->type = cudaMemoryTypeManaged;
    attributes->device = device;
    attributes->devicePointer = (void *)ptr;
    attributes->hostPointer = (void *)ptr;
    return cudaSuccess;
}

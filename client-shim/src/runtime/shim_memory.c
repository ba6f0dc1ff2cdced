/* Memory: device allocations (tracked so cudaMemcpyDefault can tell device from host pointers),
 * every memcpy direction with bulk data streamed from/into the application's own buffers, copies
 * to and from symbols, and page-locked host allocations (which live on the client). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>

#include "bulk.h"
#include "hostmap.h"
#include "hostmem.h"
#include "managed.h"
#include "rt_driver.h"
#include "vmc_internal.h"
#include "shim_shm.h"
#include "shim_call.h"
#include "shim_hostmem.h"
#include "shim_registry.h"
#include "shim_unsupported.h"
#include "vmc_api.h"

/* ---- device allocations: generated forwarding + tracking ---- */

cudaError_t vmc_forward_cudaMalloc(void **devPtr, size_t size);
cudaError_t vmc_forward_cudaFree(void *devPtr);
cudaError_t vmc_forward_cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t vmc_forward_cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent);
cudaError_t vmc_forward_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t vmc_forward_cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t vmc_forward_cudaFreeAsync(void *devPtr, cudaStream_t hStream);
cudaError_t vmc_forward_cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static cudaError_t track(cudaError_t st, void **devPtr, size_t size) {
    if (st == cudaSuccess && devPtr && *devPtr)
        vmc_device_range_add((uint64_t)(uintptr_t)*devPtr, size);
    return st;
}

static cudaError_t untrack(cudaError_t st, void *devPtr) {
    if (st == cudaSuccess && devPtr)
        vmc_device_range_remove((uint64_t)(uintptr_t)devPtr);
    return st;
}

__attribute__((visibility("default"))) cudaError_t cudaMalloc(void **devPtr, size_t size) {
    return track(vmc_forward_cudaMalloc(devPtr, size), devPtr, size);
}

__attribute__((visibility("default"))) cudaError_t cudaFree(void *devPtr) {
    if (devPtr && vmc_managed_contains(devPtr, 0)) {
        /* cudaFree synchronizes the device first: nothing may still use the pages it takes away */
        cudaError_t st = cudaDeviceSynchronize();
        if (st != cudaSuccess)
            return st;
        return vmc_managed_free(devPtr) ? cudaSuccess : (cudaError_t)vmc_local_error(cudaErrorInvalidValue);
    }
    return untrack(vmc_forward_cudaFree(devPtr), devPtr);
}

__attribute__((visibility("default"))) cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent) {
    cudaError_t st = vmc_forward_cudaMalloc3D(pitchedDevPtr, extent);
    return track(st, pitchedDevPtr ? &pitchedDevPtr->ptr : NULL,
                 st == cudaSuccess && pitchedDevPtr ? pitchedDevPtr->pitch * extent.height * (extent.depth ? extent.depth : 1) : 0);
}

__attribute__((visibility("default"))) cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
    cudaError_t st = vmc_forward_cudaMallocPitch(devPtr, pitch, width, height);
    return track(st, devPtr, st == cudaSuccess && pitch ? *pitch * height : 0);
}

__attribute__((visibility("default"))) cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    return track(vmc_forward_cudaMallocAsync(devPtr, size, hStream), devPtr, size);
}

extern cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
__attribute__((visibility("default"))) cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
    return track(vmc_forward_cudaMallocAsync_ptsz(devPtr, size, hStream), devPtr, size);
}

__attribute__((visibility("default"))) cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    return untrack(vmc_forward_cudaFreeAsync(devPtr, hStream), devPtr);
}

extern cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
__attribute__((visibility("default"))) cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
    return untrack(vmc_forward_cudaFreeAsync_ptsz(devPtr, hStream), devPtr);
}

/* ---- copies ---- */

static int on_device(const void *p) { return vmc_device_range_find((uint64_t)(uintptr_t)p, NULL, NULL); }

/* Both ends on the appliance (device-to-device, or a kind the worker's runtime should judge). */
static cudaError_t on_appliance(uint32_t dst_symbol, uint64_t dst, uint32_t src_symbol, uint64_t src, size_t count,
                                enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_MemcpyOnDevice, (mode & COPY_ASYNC) != 0);
    if (st != cudaSuccess)
        return st;
    vmc_put_on_device_args(vmc_call_args(&c), &(struct vmc_on_device_args){
        .dst_symbol = dst_symbol, .dst = dst, .src_symbol = src_symbol, .src = src, .count = count, .kind = (uint32_t)kind,
        .stream = (uint64_t)(uintptr_t)stream, .mode = (uint8_t)mode});
    return vmc_call_finish(&c);
}

static enum cudaMemcpyKind resolve_default(void *dst, const void *src) {
    int d = on_device(dst), s = on_device(src);
    if (d && s)
        return cudaMemcpyDeviceToDevice;
    if (d)
        return cudaMemcpyHostToDevice;
    if (s)
        return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
}

static cudaError_t copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream,
                        unsigned mode) {
    cudaError_t st;
    if (kind == cudaMemcpyDefault) {
        /* Managed memory counts as the device's (the GPU may still be writing it: the copy must be ordered on
         * the stream, never a memmove here); between two such ends the worker's runtime resolves the kind, as
         * unified addressing lets it for memory it knows as registered at the same address. */
        int dm = vmc_managed_contains(dst, 0), sm = vmc_managed_contains(src, 0);
        if ((dm || sm) && (dm || on_device(dst)) && (sm || on_device(src)))
            return on_appliance(VMC_NO_INDEX, (uint64_t)(uintptr_t)dst, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count,
                                cudaMemcpyDefault, stream, mode);
        kind = dm ? cudaMemcpyHostToDevice : sm ? cudaMemcpyDeviceToHost : resolve_default(dst, src);
    }
    switch (kind) {
    case cudaMemcpyHostToHost:
        if (count && (!dst || !src))
            return cudaErrorInvalidValue;
        memmove(dst, src, count);
        return cudaSuccess;
    case cudaMemcpyHostToDevice:
        if (count && !src)
            return cudaErrorInvalidValue;
        if ((mode & COPY_ASYNC) && vmc_rt_captured_copy(dst, src, count, 1, stream, (mode & COPY_PER_THREAD) != 0, &st))
            return st;
        return vmc_copy_to_device(VMC_NO_INDEX, (uint64_t)(uintptr_t)dst, src, count, (uint64_t)(uintptr_t)stream, mode);
    case cudaMemcpyDeviceToHost:
        if (count && !dst)
            return cudaErrorInvalidValue;
        if ((mode & COPY_ASYNC) && vmc_rt_captured_copy(dst, src, count, 0, stream, (mode & COPY_PER_THREAD) != 0, &st))
            return st;
        return vmc_copy_to_host(dst, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count, (uint64_t)(uintptr_t)stream, mode);
    default:
        return on_appliance(VMC_NO_INDEX, (uint64_t)(uintptr_t)dst, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count,
                            kind, stream, mode);
    }
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                                                             enum cudaMemcpyKind kind) {
    return copy(dst, src, count, kind, 0, 0);
}

extern cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                                                  enum cudaMemcpyKind kind) {
    return copy(dst, src, count, kind, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                                                  enum cudaMemcpyKind kind, cudaStream_t stream) {
    return copy(dst, src, count, kind, stream, COPY_ASYNC);
}

extern cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                        cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                                                       enum cudaMemcpyKind kind, cudaStream_t stream) {
    return copy(dst, src, count, kind, stream, COPY_ASYNC | COPY_PER_THREAD);
}

static uint32_t symbol_index(const void *symbol) {
    const struct vmc_var *v = vmc_var_by_host_var(symbol);
    return v ? v->index : VMC_NO_INDEX;
}

static cudaError_t to_symbol(const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind,
                             cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (kind == cudaMemcpyHostToDevice)
        return vmc_copy_to_device(symbol_index(symbol), offset, src, count, (uint64_t)(uintptr_t)stream, mode);
    return on_appliance(symbol_index(symbol), offset, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count, kind, stream, mode);
}

static cudaError_t from_symbol(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,
                               cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDeviceToHost)
        return vmc_copy_to_host(dst, symbol_index(symbol), offset, count, (uint64_t)(uintptr_t)stream, mode);
    return on_appliance(VMC_NO_INDEX, (uint64_t)(uintptr_t)dst, symbol_index(symbol), offset, count, kind, stream, mode);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count,
                                                                     size_t offset, enum cudaMemcpyKind kind) {
    return to_symbol(symbol, src, count, offset, kind, 0, 0);
}

extern cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src,
                                                                          size_t count, size_t offset,
                                                                          enum cudaMemcpyKind kind) {
    return to_symbol(symbol, src, count, offset, kind, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src,
                                                                          size_t count, size_t offset,
                                                                          enum cudaMemcpyKind kind, cudaStream_t stream) {
    return to_symbol(symbol, src, count, offset, kind, stream, COPY_ASYNC);
}

extern cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind, cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src,
                                                                               size_t count, size_t offset,
                                                                               enum cudaMemcpyKind kind,
                                                                               cudaStream_t stream) {
    return to_symbol(symbol, src, count, offset, kind, stream, COPY_ASYNC | COPY_PER_THREAD);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count,
                                                                       size_t offset, enum cudaMemcpyKind kind) {
    return from_symbol(dst, symbol, count, offset, kind, 0, 0);
}

extern cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol,
                                                                            size_t count, size_t offset,
                                                                            enum cudaMemcpyKind kind) {
    return from_symbol(dst, symbol, count, offset, kind, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol,
                                                                            size_t count, size_t offset,
                                                                            enum cudaMemcpyKind kind,
                                                                            cudaStream_t stream) {
    return from_symbol(dst, symbol, count, offset, kind, stream, COPY_ASYNC);
}

extern cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind, cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol,
                                                                                 size_t count, size_t offset,
                                                                                 enum cudaMemcpyKind kind,
                                                                                 cudaStream_t stream) {
    return from_symbol(dst, symbol, count, offset, kind, stream, COPY_ASYNC | COPY_PER_THREAD);
}

/* ---- page-locked host memory: it lives in this process ---- */

/* The native call creates a context and fails on a machine without a usable device; asking the
 * worker to do the same keeps those errors identical. */
cudaError_t vmc_context_check(void) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_ContextCheck, 0);
    if (st != cudaSuccess)
        return st;
    return vmc_call_finish(&c);
}

static cudaError_t host_alloc(void **pHost, size_t size, unsigned int flags) {
    if (!pHost)
        return cudaErrorInvalidValue;
    cudaError_t st = vmc_context_check(); /* first, as natively: a machine without a GPU says so */
    if (st != cudaSuccess) {
        *pHost = NULL;
        return st;
    }
    if ((flags & cudaHostAllocMapped) && !vmc_shm_colocated()) {
        static int told;
        vmc_not_supported_because("cudaHostAlloc(cudaHostAllocMapped)",
                                  "zero-copy mapped host memory needs the appliance on this host (it cannot be shared "
                                  "with a GPU in another machine)", &told);
        *pHost = NULL;
        return cudaErrorNotSupported;
    }
    /* co-located: mapped memory (and all page-locked memory with `pinned_in_region`) in memory this
     * process shares with its worker, which kernels read and write and the GPU copies from and to; else
     * (or when /dev/shm has no room) in this process */
    if ((flags & cudaHostAllocMapped) || vmc_shm_pinned_in_region()) {
        st = vmc_hostmap_alloc(pHost, size, flags);
        if (st == cudaSuccess || (flags & cudaHostAllocMapped))
            return st;
    }
    return vmc_host_alloc(pHost, size, flags);
}

/* Each answer of these is also this thread's last error when it is one (shim_call.h). */
#define ANSWER(status) ((cudaError_t)vmc_local_error(status))

__attribute__((visibility("default"))) cudaError_t cudaMallocHost(void **ptr, size_t size) {
    return ANSWER(host_alloc(ptr, size, 0));
}

__attribute__((visibility("default"))) cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    return ANSWER(host_alloc(pHost, size, flags));
}

__attribute__((visibility("default"))) cudaError_t cudaFreeHost(void *ptr) {
    return ANSWER(ptr ? vmc_host_free(ptr) : cudaSuccess);
}

__attribute__((visibility("default"))) cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
    unsigned flags = 0;
    if (pFlags && vmc_registered_flags(pHost, pFlags))
        return cudaSuccess;
    if (!pFlags || !vmc_host_alloc_find(pHost, NULL, NULL, &flags))
        return ANSWER(cudaErrorInvalidValue);
    /* As natively on 64-bit systems, where unified addressing makes every page-locked allocation
     * count as mapped (cudaHostGetDevicePointer answers only for memory allocated mapped on the co-located
     * path: hostmap.h). */
    *pFlags = flags | cudaHostAllocMapped;
    return cudaSuccess;
}

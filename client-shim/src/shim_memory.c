/* Memory: device allocations (tracked so cudaMemcpyDefault can tell device from host pointers),
 * every memcpy direction with bulk data streamed from/into the application's own buffers, copies
 * to and from symbols, and page-locked host allocations (which live on the client). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>

#include "shim_call.h"
#include "shim_hostmem.h"
#include "shim_ranges.h"
#include "shim_registry.h"
#include "shim_shm.h"
#include "shim_stripe.h"
#include "shim_unsupported.h"
#include "vmc_api.h"

#define COPY_ASYNC 1u
#define COPY_PER_THREAD 2u

static struct vmc_range_set device_ranges = VMC_RANGE_SET_INIT;
static struct vmc_range_set host_allocs = VMC_RANGE_SET_INIT;

/* ---- device allocations: generated forwarding + tracking ---- */

cudaError_t vmc_forward_cudaMalloc(void **devPtr, size_t size);
cudaError_t vmc_forward_cudaFree(void *devPtr);
cudaError_t vmc_forward_cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t vmc_forward_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t vmc_forward_cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t vmc_forward_cudaFreeAsync(void *devPtr, cudaStream_t hStream);
cudaError_t vmc_forward_cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static cudaError_t track(cudaError_t st, void **devPtr, size_t size) {
    if (st == cudaSuccess && devPtr && *devPtr)
        vmc_ranges_add(&device_ranges, *devPtr, size, 0);
    return st;
}

static cudaError_t untrack(cudaError_t st, void *devPtr) {
    if (st == cudaSuccess && devPtr)
        vmc_ranges_remove(&device_ranges, devPtr);
    return st;
}

__attribute__((visibility("default"))) cudaError_t cudaMalloc(void **devPtr, size_t size) {
    return track(vmc_forward_cudaMalloc(devPtr, size), devPtr, size);
}

__attribute__((visibility("default"))) cudaError_t cudaFree(void *devPtr) {
    return untrack(vmc_forward_cudaFree(devPtr), devPtr);
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

static int on_device(const void *p) {
    struct vmc_range r;
    return vmc_ranges_find(&device_ranges, p, &r);
}

/* Host-to-device over the calling thread's connection: the frame, then `count` bytes straight from
 * the application's buffer. An async copy returns once the bytes are on the wire: the buffer may be
 * reused, as after a native cudaMemcpyAsync from pageable memory. */
static cudaError_t socket_host_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count,
                                         cudaStream_t stream, unsigned mode) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_MemcpyHostToDevice, (mode & COPY_ASYNC) != 0);
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(&c, symbol);
    vmc_arg_u64(&c, dst);
    vmc_arg_u64(&c, count);
    vmc_arg_u64(&c, (uint64_t)(uintptr_t)stream);
    vmc_arg_u8(&c, (uint8_t)mode);
    return vmc_call_finish_upload(&c, src, count);
}

/* Device-to-host over the calling thread's connection: always waits for the data, even for
 * cudaMemcpyAsync (the bytes must land in the application's buffer, and only this thread reads its
 * connection). That is a stronger ordering than CUDA promises, never a weaker one. */
static cudaError_t socket_device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                         unsigned mode) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_MemcpyDeviceToHost, 0);
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(&c, symbol);
    vmc_arg_u64(&c, src);
    vmc_arg_u64(&c, count);
    vmc_arg_u64(&c, (uint64_t)(uintptr_t)stream);
    vmc_arg_u8(&c, (uint8_t)mode);
    return vmc_call_finish_download(&c, dst, count);
}

/* One stripe of a striped copy (shim_stripe.h), on the calling thread's own connection. */
static cudaError_t stripe_to_device(uint8_t *host, uint64_t device, size_t n, unsigned mode) {
    return socket_host_to_device(VMC_NO_INDEX, device, host, n, 0, mode);
}

static cudaError_t stripe_to_host(uint8_t *host, uint64_t device, size_t n, unsigned mode) {
    return socket_device_to_host(host, VMC_NO_INDEX, device, n, 0, mode);
}

/* How many TCP stripes a copy gets: only synchronous copies of plain device memory that lie inside
 * one allocation (so that every stripe fails or succeeds as the whole copy would natively). */
static unsigned stripes_for(uint32_t symbol, uint64_t device, size_t count, unsigned mode) {
    struct vmc_range r;
    if (symbol != VMC_NO_INDEX || (mode & COPY_ASYNC) || count < VMC_STRIPE_MIN)
        return 1;
    if (!vmc_ranges_find(&device_ranges, (const void *)(uintptr_t)device, &r) || device + count > r.base + r.size)
        return 1;
    return vmc_stripe_ways(count);
}

/* Host-to-device: the shared-memory ring when co-located, else the socket (striped when large). */
static cudaError_t host_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, cudaStream_t stream,
                                  unsigned mode) {
    /* An async copy must return once its bytes have left the buffer, without waiting for the stream:
     * the socket gives that; the ring would wait for the device copy. */
    if (!(mode & COPY_ASYNC) && vmc_shm_ready(count))
        return vmc_shm_host_to_device(symbol, dst, src, count, stream, mode);
    unsigned ways = stripes_for(symbol, dst, count, mode);
    if (ways > 1)
        return vmc_striped_copy(ways, (uint8_t *)(uintptr_t)src, dst, count, mode, stripe_to_device);
    return socket_host_to_device(symbol, dst, src, count, stream, mode);
}

static cudaError_t device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                  unsigned mode) {
    if (vmc_shm_ready(count))
        return vmc_shm_device_to_host(dst, symbol, src, count, stream, mode);
    unsigned ways = stripes_for(symbol, src, count, mode);
    if (ways > 1)
        return vmc_striped_copy(ways, dst, src, count, mode, stripe_to_host);
    return socket_device_to_host(dst, symbol, src, count, stream, mode);
}

/* Both ends on the appliance (device-to-device, or a kind the worker's runtime should judge). */
static cudaError_t on_appliance(uint32_t dst_symbol, uint64_t dst, uint32_t src_symbol, uint64_t src, size_t count,
                                enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_MemcpyOnDevice, (mode & COPY_ASYNC) != 0);
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(&c, dst_symbol);
    vmc_arg_u64(&c, dst);
    vmc_arg_u32(&c, src_symbol);
    vmc_arg_u64(&c, src);
    vmc_arg_u64(&c, count);
    vmc_arg_u32(&c, (uint32_t)kind);
    vmc_arg_u64(&c, (uint64_t)(uintptr_t)stream);
    vmc_arg_u8(&c, (uint8_t)mode);
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
    if (kind == cudaMemcpyDefault)
        kind = resolve_default(dst, src);
    switch (kind) {
    case cudaMemcpyHostToHost:
        if (count && (!dst || !src))
            return cudaErrorInvalidValue;
        memmove(dst, src, count);
        return cudaSuccess;
    case cudaMemcpyHostToDevice:
        if (count && !src)
            return cudaErrorInvalidValue;
        return host_to_device(VMC_NO_INDEX, (uint64_t)(uintptr_t)dst, src, count, stream, mode);
    case cudaMemcpyDeviceToHost:
        if (count && !dst)
            return cudaErrorInvalidValue;
        return device_to_host(dst, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count, stream, mode);
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
        return host_to_device(symbol_index(symbol), offset, src, count, stream, mode);
    return on_appliance(symbol_index(symbol), offset, VMC_NO_INDEX, (uint64_t)(uintptr_t)src, count, kind, stream, mode);
}

static cudaError_t from_symbol(void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind,
                               cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDeviceToHost)
        return device_to_host(dst, symbol_index(symbol), offset, count, stream, mode);
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
    if (flags & cudaHostAllocMapped) {
        static int told;
        vmc_not_supported_because("cudaHostAlloc(cudaHostAllocMapped)",
                                  "zero-copy mapped host memory cannot be shared with a GPU in another machine", &told);
        *pHost = NULL;
        return cudaErrorNotSupported;
    }
    cudaError_t st = vmc_context_check();
    if (st != cudaSuccess) {
        *pHost = NULL;
        return st;
    }
    void *p = NULL;
    if (posix_memalign(&p, 4096, size ? size : 1) != 0) {
        *pHost = NULL;
        return cudaErrorMemoryAllocation;
    }
    /* Page-locked where the process may lock memory (RLIMIT_MEMLOCK); pageable otherwise, which only
     * the client's copy speed can tell. */
    (void)mlock(p, size);
    if (vmc_ranges_add(&host_allocs, p, size, flags) != 0) {
        free(p);
        *pHost = NULL;
        return cudaErrorMemoryAllocation;
    }
    *pHost = p;
    return cudaSuccess;
}

__attribute__((visibility("default"))) cudaError_t cudaMallocHost(void **ptr, size_t size) { return host_alloc(ptr, size, 0); }

__attribute__((visibility("default"))) cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    return host_alloc(pHost, size, flags);
}

__attribute__((visibility("default"))) cudaError_t cudaFreeHost(void *ptr) {
    if (!ptr)
        return cudaSuccess;
    struct vmc_range r;
    if (!vmc_ranges_find(&host_allocs, ptr, &r) || r.base != (uintptr_t)ptr)
        return cudaErrorInvalidValue;
    vmc_ranges_remove(&host_allocs, ptr);
    munlock(ptr, r.size);
    free(ptr);
    return cudaSuccess;
}

__attribute__((visibility("default"))) cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost) {
    struct vmc_range r;
    if (pFlags && vmc_registered_flags(pHost, pFlags))
        return cudaSuccess;
    if (!pFlags || !vmc_ranges_find(&host_allocs, pHost, &r))
        return cudaErrorInvalidValue;
    /* As natively on 64-bit systems, where unified addressing makes every page-locked allocation
     * count as mapped (cudaHostGetDevicePointer itself is not supported: the memory is on the client). */
    *pFlags = r.tag | cudaHostAllocMapped;
    return cudaSuccess;
}

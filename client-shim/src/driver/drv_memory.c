/* Memory through the driver API: allocations are recorded in the client core's one view of device
 * memory (shared with the runtime front end), copies between this process and the GPU use the core's
 * bulk paths (ring, striped TCP) in driver mode so that the worker answers with the driver's own status,
 * and page-locked host memory lives in this process. Host pointers never travel to the worker. */
#include <stdint.h>
#include <string.h>

#include "box.h"
#include "bulk.h"
#include "drv.h"
#include "drv_memory.h"
#include "drv_call.h"
#include "drv_graph_staging.h"
#include "drv_mirror.h"
#include "hostmap.h"
#include "managed.h"
#include "hostmem.h"
#include "shim_shm.h"
#include "shim_registry.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

CUresult vmc_forward_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult vmc_forward_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                        unsigned int ElementSizeBytes);
CUresult vmc_forward_cuMemFree_v2(CUdeviceptr dptr);
CUresult vmc_forward_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult vmc_forward_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult vmc_forward_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult vmc_forward_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult vmc_forward_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult vmc_forward_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult vmc_forward_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                         unsigned long long flags);
CUresult vmc_forward_cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult vmc_forward_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name);
CUresult vmc_forward_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name);

/* ---- device memory: what the worker allocates, recorded ---- */

static CUresult track(CUresult st, const CUdeviceptr *dptr, size_t size) {
    if (st == CUDA_SUCCESS && dptr && *dptr)
        vmc_device_range_add(*dptr, size);
    return st;
}

static CUresult untrack(CUresult st, CUdeviceptr dptr) {
    if (st == CUDA_SUCCESS && dptr)
        vmc_device_range_remove(dptr);
    return st;
}

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    return track(vmc_forward_cuMemAlloc_v2(dptr, bytesize), dptr, bytesize);
}

__attribute__((visibility("default"))) CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                                                   size_t Height, unsigned int ElementSizeBytes) {
    CUresult st = vmc_forward_cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    return track(st, dptr, st == CUDA_SUCCESS && pPitch ? *pPitch * Height : 0);
}

__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr dptr) {
    if (dptr && vmc_managed_contains((const void *)(uintptr_t)dptr, 0)) {
        /* as natively, freeing waits for the device: nothing may still use the pages it takes away */
        CUresult st = cuCtxSynchronize();
        if (st != CUDA_SUCCESS)
            return st;
        return vmc_managed_free((void *)(uintptr_t)dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    return untrack(vmc_forward_cuMemFree_v2(dptr), dptr);
}

__attribute__((visibility("default"))) CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return track(vmc_forward_cuMemAllocAsync(dptr, bytesize, hStream), dptr, bytesize);
}

__attribute__((visibility("default"))) CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return track(vmc_forward_cuMemAllocAsync_ptsz(dptr, bytesize, hStream), dptr, bytesize);
}

__attribute__((visibility("default"))) CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                                        CUmemoryPool pool, CUstream hStream) {
    return track(vmc_forward_cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream), dptr, bytesize);
}

__attribute__((visibility("default"))) CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                                             CUmemoryPool pool, CUstream hStream) {
    return track(vmc_forward_cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream), dptr, bytesize);
}

/* Forgotten when the free is sent: an error of an asynchronous free surfaces later, as natively. */
__attribute__((visibility("default"))) CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    return untrack(vmc_forward_cuMemFreeAsync(dptr, hStream), dptr);
}

__attribute__((visibility("default"))) CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    return untrack(vmc_forward_cuMemFreeAsync_ptsz(dptr, hStream), dptr);
}

/* A reserved virtual range is device address space from the start, mapped or not. */
__attribute__((visibility("default"))) CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                                                    CUdeviceptr addr, unsigned long long flags) {
    return track(vmc_forward_cuMemAddressReserve(ptr, size, alignment, addr, flags), ptr, size);
}

__attribute__((visibility("default"))) CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    return untrack(vmc_forward_cuMemAddressFree(ptr, size), ptr);
}

/* A module's variables are device memory too (a unified copy must not take them for host addresses). */
static void track_global(CUresult st, const CUdeviceptr *dptr, const size_t *bytes) {
    if (st == CUDA_SUCCESS && dptr && *dptr && !vmc_device_range_find(*dptr, NULL, NULL))
        vmc_device_range_add(*dptr, bytes ? *bytes : 1);
}

__attribute__((visibility("default"))) CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                                                     const char *name) {
    CUresult st = vmc_forward_cuModuleGetGlobal_v2(dptr, bytes, hmod, name);
    track_global(st, dptr, bytes);
    return st;
}

__attribute__((visibility("default"))) CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                                                   const char *name) {
    CUresult st = vmc_forward_cuLibraryGetGlobal(dptr, bytes, library, name);
    track_global(st, dptr, bytes);
    return st;
}

/* ---- 1-D copies ---- */

/* A 1-D copy between this process's memory and the device, for a stream capture that refused it. */
static CUresult capture_staged(CUdeviceptr device, void *host, size_t n, CUstream stream, unsigned mode, int to_dev) {
    CUDA_MEMCPY3D m;
    memset(&m, 0, sizeof m);
    m.WidthInBytes = n, m.Height = 1, m.Depth = 1;
    if (to_dev) {
        m.srcMemoryType = CU_MEMORYTYPE_HOST, m.srcHost = host, m.srcPitch = n;
        m.dstMemoryType = CU_MEMORYTYPE_DEVICE, m.dstDevice = device, m.dstPitch = n;
    } else {
        m.srcMemoryType = CU_MEMORYTYPE_DEVICE, m.srcDevice = device, m.srcPitch = n;
        m.dstMemoryType = CU_MEMORYTYPE_HOST, m.dstHost = host, m.dstPitch = n;
    }
    return vmc_drv_capture_staged_copy(stream, (mode & COPY_PER_THREAD) != 0, &m);
}

/* Whether a copy on `stream` is being captured: asked of the worker only once a capture began in this process. An
 * asynchronous copy to the device is not answered, so the worker's refusal would come too late to stage it. */
static int capturing(CUstream stream, unsigned mode) {
    int per_thread = (mode & COPY_PER_THREAD) != 0;
    /* a synchronous copy on a capturing stream is refused, as natively (only the asynchronous ones are captured) */
    if (!(mode & COPY_ASYNC) || !vmc_capture_ever_begun() || stream == CU_STREAM_LEGACY || (stream == NULL && !per_thread))
        return 0;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult st = per_thread ? cuStreamIsCapturing_ptsz(stream, &status) : cuStreamIsCapturing(stream, &status);
    return st == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

static CUresult to_device(CUdeviceptr dst, const void *src, size_t n, CUstream stream, unsigned mode) {
    if (n && !src)
        return CUDA_ERROR_INVALID_VALUE;
    if (n && !vmc_hostmap_contains(src, n) && capturing(stream, mode))
        return capture_staged(dst, (void *)src, n, stream, mode, 1);
    CUresult st = (CUresult)vmc_copy_to_device(VMC_NO_INDEX, dst, src, n, (uint64_t)(uintptr_t)stream, mode | COPY_DRIVER);
    if (st == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && n && (mode & COPY_ASYNC))
        st = capture_staged(dst, (void *)src, n, stream, mode, 1);
    return st;
}

static CUresult to_host(void *dst, CUdeviceptr src, size_t n, CUstream stream, unsigned mode) {
    if (n && !dst)
        return CUDA_ERROR_INVALID_VALUE;
    if (n && !vmc_hostmap_contains(dst, n) && capturing(stream, mode))
        return capture_staged(src, dst, n, stream, mode, 0);
    CUresult st = (CUresult)vmc_copy_to_host(dst, VMC_NO_INDEX, src, n, (uint64_t)(uintptr_t)stream, mode | COPY_DRIVER);
    if (st == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && n && (mode & COPY_ASYNC))
        st = capture_staged(src, dst, n, stream, mode, 0);
    return st;
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    return to_device(dstDevice, srcHost, ByteCount, 0, 0);
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                                                     size_t ByteCount) {
    return to_device(dstDevice, srcHost, ByteCount, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return to_host(dstHost, srcDevice, ByteCount, 0, 0);
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return to_host(dstHost, srcDevice, ByteCount, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                                                     size_t ByteCount, CUstream hStream) {
    return to_device(dstDevice, srcHost, ByteCount, hStream, COPY_ASYNC);
}

__attribute__((visibility("default"))) CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                                                          size_t ByteCount, CUstream hStream) {
    return to_device(dstDevice, srcHost, ByteCount, hStream, COPY_ASYNC | COPY_PER_THREAD);
}

/* Waits for its data (the bytes must land in this process's buffer): a stronger order than CUDA promises. */
__attribute__((visibility("default"))) CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
                                                                     size_t ByteCount, CUstream hStream) {
    return to_host(dstHost, srcDevice, ByteCount, hStream, COPY_ASYNC);
}

__attribute__((visibility("default"))) CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                                                          size_t ByteCount, CUstream hStream) {
    return to_host(dstHost, srcDevice, ByteCount, hStream, COPY_ASYNC | COPY_PER_THREAD);
}

/* Unified copies: each side is device memory when the core knows it as such, else this process's. */
static CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream, unsigned mode) {
    /* managed memory counts as the device's: the GPU may still be writing it, the copy is ordered on the stream */
    int d = vmc_device_range_find(dst, NULL, NULL) || vmc_managed_contains((const void *)(uintptr_t)dst, 0);
    int s = vmc_device_range_find(src, NULL, NULL) || vmc_managed_contains((const void *)(uintptr_t)src, 0);
    int async = (mode & COPY_ASYNC) != 0, per_thread = (mode & COPY_PER_THREAD) != 0;
    if (d && s) {
        if (async)
            return per_thread ? cuMemcpyDtoDAsync_v2_ptsz(dst, src, n, stream) : cuMemcpyDtoDAsync_v2(dst, src, n, stream);
        return per_thread ? cuMemcpyDtoD_v2_ptds(dst, src, n) : cuMemcpyDtoD_v2(dst, src, n);
    }
    if (d)
        return to_device(dst, (const void *)(uintptr_t)src, n, stream, mode);
    if (s)
        return to_host((void *)(uintptr_t)dst, src, n, stream, mode);
    if (n && (!dst || !src))
        return CUDA_ERROR_INVALID_VALUE;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    return unified(dst, src, ByteCount, 0, 0);
}

__attribute__((visibility("default"))) CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    return unified(dst, src, ByteCount, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                                              CUstream hStream) {
    return unified(dst, src, ByteCount, hStream, COPY_ASYNC);
}

__attribute__((visibility("default"))) CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                                                   CUstream hStream) {
    return unified(dst, src, ByteCount, hStream, COPY_ASYNC | COPY_PER_THREAD);
}

/* ---- 2-D and 3-D copies ---- */

/* One side of a 2-D/3-D copy: where it is and how it is addressed. */
struct side {
    CUmemorytype type; /* HOST, DEVICE or ARRAY (UNIFIED resolved) */
    const void *host;
    CUdeviceptr device;
    CUarray array;
    size_t x, y, z, pitch, height;
};

static CUmemorytype resolve_unified(CUmemorytype type, CUdeviceptr p) {
    if (type != CU_MEMORYTYPE_UNIFIED)
        return type;
    return vmc_device_range_find(p, NULL, NULL) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
}

/* Both sides on the appliance: the descriptor itself travels (its host fields are never read there). */
/* desc: the caller's CUDA_MEMCPY3D when dims is 3, else its CUDA_MEMCPY2D */
static CUresult on_appliance(unsigned dims, const void *desc, CUstream stream, unsigned mode) {
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_MemcpyOnAppliance, (mode & COPY_ASYNC) != 0);
    if (st != CUDA_SUCCESS)
        return st;
    int three_d = dims == 3;
    vmc_put_on_appliance_copy_args(vmc_call_args(&c), &(struct vmc_on_appliance_copy_args){
        .dims = (uint8_t)dims, .mode = (uint8_t)mode, .stream = (uint64_t)(uintptr_t)stream, .n_2d = !three_d,
        .copy_2d = three_d ? NULL : desc, .n_3d = three_d, .copy_3d = three_d ? desc : NULL});
    return (CUresult)vmc_call_finish(&c);
}

/* One side in this process: a box copy (core box.c), done by the worker with the driver. */
static CUresult box(const struct side *host, const struct side *dev, int to_device, size_t w, size_t h, size_t d,
                    CUstream stream, unsigned mode) {
    struct vmc_box b;
    memset(&b, 0, sizeof b);
    if (dev->type == CU_MEMORYTYPE_ARRAY) {
        b.dev_kind = d > 1 || dev->z ? DEV_ARRAY_3D : DEV_ARRAY_2D;
        b.handle = (uint64_t)(uintptr_t)dev->array;
    } else {
        b.dev_kind = DEV_PITCHED;
        b.handle = dev->device;
        b.pitch = dev->pitch;
        b.slice_rows = dev->height;
    }
    b.x = dev->x, b.y = dev->y, b.z = dev->z;
    b.w = w, b.h = h, b.d = d;
    char *base = (char *)(uintptr_t)host->host;
    if (base)
        base += host->x + (host->z * host->height + host->y) * host->pitch;
    unsigned box_mode = ((mode & COPY_ASYNC) ? BOX_ASYNC : 0) | ((mode & COPY_PER_THREAD) ? BOX_PER_THREAD : 0) | BOX_DRIVER;
    return (CUresult)vmc_box_copy(to_device, &b, base, host->pitch, host->height, (uint64_t)(uintptr_t)stream, box_mode);
}

static CUresult copy_boxes(struct side *src, struct side *dst, size_t w, size_t h, size_t d, unsigned dims,
                           const void *desc, CUstream stream, unsigned mode) {
    if (src->type == CU_MEMORYTYPE_HOST && dst->type == CU_MEMORYTYPE_HOST) {
        for (size_t k = 0; k < d; k++)
            for (size_t r = 0; r < h; r++)
                memmove((char *)(uintptr_t)dst->host + dst->x + ((dst->z + k) * dst->height + dst->y + r) * dst->pitch,
                        (const char *)src->host + src->x + ((src->z + k) * src->height + src->y + r) * src->pitch, w);
        return CUDA_SUCCESS;
    }
    if (src->type == CU_MEMORYTYPE_HOST)
        return box(src, dst, 1, w, h, d, stream, mode);
    if (dst->type == CU_MEMORYTYPE_HOST)
        return box(dst, src, 0, w, h, d, stream, mode);
    return on_appliance(dims, desc, stream, mode);
}

/* One side of a 2-D/3-D copy as the driver means it: a unified address becomes host memory of this process
 * (and then *host is that address) or device memory. */
static CUmemorytype resolve_side(CUmemorytype type, CUdeviceptr device, uintptr_t *host) {
    CUmemorytype t = resolve_unified(type, device);
    if (t == CU_MEMORYTYPE_HOST && type == CU_MEMORYTYPE_UNIFIED)
        *host = (uintptr_t)device;
    return t;
}

static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream stream, unsigned mode, unsigned dims) {
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY2D q = *p;
    uintptr_t src = (uintptr_t)q.srcHost, dst = (uintptr_t)q.dstHost;
    q.srcMemoryType = resolve_side(p->srcMemoryType, p->srcDevice, &src);
    q.dstMemoryType = resolve_side(p->dstMemoryType, p->dstDevice, &dst);
    q.srcHost = (const void *)src;
    q.dstHost = (void *)dst;
    struct side s = {q.srcMemoryType, q.srcHost, q.srcDevice, q.srcArray, q.srcXInBytes, q.srcY, 0, q.srcPitch, q.Height};
    struct side t = {q.dstMemoryType, q.dstHost, q.dstDevice, q.dstArray, q.dstXInBytes, q.dstY, 0, q.dstPitch, q.Height};
    return copy_boxes(&s, &t, q.WidthInBytes, q.Height, 1, dims, &q, stream, mode);
}

static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream stream, unsigned mode) {
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D q = *p;
    uintptr_t src = (uintptr_t)q.srcHost, dst = (uintptr_t)q.dstHost;
    q.srcMemoryType = resolve_side(p->srcMemoryType, p->srcDevice, &src);
    q.dstMemoryType = resolve_side(p->dstMemoryType, p->dstDevice, &dst);
    q.srcHost = (const void *)src;
    q.dstHost = (void *)dst;
    if (q.srcLOD || q.dstLOD)
        return CUDA_ERROR_INVALID_VALUE; /* reserved, must be zero */
    struct side s = {q.srcMemoryType, q.srcHost, q.srcDevice, q.srcArray, q.srcXInBytes, q.srcY, q.srcZ, q.srcPitch,
                     q.srcHeight};
    struct side t = {q.dstMemoryType, q.dstHost, q.dstDevice, q.dstArray, q.dstXInBytes, q.dstY, q.dstZ, q.dstPitch,
                     q.dstHeight};
    return copy_boxes(&s, &t, q.WidthInBytes, q.Height, q.Depth, 3, &q, stream, mode);
}

__attribute__((visibility("default"))) CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) { return copy_2d(pCopy, 0, 0, 2); }

__attribute__((visibility("default"))) CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
    return copy_2d(pCopy, 0, COPY_PER_THREAD, 2);
}

__attribute__((visibility("default"))) CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
    return copy_2d(pCopy, hStream, COPY_ASYNC, 2);
}

__attribute__((visibility("default"))) CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
    return copy_2d(pCopy, hStream, COPY_ASYNC | COPY_PER_THREAD, 2);
}

/* What the runtime's cudaMemcpy2D uses: the same copy without the driver's alignment requirements. */
__attribute__((visibility("default"))) CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
    return copy_2d(pCopy, 0, 0, VMC_DIMS_2D_UNALIGNED);
}

__attribute__((visibility("default"))) CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
    return copy_2d(pCopy, 0, COPY_PER_THREAD, VMC_DIMS_2D_UNALIGNED);
}

__attribute__((visibility("default"))) CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) { return copy_3d(pCopy, 0, 0); }

__attribute__((visibility("default"))) CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) {
    return copy_3d(pCopy, 0, COPY_PER_THREAD);
}

__attribute__((visibility("default"))) CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
    return copy_3d(pCopy, hStream, COPY_ASYNC);
}

__attribute__((visibility("default"))) CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
    return copy_3d(pCopy, hStream, COPY_ASYNC | COPY_PER_THREAD);
}

/* ---- page-locked host memory: it lives in this process ---- */

static int told_mapped;
static const char *const ACROSS_MACHINES = "the appliance's GPU can reach this process's memory only when the appliance "
                                           "is on this host (copy explicitly)";

/* On the co-located path mapped memory (CU_MEMHOSTALLOC_DEVICEMAP) lives in memory this process shares with
 * its worker (hostmap.h), which kernels reach; so does all page-locked memory with `pinned_in_region`, which
 * the GPU then copies straight from and to. Elsewhere, or when /dev/shm has no room, page-locked memory
 * stays in this process, and mapped memory is refused. */
static CUresult host_alloc(void **pp, size_t bytesize, unsigned flags) {
    if (!pp)
        return CUDA_ERROR_INVALID_VALUE;
    *pp = NULL;
    int mapped = (flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0;
    if ((mapped && vmc_shm_colocated()) || vmc_shm_pinned_in_region()) {
        CUresult st = (CUresult)vmc_hostmap_alloc(pp, bytesize, flags);
        if (st == CUDA_SUCCESS || mapped)
            return st;
    } else if (mapped) {
        return vmc_drv_mirror_alloc(pp, bytesize, flags); /* across machines: mirrored (drv_mirror.c) */
    }
    return (CUresult)vmc_host_alloc(pp, bytesize, flags);
}

__attribute__((visibility("default"))) CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
    static int told;
    if (!pdptr || Flags)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t device = 0;
    if (vmc_hostmap_device_pointer(p, &device) || vmc_drv_mirror_device_pointer(p, &device)) {
        *pdptr = (CUdeviceptr)device;
        return CUDA_SUCCESS;
    }
    unsigned flags = 0;
    if (vmc_host_alloc_find(p, NULL, NULL, &flags) || vmc_registered_flags(p, &flags))
        return vmc_drv_not_supported("cuMemHostGetDevicePointer of page-locked memory not allocated with "
                                     "CU_MEMHOSTALLOC_DEVICEMAP", ACROSS_MACHINES, &told);
    return CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    return host_alloc(pp, bytesize, 0);
}

__attribute__((visibility("default"))) CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    return host_alloc(pp, bytesize, Flags);
}

__attribute__((visibility("default"))) CUresult cuMemFreeHost(void *p) {
    return vmc_drv_mirror_free(p) ? CUDA_SUCCESS : (CUresult)vmc_host_free(p);
}

/* Registered memory stays in this process; asked for mapped (DEVICEMAP), on the co-located path its pages
 * become memory shared with the worker, in place (hostmap.h). */
__attribute__((visibility("default"))) CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
    static int told_io;
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return vmc_drv_not_supported("cuMemHostRegister with CU_MEMHOSTREGISTER_IOMEMORY (device memory of another PCIe "
                                     "device)", "no such device is reachable from the appliance's GPU", &told_io);
    int mapped = (Flags & CU_MEMHOSTREGISTER_DEVICEMAP) != 0;
    if (mapped && !vmc_shm_colocated())
        return vmc_drv_not_supported("cuMemHostRegister with CU_MEMHOSTREGISTER_DEVICEMAP (mapped host memory)",
                                     ACROSS_MACHINES, &told_mapped);
    CUresult st = (CUresult)vmc_host_register(p, bytesize, Flags);
    if (st == CUDA_SUCCESS && mapped && (st = (CUresult)vmc_hostmap_register(p, bytesize)) != CUDA_SUCCESS)
        vmc_host_unregister(p);
    return st;
}

__attribute__((visibility("default"))) CUresult cuMemHostUnregister(void *p) {
    CUresult st = (CUresult)vmc_host_unregister(p);
    if (st == CUDA_SUCCESS)
        vmc_hostmap_unregister(p);
    return st;
}

__attribute__((visibility("default"))) CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) {
    unsigned flags = 0;
    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    if (vmc_registered_flags(p, pFlags))
        return CUDA_SUCCESS;
    if (!vmc_host_alloc_find(p, NULL, NULL, &flags))
        return CUDA_ERROR_INVALID_VALUE;
    /* As natively on 64-bit systems, where unified addressing makes every page-locked allocation count as
     * mapped, and as the runtime front end answers (cuMemHostGetDevicePointer itself is not supported: the
     * memory is on the client). */
    *pFlags = flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
}

/* ---- pointer attributes ----
 * Device memory: the worker's driver answers. Page-locked memory of this process: answered here, as the
 * driver describes host allocations. Anything else is memory the driver does not know. */

/* How many bytes the driver writes for an attribute; 0 for one we do not know. */
static size_t attribute_size(CUpointer_attribute a) {
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return sizeof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return sizeof(CUmemoryPool);
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return sizeof(unsigned long long);
    default: return 0;
    }
}

/* Managed memory (managed.h): 1 and the attribute, as the driver describes a managed allocation; 0 when ptr
 * is not in one. The worker knows these pages as registered host memory, so it is answered here. */
static int managed_attribute(void *data, CUpointer_attribute a, CUdeviceptr ptr, CUresult *st) {
    void *base = NULL;
    size_t size = 0;
    int device = 0;
    if (!vmc_managed_find((const void *)(uintptr_t)ptr, &base, &size, &device))
        return 0;
    *st = CUDA_SUCCESS;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data = (void *)(uintptr_t)ptr; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: *st = cuCtxGetCurrent((CUcontext *)data); break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = device; break; /* where it was allocated */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(void **)data = base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = size; break;
    default: *st = CUDA_ERROR_INVALID_VALUE;
    }
    return 1;
}

/* A page-locked allocation or registration of this process: 1 and the attribute, 0 when it is neither. */
static int host_attribute(void *data, CUpointer_attribute a, CUdeviceptr ptr, CUresult *st) {
    void *base = NULL;
    size_t size = 0;
    unsigned flags = 0;
    if (managed_attribute(data, a, ptr, st))
        return 1;
    int registered = vmc_registered_flags((const void *)(uintptr_t)ptr, &flags);
    if (!registered && !vmc_host_alloc_find((const void *)(uintptr_t)ptr, &base, &size, &flags))
        return 0;
    *st = CUDA_SUCCESS;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = CU_MEMORYTYPE_HOST; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data = (void *)(uintptr_t)ptr; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        uint64_t device = 0;
        if (vmc_hostmap_device_pointer((const void *)(uintptr_t)ptr, &device))
            *(CUdeviceptr *)data = (CUdeviceptr)device;
        else
            *st = CUDA_ERROR_INVALID_VALUE; /* memory of this process only: the GPU cannot reach it */
        break;
    }
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_CONTEXT: *st = cuCtxGetCurrent((CUcontext *)data); break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        if (registered) *st = CUDA_ERROR_INVALID_VALUE; else *(void **)data = base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (registered) *st = CUDA_ERROR_INVALID_VALUE; else *(size_t *)data = size;
        break;
    default: *st = CUDA_ERROR_INVALID_VALUE; /* the device address of this memory: not reachable from the GPU */
    }
    return 1;
}

/* The worker's answer for device memory: cuPointerGetAttributes with the one attribute. */
static CUresult device_attribute(void *data, CUpointer_attribute a, CUdeviceptr ptr) {
    size_t n = attribute_size(a);
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char value[VMC_POINTER_ATTR_BYTES];
    memset(value, 0, sizeof value);
    CUresult st = cuPointerGetAttributes(1, &a, (void **)&(void *){value}, ptr);
    if (st == CUDA_SUCCESS)
        memcpy(data, value, n);
    return st;
}

__attribute__((visibility("default"))) CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                                                      CUdeviceptr ptr) {
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult st;
    if (host_attribute(data, attribute, ptr, &st))
        return st;
    if (!vmc_device_range_find(ptr, NULL, NULL))
        return CUDA_ERROR_INVALID_VALUE; /* as natively for memory the driver does not know */
    return device_attribute(data, attribute, ptr);
}

/* The attributes of device memory, from the worker's driver, in one round trip. */
static CUresult worker_attributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                  CUdeviceptr ptr) {
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_cuPointerGetAttributes, 0);
    if (st != CUDA_SUCCESS)
        return st;
    _Static_assert(sizeof(CUpointer_attribute) == sizeof(uint32_t), "attributes travel as 32-bit numbers");
    vmc_put_pointer_attributes_args(vmc_call_args(&c), &(struct vmc_pointer_attributes_args){
        .n = numAttributes, .attributes = attributes, .pointer = ptr});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_pointer_attributes_reply r;
    vmc_get_pointer_attributes_reply(&c.reply, &r);
    if (!vmc_call_reply_ok(&c) || r.values_bytes != numAttributes * VMC_POINTER_ATTR_BYTES)
        return CUDA_ERROR_UNKNOWN;
    for (unsigned i = 0; i < numAttributes; i++)
        if (data[i] && attribute_size(attributes[i]))
            memcpy(data[i], (const unsigned char *)r.values + i * VMC_POINTER_ATTR_BYTES, attribute_size(attributes[i]));
    return CUDA_SUCCESS;
}

/* Every attribute in one call: device memory in one round trip; page-locked memory of this process
 * here; unknown memory gets the default (zero) values with CUDA_SUCCESS, as NVIDIA documents. */
__attribute__((visibility("default"))) CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                                                       CUpointer_attribute *attributes, void **data,
                                                                       CUdeviceptr ptr) {
    if (!attributes || !data || numAttributes == 0 || numAttributes > VMC_MAX_POINTER_ATTRS)
        return CUDA_ERROR_INVALID_VALUE;
    if (!vmc_device_range_find(ptr, NULL, NULL)) {
        for (unsigned i = 0; i < numAttributes; i++) {
            size_t n = attribute_size(attributes[i]);
            if (!data[i])
                continue;
            CUresult st;
            if (!host_attribute(data[i], attributes[i], ptr, &st) || st != CUDA_SUCCESS) {
                if (n)
                    memset(data[i], 0, n);
                if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
                    *(int *)data[i] = -2; /* "not a device pointer", as the driver reports */
            }
        }
        return CUDA_SUCCESS;
    }
    return worker_attributes(numAttributes, attributes, data, ptr);
}

/* Device memory another process shared with this one (an opened CUDA IPC handle, a pointer imported from a shared
 * pool) is device memory here too: it is recorded from `p` to the end of its allocation as the worker's driver knows
 * it (a unified copy must not take it for this process's memory), or as one byte where the driver does not say. */
void vmc_drv_record_shared(CUdeviceptr p) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!p || vmc_device_range_find(p, NULL, NULL))
        return;
    if (cuMemGetAddressRange_v2(&base, &size, p) != CUDA_SUCCESS || p - base >= size) {
        CUpointer_attribute range[2] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        void *values[2] = {&base, &size};
        if (worker_attributes(2, range, values, p) != CUDA_SUCCESS || p - base >= size)
            base = p, size = 1;
    }
    vmc_device_range_add(p, size - (size_t)(p - base));
}

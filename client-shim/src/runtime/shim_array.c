/* 2-D, 3-D and CUDA-array copies (cudaMemcpy2D*, cudaMemcpy3D*, cudaMemcpyToArray/FromArray*).
 * Both sides on the appliance: the generated forwarder (its kind travels as cudaMemcpyDeviceToDevice,
 * the only kind the worker accepts there). One side in this process: vmc_MemcpyBoxHost, whose bulk bytes
 * are the box's rows packed densely (PROTOCOL.md "Box copies"); rows with a pitch are packed here before
 * the upload and scattered here after the download. Host pointers never travel. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "box.h"
#include "bulk.h"
#include "managed.h"
#include "shim_call.h"
#include "shim_unsupported.h"
#include "vmc_api.h"


/* The generated device-to-device forwarders (cuda-api.spec: sync-wrapped / async-wrapped). */
cudaError_t vmc_forward_cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                          size_t height, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                          size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                               size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                            size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                                 size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                                 size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                                                 cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                                      size_t spitch, size_t width, size_t height,
                                                      enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                              size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2DFromArray_ptds(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                   size_t hOffset, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                   size_t hOffset, size_t width, size_t height,
                                                   enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy2DFromArrayAsync_ptsz(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset,
                                                        size_t hOffset, size_t width, size_t height,
                                                        enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
                                          enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                               size_t count, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                               size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src,
                                                    size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                            size_t count, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpyFromArray_ptds(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                 size_t count, enum cudaMemcpyKind kind);
cudaError_t vmc_forward_cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                 size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpyFromArrayAsync_ptsz(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                                      size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy3D(const struct cudaMemcpy3DParms *p);
cudaError_t vmc_forward_cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p);
cudaError_t vmc_forward_cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream);
cudaError_t vmc_forward_cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream);

/* ---- helpers ---- */

/* Whether p is device (or managed) memory, for cudaMemcpyDefault: this process's own view of its allocations
 * (bulk.h), as for 1-D copies, with no round trip. */
static int on_device(const void *p) {
    return p && (vmc_device_range_find((uint64_t)(uintptr_t)p, NULL, NULL) || vmc_managed_contains(p, 0));
}

static enum cudaMemcpyKind resolve(enum cudaMemcpyKind kind, int dst_device, int src_device) {
    if (kind != cudaMemcpyDefault)
        return kind;
    if (dst_device && src_device)
        return cudaMemcpyDeviceToDevice;
    if (dst_device)
        return cudaMemcpyHostToDevice;
    if (src_device)
        return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
}

static cudaError_t host_to_host_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height) {
    if (height > 1 && (dpitch < width || spitch < width))
        return cudaErrorInvalidPitchValue;
    if (width && height && (!dst || !src))
        return cudaErrorInvalidValue;
    for (size_t r = 0; r < height; r++)
        memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return cudaSuccess;
}

/* ---- cudaMemcpy2D ---- */

static cudaError_t memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                             enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = resolve(kind, on_device(dst), on_device(src));
    struct vmc_box b = {DEV_PITCHED, 0, 0, height, 0, 0, 0, width, height, 1};
    switch (kind) {
    case cudaMemcpyHostToHost:
        return host_to_host_2d(dst, dpitch, src, spitch, width, height);
    case cudaMemcpyHostToDevice:
        b.handle = (uint64_t)(uintptr_t)dst;
        b.pitch = dpitch;
        return vmc_box_copy(1, &b, (void *)src, spitch, height, (uint64_t)(uintptr_t)stream, mode);
    case cudaMemcpyDeviceToHost:
        b.handle = (uint64_t)(uintptr_t)src;
        b.pitch = spitch;
        return vmc_box_copy(0, &b, dst, dpitch, height, (uint64_t)(uintptr_t)stream, mode);
    case cudaMemcpyDeviceToDevice:
        switch (mode) {
        case 0: return vmc_forward_cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
        case BOX_PER_THREAD: return vmc_forward_cudaMemcpy2D_ptds(dst, dpitch, src, spitch, width, height, kind);
        case BOX_ASYNC: return vmc_forward_cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream);
        default: return vmc_forward_cudaMemcpy2DAsync_ptsz(dst, dpitch, src, spitch, width, height, kind, stream);
        }
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                                               size_t width, size_t height, enum cudaMemcpyKind kind) {
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, 0, 0);
}
extern cudaError_t cudaMemcpy2D_ptds(void *, size_t, const void *, size_t, size_t, size_t, enum cudaMemcpyKind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src,
                                                                    size_t spitch, size_t width, size_t height,
                                                                    enum cudaMemcpyKind kind) {
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, 0, BOX_PER_THREAD);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                                                                    size_t spitch, size_t width, size_t height,
                                                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, BOX_ASYNC);
}
extern cudaError_t cudaMemcpy2DAsync_ptsz(void *, size_t, const void *, size_t, size_t, size_t, enum cudaMemcpyKind,
                                          cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                                                         size_t spitch, size_t width, size_t height,
                                                                         enum cudaMemcpyKind kind, cudaStream_t stream) {
    return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, BOX_ASYNC | BOX_PER_THREAD);
}

/* ---- cudaMemcpy2DToArray / cudaMemcpy2DFromArray ---- */

static cudaError_t to_array_2d(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                               size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (kind == cudaMemcpyHostToDevice) {
        struct vmc_box b = {DEV_ARRAY_2D, (uint64_t)(uintptr_t)dst, 0, 0, wOffset, hOffset, 0, width, height, 1};
        return vmc_box_copy(1, &b, (void *)src, spitch, height, (uint64_t)(uintptr_t)stream, mode);
    }
    if (kind != cudaMemcpyDeviceToDevice)
        return cudaErrorInvalidMemcpyDirection;
    switch (mode) {
    case 0: return vmc_forward_cudaMemcpy2DToArray(dst, wOffset, hOffset, src, spitch, width, height, kind);
    case BOX_PER_THREAD: return vmc_forward_cudaMemcpy2DToArray_ptds(dst, wOffset, hOffset, src, spitch, width, height, kind);
    case BOX_ASYNC:
        return vmc_forward_cudaMemcpy2DToArrayAsync(dst, wOffset, hOffset, src, spitch, width, height, kind, stream);
    default:
        return vmc_forward_cudaMemcpy2DToArrayAsync_ptsz(dst, wOffset, hOffset, src, spitch, width, height, kind, stream);
    }
}

static cudaError_t from_array_2d(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset,
                                 size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDeviceToHost) {
        struct vmc_box b = {DEV_ARRAY_2D, (uint64_t)(uintptr_t)src, 0, 0, wOffset, hOffset, 0, width, height, 1};
        return vmc_box_copy(0, &b, dst, dpitch, height, (uint64_t)(uintptr_t)stream, mode);
    }
    if (kind != cudaMemcpyDeviceToDevice)
        return cudaErrorInvalidMemcpyDirection;
    switch (mode) {
    case 0: return vmc_forward_cudaMemcpy2DFromArray(dst, dpitch, src, wOffset, hOffset, width, height, kind);
    case BOX_PER_THREAD: return vmc_forward_cudaMemcpy2DFromArray_ptds(dst, dpitch, src, wOffset, hOffset, width, height, kind);
    case BOX_ASYNC:
        return vmc_forward_cudaMemcpy2DFromArrayAsync(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream);
    default:
        return vmc_forward_cudaMemcpy2DFromArrayAsync_ptsz(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream);
    }
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                                      const void *src, size_t spitch, size_t width,
                                                                      size_t height, enum cudaMemcpyKind kind) {
    return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, 0, 0);
}
extern cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t, size_t, size_t, const void *, size_t, size_t, size_t,
                                            enum cudaMemcpyKind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                                           const void *src, size_t spitch, size_t width,
                                                                           size_t height, enum cudaMemcpyKind kind) {
    return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, 0, BOX_PER_THREAD);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset,
                                                                           size_t hOffset, const void *src, size_t spitch,
                                                                           size_t width, size_t height,
                                                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
    return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, stream, BOX_ASYNC);
}
extern cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t, size_t, size_t, const void *, size_t, size_t, size_t,
                                                 enum cudaMemcpyKind, cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset,
                                                                                size_t hOffset, const void *src,
                                                                                size_t spitch, size_t width, size_t height,
                                                                                enum cudaMemcpyKind kind,
                                                                                cudaStream_t stream) {
    return to_array_2d(dst, wOffset, hOffset, src, spitch, width, height, kind, stream, BOX_ASYNC | BOX_PER_THREAD);
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src,
                                                                        size_t wOffset, size_t hOffset, size_t width,
                                                                        size_t height, enum cudaMemcpyKind kind) {
    return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, 0, 0);
}
extern cudaError_t cudaMemcpy2DFromArray_ptds(void *, size_t, cudaArray_const_t, size_t, size_t, size_t, size_t,
                                              enum cudaMemcpyKind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DFromArray_ptds(void *dst, size_t dpitch,
                                                                             cudaArray_const_t src, size_t wOffset,
                                                                             size_t hOffset, size_t width, size_t height,
                                                                             enum cudaMemcpyKind kind) {
    return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, 0, BOX_PER_THREAD);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch,
                                                                             cudaArray_const_t src, size_t wOffset,
                                                                             size_t hOffset, size_t width, size_t height,
                                                                             enum cudaMemcpyKind kind,
                                                                             cudaStream_t stream) {
    return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, BOX_ASYNC);
}
extern cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *, size_t, cudaArray_const_t, size_t, size_t, size_t, size_t,
                                                   enum cudaMemcpyKind, cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *dst, size_t dpitch,
                                                                                  cudaArray_const_t src, size_t wOffset,
                                                                                  size_t hOffset, size_t width,
                                                                                  size_t height, enum cudaMemcpyKind kind,
                                                                                  cudaStream_t stream) {
    return from_array_2d(dst, dpitch, src, wOffset, hOffset, width, height, kind, stream, BOX_ASYNC | BOX_PER_THREAD);
}

/* ---- cudaMemcpyToArray / cudaMemcpyFromArray (deprecated, still used): a byte run that wraps rows ---- */

static cudaError_t to_array(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(src) ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice;
    if (kind == cudaMemcpyHostToDevice) {
        struct vmc_box b = {DEV_LINEAR, (uint64_t)(uintptr_t)dst, 0, 0, wOffset, hOffset, 0, count, 1, 1};
        return vmc_box_copy(1, &b, (void *)src, count, 1, (uint64_t)(uintptr_t)stream, mode);
    }
    if (kind != cudaMemcpyDeviceToDevice)
        return cudaErrorInvalidMemcpyDirection;
    switch (mode) {
    case 0: return vmc_forward_cudaMemcpyToArray(dst, wOffset, hOffset, src, count, kind);
    case BOX_PER_THREAD: return vmc_forward_cudaMemcpyToArray_ptds(dst, wOffset, hOffset, src, count, kind);
    case BOX_ASYNC: return vmc_forward_cudaMemcpyToArrayAsync(dst, wOffset, hOffset, src, count, kind, stream);
    default: return vmc_forward_cudaMemcpyToArrayAsync_ptsz(dst, wOffset, hOffset, src, count, kind, stream);
    }
}

static cudaError_t from_array(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count,
                              enum cudaMemcpyKind kind, cudaStream_t stream, unsigned mode) {
    if (kind == cudaMemcpyDefault)
        kind = on_device(dst) ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDeviceToHost) {
        struct vmc_box b = {DEV_LINEAR, (uint64_t)(uintptr_t)src, 0, 0, wOffset, hOffset, 0, count, 1, 1};
        return vmc_box_copy(0, &b, dst, count, 1, (uint64_t)(uintptr_t)stream, mode);
    }
    if (kind != cudaMemcpyDeviceToDevice)
        return cudaErrorInvalidMemcpyDirection;
    switch (mode) {
    case 0: return vmc_forward_cudaMemcpyFromArray(dst, src, wOffset, hOffset, count, kind);
    case BOX_PER_THREAD: return vmc_forward_cudaMemcpyFromArray_ptds(dst, src, wOffset, hOffset, count, kind);
    case BOX_ASYNC: return vmc_forward_cudaMemcpyFromArrayAsync(dst, src, wOffset, hOffset, count, kind, stream);
    default: return vmc_forward_cudaMemcpyFromArrayAsync_ptsz(dst, src, wOffset, hOffset, count, kind, stream);
    }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                                    const void *src, size_t count, enum cudaMemcpyKind kind) {
    return to_array(dst, wOffset, hOffset, src, count, kind, 0, 0);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                                         const void *src, size_t count,
                                                                         enum cudaMemcpyKind kind, cudaStream_t stream) {
    return to_array(dst, wOffset, hOffset, src, count, kind, stream, BOX_ASYNC);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset,
                                                                      size_t hOffset, size_t count, enum cudaMemcpyKind kind) {
    return from_array(dst, src, wOffset, hOffset, count, kind, 0, 0);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src,
                                                                           size_t wOffset, size_t hOffset, size_t count,
                                                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
    return from_array(dst, src, wOffset, hOffset, count, kind, stream, BOX_ASYNC);
}
#pragma GCC diagnostic pop
extern cudaError_t cudaMemcpyToArray_ptds(cudaArray_t, size_t, size_t, const void *, size_t, enum cudaMemcpyKind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToArray_ptds(cudaArray_t dst, size_t wOffset, size_t hOffset,
                                                                         const void *src, size_t count,
                                                                         enum cudaMemcpyKind kind) {
    return to_array(dst, wOffset, hOffset, src, count, kind, 0, BOX_PER_THREAD);
}
extern cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t, size_t, size_t, const void *, size_t, enum cudaMemcpyKind,
                                               cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t dst, size_t wOffset,
                                                                              size_t hOffset, const void *src,
                                                                              size_t count, enum cudaMemcpyKind kind,
                                                                              cudaStream_t stream) {
    return to_array(dst, wOffset, hOffset, src, count, kind, stream, BOX_ASYNC | BOX_PER_THREAD);
}
extern cudaError_t cudaMemcpyFromArray_ptds(void *, cudaArray_const_t, size_t, size_t, size_t, enum cudaMemcpyKind);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromArray_ptds(void *dst, cudaArray_const_t src,
                                                                           size_t wOffset, size_t hOffset, size_t count,
                                                                           enum cudaMemcpyKind kind) {
    return from_array(dst, src, wOffset, hOffset, count, kind, 0, BOX_PER_THREAD);
}
extern cudaError_t cudaMemcpyFromArrayAsync_ptsz(void *, cudaArray_const_t, size_t, size_t, size_t, enum cudaMemcpyKind,
                                                 cudaStream_t);
__attribute__((visibility("default"))) cudaError_t cudaMemcpyFromArrayAsync_ptsz(void *dst, cudaArray_const_t src,
                                                                                size_t wOffset, size_t hOffset,
                                                                                size_t count, enum cudaMemcpyKind kind,
                                                                                cudaStream_t stream) {
    return from_array(dst, src, wOffset, hOffset, count, kind, stream, BOX_ASYNC | BOX_PER_THREAD);
}

/* ---- cudaMemcpy3D ---- */

static cudaError_t element_bytes(cudaArray_const_t a, size_t *elem) {
    struct cudaChannelFormatDesc desc;
    struct cudaExtent extent;
    unsigned flags;
    cudaError_t st = cudaArrayGetInfo(&desc, &extent, &flags, (cudaArray_t)a);
    if (st != cudaSuccess)
        return st;
    int bits = desc.x + desc.y + desc.z + desc.w;
    *elem = bits >= 8 ? (size_t)bits / 8 : 1;
    return cudaSuccess;
}

/* The device side of a 3-D copy as a box; host side described by the other pitched pointer. */
static cudaError_t device_box(cudaArray_const_t array, struct cudaPitchedPtr ptr, struct cudaPos pos,
                              struct cudaExtent extent, struct vmc_box *b) {
    memset(b, 0, sizeof *b);
    size_t elem = 1;
    if (array) {
        cudaError_t st = element_bytes(array, &elem);
        if (st != cudaSuccess)
            return st;
        b->dev_kind = DEV_ARRAY_3D;
        b->handle = (uint64_t)(uintptr_t)array;
        b->x = (uint64_t)pos.x * elem;
    } else {
        b->dev_kind = DEV_PITCHED;
        b->handle = (uint64_t)(uintptr_t)ptr.ptr;
        b->pitch = ptr.pitch;
        b->slice_rows = ptr.ysize;
        b->x = pos.x;
    }
    b->y = pos.y;
    b->z = pos.z;
    b->w = (uint64_t)extent.width * elem;
    b->h = extent.height;
    b->d = extent.depth;
    return cudaSuccess;
}

static char *host_start(struct cudaPitchedPtr p, struct cudaPos pos) {
    return (char *)p.ptr + (pos.z * p.ysize + pos.y) * p.pitch + pos.x;
}

static cudaError_t memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t stream, unsigned mode) {
    if (!p)
        return cudaErrorInvalidValue;
    enum cudaMemcpyKind kind = p->kind;
    if (kind == cudaMemcpyDefault)
        kind = resolve(kind, p->dstArray || on_device(p->dstPtr.ptr), p->srcArray || on_device(p->srcPtr.ptr));
    struct vmc_box b;
    cudaError_t st;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        if (p->srcArray)
            return cudaErrorInvalidValue;
        st = device_box(p->dstArray, p->dstPtr, p->dstPos, p->extent, &b);
        if (st != cudaSuccess)
            return st;
        return vmc_box_copy(1, &b, p->srcPtr.ptr ? host_start(p->srcPtr, p->srcPos) : NULL, p->srcPtr.pitch,
                        p->srcPtr.ysize, (uint64_t)(uintptr_t)stream, mode);
    case cudaMemcpyDeviceToHost:
        if (p->dstArray)
            return cudaErrorInvalidValue;
        st = device_box(p->srcArray, p->srcPtr, p->srcPos, p->extent, &b);
        if (st != cudaSuccess)
            return st;
        return vmc_box_copy(0, &b, p->dstPtr.ptr ? host_start(p->dstPtr, p->dstPos) : NULL, p->dstPtr.pitch,
                        p->dstPtr.ysize, (uint64_t)(uintptr_t)stream, mode);
    case cudaMemcpyDeviceToDevice: {
        struct cudaMemcpy3DParms q = *p;
        q.kind = cudaMemcpyDeviceToDevice;
        switch (mode) {
        case 0: return vmc_forward_cudaMemcpy3D(&q);
        case BOX_PER_THREAD: return vmc_forward_cudaMemcpy3D_ptds(&q);
        case BOX_ASYNC: return vmc_forward_cudaMemcpy3DAsync(&q, stream);
        default: return vmc_forward_cudaMemcpy3DAsync_ptsz(&q, stream);
        }
    }
    case cudaMemcpyHostToHost: {
        static int told;
        vmc_not_supported_because("cudaMemcpy3D from host to host", "vmcuda copies 3-D boxes only to or from a device",
                                  &told);
        return cudaErrorNotSupported;
    }
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
}

__attribute__((visibility("default"))) cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p) {
    return memcpy_3d(p, 0, 0);
}
extern cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p) {
    return memcpy_3d(p, 0, BOX_PER_THREAD);
}
__attribute__((visibility("default"))) cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t stream) {
    return memcpy_3d(p, stream, BOX_ASYNC);
}
extern cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p,
                                                                         cudaStream_t stream) {
    return memcpy_3d(p, stream, BOX_ASYNC | BOX_PER_THREAD);
}

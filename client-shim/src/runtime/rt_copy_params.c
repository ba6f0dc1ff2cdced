/* The runtime's copy parameters as the driver's (rt_copy_params.h). */
#include <stdint.h>
#include <string.h>

#include "rt_copy_params.h"

/* One side: a host pointer for host memory, a device address otherwise (unified addresses go there too). */
static void side(CUmemorytype type, const struct cudaPitchedPtr *ptr, const void **host, CUdeviceptr *device) {
    if (type == CU_MEMORYTYPE_HOST)
        *host = ptr->ptr;
    else
        *device = (CUdeviceptr)(uintptr_t)ptr->ptr;
}

cudaError_t vmc_rt_copy_to_driver(const struct cudaMemcpy3DParms *p, CUDA_MEMCPY3D *c) {
    if (p->srcArray || p->dstArray)
        return cudaErrorNotSupported;
    CUmemorytype src, dst;
    switch (p->kind) {
    case cudaMemcpyHostToHost: src = dst = CU_MEMORYTYPE_HOST; break;
    case cudaMemcpyHostToDevice: src = CU_MEMORYTYPE_HOST, dst = CU_MEMORYTYPE_DEVICE; break;
    case cudaMemcpyDeviceToHost: src = CU_MEMORYTYPE_DEVICE, dst = CU_MEMORYTYPE_HOST; break;
    case cudaMemcpyDeviceToDevice: src = dst = CU_MEMORYTYPE_DEVICE; break;
    case cudaMemcpyDefault: src = dst = CU_MEMORYTYPE_UNIFIED; break;
    default: return cudaErrorInvalidMemcpyDirection;
    }
    memset(c, 0, sizeof *c);
    c->srcXInBytes = p->srcPos.x, c->srcY = p->srcPos.y, c->srcZ = p->srcPos.z;
    c->srcMemoryType = src;
    side(src, &p->srcPtr, &c->srcHost, &c->srcDevice);
    c->srcPitch = p->srcPtr.pitch, c->srcHeight = p->srcPtr.ysize;
    c->dstXInBytes = p->dstPos.x, c->dstY = p->dstPos.y, c->dstZ = p->dstPos.z;
    c->dstMemoryType = dst;
    const void *dst_host = NULL;
    side(dst, &p->dstPtr, &dst_host, &c->dstDevice);
    c->dstHost = (void *)dst_host;
    c->dstPitch = p->dstPtr.pitch, c->dstHeight = p->dstPtr.ysize;
    c->WidthInBytes = p->extent.width, c->Height = p->extent.height, c->Depth = p->extent.depth;
    return cudaSuccess;
}

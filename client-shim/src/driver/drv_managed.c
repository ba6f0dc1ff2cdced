/* Managed memory through the driver front end (managed.h): what static-runtime programs' cudaMallocManaged
 * and its hints become. Co-located only; the numbers of the errors vmc_managed_alloc returns are the same in
 * both enums (invalid value 1, out of memory 2, not supported 801). */
#include "drv.h"

#include "managed.h"

__attribute__((visibility("default"))) CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    CUdevice device = 0;
    CUresult st = cuCtxGetDevice(&device);
    if (st == CUDA_SUCCESS)
        st = (CUresult)vmc_managed_alloc(&p, bytesize, flags, (int)device);
    *dptr = st == CUDA_SUCCESS ? (CUdeviceptr)(uintptr_t)p : 0;
    return st;
}

/* Prefetches, advice and stream attachment: accepted for managed memory, whose pages stay shared where they
 * are (only speed could differ), refused for other memory as natively. */
static CUresult managed_hint(CUdeviceptr p, size_t count) {
    return p && vmc_managed_contains((const void *)(uintptr_t)p, count) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                                                   CUstream hStream) {
    (void)dstDevice, (void)hStream;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
                                                                        CUdevice dstDevice, CUstream hStream) {
    (void)dstDevice, (void)hStream;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                                                      unsigned int flags, CUstream hStream) {
    (void)location, (void)flags, (void)hStream;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                                                           CUmemLocation location, unsigned int flags,
                                                                           CUstream hStream) {
    (void)location, (void)flags, (void)hStream;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                                            CUdevice device) {
    (void)advice, (void)device;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                                               CUmemLocation location) {
    (void)advice, (void)location;
    return managed_hint(devPtr, count);
}

__attribute__((visibility("default"))) CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                                                       unsigned int flags) {
    (void)hStream, (void)flags;
    return managed_hint(dptr, length);
}

__attribute__((visibility("default"))) CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr,
                                                                            size_t length, unsigned int flags) {
    (void)hStream, (void)flags;
    return managed_hint(dptr, length);
}

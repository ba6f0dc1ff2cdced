/* Stream-ordered memory pools and graph memory, served through the driver front end (rt_driver.h): each runtime
 * function is its driver twin, whose structs and enums have the runtime's layout and numbers (checked below).
 * Allocations from a pool are recorded as device memory there, as cudaMallocAsync's are here, so that
 * cudaMemcpyDefault tells them from host memory; the worker counts them against the session's quota. Pools shared
 * between processes go as the driver front end shares them (drv_shareable.c: POSIX file descriptors only). */
#include <stddef.h>

#include "rt_driver.h"

#define SAME_LAYOUT(rt, drv) _Static_assert(sizeof(rt) == sizeof(drv), #rt " has " #drv "'s layout")
SAME_LAYOUT(struct cudaMemPoolProps, CUmemPoolProps);
SAME_LAYOUT(struct cudaMemAccessDesc, CUmemAccessDesc);
SAME_LAYOUT(struct cudaMemLocation, CUmemLocation);
_Static_assert(offsetof(struct cudaMemPoolProps, location) == offsetof(CUmemPoolProps, location) &&
                   offsetof(struct cudaMemPoolProps, maxSize) == offsetof(CUmemPoolProps, maxSize),
               "cudaMemPoolProps is CUmemPoolProps");
_Static_assert(cudaMemPoolAttrReservedMemHigh == (int)CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH &&
                   cudaMemPoolReuseAllowInternalDependencies == (int)CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES &&
                   cudaMemPoolAttrReleaseThreshold == (int)CU_MEMPOOL_ATTR_RELEASE_THRESHOLD &&
                   cudaMemPoolAttrUsedMemHigh == (int)CU_MEMPOOL_ATTR_USED_MEM_HIGH,
               "cudaMemPoolAttr numbers are CUmemPool_attribute's");
_Static_assert(cudaMemLocationTypeDevice == (int)CU_MEM_LOCATION_TYPE_DEVICE && cudaMemAllocationTypePinned == (int)CU_MEM_ALLOCATION_TYPE_PINNED &&
                   cudaMemAccessFlagsProtReadWrite == (int)CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
               "memory location, allocation and access numbers are the driver's");
SAME_LAYOUT(struct cudaMemPoolPtrExportData, CUmemPoolPtrExportData);
_Static_assert(cudaMemHandleTypePosixFileDescriptor == (int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
               "cudaMemAllocationHandleType numbers are CUmemAllocationHandleType's");
_Static_assert(cudaGraphMemAttrReservedMemHigh == (int)CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
               "cudaGraphMemAttributeType numbers are CUgraphMem_attribute's");

#define API __attribute__((visibility("default")))

static cudaError_t on_device(int device, CUdevice *dev) {
    cudaError_t st = vmc_rt_driver_ready(NULL);
    return st != cudaSuccess ? st : vmc_rt_device(device, dev);
}

API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceGetDefaultMemPool((CUmemoryPool *)memPool, dev)));
}

API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceGetMemPool((CUmemoryPool *)memPool, dev)));
}

API cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceSetMemPool(dev, (CUmemoryPool)memPool)));
}

API cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location, enum cudaMemAllocationType type) {
    VMC_RT_VIA_DRIVER(cuMemGetDefaultMemPool((CUmemoryPool *)memPool, (CUmemLocation *)location, (CUmemAllocationType)type));
}

API cudaError_t cudaMemGetMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location, enum cudaMemAllocationType type) {
    VMC_RT_VIA_DRIVER(cuMemGetMemPool((CUmemoryPool *)memPool, (CUmemLocation *)location, (CUmemAllocationType)type));
}

API cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, enum cudaMemAllocationType type, cudaMemPool_t memPool) {
    VMC_RT_VIA_DRIVER(cuMemSetMemPool((CUmemLocation *)location, (CUmemAllocationType)type, (CUmemoryPool)memPool));
}

API cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps) {
    VMC_RT_VIA_DRIVER(cuMemPoolCreate((CUmemoryPool *)memPool, (const CUmemPoolProps *)poolProps));
}

API cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
    VMC_RT_VIA_DRIVER(cuMemPoolDestroy((CUmemoryPool)memPool));
}

API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value) {
    VMC_RT_VIA_DRIVER(cuMemPoolSetAttribute((CUmemoryPool)memPool, (CUmemPool_attribute)attr, value));
}

API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value) {
    VMC_RT_VIA_DRIVER(cuMemPoolGetAttribute((CUmemoryPool)memPool, (CUmemPool_attribute)attr, value));
}

API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList, size_t count) {
    VMC_RT_VIA_DRIVER(cuMemPoolSetAccess((CUmemoryPool)memPool, (const CUmemAccessDesc *)descList, count));
}

API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t memPool, struct cudaMemLocation *location) {
    VMC_RT_VIA_DRIVER(cuMemPoolGetAccess((CUmemAccess_flags *)flags, (CUmemoryPool)memPool, (CUmemLocation *)location));
}

API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
    VMC_RT_VIA_DRIVER(cuMemPoolTrimTo((CUmemoryPool)memPool, minBytesToKeep));
}

API cudaError_t cudaMemPoolExportToShareableHandle(void *shareableHandle, cudaMemPool_t memPool,
                                                  enum cudaMemAllocationHandleType handleType, unsigned int flags) {
    VMC_RT_VIA_DRIVER(cuMemPoolExportToShareableHandle(shareableHandle, (CUmemoryPool)memPool,
                                                       (CUmemAllocationHandleType)handleType, flags));
}

API cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t *memPool, void *shareableHandle,
                                                    enum cudaMemAllocationHandleType handleType, unsigned int flags) {
    VMC_RT_VIA_DRIVER(cuMemPoolImportFromShareableHandle((CUmemoryPool *)memPool, shareableHandle,
                                                         (CUmemAllocationHandleType)handleType, flags));
}

API cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *exportData, void *ptr) {
    VMC_RT_VIA_DRIVER(cuMemPoolExportPointer((CUmemPoolPtrExportData *)exportData, (CUdeviceptr)(uintptr_t)ptr));
}

API cudaError_t cudaMemPoolImportPointer(void **ptr, cudaMemPool_t memPool, struct cudaMemPoolPtrExportData *exportData) {
    VMC_RT_VIA_DRIVER(cuMemPoolImportPointer((CUdeviceptr *)ptr, (CUmemoryPool)memPool, (CUmemPoolPtrExportData *)exportData));
}

/* The context check only for a default stream: a created stream's context exists, and this is the one function of
 * the file a program calls in its loops. */
API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
    int default_stream = !stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    cudaError_t st = default_stream ? vmc_rt_driver_ready(NULL) : vmc_rt_init_driver();
    if (st != cudaSuccess)
        return vmc_rt_error(st);
    return vmc_rt_status(cuMemAllocFromPoolAsync((CUdeviceptr *)ptr, size, (CUmemoryPool)memPool, stream));
}

extern cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream) {
    return vmc_rt_error(cudaMallocFromPoolAsync(ptr, size, memPool, vmc_rt_ptsz_stream(stream)));
}

/* ---- memory of graphs' allocation nodes ---- */

API cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceGetGraphMemAttribute(dev, (CUgraphMem_attribute)attr, value)));
}

API cudaError_t cudaDeviceSetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceSetGraphMemAttribute(dev, (CUgraphMem_attribute)attr, value)));
}

API cudaError_t cudaDeviceGraphMemTrim(int device) {
    CUdevice dev;
    cudaError_t st = on_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceGraphMemTrim(dev)));
}

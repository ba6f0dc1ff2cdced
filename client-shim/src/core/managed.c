#include "managed.h"

#include "hostmap.h"
#include "shim_ranges.h"
#include "shim_shm.h"
#include "shim_unsupported.h"

static struct vmc_range_set managed = VMC_RANGE_SET_INIT;

cudaError_t vmc_managed_alloc(void **p, size_t size, unsigned flags, int device) {
    if (!p)
        return cudaErrorInvalidValue;
    *p = NULL;
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return cudaErrorInvalidValue;
    if (size == 0)
        return cudaSuccess; /* as natively (H100, driver 580): success and no memory */
    if (!vmc_shm_colocated()) {
        static int told;
        vmc_not_supported_because("managed memory (cudaMallocManaged, cuMemAllocManaged)",
                                  "the appliance's GPU reaches this process's memory only on the co-located path; "
                                  "use device memory and explicit copies", &told);
        return cudaErrorNotSupported;
    }
    void *base;
    cudaError_t st = vmc_hostmap_map(&base, size);
    if (st != cudaSuccess)
        return st;
    /* kernels get this very pointer: the GPU must reach the pages at it */
    uint64_t gpu_address = 0;
    if (!vmc_hostmap_device_pointer(base, &gpu_address) || gpu_address != (uint64_t)(uintptr_t)base ||
        vmc_ranges_add(&managed, base, size, (unsigned)device) != 0) {
        vmc_hostmap_release(base, size);
        return cudaErrorMemoryAllocation;
    }
    *p = base;
    return cudaSuccess;
}

int vmc_managed_contains(const void *p, size_t count) {
    struct vmc_range r;
    if (!vmc_ranges_find(&managed, p, &r))
        return 0;
    return count <= r.size - ((uintptr_t)p - r.base);
}

int vmc_managed_find(const void *p, void **base, size_t *size, int *device) {
    struct vmc_range r;
    if (!vmc_ranges_find(&managed, p, &r))
        return 0;
    *base = (void *)r.base;
    *size = r.size;
    *device = (int)r.tag;
    return 1;
}

int vmc_managed_free(void *p) {
    struct vmc_range r;
    /* removing is what decides: of two threads freeing one pointer, one frees it and the other is told no */
    if (!p || !vmc_ranges_find(&managed, p, &r) || r.base != (uintptr_t)p || vmc_ranges_remove(&managed, p) != 0)
        return 0;
    vmc_hostmap_release(p, r.size);
    return 1;
}

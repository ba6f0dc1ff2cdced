/* Managed memory (cudaMallocManaged, cuMemAllocManaged) on the co-located path: mapped host memory
 * (hostmap.h) that the worker has registered with the GPU at this process's own address, so that the one
 * pointer works on the host and in kernels, as managed memory does natively. Its pages do not migrate: a
 * kernel reaches them over the bus (the speed of a mapped access), and prefetches and advice are accepted
 * and have no effect, which changes speed only, never results. Between machines the GPU cannot reach this
 * process's memory at all: the allocation is refused with one line saying why. */
#ifndef VMC_MANAGED_H
#define VMC_MANAGED_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* cudaMallocManaged's checks and allocation (flags: cudaMemAttachGlobal or cudaMemAttachHost) for the
 * program's current device `device` (what the pointer's attributes name). The status is a cudaError_t whose
 * numbers the driver's CUresult shares for these errors. */
cudaError_t vmc_managed_alloc(void **p, size_t size, unsigned flags, int device);
/* 1 when [p, p + count) lies in one managed allocation (count 0: p in one). */
int vmc_managed_contains(const void *p, size_t count);
/* 1 and the allocation's start, size and device when p lies in a managed allocation, else 0. */
int vmc_managed_find(const void *p, void **base, size_t *size, int *device);
/* 1 when p was the start of a managed allocation, now freed; 0 when it is not one (the caller goes on). */
int vmc_managed_free(void *p);

#endif

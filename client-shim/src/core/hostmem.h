/* Page-locked host memory lives in the client process: allocations (cudaMallocHost, cuMemAllocHost,
 * cuMemHostAlloc...) and registrations (cudaHostRegister, cuMemHostRegister), recorded here so that both
 * front ends answer flags, pointer attributes and double registrations as natively. Status codes are
 * the numbers both the runtime's and the driver's enums use for these errors. */
#ifndef VMC_HOSTMEM_H
#define VMC_HOSTMEM_H

#include <stddef.h>
#include <cuda_runtime_api.h>

/* Page-aligned memory of this process, page-locked where RLIMIT_MEMLOCK allows; `flags` are recorded. */
cudaError_t vmc_host_alloc(void **p, size_t size, unsigned flags);
/* Records memory allocated elsewhere (hostmap.c) as a page-locked allocation with `flags`. */
cudaError_t vmc_host_adopt(void *p, size_t size, unsigned flags);
/* Frees an allocation by its start address: cudaErrorInvalidValue if p is none. */
cudaError_t vmc_host_free(void *p);
/* 1 with the allocation containing p (its start, size and flags), else 0. */
int vmc_host_alloc_find(const void *p, void **base, size_t *size, unsigned *flags);

/* Records [p, p + size) as registered: cudaErrorHostMemoryAlreadyRegistered if it overlaps a registration. */
cudaError_t vmc_host_register(void *p, size_t size, unsigned flags);
/* cudaErrorHostMemoryNotRegistered unless p starts a registration. */
cudaError_t vmc_host_unregister(void *p);
/* The flags the registration containing p was made with: 1, or 0 if p is in none. */
int vmc_registered_flags(const void *p, unsigned int *flags);

#endif

/* Mapped host memory on the co-located path (PROTOCOL.md "Mapped host memory"): page-locked memory of
 * this process that the appliance's GPU reads and writes directly. It lives in a file in /dev/shm that
 * this process and its worker both map; the worker registers its mapping with the GPU (at the same
 * address when it can, so that the host pointer is also the device pointer, as with unified addressing
 * natively). Between machines there is no such memory, and callers refuse it. */
#ifndef VMC_HOSTMAP_H
#define VMC_HOSTMAP_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* Allocates it (also recorded as a page-locked allocation with `flags`, see hostmem.h). */
cudaError_t vmc_hostmap_alloc(void **p, size_t size, unsigned flags);
/* Allocates it without that record (managed memory, managed.h); vmc_hostmap_release frees it. */
cudaError_t vmc_hostmap_map(void **p, size_t size);
/* Makes the program's own pages [p, p + size) (whole pages) memory shared with the worker, in place and
 * with their contents, and registered with the GPU there (cuMemHostRegister / cudaHostRegister asking for
 * mapped memory). The caller records the registration (hostmem.h) first. */
cudaError_t vmc_hostmap_register(void *p, size_t size);
/* Undoes that for the registration starting at p (the pages become private again, contents kept): 1, or 0
 * when p was not registered so. */
int vmc_hostmap_unregister(void *p);
/* 1 and the GPU's address of host address p when p is in mapped memory, else 0. */
int vmc_hostmap_device_pointer(const void *p, uint64_t *device);
/* 1 when [p, p + n) lies in one mapping: copies between it and the device are done by the GPU straight from
 * the shared pages (vmc_hostmap_copy), with no byte crossing the connection. */
int vmc_hostmap_contains(const void *p, size_t n);
/* A copy between device memory and mapped memory, done by the worker (mode: COPY_* bits; to_device: the
 * direction). Asynchronous copies return at once and run in stream order, as from page-locked memory
 * natively. */
cudaError_t vmc_hostmap_copy(uint64_t device, const void *host, size_t count, uint64_t stream, unsigned mode, int to_device);
/* For hostmem.c's free: 1 when [p, p + size) was mapped memory, now released on both sides; else 0. */
int vmc_hostmap_release(void *p, size_t size);

#endif

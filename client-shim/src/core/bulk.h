/* Bulk copies between this process's memory and device memory on the appliance, for both front ends:
 * the shared-memory ring when co-located, else the calling thread's connection (large synchronous copies
 * striped over several). Also the one view of device memory this process has (allocations made through
 * either front end), which tells device addresses from host addresses for unified copies. */
#ifndef VMC_BULK_H
#define VMC_BULK_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "vmc_wire.h" /* COPY_ASYNC, COPY_PER_THREAD, COPY_DRIVER: the `mode` byte */

/* ---- device memory ---- */
void vmc_device_range_add(uint64_t base, size_t size);
void vmc_device_range_remove(uint64_t base);
/* 1 when p lies in a known device allocation (its start and size in *base, *size when not NULL). */
int vmc_device_range_find(uint64_t p, uint64_t *base, size_t *size);

/* ---- copies: `symbol` is a registered variable's index (then `device` is an offset in it) or
 * VMC_NO_INDEX for a plain device address. Statuses are the worker's (a cudaError_t, or a CUresult in
 * COPY_DRIVER mode) or the session's own errors, whose numbers both enums share. */
cudaError_t vmc_copy_to_device(uint32_t symbol, uint64_t device, const void *src, size_t count, uint64_t stream,
                               unsigned mode);
cudaError_t vmc_copy_to_host(void *dst, uint32_t symbol, uint64_t device, size_t count, uint64_t stream, unsigned mode);

/* Says once that a copy with this process's memory was refused by a stream capture, and why. */
void vmc_capture_refused_note(void);

#endif

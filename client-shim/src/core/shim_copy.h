/* Copies between the application's memory and the shared-memory ring. One core's memcpy (about
 * 8-10 GB/s) is below what the GPU's DMA and a native pageable copy reach, so large copies are split
 * across a few threads. */
#ifndef SHIM_COPY_H
#define SHIM_COPY_H

#include <stddef.h>

void vmc_copy(void *dst, const void *src, size_t n);

#endif

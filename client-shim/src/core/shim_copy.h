/* Copies between the application's memory and the shared-memory ring. One core's memcpy (about
 * 8-10 GB/s) is below what the GPU's DMA and a native pageable copy reach, so large copies are split
 * across a few threads. */
#ifndef SHIM_COPY_H
#define SHIM_COPY_H

#include <stddef.h>

void vmc_copy(void *dst, const void *src, size_t n);
/* The same into memory that the GPU's DMA reads next and this process does not read again (a ring slot for a
 * copy to the device), `n` bytes of a copy of `whole`: up to VMC_COPY_FOR_DMA_STREAMING_MAX with stores that
 * bypass the CPU's caches. A plain memcpy leaves the slot's lines dirty in this core's cache, and the DMA then
 * reads each of them out of the cache, not from memory: on the H200 hosts a 256 KiB copy and its DMA took 34 us
 * with memcpy, 31 us with streaming stores, which copy more slowly alone (17 us against 9) but leave the DMA at
 * its speed from memory (14 us). A larger copy's source is not in the cache either, and there streaming stores
 * lost: 256 MiB copies to the device took 14.7 ms with them, 12.2 without (tests/bench/results/
 * h200-run174-180-ring-fill: pieces.txt, ab-ring-fill.txt). */
void vmc_copy_for_dma(void *dst, const void *src, size_t n, size_t whole);
/* The streaming stores of vmc_copy_for_dma for many small pieces (rows of a 2-D copy), in this thread alone: each
 * piece unfenced, then one fence before the slot is handed over. */
void vmc_copy_for_dma_unfenced(void *dst, const void *src, size_t n);
void vmc_copy_for_dma_fence(void);
/* Measured better up to 16 MiB (603 against 779 us) and, on another host, at 64 MiB (39.5 GB/s against 27.7 the
 * run before); worse from 256 MiB. */
#define VMC_COPY_FOR_DMA_STREAMING_MAX (64u << 20)

#endif

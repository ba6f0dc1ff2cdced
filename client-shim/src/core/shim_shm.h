/* The co-located fast path: bulk copies through a shared-memory ring the worker's GPU DMA reads and
 * writes directly (PROTOCOL.md "Co-located fast path"). */
#ifndef SHIM_SHM_H
#define SHIM_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* Copies smaller than this go through the socket: one write beats a token exchange. */
#define VMC_SHM_MIN_BYTES (256u << 10)

struct vmc_conn;

/* 1 if this copy should take the ring (attaching it on first use), 0 if the socket must carry it. */
int vmc_shm_ready(size_t count);
/* Same arguments and semantics as the socket paths in shim_memory.c (synchronous copies only). */
cudaError_t vmc_shm_host_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, cudaStream_t stream,
                                   unsigned mode);
cudaError_t vmc_shm_device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                   unsigned mode);

/* The connection has been closed: its ring's mapping goes. A lane of the shared region is given back by
 * the worker, which sees the end of the connection once it has stopped using and registering the lane
 * (a lane freed here first could be claimed again while that worker still holds it); lanes still held
 * when the process exits are given back then, as a fallback. */
void vmc_shm_forget(struct vmc_conn *conn);

#endif

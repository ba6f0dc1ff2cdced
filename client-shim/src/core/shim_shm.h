/* The co-located fast path: bulk copies through a shared-memory ring the worker's GPU DMA reads and
 * writes directly (PROTOCOL.md "Co-located fast path"; the ring's block protocol is ring_copy.c's), and
 * the files this process shares with its worker. */
#ifndef SHIM_SHM_H
#define SHIM_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* Copies smaller than this go through the socket: one write beats a token exchange. */
#define VMC_SHM_MIN_BYTES (256u << 10)
/* With calls through shared memory (shim_pipe.h) a token exchange costs about a microsecond, and the ring
 * wins from much smaller sizes. Measured on the H100 (GPU runs 38-39, 2026-11-23), ratios to native: from
 * the device, 4 / 16 / 64 KiB 0.79 / 0.84 / 1.05 through the ring against 0.57 / 0.38 / 0.65 through the
 * pipe's byte stream; to the device, 4 / 16 / 64 KiB 0.62 / 0.58 / 1.32 through the ring against 0.56 /
 * 0.41 / 0.70 through the byte stream and the worker's synchronous copy from pageable memory. */
#define VMC_RING_MIN_PIPED (4u << 10)

struct vmc_ring;

/* The configuration lets this process share memory with the appliance: transport shm, a shared region, or
 * auto with an appliance on this host. */
int vmc_shm_may_share(void);
/* A shared-memory ring for the calling thread's connection (transport.h): a lane of the configured shared
 * region, else a new /dev/shm file the worker maps; NULL when the worker cannot attach one. */
struct vmc_ring *vmc_shm_attach(void);

/* 1 when this process and the appliance are on one OS instance and may share memory through files in
 * /dev/shm (transport shm, or auto with a local appliance; not a shared region between two VMs). */
int vmc_shm_colocated(void);
/* Co-located and set to share all page-locked memory with the worker (`pinned_in_region`, on by default).
 * Mapped memory (DEVICEMAP / cudaHostAllocMapped) is shared whenever co-located. */
int vmc_shm_pinned_in_region(void);
/* A new file of `size` bytes for this session's worker to open (its path, under this process's private
 * /dev/shm directory, in `path`), mapped shared here, its pages taken at once when `reserve`: the mapping,
 * or NULL. The caller unlinks the path once the worker has opened it. */
void *vmc_shm_new_file(size_t size, int reserve, char *path, size_t path_len);
/* The same, mapped at `hint` when that range is free in this process (else anywhere). */
void *vmc_shm_new_file_at(void *hint, size_t size, int reserve, char *path, size_t path_len);

#endif

/* The co-located fast path: bulk copies through a shared-memory ring the worker's GPU DMA reads and
 * writes directly (PROTOCOL.md "Co-located fast path"; the ring's block protocol is ring_copy.c's), and
 * the files this process shares with its worker. */
#ifndef SHIM_SHM_H
#define SHIM_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "vmc_wire.h"

/* Copies smaller than this go through the socket: one write beats a token exchange. */
#define VMC_SHM_MIN_BYTES (256u << 10)
/* With calls through shared memory (shim_pipe.h) a token exchange costs about a microsecond, and the ring wins
 * from far smaller sizes than on the socket, but not from the smallest. Means of 1000 synchronous pageable
 * copies on H200s (tests/bench/results/h200-run96-102-small-copies), inline through the pipe / through the
 * ring, native in brackets, us. To the device (run 96) 4 KiB 6.5 / 11.1 (6.7), 16 KiB 8.6 / 14.9 (8.1), 32 KiB
 * 12.3 / 13.9 (10.1), 64 KiB 22.9 / 16.7 (15.4): the worker copies an inline upload up to
 * VMC_PAGEABLE_UPLOAD_MAX from pageable memory, which returns once staged, where a copy from the ring's pinned
 * slot waits for the DMA (and beyond that limit so does an inline one). From the device (run 101, after the
 * ring lost a round trip there) 2 KiB 11.0 / 11.5 (9.2), 4 KiB 11.4 / 11.6 (9.4), 8 KiB 13.0 / 11.3 (9.8),
 * 16 KiB 14.4 / 11.7 (10.8). Copies up to these sizes go inline. */
#define VMC_PIPED_INLINE_TO_DEVICE_MAX VMC_PAGEABLE_UPLOAD_MAX
#define VMC_PIPED_INLINE_TO_HOST_MAX (4u << 10)

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
 * /dev/shm directory, in `path`), mapped shared here, its pages taken and mapped at once when `reserve`: the
 * mapping, or NULL. The caller unlinks the path once the worker has opened it. */
void *vmc_shm_new_file(size_t size, int reserve, char *path, size_t path_len);
/* The same, mapped at `hint` when that range is free in this process (else anywhere). */
void *vmc_shm_new_file_at(void *hint, size_t size, int reserve, char *path, size_t path_len);

#endif

/* The appliance session: configuration, the per-thread connections, and the error state
 * a process is in when no session can be had. */
#ifndef SHIM_SESSION_H
#define SHIM_SESSION_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"

/* One TCP connection to the worker, owned by one client thread. */
struct vmc_conn {
    int fd;
    int broken;
    struct vmc_out out;   /* the CALL frame being built */
    uint8_t *payload;     /* last received payload */
    size_t payload_cap;
};

/* The calling thread's connection, opening the session (first thread) or joining it (others).
 * Returns NULL and sets *err to the error the CUDA call must return when there is none. */
struct vmc_conn *vmc_thread_conn(cudaError_t *err);

/* The connection broke mid-call: print one line, and make every later call fail as CUDA does
 * when its device is lost. Returns that error. */
cudaError_t vmc_session_lost(struct vmc_conn *c, const char *why);

/* Configured block size for bulk transfers (VMCUDA_BLOCK_SIZE / client.conf block_size). */
size_t vmc_block_size(void);

/* Reads one frame into c->payload, writing OUTPUT frames to the process's stdout/stderr on the way.
 * Returns 0 with *h filled for a REPLY (or other non-OUTPUT frame), -1 if the connection broke. */
int vmc_conn_read_frame(struct vmc_conn *c, struct vmc_frame_header *h);

#endif

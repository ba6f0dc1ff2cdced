/* The appliance session: configuration, the per-thread connections, and the error state
 * a process is in when no session can be had. */
#ifndef SHIM_SESSION_H
#define SHIM_SESSION_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"
#include "vmc_pipe.h"

/* One TCP connection to the worker, owned by one client thread. */
struct vmc_conn {
    int fd;
    int broken;
    struct vmc_out out;   /* the CALL frame being built */
    uint8_t *payload;     /* last received payload */
    size_t payload_cap;
    struct vmc_reader in; /* buffered input: a header and its payload usually arrive in one read */
    /* The ring large copies take (transport.h: shared memory or UCX). */
    int ring_state;       /* 0 = not tried, 1 = attached, -1 = none: the byte stream carries every copy */
    struct vmc_ring *ring;
    /* Calls through shared memory when co-located (shim_pipe.c): the byte stream of this connection. */
    int pipe_state;       /* 0 = not tried, 1 = up, -1 = the socket carries it */
    int at_frame_start;   /* reading a frame's header: where the worker may hand the stream back to the socket */
    long copy_poll_ns;    /* while a synchronous copy waits on the pipe: how long to poll (vmc_conn_expect_copy) */
    struct vmc_conn *next_open; /* the process's list of open connections (shim_session.c) */
    struct vmc_pipe pipe;
    /* With TLS: the key of this connection's link to its worker, from HELLO_REPLY READY (PROTOCOL.md "Encryption") */
    int link_keyed;
    uint8_t link_key[VMC_LINK_KEY_BYTES];
    /* A call whose completion came from the pipe's completion word (shim_call.c): its REPLY, still in the pipe, is
     * read before anything else from the connection. 0: none. */
    uint32_t owed_reply_id;
};

/* The calling thread's connection, opening the session (first thread) or joining it (others).
 * Returns NULL and sets *err to the error the CUDA call must return when there is none. */
struct vmc_conn *vmc_thread_conn(cudaError_t *err);

/* 1 when the calling thread has a working connection of its own (vmc_thread_conn would not open one). */
int vmc_thread_has_conn(void);
/* 1 when it has one whose calls go through a pipe (shim_pipe.h). */
int vmc_thread_piped(void);

/* The connection broke mid-call: print one line, and make every later call fail as CUDA does
 * when its device is lost. Returns that error. */
cudaError_t vmc_session_lost(struct vmc_conn *c, const char *why);

/* 1 when this process's session runs its own executable on the appliance (it registered kernels or
 * variables through the runtime front end), 0 when it gets a plain worker. */
int vmc_session_ships_binary(void);

/* The appliance's view for this client's tenant (`vmcuda smi`: its GPUs with their load and health, and the
 * tenant's own sessions), asked on a connection of its own with the client's token (an INFO HELLO): 0 with
 * the text in out, or -1 with the reason there. Opens no session. */
int vmc_appliance_view(char *out, size_t out_len);

/* The number of GPUs the appliance bound to this process's session (0 before it has one). */
uint32_t vmc_session_gpu_count(void);
/* Configured block size for bulk transfers (VMCUDA_BLOCK_SIZE / client.conf block_size). */
size_t vmc_block_size(void);

/* A TCP connection to HOST:PORT ([v6]:PORT too), with TCP_NODELAY and deep buffers. The descriptor, or -1
 * with the reason in why. */
int vmc_tcp_connect(const char *host_port, char *why, size_t why_len);

/* Reads exactly n bytes from the connection (buffered input first). 0, or -1 on EOF/error.
 * Every read from the connection goes through this. */
int vmc_conn_read(struct vmc_conn *c, void *dst, size_t n);
/* A synchronous copy of about `bytes` is under way on this connection (0: it is over): until then a read from its
 * pipe polls for as long as the GPU takes to move that much before it sleeps, as a native program's copy waits
 * for the DMA spinning, rather than paying a futex wake-up on every answer that comes after the usual window
 * (VMCUDA_POLL_US). */
void vmc_conn_expect_copy(struct vmc_conn *c, size_t bytes);
/* How long a read from the connection's pipe polls before it sleeps (as set by vmc_conn_expect_copy). */
long vmc_conn_poll_ns(const struct vmc_conn *c);
/* Writes n bytes to the connection: its pipe when it has one, else its socket. 0, or -1 when broken. */
int vmc_conn_write(struct vmc_conn *c, const void *src, size_t n);

/* Reads one frame into c->payload, writing OUTPUT frames to the process's stdout/stderr on the way.
 * Returns 0 with *h filled for a REPLY (or other non-OUTPUT frame), -1 if the connection broke. */
int vmc_conn_read_frame(struct vmc_conn *c, struct vmc_frame_header *h);

#endif

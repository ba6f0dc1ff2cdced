/* How a connection's bulk copies travel: the transport interface of the client core.
 *
 * Every connection has a byte stream to its worker (a TCP socket, or the pipe in shared memory when
 * co-located: shim_pipe.h), which carries calls, replies and small copies. Large copies may instead go
 * through a ring: a few slots of page-locked memory on the appliance, which the worker's GPU DMA reads
 * and writes directly, handed back and forth with 4-byte tokens on the byte stream (ring_copy.c,
 * PROTOCOL.md "Co-located fast path"). What differs between transports is only how the client moves
 * bytes into and out of a slot:
 *   - shared memory (shim_shm.c): the slots are mapped in this process too (a /dev/shm file of its own, or
 *     a lane of a shared region such as an ivshmem BAR); a slot is filled and drained with memcpy;
 *   - UCX (transport_ucx.c): the slots live in the appliance and are registered with UCX there; a slot is
 *     filled with a UCX put and drained with a UCX get (RDMA where the NIC has it: no CPU copies).
 * Which ring a connection gets, if any, is chosen once, at its first copy large enough to want one
 * (transport.c); connections without one use the byte stream, striped over several connections for large
 * synchronous copies (shim_stripe.h). bulk.c routes every copy. */
#ifndef VMC_TRANSPORT_H
#define VMC_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "shim_stripe.h"

struct vmc_conn;
struct vmc_ring;

struct vmc_ring_ops {
    const char *name; /* for messages: "shared memory", "UCX" */
    /* 1 when a copy to the device that fits one slot goes in pieces (vmc_ring_upload_block): where filling a slot
     * is a local copy, not a network round trip */
    int upload_in_pieces;
    /* Moves n bytes into / out of slot `slot` (0 .. slots-1); a fill's n are part of a copy of `whole` bytes (how
     * best to fill may depend on it: shim_copy.h). The bytes of a fill must be visible to the worker when it
     * returns. 0, or -1 with one line in ring->why. */
    int (*fill)(struct vmc_ring *ring, uint32_t slot, const void *src, size_t n, size_t whole);
    int (*drain)(struct vmc_ring *ring, uint32_t slot, void *dst, size_t n);
    /* Slot `slot` as memory of this process, to fill or drain in place (a scattered copy packs straight into
     * it), or NULL when the slots are not mapped here. */
    uint8_t *(*slot_memory)(struct vmc_ring *ring, uint32_t slot);
    /* The connection is closed: frees the ring. In a child forked after the session began (`forked`), only
     * this process's own memory is let go: what the transport shares with the parent (UCX's sockets, queue pairs
     * and registrations) must not be touched, or the parent's copies break. */
    void (*close)(struct vmc_ring *ring, int forked);
};

/* The first member of each transport's own ring structure. */
struct vmc_ring {
    const struct vmc_ring_ops *ops;
    size_t slot_size;
    uint32_t slots;
    size_t min_bytes; /* copies smaller than this take the byte stream */
    /* when copies are striped over several connections, each with its own ring (min 0: never, the ring alone is
     * faster) */
    struct vmc_stripe_policy stripe;
    char why[160];
};

/* The calling thread's connection's ring for a synchronous copy of `count` bytes to the device or from it
 * (attaching one the first time a copy is large enough), or NULL: the byte stream carries it. */
struct vmc_ring *vmc_ring_for(size_t count, int to_device);

/* Copies through the calling thread's connection's ring; same arguments and statuses as the byte-stream
 * copies in bulk.c (synchronous copies only). */
cudaError_t vmc_ring_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, cudaStream_t stream,
                               unsigned mode);
cudaError_t vmc_ring_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream, unsigned mode);

/* The block protocol for any copy cut into blocks (ring_copy.c; box.c's chunks too): after the copy's CALL was
 * sent on the calling thread's connection, `move` fills (upload) or drains (download) block k in slot `slot`
 * with the ring's transport, for k = 0, 1, ... in order; 0, or -1 when the transport failed (ring->why says
 * why). Upload returns the REPLY's status; download waits for the first REPLY (the copy's own status: no block
 * comes after an error), then the blocks, then the trailing REPLY. A broken stream ends the connection. */
struct vmc_call;
typedef int (*vmc_ring_mover)(void *ctx, struct vmc_ring *ring, uint32_t k, uint32_t slot);
cudaError_t vmc_ring_upload(struct vmc_call *c, uint32_t blocks, vmc_ring_mover fill, void *ctx);
cudaError_t vmc_ring_download(struct vmc_call *c, uint32_t blocks, vmc_ring_mover drain, void *ctx);

/* The connection is closed (`forked`: in a child forked after the session began): its ring goes. */
void vmc_ring_forget(struct vmc_conn *conn, int forked);

#endif

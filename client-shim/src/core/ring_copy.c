/* Copies through a connection's ring (transport.h): the block protocol both transports share (PROTOCOL.md
 * "Co-located fast path"). A copy is cut into slot-sized blocks; block k uses slot k % slots; a 4-byte
 * token with the block's number says on the byte stream that a slot was filled (or drained) and may be
 * used by the other side. */
#include "transport.h"

#include <stdio.h>

#include "bulk.h"
#include "shim_call.h"
#include "shim_session.h"
#include "vmc_api.h"
#include "vmc_internal.h"

static int vmc_ring_give(struct vmc_conn *conn, uint32_t k) {
    uint8_t b[VMC_TOKEN_BYTES];
    vmc_token_encode(b, k);
    return vmc_conn_write(conn, b, sizeof b);
}

/* Reads the token for block `expect`; anything else means the two sides disagree about the stream. */
static int vmc_ring_take(struct vmc_conn *conn, uint32_t expect) {
    uint8_t b[VMC_TOKEN_BYTES];
    return vmc_conn_read(conn, b, sizeof b) == 0 && vmc_token_decode(b) == expect ? 0 : -1;
}

/* Over a socket every slot is handed back, as in protocol 4: a worker learns that its client died while draining
 * the last blocks of a download only from the missing tokens (the client's reader may already hold the trailing
 * REPLY, so its death is a clean close). Through the call pipe the worker sees that from the pipe itself. */
static int gives_back_every_slot(const struct vmc_conn *conn) { return conn->pipe_state != 1; }

static cudaError_t begin(struct vmc_call *c, uint32_t id, uint32_t symbol, uint64_t addr, size_t count, cudaStream_t stream,
                         unsigned mode) {
    cudaError_t st = vmc_call_begin_ex(c, id, 0, !(mode & COPY_DRIVER));
    if (st != cudaSuccess)
        return st;
    vmc_put_copy_args(vmc_call_args(c), &(struct vmc_copy_args){
        .symbol = symbol, .address = addr, .count = count, .stream = (uint64_t)(uintptr_t)stream, .mode = (uint8_t)mode});
    return vmc_call_send(c);
}

static cudaError_t vmc_ring_failed(struct vmc_conn *conn) {
    char why[200];
    snprintf(why, sizeof why, "%s: %s", conn->ring->ops->name, conn->ring->why);
    /* the ring goes now: a transfer the transport still has in flight into the application's buffer is cancelled
     * with it (UCX's end point is closed by force) */
    vmc_ring_forget(conn, 0);
    return vmc_session_lost(conn, why);
}

static cudaError_t upload(struct vmc_call *c, uint32_t blocks, vmc_ring_mover fill, void *ctx) {
    struct vmc_conn *conn = c->conn;
    struct vmc_ring *ring = conn->ring;
    uint32_t freed = 0;
    for (uint32_t k = 0; k < blocks; k++) {
        if (k >= ring->slots && vmc_ring_take(conn, freed++) != 0)
            return vmc_session_lost(conn, "ring out of step");
        if (fill(ctx, ring, k, k % ring->slots) != 0)
            return vmc_ring_failed(conn);
        if (vmc_ring_give(conn, k) != 0)
            return vmc_session_lost(conn, "cannot send to the worker");
    }
    /* through the call pipe the worker hands back only the slots this copy fills again (the others are free once
     * it has replied); over a socket every one (gives_back_every_slot) */
    while (gives_back_every_slot(conn) && freed < blocks)
        if (vmc_ring_take(conn, freed++) != 0)
            return vmc_session_lost(conn, "ring out of step");
    return vmc_call_await(c);
}

static cudaError_t download(struct vmc_call *c, uint32_t blocks, vmc_ring_mover drain, void *ctx) {
    cudaError_t st = vmc_call_await(c); /* the first block's status: the copy's own */
    if (!c->replied || st != cudaSuccess)
        return st;
    struct vmc_conn *conn = c->conn;
    struct vmc_ring *ring = conn->ring;
    for (uint32_t k = 0; k < blocks; k++) {
        if (vmc_ring_take(conn, k) != 0)
            return vmc_session_lost(conn, "ring out of step");
        if (drain(ctx, ring, k, k % ring->slots) != 0)
            return vmc_ring_failed(conn);
        /* through the call pipe a slot goes back only when the worker fills it again in this copy: it sends the
         * trailing REPLY without waiting for the others, which are free once this call returns (the connection's
         * next copy comes after); over a socket every one */
        if ((k + ring->slots < blocks || gives_back_every_slot(conn)) && vmc_ring_give(conn, k) != 0)
            return vmc_session_lost(conn, "cannot send to the worker");
    }
    return vmc_call_await(c);
}

typedef cudaError_t (*block_protocol)(struct vmc_call *c, uint32_t blocks, vmc_ring_mover move, void *ctx);

/* Runs one side of the block protocol; each wait for a token or an answer meanwhile is about one block's worth of
 * the GPU's work (vmc_conn_expect_copy). */
static cudaError_t expecting_blocks(block_protocol run, struct vmc_call *c, uint32_t blocks, vmc_ring_mover move, void *ctx) {
    struct vmc_conn *conn = c->conn;
    vmc_conn_expect_copy(conn, conn->ring->slot_size);
    cudaError_t st = run(c, blocks, move, ctx);
    vmc_conn_expect_copy(conn, 0);
    return st;
}

cudaError_t vmc_ring_upload(struct vmc_call *c, uint32_t blocks, vmc_ring_mover fill, void *ctx) {
    return expecting_blocks(upload, c, blocks, fill, ctx);
}

cudaError_t vmc_ring_download(struct vmc_call *c, uint32_t blocks, vmc_ring_mover drain, void *ctx) {
    return expecting_blocks(download, c, blocks, drain, ctx);
}

/* A 1-D copy: block k is bytes [k * block, ...) of the application's buffer. */
struct linear {
    uint8_t *host;
    size_t count;
    size_t block; /* the slot size, or less for a copy to the device that fits one slot (vmc_ring_upload_block) */
};

static size_t block_bytes(const struct linear *l, uint32_t k) {
    size_t at = (size_t)k * l->block;
    return l->count - at < l->block ? l->count - at : l->block;
}

static int fill_linear(void *ctx, struct vmc_ring *ring, uint32_t k, uint32_t slot) {
    struct linear *l = ctx;
    return ring->ops->fill(ring, slot, l->host + (size_t)k * l->block, block_bytes(l, k), l->count);
}

static int drain_linear(void *ctx, struct vmc_ring *ring, uint32_t k, uint32_t slot) {
    struct linear *l = ctx;
    return ring->ops->drain(ring, slot, l->host + (size_t)k * l->block, block_bytes(l, k));
}

static uint32_t blocks_of(const struct linear *l) { return (uint32_t)((l->count + l->block - 1) / l->block); }

cudaError_t vmc_ring_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, cudaStream_t stream,
                               unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin(&c, VMC_API_vmc_MemcpyHostToDeviceShm, symbol, dst, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    struct vmc_ring *ring = c.conn->ring;
    struct linear l = {(uint8_t *)(uintptr_t)src, count,
                       vmc_ring_upload_block(count, ring->slot_size, ring->slots, ring->ops->upload_in_pieces)};
    return vmc_ring_upload(&c, blocks_of(&l), fill_linear, &l);
}

cudaError_t vmc_ring_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream, unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin(&c, VMC_API_vmc_MemcpyDeviceToHostShm, symbol, src, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    struct linear l = {dst, count, c.conn->ring->slot_size};
    return vmc_ring_download(&c, blocks_of(&l), drain_linear, &l);
}

/* Socket I/O and (de)serialisation shared by the client shim and the worker library. */
#ifndef VMC_IO_H
#define VMC_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "vmc_wire.h"

/* A secure channel over a connection's socket (TLS: vmc_tls.c). While one is attached to a descriptor, every
 * read and write of this file on that descriptor passes through it. Attach before the connection is shared
 * with other threads; vmc_io_close() (or vmc_io_detach()) before the descriptor is closed, or a later socket
 * reusing its number would be read through a stale channel. */
struct vmc_channel {
    ssize_t (*read)(struct vmc_channel *ch, void *p, size_t cap);          /* like read(2): >0, 0 at the end, -1 */
    int (*write_all)(struct vmc_channel *ch, const void *p, size_t n);     /* 0, or -1 with errno */
    void (*forget)(struct vmc_channel *ch); /* frees it and sends nothing: the socket may belong to someone else now */
};
/* 0, or -1 (descriptor out of range, out of memory). */
int vmc_io_attach(int fd, struct vmc_channel *ch);
/* Forgets fd's channel, if any (ch->forget); the socket stays open. */
void vmc_io_detach(int fd);
/* Drops fd's channel without freeing it (a forked child: the channel's state may be locked by a thread that
 * the child does not have). */
void vmc_io_abandon(int fd);
/* The descriptor's channel, or NULL for a plain socket. */
struct vmc_channel *vmc_io_channel(int fd);
/* vmc_io_detach, then close(2). */
int vmc_io_close(int fd);
/* A plain socket read: polls for up to vmc_poll_ns() when nothing has arrived yet, then blocks (the
 * secure channels read their records through it). */
ssize_t vmc_socket_read(int fd, void *p, size_t cap);
/* A plain socket write of all n bytes (MSG_NOSIGNAL): 0 or -1. */
int vmc_socket_write_all(int fd, const void *p, size_t n);

/* Read/write exactly n bytes, retrying on EINTR and short transfers.
 * Return 0 on success, -1 on error or end of stream (errno says which; 0 = clean EOF). */
int vmc_read_full(int fd, void *buf, size_t n);
int vmc_write_full(int fd, const void *buf, size_t n);
/* One sendmsg of the n bytes at p on the Unix socket s, with the descriptor fd (SCM_RIGHTS) when fd >= 0; 0 when
 * all n bytes went. */
int vmc_send_with_fd(int s, const void *p, size_t n, int fd);

void vmc_encode_header(uint8_t out[VMC_HEADER_BYTES], uint16_t type, uint16_t flags, uint32_t id, uint32_t len);
/* Reads and validates a header: magic, known type, len within the type's limit.
 * Returns 0, or -1 with *why set to a static description. */
int vmc_read_header(int fd, struct vmc_frame_header *h, const char **why);
/* The same checks on a header already in memory. */
int vmc_parse_header(const uint8_t b[VMC_HEADER_BYTES], struct vmc_frame_header *h, const char **why);

/* A ring block's token (PROTOCOL.md "Co-located fast path"): the block's number, 4 bytes little-endian. */
#define VMC_TOKEN_BYTES 4
static inline void vmc_token_encode(uint8_t b[VMC_TOKEN_BYTES], uint32_t k) {
    b[0] = (uint8_t)k, b[1] = (uint8_t)(k >> 8), b[2] = (uint8_t)(k >> 16), b[3] = (uint8_t)(k >> 24);
}
static inline uint32_t vmc_token_decode(const uint8_t b[VMC_TOKEN_BYTES]) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The bytes of each block of a 1-D copy of `count` bytes to the device through a ring of `slots` slots of
 * `slot_size` bytes (PROTOCOL.md "Co-located fast path"), the last one possibly shorter: one slot each, except that
 * through a co-located ring (`in_pieces`; not over UCX, where each block costs a network round trip) a copy that
 * fits one slot is cut into up to VMC_RING_UPLOAD_PIECES blocks (and no more than the ring has slots, so that no
 * slot is filled twice) of whole pages, none smaller than VMC_RING_UPLOAD_MIN_BLOCK, nor from
 * VMC_RING_UPLOAD_PARALLEL_BLOCK up smaller than that. In one block the GPU copies only after the client has filled
 * it all; in pieces, one while the client fills the next (H200, 256 KiB: 28.8 -> 26.9 us; 4 MiB: 190 -> 173 us),
 * but a block the client fills alone is slower from 1 MiB up than one it fills with several threads (1 MiB in
 * 256 KiB pieces 82 us, in one block 62 us): tests/bench/results/h200-run174-180-ring-fill. */
static inline size_t vmc_ring_upload_block(uint64_t count, size_t slot_size, uint32_t slots, int in_pieces) {
    uint32_t pieces = slots < VMC_RING_UPLOAD_PIECES ? slots : VMC_RING_UPLOAD_PIECES;
    if (!in_pieces || pieces < 2 || count > slot_size)
        return slot_size;
    uint64_t piece = (count + pieces - 1) / pieces;
    piece = (piece + 4095) & ~(uint64_t)4095;
    uint64_t least = count < VMC_RING_UPLOAD_PARALLEL_BLOCK ? VMC_RING_UPLOAD_MIN_BLOCK : VMC_RING_UPLOAD_PARALLEL_BLOCK;
    if (piece < least)
        piece = least;
    return piece < slot_size ? (size_t)piece : slot_size;
}

/* A growable little-endian output buffer. Allocation failure makes it "broken" (checked once at the end). */
struct vmc_out {
    uint8_t *data;
    size_t len;
    size_t cap;
    int broken;
};
void vmc_out_reset(struct vmc_out *o);
void vmc_out_free(struct vmc_out *o);
void vmc_out_bytes(struct vmc_out *o, const void *p, size_t n);
void vmc_out_u8(struct vmc_out *o, uint8_t v);
void vmc_out_u16(struct vmc_out *o, uint16_t v);
void vmc_out_u32(struct vmc_out *o, uint32_t v);
void vmc_out_u64(struct vmc_out *o, uint64_t v);
/* Reserve a frame header at the start of o; vmc_out_finish_frame fills it in with the final length. */
void vmc_out_begin_frame(struct vmc_out *o);
void vmc_out_finish_frame(struct vmc_out *o, uint16_t type, uint16_t flags, uint32_t id);

/* A bounds-checked reader over a received payload. Any overrun sets `bad` and yields zeros. */
struct vmc_in {
    const uint8_t *data;
    size_t len;
    size_t pos;
    int bad;
};
void vmc_in_init(struct vmc_in *in, const void *data, size_t len);
void vmc_in_bytes(struct vmc_in *in, void *p, size_t n);
const uint8_t *vmc_in_view(struct vmc_in *in, size_t n); /* NULL (and bad) if fewer than n bytes remain */
uint8_t vmc_in_u8(struct vmc_in *in);
uint16_t vmc_in_u16(struct vmc_in *in);
uint32_t vmc_in_u32(struct vmc_in *in);
uint64_t vmc_in_u64(struct vmc_in *in);

/* Buffered reading from a connection: one read() usually brings a header and its payload, or many
 * small frames at once; reads of at least half the buffer (bulk data) go straight to their destination. */
struct vmc_reader {
    uint8_t *buf; /* allocated on first use */
    size_t cap, pos, len;
};
/* Reads exactly n bytes: 0, or -1 on end of stream (errno 0) or error. Every read from a connection that
 * has a reader must go through it. */
int vmc_reader_read(struct vmc_reader *r, int fd, void *dst, size_t n);
/* How long a reader polls for bytes before it sleeps, in ns (VMCUDA_POLL_US; see vmc_io.c). */
long vmc_poll_ns(void);
void vmc_reader_free(struct vmc_reader *r);

/* Send an ERROR frame (best effort). */
void vmc_send_error(int fd, uint32_t code, const char *msg);

#endif

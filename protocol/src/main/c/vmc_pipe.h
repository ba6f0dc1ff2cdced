/* Calls through shared memory (PROTOCOL.md "Calls through shared memory"): when the client and the worker
 * share an OS instance, a connection's byte stream moves from its socket to a pair of single-producer,
 * single-consumer byte rings in a file both map. A reader that finds nothing polls briefly, then sleeps on a
 * futex in the shared page that the writer wakes: no system call at all on a busy round trip, and no busy
 * core when idle. The socket stays open beside the pipe, carrying nothing, as the connection's life line: a
 * peer that exits (or is killed) closes it, which a waiting side checks on each timed wake-up.
 *
 * The file is written by a process of another user that this side must not trust: each side keeps its own
 * position authoritative and only reads the peer's, checking it against the capacity, so a scribbled header
 * can break the stream (an error here) but never make this side read or write outside the rings. */
#ifndef VMC_PIPE_H
#define VMC_PIPE_H

#include <stddef.h>
#include <stdint.h>

#define VMC_PIPE_MAGIC 0x65706970636d76ull /* "vmcpipe" */
#define VMC_PIPE_VERSION 2u
#define VMC_PIPE_HEADER_BYTES 4096u
/* The completion area (PROTOCOL.md "Completion word"), after the header: the worker registers it with the GPU, so
 * that the GPU itself can write the completion word, and small copies from the device land in its landing. */
#define VMC_PIPE_COMPLETION_AT VMC_PIPE_HEADER_BYTES
#define VMC_PIPE_LANDING_OFFSET 4096u /* within the area: the landing starts on the page after the words */
#define VMC_PIPE_LANDING_BYTES (64u << 10)
#define VMC_PIPE_COMPLETION_BYTES (VMC_PIPE_LANDING_OFFSET + VMC_PIPE_LANDING_BYTES)
#define VMC_PIPE_MIN_CAPACITY (64u << 10)
#define VMC_PIPE_MAX_CAPACITY (16u << 20)

/* One direction in the shared header: the producer's and the consumer's halves on separate cache lines. */
struct vmc_pipe_ring {
    _Alignas(64) uint64_t head;   /* bytes ever written: the producer's */
    uint32_t data_seq;            /* futex word: bumped when data arrives for a sleeping consumer */
    uint32_t consumer_sleeping;
    _Alignas(64) uint64_t tail;   /* bytes ever read: the consumer's */
    uint32_t space_seq;           /* futex word: bumped when room appears for a sleeping producer */
    uint32_t producer_sleeping;
};

/* The words of the completion area. `done` is written by the GPU (a stream write the worker enqueues after a
 * synchronous call's work): the low 32 bits of that call's number once its work is complete. `seen` is written by
 * the client: the number it took from `done` (its answer, which the worker then need not see read). */
struct vmc_pipe_completion {
    _Alignas(64) uint32_t done;
    _Alignas(64) uint32_t seen;
};

struct vmc_pipe_header {
    uint64_t magic;
    uint32_t version;
    uint32_t capacity; /* of each ring, a power of two */
    struct vmc_pipe_ring to_worker, to_client;
};

/* One side's view. Positions are this side's own copies; the shared ones are published, never trusted. */
struct vmc_pipe {
    struct vmc_pipe_header *shared;
    uint8_t *base;
    size_t size;
    uint64_t capacity;
    struct vmc_pipe_ring *tx, *rx;
    uint8_t *tx_data, *rx_data;
    struct vmc_pipe_completion *completion; /* in the completion area */
    uint8_t *landing;                       /* VMC_PIPE_LANDING_BYTES */
    uint64_t head, tail; /* what this side has written to tx / read from rx */
    /* The peer's positions as last loaded (checked then): a position is read again only when this copy shows
     * too little room or no data, so that a round trip does not also pull the peer's cache line over. */
    uint64_t peer_tail, peer_head;
    /* Bytes read since a producer sleeping for room was last looked for: the consumer does that when it waits for
     * data, or after a quarter of the ring, rather than after every read (it needs a full fence). */
    uint64_t read_unannounced;
    int life_fd;         /* the connection's socket: its peer closing it means the peer is gone */
    int socket_speaks;   /* the peer wrote on the socket: after the pipe is drained, read there */
};

/* Bytes of the file for rings of `capacity` bytes each. */
size_t vmc_pipe_file_bytes(uint32_t capacity);
/* The client lays out a fresh, zeroed file of vmc_pipe_file_bytes(capacity). 0, or -1 on a bad capacity. */
int vmc_pipe_format(void *base, size_t size, uint32_t capacity);
/* Either side takes its view of a mapped file (the client: is_client 1). 0, or -1 with *why set when the
 * header does not describe a pipe of exactly `size` bytes. */
int vmc_pipe_open(struct vmc_pipe *p, void *base, size_t size, int is_client, int life_fd, const char **why);

/* Writes all n bytes, waiting for room as needed. 0, or -1 when the peer is gone or broke the stream
 * (errno 0 for a peer that closed, EPROTO for a scribbled header). */
int vmc_pipe_write(struct vmc_pipe *p, const void *src, size_t n);
/* Reads exactly n bytes, polling for up to poll_ns and then sleeping. 0; -1 as for write; 1 when nothing
 * is left in the pipe and the peer has written on the socket instead (the worker ending the session says
 * why there): the caller reads the rest of the connection from the socket. */
int vmc_pipe_read(struct vmc_pipe *p, void *dst, size_t n, long poll_ns);
/* Bytes waiting to be read (0 when the header is scribbled). */
uint64_t vmc_pipe_readable(const struct vmc_pipe *p);
/* Reading in place (a small copy's bytes handed to the GPU driver without a copy of ours): waits, as read
 * does, until some bytes are there; then *at points at the next n of them when all n are there and do not
 * wrap the ring, else it is NULL (read them with vmc_pipe_read). 0, or what read returns. The bytes stay
 * unread until vmc_pipe_skip(p, n); n is at most the capacity. */
int vmc_pipe_peek(struct vmc_pipe *p, size_t n, long poll_ns, const void **at);
/* Marks n bytes that peek showed as read. */
void vmc_pipe_skip(struct vmc_pipe *p, size_t n);
/* The completion area of the pipe's file (VMC_PIPE_COMPLETION_BYTES from here, page-aligned): what the worker
 * registers with the GPU. */
void *vmc_pipe_completion_area(const struct vmc_pipe *p);
/* The client, after a synchronous call of number `number` (low 32 bits; never 0) was sent: polls for up to poll_ns
 * until the completion word says that number (1; the client then tells the worker with vmc_pipe_mark_seen), or
 * bytes are waiting in the pipe, or the time is up (0: read the REPLY as usual). */
int vmc_pipe_poll_done(struct vmc_pipe *p, uint32_t number, long poll_ns);
void vmc_pipe_mark_seen(struct vmc_pipe *p, uint32_t number);
/* The worker: the number the client last marked seen (written by the client: a hint about its own session). */
uint32_t vmc_pipe_seen(const struct vmc_pipe *p);

/* Bytes this side has written so far (a position in its stream), and whether the peer has read up to such a
 * position: a peer gone before it read an answer it was waiting for died in the middle of a call. */
uint64_t vmc_pipe_written(const struct vmc_pipe *p);
int vmc_pipe_peer_has_read(const struct vmc_pipe *p, uint64_t position);

#endif

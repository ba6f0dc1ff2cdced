#define _GNU_SOURCE
#include "vmc_pipe.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* How long a sleeping side waits before it looks at the life line again: how late a dead peer is noticed. */
#define LIFE_CHECK_NS (20L * 1000 * 1000)
/* A writer publishes at least every this many bytes, so that the reader starts on a large write early. */
#define PUBLISH_BYTES (128u << 10)

/* The rings follow the header and the completion area. */
#define RINGS_AT (VMC_PIPE_COMPLETION_AT + VMC_PIPE_COMPLETION_BYTES)

size_t vmc_pipe_file_bytes(uint32_t capacity) { return RINGS_AT + 2 * (size_t)capacity; }

static int capacity_ok(uint64_t c) {
    return c >= VMC_PIPE_MIN_CAPACITY && c <= VMC_PIPE_MAX_CAPACITY && (c & (c - 1)) == 0;
}

int vmc_pipe_format(void *base, size_t size, uint32_t capacity) {
    if (!capacity_ok(capacity) || size != vmc_pipe_file_bytes(capacity))
        return -1;
    struct vmc_pipe_header *h = base;
    memset(h, 0, sizeof *h);
    memset((uint8_t *)base + VMC_PIPE_COMPLETION_AT, 0, sizeof(struct vmc_pipe_completion));
    h->version = VMC_PIPE_VERSION;
    h->capacity = capacity;
    __atomic_store_n(&h->magic, VMC_PIPE_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

int vmc_pipe_open(struct vmc_pipe *p, void *base, size_t size, int is_client, int life_fd, const char **why) {
    struct vmc_pipe_header *h = base;
    memset(p, 0, sizeof *p);
    /* read once: the peer may change the header afterwards, and only these copies are used */
    uint64_t magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
    uint32_t version = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
    uint64_t capacity = __atomic_load_n(&h->capacity, __ATOMIC_RELAXED);
    if (size < sizeof *h || magic != VMC_PIPE_MAGIC || version != VMC_PIPE_VERSION) {
        *why = "not a vmcuda call pipe of this version";
        return -1;
    }
    if (!capacity_ok(capacity) || size != vmc_pipe_file_bytes((uint32_t)capacity)) {
        *why = "call pipe capacity does not match its size";
        return -1;
    }
    p->shared = h;
    p->base = base;
    p->size = size;
    p->capacity = capacity;
    uint8_t *to_worker = (uint8_t *)base + RINGS_AT, *to_client = to_worker + capacity;
    p->completion = (struct vmc_pipe_completion *)((uint8_t *)base + VMC_PIPE_COMPLETION_AT);
    p->landing = (uint8_t *)base + VMC_PIPE_COMPLETION_AT + VMC_PIPE_LANDING_OFFSET;
    p->tx = is_client ? &h->to_worker : &h->to_client;
    p->rx = is_client ? &h->to_client : &h->to_worker;
    p->tx_data = is_client ? to_worker : to_client;
    p->rx_data = is_client ? to_client : to_worker;
    /* a fresh pipe: both positions 0 (the client formatted it; nothing has been sent yet) */
    p->head = p->tail = 0;
    p->life_fd = life_fd;
    return 0;
}

static long futex_wait(uint32_t *word, uint32_t seen, long ns) {
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    return syscall(SYS_futex, word, FUTEX_WAIT, seen, &t, NULL, 0);
}

static void futex_wake(uint32_t *word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0); }

/* What the life line says: 0 = nothing, -1 = the peer is gone, 1 = the peer wrote on it. */
static int life_line(struct vmc_pipe *p) {
    struct pollfd f = {p->life_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&f, 1, 0) <= 0)
        return 0;
    if (f.revents & POLLIN) {
        char c;
        ssize_t n = recv(p->life_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0)
            return 1;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
    }
    return -1;
}

static long elapsed_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until `ready` (of the current shared state) holds, polling for poll_ns first. The futex word and
 * the sleeping flag are the ones the other side checks after it changes its position. 0 when ready, -1
 * when the peer is gone (errno 0) or broke the stream (EPROTO), 1 when the peer speaks on the socket. */
static int wait_for(struct vmc_pipe *p, uint64_t (*amount)(struct vmc_pipe *), uint32_t *seq, uint32_t *sleeping,
                    long poll_ns) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (poll_ns > 0 && elapsed_ns(&t0) < poll_ns) {
        if (amount(p))
            return 0;
        relax();
    }
    struct timespec last_check;
    clock_gettime(CLOCK_MONOTONIC, &last_check);
    for (;;) {
        uint32_t seen = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        __atomic_store_n(sleeping, 1, __ATOMIC_SEQ_CST);
        /* the store above and the load of the peer's position in amount() must not be reordered (the peer
         * does the mirror image: publish, then look at `sleeping`); x86 keeps them, weaker CPUs need this */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (amount(p)) {
            __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
            return 0;
        }
        futex_wait(seq, seen, LIFE_CHECK_NS);
        __atomic_store_n(sleeping, 0, __ATOMIC_RELAXED);
        if (amount(p))
            return 0;
        /* by the clock, not by the futex's answer: signals (EINTR) or a peer bumping the word (EAGAIN) must not
         * keep a dead peer from being noticed */
        if (elapsed_ns(&last_check) >= LIFE_CHECK_NS) {
            clock_gettime(CLOCK_MONOTONIC, &last_check);
            int life = life_line(p);
            if (life > 0 && amount(p))
                return 0; /* what the peer wrote in the pipe before it spoke on the socket comes first */
            if (life != 0) {
                errno = 0;
                return life;
            }
        }
    }
}

/* Bytes the peer has written that this side has not read: from the copy of the peer's head while that still
 * shows some, else from the shared header. A count beyond the capacity is a scribble, reported as UINT64_MAX
 * so that waiting ends and the caller fails. */
static uint64_t unread(struct vmc_pipe *p) {
    if (p->peer_head == p->tail) {
        uint64_t head = __atomic_load_n(&p->rx->head, __ATOMIC_ACQUIRE);
        if (head - p->tail > p->capacity)
            return UINT64_MAX;
        p->peer_head = head;
    }
    return p->peer_head - p->tail;
}

/* Room for writing, from the shared header (kept as the copy that known_room uses). */
static uint64_t room(struct vmc_pipe *p) {
    uint64_t tail = __atomic_load_n(&p->tx->tail, __ATOMIC_ACQUIRE), used = p->head - tail;
    if (used > p->capacity)
        return UINT64_MAX;
    p->peer_tail = tail;
    return p->capacity - used;
}

/* Room as of the last look at the peer's position: never more than there is. */
static uint64_t known_room(const struct vmc_pipe *p) { return p->capacity - (p->head - p->peer_tail); }

uint64_t vmc_pipe_readable(const struct vmc_pipe *p) {
    uint64_t n = __atomic_load_n(&p->rx->head, __ATOMIC_ACQUIRE) - p->tail;
    return n > p->capacity ? 0 : n;
}

void *vmc_pipe_completion_area(const struct vmc_pipe *p) { return p->completion; }

int vmc_pipe_poll_done(struct vmc_pipe *p, uint32_t number, long poll_ns) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* the GPU's write is a plain store into this process's memory: an acquire load sees it, and the copy's bytes,
     * which the stream wrote before it (the write comes after a system-wide fence) */
    for (unsigned spins = 0;; spins++) {
        if (__atomic_load_n(&p->completion->done, __ATOMIC_ACQUIRE) == number)
            return 1;
        if (unread(p))
            return 0;
        if ((spins & 63) == 63 && elapsed_ns(&t0) >= poll_ns)
            return 0;
        relax();
    }
}

void vmc_pipe_mark_seen(struct vmc_pipe *p, uint32_t number) {
    __atomic_store_n(&p->completion->seen, number, __ATOMIC_RELEASE);
}

uint32_t vmc_pipe_seen(const struct vmc_pipe *p) { return __atomic_load_n(&p->completion->seen, __ATOMIC_ACQUIRE); }

static void wake(uint32_t *seq) {
    __atomic_add_fetch(seq, 1, __ATOMIC_RELEASE);
    futex_wake(seq);
}

/* After this side stored its positions: wakes a peer that sleeps for what they announce. The full fence orders
 * those stores before the loads of the peer's sleeping flags (the peer does the mirror image: flag, fence, then
 * the positions). A producer's check comes with every write, since a consumer sleeps after a short poll; a
 * consumer's is owed only for bytes read since its last one, and it makes that when it waits for data or has
 * read a quarter of the ring: a producer sleeps only on a full ring, and the fence on every small read would
 * cost each round trip. */
static void wake_peer(struct vmc_pipe *p, int wrote) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (wrote && __atomic_load_n(&p->tx->consumer_sleeping, __ATOMIC_SEQ_CST))
        wake(&p->tx->data_seq);
    if (p->read_unannounced) {
        p->read_unannounced = 0;
        if (__atomic_load_n(&p->rx->producer_sleeping, __ATOMIC_SEQ_CST))
            wake(&p->rx->space_seq);
    }
}

/* A consumer has read n more bytes: its position is published at once (peer_has_read), without a fence. A producer
 * already asleep on the full ring is woken at once too: its flag lies on this side's own cache line, so a plain
 * look costs nothing; one that is only going to sleep is caught by the fenced look owed (wake_peer). */
static void consumed(struct vmc_pipe *p, size_t n) {
    p->tail += n;
    __atomic_store_n(&p->rx->tail, p->tail, __ATOMIC_RELEASE);
    p->read_unannounced += n;
    if (p->read_unannounced >= p->capacity / 4 || __atomic_load_n(&p->rx->producer_sleeping, __ATOMIC_RELAXED))
        wake_peer(p, 0);
}

/* Waits for data, after the consumer's owed check for a producer sleeping for room (which may be what the
 * data waits for). */
static int wait_for_data(struct vmc_pipe *p, long poll_ns) {
    if (p->read_unannounced)
        wake_peer(p, 0);
    return wait_for(p, unread, &p->rx->data_seq, &p->rx->consumer_sleeping, poll_ns);
}

int vmc_pipe_peek(struct vmc_pipe *p, size_t n, long poll_ns, const void **at) {
    *at = NULL;
    uint64_t avail = unread(p);
    if (avail == 0) {
        int rc = wait_for_data(p, poll_ns);
        if (rc != 0)
            return rc;
        avail = unread(p);
    }
    if (avail == UINT64_MAX) {
        errno = EPROTO;
        return -1;
    }
    uint64_t off = p->tail & (p->capacity - 1);
    if (avail >= n && n <= p->capacity - off)
        *at = p->rx_data + off;
    return 0;
}

void vmc_pipe_skip(struct vmc_pipe *p, size_t n) { consumed(p, n); }

uint64_t vmc_pipe_written(const struct vmc_pipe *p) { return p->head; }

int vmc_pipe_peer_has_read(const struct vmc_pipe *p, uint64_t position) {
    return __atomic_load_n(&p->tx->tail, __ATOMIC_ACQUIRE) >= position;
}

/* How many bytes one step moves at ring position `pos`: no more than wanted, than available, than what is
 * left before the ring wraps. */
static size_t step(uint64_t pos, size_t wanted, uint64_t available, uint64_t capacity) {
    uint64_t k = wanted, to_wrap = capacity - (pos & (capacity - 1));
    if (k > available)
        k = available;
    if (k > to_wrap)
        k = to_wrap;
    return (size_t)k;
}

int vmc_pipe_write(struct vmc_pipe *p, const void *src, size_t n) {
    const uint8_t *in = src;
    while (n) {
        uint64_t free_bytes = known_room(p);
        if (free_bytes < n)
            free_bytes = room(p);
        if (free_bytes == 0) {
            int rc = wait_for(p, room, &p->tx->space_seq, &p->tx->producer_sleeping, 0);
            if (rc != 0) {
                if (rc > 0)
                    errno = EPROTO; /* only the client reads the socket while the pipe is up */
                return -1;
            }
            continue;
        }
        if (free_bytes == UINT64_MAX) {
            errno = EPROTO;
            return -1;
        }
        size_t k = step(p->head, n < PUBLISH_BYTES ? n : PUBLISH_BYTES, free_bytes, p->capacity);
        memcpy(p->tx_data + (p->head & (p->capacity - 1)), in, k);
        p->head += k;
        __atomic_store_n(&p->tx->head, p->head, __ATOMIC_SEQ_CST);
        wake_peer(p, 1);
        in += k;
        n -= k;
    }
    return 0;
}

int vmc_pipe_read(struct vmc_pipe *p, void *dst, size_t n, long poll_ns) {
    uint8_t *out = dst;
    size_t wanted = n;
    while (n) {
        uint64_t avail = unread(p);
        if (avail == 0) {
            int rc = wait_for_data(p, poll_ns);
            if (rc > 0 && n != wanted) {
                errno = EPROTO; /* the peer left a message half-written in the pipe */
                return -1;
            }
            if (rc != 0)
                return rc;
            continue;
        }
        if (avail == UINT64_MAX) {
            errno = EPROTO;
            return -1;
        }
        size_t k = step(p->tail, n, avail, p->capacity);
        memcpy(out, p->rx_data + (p->tail & (p->capacity - 1)), k);
        consumed(p, k);
        out += k;
        n -= k;
    }
    return 0;
}

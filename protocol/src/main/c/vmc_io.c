#include "vmc_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/socket.h>

/* ---- secure channels: a table indexed by descriptor, in pages made on first use and never freed, so that
 * a lookup takes no lock (a connection's reads and writes look it up on every call) ---- */
#define CHANNEL_PAGE 1024
#define CHANNEL_PAGES 1024 /* descriptors below 1,048,576 */
static struct vmc_channel *_Atomic *channel_pages[CHANNEL_PAGES];
static pthread_mutex_t channel_pages_lock = PTHREAD_MUTEX_INITIALIZER;

static struct vmc_channel *_Atomic *channel_slot(int fd, int make) {
    if (fd < 0 || fd >= CHANNEL_PAGE * CHANNEL_PAGES)
        return NULL;
    struct vmc_channel *_Atomic *page = __atomic_load_n(&channel_pages[fd / CHANNEL_PAGE], __ATOMIC_ACQUIRE);
    if (!page && make) {
        pthread_mutex_lock(&channel_pages_lock);
        page = channel_pages[fd / CHANNEL_PAGE];
        if (!page) {
            page = calloc(CHANNEL_PAGE, sizeof *page);
            __atomic_store_n(&channel_pages[fd / CHANNEL_PAGE], page, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&channel_pages_lock);
    }
    return page ? &page[fd % CHANNEL_PAGE] : NULL;
}

int vmc_io_attach(int fd, struct vmc_channel *ch) {
    struct vmc_channel *_Atomic *slot = channel_slot(fd, 1);
    if (!slot)
        return -1;
    struct vmc_channel *old = __atomic_exchange_n(slot, ch, __ATOMIC_ACQ_REL);
    if (old)
        old->forget(old);
    return 0;
}

void vmc_io_detach(int fd) {
    struct vmc_channel *_Atomic *slot = channel_slot(fd, 0);
    struct vmc_channel *old = slot ? __atomic_exchange_n(slot, NULL, __ATOMIC_ACQ_REL) : NULL;
    if (old)
        old->forget(old);
}

void vmc_io_abandon(int fd) {
    struct vmc_channel *_Atomic *slot = channel_slot(fd, 0);
    if (slot)
        __atomic_store_n(slot, NULL, __ATOMIC_RELEASE);
}

struct vmc_channel *vmc_io_channel(int fd) {
    struct vmc_channel *_Atomic *slot = channel_slot(fd, 0);
    return slot ? __atomic_load_n(slot, __ATOMIC_ACQUIRE) : NULL;
}

int vmc_io_close(int fd) {
    vmc_io_detach(fd);
    return close(fd);
}

int vmc_socket_write_all(int fd, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n > 0) {
        /* MSG_NOSIGNAL: a vanished peer must become an error return, not a SIGPIPE that kills the app */
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == ENOTSOCK)
            w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

/* One read of up to cap bytes, through the descriptor's channel if it has one. */
static ssize_t read_some(int fd, void *p, size_t cap) {
    struct vmc_channel *ch = vmc_io_channel(fd);
    return ch ? ch->read(ch, p, cap) : vmc_socket_read(fd, p, cap);
}

int vmc_read_full(int fd, void *buf, size_t n) {
    uint8_t *p = buf;
    struct vmc_channel *ch = vmc_io_channel(fd);
    while (n > 0) {
        ssize_t r = ch ? ch->read(ch, p, n) : read(fd, p, n);
        if (r > 0) {
            p += r;
            n -= (size_t)r;
        } else if (r == 0) {
            errno = 0;
            return -1;
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

int vmc_write_full(int fd, const void *buf, size_t n) {
    struct vmc_channel *ch = vmc_io_channel(fd);
    return ch ? ch->write_all(ch, buf, n) : vmc_socket_write_all(fd, buf, n);
}

int vmc_send_with_fd(int s, const void *p, size_t n, int fd) {
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct iovec iov = {(void *)p, n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void vmc_encode_header(uint8_t out[VMC_HEADER_BYTES], uint16_t type, uint16_t flags, uint32_t id, uint32_t len) {
    put_le(out, VMC_MAGIC, 4);
    put_le(out + 4, type, 2);
    put_le(out + 6, flags, 2);
    put_le(out + 8, id, 4);
    put_le(out + 12, len, 4);
}

int vmc_parse_header(const uint8_t b[VMC_HEADER_BYTES], struct vmc_frame_header *h, const char **why) {
    h->magic = (uint32_t)get_le(b, 4);
    h->type = (uint16_t)get_le(b + 4, 2);
    h->flags = (uint16_t)get_le(b + 6, 2);
    h->id = (uint32_t)get_le(b + 8, 4);
    h->len = (uint32_t)get_le(b + 12, 4);
    if (h->magic != VMC_MAGIC) {
        *why = "bad frame magic";
        return -1;
    }
    uint32_t max = vmc_max_payload(h->type);
    if (max == 0) {
        *why = "unknown frame type";
        return -1;
    }
    if (h->len > max) {
        *why = "frame length over its limit";
        return -1;
    }
    return 0;
}

int vmc_read_header(int fd, struct vmc_frame_header *h, const char **why) {
    uint8_t b[VMC_HEADER_BYTES];
    if (vmc_read_full(fd, b, sizeof b) != 0) {
        *why = errno == 0 ? "connection closed" : "read failed";
        return -1;
    }
    return vmc_parse_header(b, h, why);
}

void vmc_out_reset(struct vmc_out *o) {
    o->len = 0;
    o->broken = 0;
}

void vmc_out_free(struct vmc_out *o) {
    free(o->data);
    o->data = NULL;
    o->len = o->cap = 0;
}

void vmc_out_bytes(struct vmc_out *o, const void *p, size_t n) {
    if (o->broken)
        return;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n)
            cap *= 2;
        uint8_t *d = realloc(o->data, cap);
        if (!d) {
            o->broken = 1;
            return;
        }
        o->data = d;
        o->cap = cap;
    }
    if (n)
        memcpy(o->data + o->len, p, n);
    o->len += n;
}

void vmc_out_u8(struct vmc_out *o, uint8_t v) { vmc_out_bytes(o, &v, 1); }
void vmc_out_u16(struct vmc_out *o, uint16_t v) { uint8_t b[2]; put_le(b, v, 2); vmc_out_bytes(o, b, 2); }
void vmc_out_u32(struct vmc_out *o, uint32_t v) { uint8_t b[4]; put_le(b, v, 4); vmc_out_bytes(o, b, 4); }
void vmc_out_u64(struct vmc_out *o, uint64_t v) { uint8_t b[8]; put_le(b, v, 8); vmc_out_bytes(o, b, 8); }

void vmc_out_begin_frame(struct vmc_out *o) {
    uint8_t zero[VMC_HEADER_BYTES] = {0};
    vmc_out_reset(o);
    vmc_out_bytes(o, zero, sizeof zero);
}

void vmc_out_finish_frame(struct vmc_out *o, uint16_t type, uint16_t flags, uint32_t id) {
    if (o->broken || o->len < VMC_HEADER_BYTES)
        return;
    vmc_encode_header(o->data, type, flags, id, (uint32_t)(o->len - VMC_HEADER_BYTES));
}

void vmc_in_init(struct vmc_in *in, const void *data, size_t len) {
    in->data = data;
    in->len = len;
    in->pos = 0;
    in->bad = 0;
}

const uint8_t *vmc_in_view(struct vmc_in *in, size_t n) {
    if (in->bad || n > in->len - in->pos) {
        in->bad = 1;
        return NULL;
    }
    const uint8_t *p = in->data + in->pos;
    in->pos += n;
    return p;
}

void vmc_in_bytes(struct vmc_in *in, void *p, size_t n) {
    const uint8_t *src = vmc_in_view(in, n);
    if (src)
        memcpy(p, src, n);
    else
        memset(p, 0, n);
}

uint8_t vmc_in_u8(struct vmc_in *in) { const uint8_t *p = vmc_in_view(in, 1); return p ? p[0] : 0; }
uint16_t vmc_in_u16(struct vmc_in *in) { const uint8_t *p = vmc_in_view(in, 2); return p ? (uint16_t)get_le(p, 2) : 0; }
uint32_t vmc_in_u32(struct vmc_in *in) { const uint8_t *p = vmc_in_view(in, 4); return p ? (uint32_t)get_le(p, 4) : 0; }
uint64_t vmc_in_u64(struct vmc_in *in) { const uint8_t *p = vmc_in_view(in, 8); return p ? get_le(p, 8) : 0; }

/* How long a reader polls its socket before it blocks (VMCUDA_POLL_US, default 50 us, 0 = never; at most
 * 1000). A small call's answer, or the next call of a program that makes many, usually comes within a
 * loopback round trip; a thread that sleeps in read() for it pays a wake-up on each side of every round trip,
 * several microseconds on a VM, while one that polls briefly picks the bytes up as they land. */
long vmc_poll_ns(void) {
    static long cached = -1;
    long v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *s = getenv("VMCUDA_POLL_US");
        long us = s && *s ? strtol(s, NULL, 10) : 50;
        v = (us < 0 ? 0 : us > 1000 ? 1000 : us) * 1000;
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
            v = 0; /* the peer that must answer may need this very CPU */
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

static long elapsed_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

ssize_t vmc_socket_read(int fd, void *p, size_t cap) {
    long budget = vmc_poll_ns();
    if (budget > 0) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
            ssize_t got = recv(fd, p, cap, MSG_DONTWAIT);
            if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                return got < 0 && errno == ENOTSOCK ? read(fd, p, cap) : got;
            if (elapsed_ns(&t0) >= budget)
                break;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    return read(fd, p, cap);
}

int vmc_reader_read(struct vmc_reader *r, int fd, void *dst, size_t n) {
    uint8_t *out = dst;
    size_t take = r->len - r->pos < n ? r->len - r->pos : n;
    if (take) {
        memcpy(out, r->buf + r->pos, take);
        r->pos += take;
        out += take;
        n -= take;
    }
    if (n == 0)
        return 0;
    if (!r->buf && r->cap)
        r->buf = malloc(r->cap);
    if (!r->buf || n >= r->cap / 2)
        return vmc_read_full(fd, out, n);
    r->pos = r->len = 0;
    while (r->len < n) {
        ssize_t got = read_some(fd, r->buf + r->len, r->cap - r->len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got == 0)
                errno = 0;
            return -1;
        }
        r->len += (size_t)got;
    }
    memcpy(out, r->buf, n);
    r->pos = n;
    return 0;
}

void vmc_reader_free(struct vmc_reader *r) {
    free(r->buf);
    r->buf = NULL;
    r->pos = r->len = 0;
}

void vmc_send_error(int fd, uint32_t code, const char *msg) {
    struct vmc_out o = {0};
    size_t n = strlen(msg);
    if (n > 1024)
        n = 1024;
    vmc_out_begin_frame(&o);
    vmc_out_u32(&o, code);
    vmc_out_u16(&o, (uint16_t)n);
    vmc_out_bytes(&o, msg, n);
    vmc_out_finish_frame(&o, VMC_ERROR, 0, 0);
    if (!o.broken)
        (void)vmc_write_full(fd, o.data, o.len);
    vmc_out_free(&o);
}

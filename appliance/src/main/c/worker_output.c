/* What the worker process writes to stdout/stderr (device printf, runtime messages) belongs to the
 * client: both fds are pipes that a thread drains continuously into memory (so a writer never blocks
 * on a full pipe), and every REPLY is preceded by OUTPUT frames carrying what was written so far. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker.h"

#define MAX_PENDING (64u << 20) /* beyond this, output is dropped with a note rather than growing without bound */

struct captured {
    int read_fd;
    uint8_t which; /* 1 = stdout, 2 = stderr */
    uint8_t *data;
    size_t len, cap;
    int dropped;
};

static struct captured streams[2] = {{-1, 1, NULL, 0, 0, 0}, {-1, 2, NULL, 0, 0, 0}};
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started;

/* Reads what is available without blocking. Caller holds the lock. */
static void drain(struct captured *s) {
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = read(s->read_fd, buf, sizeof buf);
        if (r <= 0)
            return;
        if (s->len + (size_t)r > MAX_PENDING) {
            s->dropped = 1;
            continue;
        }
        if (s->len + (size_t)r > s->cap) {
            size_t cap = s->cap ? s->cap : 65536;
            while (cap < s->len + (size_t)r)
                cap *= 2;
            uint8_t *d = realloc(s->data, cap);
            if (!d) {
                s->dropped = 1;
                continue;
            }
            s->data = d;
            s->cap = cap;
        }
        memcpy(s->data + s->len, buf, (size_t)r);
        s->len += (size_t)r;
    }
}

static void *drainer(void *arg) {
    (void)arg;
    struct pollfd p[2] = {{streams[0].read_fd, POLLIN, 0}, {streams[1].read_fd, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return NULL;
        pthread_mutex_lock(&lock);
        drain(&streams[0]);
        drain(&streams[1]);
        pthread_mutex_unlock(&lock);
    }
}

int vmc_w_output_start(void) {
    for (int i = 0; i < 2; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0)
            return -1;
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
        if (dup2(p[1], i + 1) < 0)
            return -1;
        close(p[1]);
        streams[i].read_fd = p[0];
    }
    pthread_t t;
    if (pthread_create(&t, NULL, drainer, NULL) != 0)
        return -1;
    pthread_detach(t);
    started = 1;
    return 0;
}

static int send_output(struct vmc_wconn *c, struct captured *s) {
    static const char note[] = "\n[vmcuda: output of the worker dropped: more than 64 MiB between two synchronizing calls]\n";
    if (s->dropped) {
        s->dropped = 0;
        size_t n = sizeof note - 1;
        uint8_t h[VMC_HEADER_BYTES + 1];
        vmc_encode_header(h, VMC_OUTPUT, 0, 0, (uint32_t)(n + 1));
        h[VMC_HEADER_BYTES] = s->which;
        if (vmc_w_write(c, h, sizeof h) || vmc_w_write(c, note, n))
            return -1;
    }
    size_t off = 0;
    while (off < s->len) {
        size_t n = s->len - off;
        if (n > VMC_MAX_CALL_PAYLOAD - 1)
            n = VMC_MAX_CALL_PAYLOAD - 1;
        uint8_t h[VMC_HEADER_BYTES + 1];
        vmc_encode_header(h, VMC_OUTPUT, 0, 0, (uint32_t)(n + 1));
        h[VMC_HEADER_BYTES] = s->which;
        if (vmc_w_write(c, h, sizeof h) || vmc_w_write(c, s->data + off, n))
            return -1;
        off += n;
    }
    s->len = 0;
    return 0;
}

int vmc_w_output_flush(struct vmc_wconn *c) {
    if (!started)
        return 0;
    /* stdio buffers first (the runtime prints device printf through stdout), then whatever is still
     * in the pipes: after this, everything written before the REPLY is in memory. */
    fflush(stdout);
    fflush(stderr);
    /* One poll tells whether either pipe holds anything: most replies then cost no read at all. */
    struct pollfd p[2] = {{streams[0].read_fd, POLLIN, 0}, {streams[1].read_fd, POLLIN, 0}};
    int ready = poll(p, 2, 0);
    pthread_mutex_lock(&lock);
    if (ready > 0 && (p[0].revents & POLLIN))
        drain(&streams[0]);
    if (ready > 0 && (p[1].revents & POLLIN))
        drain(&streams[1]);
    int rc = 0;
    if (streams[0].len || streams[0].dropped)
        rc |= send_output(c, &streams[0]);
    if (streams[1].len || streams[1].dropped)
        rc |= send_output(c, &streams[1]);
    pthread_mutex_unlock(&lock);
    return rc;
}

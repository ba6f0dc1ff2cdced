/* What the worker process writes to stdout/stderr (device printf, runtime messages) belongs to the
 * client: both fds are pipes that a thread drains continuously into memory (so a writer never blocks
 * on a full pipe), and every REPLY is preceded by OUTPUT frames carrying what was written so far.
 *
 * Looking at the pipes costs a system call, which is a fifth of a call's round trip through shared memory. So
 * one epoll_wait asks both at once, and a reply to a query (below) does not look at all when every call since
 * the last look was a query: CUDA writes device printf output only at the points NVIDIA lists ("Formatted
 * Output": a kernel launch, a synchronization, a blocking copy, module loading, context destruction, before a
 * host function), and a query is none of them. Output that another thread writes meanwhile has no order with
 * this reply anyway; it goes with the next reply that looks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
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
static int readable_fd = -1; /* epoll over both pipes' read ends */
/* A call that may write output was served since the pipes were last looked at (at first: the program's
 * constructors may have written). */
static int unlooked = 1;

/* Calls that only ask the driver about state: no printf flush point, nothing written. */
static int is_query(uint32_t id) {
    switch (id) {
    case VMC_API_cudaStreamQuery:
    case VMC_API_cudaStreamQuery_ptsz:
    case VMC_API_cudaEventQuery:
    case VMC_API_cudaStreamIsCapturing:
    case VMC_API_cudaStreamIsCapturing_ptsz:
    case VMC_API_cudaGetLastError:
    case VMC_API_cudaPeekAtLastError:
    case VMC_API_cudaEventElapsedTime:
    case VMC_API_cudaMemGetInfo:
    case VMC_API_cudaPointerGetAttributes:
    case VMC_API_cudaGetDevice:
    case VMC_DRV_cuStreamQuery:
    case VMC_DRV_cuStreamQuery_ptsz:
    case VMC_DRV_cuEventQuery:
    case VMC_DRV_cuStreamIsCapturing:
    case VMC_DRV_cuStreamIsCapturing_ptsz:
    case VMC_DRV_cuEventElapsedTime:
    case VMC_DRV_cuEventElapsedTime_v2:
    case VMC_DRV_cuMemGetInfo_v2:
    case VMC_DRV_cuPointerGetAttribute:
    case VMC_DRV_cuPointerGetAttributes:
    case VMC_DRV_cuCtxGetCurrent:
    case VMC_DRV_cuCtxGetDevice: return 1;
    default: return 0;
    }
}

void vmc_w_output_call_served(uint32_t id) {
    if (!is_query(id))
        __atomic_store_n(&unlooked, 1, __ATOMIC_RELEASE);
}

/* Reads what is available without blocking; 1 at the end of the stream (every write end closed). Caller holds the
 * lock. */
static int drain(struct captured *s) {
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = read(s->read_fd, buf, sizeof buf);
        if (r <= 0)
            return r == 0;
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

/* Drains the n streams epoll reported readable. A stream the program closed leaves the set: a hung-up pipe would
 * be reported readable forever. Caller holds the lock. */
static void drain_ready(const struct epoll_event *ready, int n) {
    for (int i = 0; i < n; i++) {
        struct captured *s = &streams[ready[i].data.u32 & 1];
        if (drain(s))
            epoll_ctl(readable_fd, EPOLL_CTL_DEL, s->read_fd, NULL);
    }
}

static void *drainer(void *arg) {
    (void)arg;
    for (;;) {
        struct epoll_event ready[2];
        int n = epoll_wait(readable_fd, ready, 2, -1);
        if (n < 0 && errno != EINTR)
            return NULL;
        pthread_mutex_lock(&lock);
        drain_ready(ready, n);
        pthread_mutex_unlock(&lock);
    }
}

/* Output taken in but not yet sent. */
static int pending(const struct captured *s) {
    return __atomic_load_n(&s->len, __ATOMIC_RELAXED) || __atomic_load_n(&s->dropped, __ATOMIC_RELAXED);
}

/* Everything that can fail comes before stdout and stderr are replaced: a failure leaves them as they were (the
 * session log), never as pipes that nobody reads and that block their writers once full. */
int vmc_w_output_start(void) {
    int write_ends[2] = {-1, -1};
    readable_fd = epoll_create1(EPOLL_CLOEXEC);
    int ok = readable_fd >= 0;
    for (int i = 0; i < 2 && ok; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) {
            ok = 0;
            break;
        }
        fcntl(p[0], F_SETFL, O_NONBLOCK);
        fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
        streams[i].read_fd = p[0];
        write_ends[i] = p[1];
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        ok = epoll_ctl(readable_fd, EPOLL_CTL_ADD, p[0], &e) == 0;
    }
    pthread_t t;
    ok = ok && pthread_create(&t, NULL, drainer, NULL) == 0;
    if (ok)
        pthread_detach(t);
    for (int i = 0; i < 2 && ok; i++)
        ok = dup2(write_ends[i], i + 1) >= 0;
    for (int i = 0; i < 2; i++)
        if (write_ends[i] >= 0)
            close(write_ends[i]);
    if (!ok)
        return -1;
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

int vmc_w_output_flush(struct vmc_wconn *c, uint32_t id) {
    if (!started)
        return 0;
    /* what the drainer took in since (another thread's output) goes now too */
    if (is_query(id) && !__atomic_load_n(&unlooked, __ATOMIC_ACQUIRE) && !pending(&streams[0]) && !pending(&streams[1]))
        return 0;
    __atomic_store_n(&unlooked, 0, __ATOMIC_RELAXED); /* before the look: a call served during it sets it again */
    /* stdio buffers first (the runtime prints device printf through stdout), then whatever is still
     * in the pipes: after this, everything written before the REPLY is in memory. */
    fflush(stdout);
    fflush(stderr);
    /* One system call tells whether either pipe holds anything: most replies then cost no read at all. */
    struct epoll_event ready[2];
    int n = epoll_wait(readable_fd, ready, 2, 0);
    pthread_mutex_lock(&lock);
    drain_ready(ready, n);
    int rc = 0;
    for (int i = 0; i < 2; i++)
        if (pending(&streams[i]))
            rc |= send_output(c, &streams[i]);
    pthread_mutex_unlock(&lock);
    return rc;
}

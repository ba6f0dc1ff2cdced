/* vmcuda-ucx-agent: the appliance's UCX end point for one worker (ucx_agent.h says why it is a process of
 * its own). Usage: vmcuda-ucx-agent FD, where FD is its end of the worker's SOCK_SEQPACKET socket pair.
 *
 * It registers each ring the worker hands it with UCX and answers with what a client needs to put into
 * and get from it (this process's UCX worker address, the ring's packed rkey and address). It is the
 * passive side of every transfer: it only progresses its UCX worker, which with RDMA hardware is idle
 * (the NIC moves the bytes) and over UCX's tcp or shared-memory transports carries out the client's puts
 * and gets, one thread per ring. It exits when the worker's end
 * closes (the worker exited or was killed). UCX's own settings (UCX_TLS, UCX_NET_DEVICES, ...) come from
 * its environment. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "ucx_agent.h"

#define MAX_RINGS 256
#define MAX_AGENT_BYTES (16ull << 30)
#define SPIN_NS 200000l

/* Each ring has a UCX worker and a thread of its own: the connections of one session (one per CPU thread of
 * the program, and the helpers of a striped copy) move their blocks in parallel, which over UCX's tcp and
 * shared-memory transports means this process's threads do the copying in parallel. */
struct ring {
    uint32_t id; /* 0: free */
    void *base;
    size_t size;
    ucp_mem_h memh;
    ucp_worker_h worker;
    ucp_address_t *address;
    size_t address_len;
    int stop;    /* an eventfd: the thread stops when it is written */
    pthread_t thread;
};

static struct ring rings[MAX_RINGS];
static uint32_t next_id = 1;
static ucp_context_h context;
static char tcp_segments[32]; /* what every attach reply says (ucx_agent.h) */

static void say(const char *fmt, const char *detail) {
    fprintf(stderr, "vmcuda-ucx-agent: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
}

static int start_ucx(void) {
    /* UCX's tcp transport emulates puts and gets in segments of 8 KiB by default: 64 KiB doubles a stream's
     * rate (ucx_perftest ucp_put_bw, 4 MiB messages, loopback: 1.6 -> 3.5 GB/s). UCX reads its transports'
     * settings from the environment only; the operator's own (UCX_TCP_*_SEG_SIZE) win. */
    const char *tls = getenv("UCX_TLS");
    if (!tls || strstr(tls, "tcp") || strstr(tls, "all")) { /* else UCX warns that they are unused */
        setenv("UCX_TCP_TX_SEG_SIZE", "64k", 0);
        setenv("UCX_TCP_RX_SEG_SIZE", "64k", 0);
    }
    if (getenv("UCX_TCP_TX_SEG_SIZE") && getenv("UCX_TCP_RX_SEG_SIZE"))
        snprintf(tcp_segments, sizeof tcp_segments, "%.14s %.14s", getenv("UCX_TCP_TX_SEG_SIZE"), getenv("UCX_TCP_RX_SEG_SIZE"));
    ucp_config_t *config;
    if (ucp_config_read(NULL, NULL, &config) != UCS_OK)
        return -1;
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP, .mt_workers_shared = 1};
    ucs_status_t st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        say("ucp_init: %s", ucs_status_string(st));
        return -1;
    }
    return 0;
}

/* A ring's thread: progresses its UCX worker, sleeping on UCX's event descriptor between events. */
static void *progress(void *arg) {
    struct ring *r = arg;
    int efd = -1;
    if (ucp_worker_get_efd(r->worker, &efd) != UCS_OK)
        efd = -1;
    for (;;) {
        /* busy for a while after the last event: during a transfer the next segment is microseconds away, and
         * a sleep and wake-up per segment would cost more than the segment itself */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            while (ucp_worker_progress(r->worker))
                clock_gettime(CLOCK_MONOTONIC, &t0);
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000000000l + (t.tv_nsec - t0.tv_nsec) < SPIN_NS);
        ucs_status_t st = efd < 0 ? UCS_ERR_UNSUPPORTED : ucp_worker_arm(r->worker);
        if (st == UCS_ERR_BUSY)
            continue;
        struct pollfd p[2] = {{r->stop, POLLIN, 0}, {efd, POLLIN, 0}};
        if (poll(p, efd < 0 ? 1 : 2, st == UCS_OK ? -1 : 1) < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            break;
    }
    return NULL;
}

static void release(struct ring *r) {
    uint64_t one = 1;
    if (write(r->stop, &one, sizeof one) == (ssize_t)sizeof one)
        pthread_join(r->thread, NULL);
    close(r->stop);
    ucp_worker_release_address(r->worker, r->address);
    ucp_worker_destroy(r->worker);
    ucp_mem_unmap(context, r->memh);
    munmap(r->base, r->size);
    r->id = 0;
}

static void reply(int sock, struct vmc_ucx_reply *r, const void *rkey, const void *addr) {
    struct iovec iov[3] = {{r, sizeof *r}, {(void *)rkey, rkey ? r->rkey_len : 0}, {(void *)addr, addr ? r->address_len : 0}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 3};
    if (sendmsg(sock, &m, MSG_NOSIGNAL) < 0)
        exit(0); /* the worker is gone */
}

static void refuse(int sock, int32_t status, const char *why) {
    struct vmc_ucx_reply r = {.status = status};
    snprintf(r.why, sizeof r.why, "%s", why);
    reply(sock, &r, NULL, NULL);
}

static void attach(int sock, const struct vmc_ucx_request *q, int fd) {
    struct ring *slot = NULL;
    for (int i = 0; i < MAX_RINGS && !slot; i++)
        if (!rings[i].id)
            slot = &rings[i];
    /* the descriptor is the (tenant-controlled) worker's: only a memfd sealed at exactly the announced size, so
     * that it cannot shrink under this process's mapping; and no more than MAX_AGENT_BYTES in all */
    struct stat st_fd;
    int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
    uint64_t mapped_bytes = 0;
    for (int i = 0; i < MAX_RINGS; i++)
        if (rings[i].id)
            mapped_bytes += rings[i].size;
    const char *bad = fd < 0 ? "no ring descriptor" : !slot ? "too many rings"
                      : q->size == 0 || q->size > VMC_UCX_MAX_RING || q->size % 4096 != 0 ? "bad ring size"
                      : mapped_bytes + q->size > MAX_AGENT_BYTES ? "the session's rings would exceed 16 GiB"
                      : fstat(fd, &st_fd) != 0 || (uint64_t)st_fd.st_size != q->size ? "the ring is not of the announced size"
                      : seals < 0 || !(seals & F_SEAL_SHRINK) ? "the ring is not sealed against shrinking" : NULL;
    if (bad) {
        refuse(sock, UCS_ERR_INVALID_PARAM, bad);
        return;
    }
    struct ring r = {.size = q->size, .stop = -1};
    r.base = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r.base == MAP_FAILED) {
        refuse(sock, UCS_ERR_NO_MEMORY, strerror(errno));
        return;
    }
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = r.base, .length = q->size};
    /* made here, progressed by the ring's thread: one thread at a time */
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    void *rkey = NULL;
    size_t rkey_len = 0;
    const char *step = "register the ring";
    int mapped = 0, made = 0, addressed = 0;
    ucs_status_t st = ucp_mem_map(context, &mp, &r.memh);
    if (st == UCS_OK && (mapped = 1, step = "pack its key", st = ucp_rkey_pack(context, r.memh, &rkey, &rkey_len)) == UCS_OK &&
        (step = "create a worker", st = ucp_worker_create(context, &wp, &r.worker)) == UCS_OK &&
        (made = 1, step = "worker address", st = ucp_worker_get_address(r.worker, &r.address, &r.address_len)) == UCS_OK) {
        addressed = 1;
        if (rkey_len + r.address_len > VMC_UCX_MAX_BLOB) {
            step = "rkey and address too large";
            st = UCS_ERR_EXCEEDS_LIMIT;
        } else if ((r.stop = eventfd(0, EFD_CLOEXEC)) < 0) {
            step = "start its thread";
            st = UCS_ERR_NO_RESOURCE;
        } else {
            *slot = r; /* the thread's view (id still 0: the slot is not in use until the thread runs) */
            if (pthread_create(&slot->thread, NULL, progress, slot) != 0) {
                step = "start its thread";
                st = UCS_ERR_NO_RESOURCE;
            }
        }
    }
    if (st != UCS_OK) {
        char why[128];
        snprintf(why, sizeof why, "%s: %s", step, ucs_status_string(st));
        if (r.stop >= 0)
            close(r.stop);
        if (addressed)
            ucp_worker_release_address(r.worker, r.address);
        if (made)
            ucp_worker_destroy(r.worker);
        if (rkey)
            ucp_rkey_buffer_release(rkey);
        if (mapped)
            ucp_mem_unmap(context, r.memh);
        munmap(r.base, q->size);
        refuse(sock, st, why);
        return;
    }
    slot->id = r.id = next_id++;
    if (next_id == 0)
        next_id = 1;
    struct vmc_ucx_reply answer = {.ring = r.id, .remote_base = (uint64_t)(uintptr_t)r.base, .rkey_len = (uint32_t)rkey_len,
                                   .address_len = (uint32_t)r.address_len};
    memcpy(answer.tcp_segments, tcp_segments, sizeof tcp_segments);
    reply(sock, &answer, rkey, r.address);
    ucp_rkey_buffer_release(rkey);
}

static void detach(uint32_t id) {
    for (int i = 0; i < MAX_RINGS; i++)
        if (id && rings[i].id == id)
            release(&rings[i]);
}

/* One request from the worker (refused when UCX did not start); returns -1 when the worker's end is closed. */
static int serve(int sock, int ucx_ok) {
    struct vmc_ucx_request q;
    char control[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {&q, sizeof q};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return -1;
    if (n < 0)
        return 0; /* nothing received: the control buffer holds nothing to read */
    /* exactly one descriptor is expected; any others are closed, never kept */
    int fd = -1, extra = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n_fds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n_fds; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
            if (fd < 0 && !extra)
                fd = got;
            else
                close(got), extra = 1;
        }
    }
    if (extra || (m.msg_flags & MSG_CTRUNC)) {
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    if (n == (ssize_t)sizeof q && q.op == VMC_UCX_ATTACH && !ucx_ok)
        refuse(sock, UCS_ERR_UNSUPPORTED, "UCX did not start on the appliance (see the session log)");
    else if (n == (ssize_t)sizeof q && q.op == VMC_UCX_ATTACH)
        attach(sock, &q, fd);
    else if (n == (ssize_t)sizeof q && q.op == VMC_UCX_DETACH)
        detach(q.ring);
    else if (n > 0)
        refuse(sock, UCS_ERR_INVALID_PARAM, "malformed request");
    if (fd >= 0)
        close(fd);
    return 0;
}

/* --probe: UCX loads, starts and makes a worker here (the daemon asks at start-up whether to offer UCX). */
static int probe(void) {
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h w;
    ucs_status_t st = UCS_ERR_NO_DEVICE;
    if (start_ucx() != 0 || (st = ucp_worker_create(context, &wp, &w)) != UCS_OK) {
        fprintf(stderr, "vmcuda-ucx-agent: probe failed: %s\n", context ? ucs_status_string(st) : "UCX did not start");
        return 1;
    }
    ucp_worker_destroy(w);
    ucp_cleanup(context);
    printf("vmcuda-ucx-agent: probe ok: UCX %s\n", ucp_get_version_string());
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--probe") == 0)
        return probe();
    char *end = NULL;
    long sock = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (sock < 0 || !end || *end) {
        fprintf(stderr, "usage: vmcuda-ucx-agent FD  (started by the vmcuda worker; FD is its socket)\n"
                        "       vmcuda-ucx-agent --probe  (does UCX start here?)\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    int ok = start_ucx() == 0;
    /* without UCX every attach is refused with the reason: the worker tells its client, which uses TCP */
    while (serve((int)sock, ok) == 0)
        ;
    for (int i = 0; i < MAX_RINGS; i++)
        if (rings[i].id)
            release(&rings[i]);
    if (context)
        ucp_cleanup(context);
    return 0;
}

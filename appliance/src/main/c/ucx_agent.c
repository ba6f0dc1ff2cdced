/* vmcuda-ucx-agent: the appliance's UCX end point for one worker (ucx_agent.h says why it is a process of
 * its own). Usage: vmcuda-ucx-agent FD, where FD is its end of the worker's SOCK_SEQPACKET socket pair.
 *
 * It registers each ring the worker hands it with UCX and answers with what a client needs to put into
 * and get from it (this process's UCX worker address, the ring's packed rkey and address). It is the
 * passive side of every transfer: it only progresses its UCX worker, which with RDMA hardware is idle
 * (the NIC moves the bytes) and over UCX's tcp or shared-memory transports carries out the client's puts
 * and gets, one thread per ring. It exits when the worker's end
 * closes (the worker exited or was killed). UCX's own settings (UCX_TLS, UCX_NET_DEVICES, ...) come from
 * its environment.
 *
 * Confinement. UCX trusts its peers: whoever reaches this process's UCX end point (the tenant's client, or
 * anyone on the network who finds its port) can read and write its memory and run code in it (docs/ucx.md
 * "Security"). So the agent is given as little as it can work with:
 *   - from vmcuda-sandbox (sandbox_main.c, start_ucx_agent; it needs privilege): the session's uid, no
 *     privileges, no new privileges; mount, PID and IPC namespaces of its own: every mount read-only, a
 *     private /tmp (only the worker's library directories in it, read-only), a /dev of its own (null, zero,
 *     full, random, urandom and the RDMA devices; no GPU) with an empty private /dev/shm, the daemon's state
 *     directory covered, alone in its PID namespace (no other process to signal, trace or
 *     read through /proc), no System V IPC of the host's;
 *   - from itself, first thing in main(), in every mode: no new privileges and its system-call filter
 *     (sandbox_seccomp.c): the worker's deny list (no namespaces, mounts, ptrace, other processes' memory,
 *     modules, BPF, io_uring, ...), no execve/execveat, no fork/vfork/clone but threads, and sockets only of
 *     AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (NETLINK_ROUTE and NETLINK_RDMA).
 * What a taken-over agent keeps: the host's network (no network namespace: the NICs and RDMA devices are what
 * it is for), the RDMA devices, read access to what the session's uid may read of the host's file system,
 * writes to its private /tmp and /dev/shm only, executable memory (UCX patches code at run time), the rings
 * its worker hands it (the worker's bulk-copy buffers; no GPU device is in its /dev), and its UCX end points, where any peer
 * that reaches them can still read and write this process's memory: UCX has no peer authentication. An agent
 * started by an unsandboxed worker has its filter and no new privileges only. */
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

#include "sandbox_seccomp.h"
#include "vmc_fds.h"
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
    int fd = vmc_take_one_fd(&m); /* exactly one descriptor is expected; any others are closed, never kept */
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
    printf("vmcuda-ucx-agent: probe ok: UCX %s, under the agent's system-call filter\n", ucp_get_version_string());
    return 0;
}

/* The agent's own part of its confinement, first thing in main() and in every mode: no new privileges and its
 * system-call filter. Here rather than in vmcuda-sandbox before it executes this program: the filter denies
 * execve, which that exec needs (a filter cannot allow one exec and no more); an agent that an unsandboxed
 * worker starts is confined the same way; and nothing of the worker's or of a UCX peer's has been read yet
 * (before main() only the libraries' constructors have run). Installed before UCX starts, so that UCX runs
 * under it from its first call: the probe and the self-test show that it can. */
static int confine(void) {
    char why[160] = "prctl(PR_SET_NO_NEW_PRIVS) failed";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || sandbox_seccomp(SANDBOX_FILTER_UCX_AGENT, why, sizeof why) != 0) {
        say("cannot install its system-call filter: %s", why);
        return -1;
    }
    return 0;
}

/* --self-test (for the tests): confined as in every mode, it tries what its filter must deny and let through,
 * shows its own Seccomp and NoNewPrivs lines, then starts UCX as --probe does; 0 when all came out right. */
static int self_test(void) {
    int wrong = sandbox_seccomp_check(SANDBOX_FILTER_UCX_AGENT, 1);
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Seccomp:", 8) == 0 || strncmp(line, "NoNewPrivs:", 11) == 0)
            fputs(line, stdout);
    if (f)
        fclose(f);
    printf("vmcuda-ucx-agent: self-test: %d check(s) wrong\n", wrong);
    fflush(stdout);
    return probe() != 0 || wrong ? 1 : 0;
}

int main(int argc, char **argv) {
    if (confine() != 0)
        return 1;
    if (argc == 2 && strcmp(argv[1], "--probe") == 0)
        return probe();
    if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    char *end = NULL;
    long sock = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (sock < 0 || !end || *end) {
        fprintf(stderr, "usage: vmcuda-ucx-agent FD  (started by the vmcuda worker; FD is its socket)\n"
                        "       vmcuda-ucx-agent --probe  (does UCX start here?)\n"
                        "       vmcuda-ucx-agent --self-test  (does its system-call filter hold, and UCX start under it?)\n");
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

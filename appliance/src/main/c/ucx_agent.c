/* vmcuda-ucx-agent: the appliance's UCX end point for one worker (ucx_agent.h says why it is a process of
 * its own). Usage: vmcuda-ucx-agent FD, where FD is its end of the worker's SOCK_SEQPACKET socket pair.
 *
 * It registers each ring the worker hands it with UCX and answers with what a client needs to put into
 * and get from it (this process's UCX worker address, the ring's packed rkey and address). It is the
 * passive side of every transfer: it only progresses its UCX worker, which with RDMA hardware is idle
 * (the NIC moves the bytes) and over UCX's tcp or shared-memory transports carries out the client's puts
 * and gets. It sleeps on UCX's event descriptor and the worker's socket, and exits when the worker's end
 * closes (the worker exited or was killed). UCX's own settings (UCX_TLS, UCX_NET_DEVICES, ...) come from
 * its environment. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <ucp/api/ucp.h>

#include "ucx_agent.h"

#define MAX_RINGS 256

struct ring {
    uint32_t id; /* 0: free */
    void *base;
    size_t size;
    ucp_mem_h memh;
};

static struct ring rings[MAX_RINGS];
static uint32_t next_id = 1;
static ucp_context_h context;
static ucp_worker_h worker;
static ucp_address_t *address;
static size_t address_len;

static void say(const char *fmt, const char *detail) {
    fprintf(stderr, "vmcuda-ucx-agent: ");
    fprintf(stderr, fmt, detail);
    fputc('\n', stderr);
}

static int start_ucx(void) {
    ucp_config_t *config;
    if (ucp_config_read(NULL, NULL, &config) != UCS_OK)
        return -1;
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP};
    ucs_status_t st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        say("ucp_init: %s", ucs_status_string(st));
        return -1;
    }
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((st = ucp_worker_create(context, &wp, &worker)) != UCS_OK ||
        (st = ucp_worker_get_address(worker, &address, &address_len)) != UCS_OK) {
        say("UCX worker: %s", ucs_status_string(st));
        return -1;
    }
    return 0;
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
    if (fd < 0 || q->size == 0 || q->size > VMC_UCX_MAX_RING || q->size % 4096 != 0 || !slot) {
        refuse(sock, UCS_ERR_INVALID_PARAM, fd < 0 ? "no ring descriptor" : !slot ? "too many rings" : "bad ring size");
        return;
    }
    void *base = mmap(NULL, q->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        refuse(sock, UCS_ERR_NO_MEMORY, strerror(errno));
        return;
    }
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = base, .length = q->size};
    ucp_mem_h memh;
    void *rkey = NULL;
    size_t rkey_len = 0;
    ucs_status_t st = ucp_mem_map(context, &mp, &memh);
    if (st == UCS_OK && (st = ucp_rkey_pack(context, memh, &rkey, &rkey_len)) != UCS_OK)
        ucp_mem_unmap(context, memh);
    if (st != UCS_OK || rkey_len + address_len > VMC_UCX_MAX_BLOB) {
        if (st == UCS_OK) {
            ucp_rkey_buffer_release(rkey);
            ucp_mem_unmap(context, memh);
        }
        munmap(base, q->size);
        refuse(sock, st != UCS_OK ? st : UCS_ERR_EXCEEDS_LIMIT, st != UCS_OK ? ucs_status_string(st) : "rkey too large");
        return;
    }
    *slot = (struct ring){next_id++, base, q->size, memh};
    if (next_id == 0)
        next_id = 1;
    struct vmc_ucx_reply r = {.ring = slot->id, .remote_base = (uint64_t)(uintptr_t)base, .rkey_len = (uint32_t)rkey_len,
                              .address_len = (uint32_t)address_len};
    reply(sock, &r, rkey, address);
    ucp_rkey_buffer_release(rkey);
}

static void detach(uint32_t id) {
    for (int i = 0; i < MAX_RINGS; i++)
        if (id && rings[i].id == id) {
            ucp_mem_unmap(context, rings[i].memh);
            munmap(rings[i].base, rings[i].size);
            rings[i].id = 0;
        }
}

/* One request from the worker; returns -1 when the worker's end is closed. */
static int serve(int sock) {
    struct vmc_ucx_request q;
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&q, sizeof q};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return -1;
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (n == (ssize_t)sizeof q && q.op == VMC_UCX_ATTACH)
        attach(sock, &q, fd);
    else if (n == (ssize_t)sizeof q && q.op == VMC_UCX_DETACH)
        detach(q.ring);
    else if (n > 0)
        refuse(sock, UCS_ERR_INVALID_PARAM, "malformed request");
    if (fd >= 0)
        close(fd);
    return 0;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long sock = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (sock < 0 || !end || *end) {
        fprintf(stderr, "usage: vmcuda-ucx-agent FD  (started by the vmcuda worker; FD is its socket)\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    int efd = -1;
    if (start_ucx() != 0 || ucp_worker_get_efd(worker, &efd) != UCS_OK) {
        /* every attach is refused with the reason: the worker tells its client, which uses TCP */
        for (;;) {
            struct vmc_ucx_request q;
            ssize_t n = recv((int)sock, &q, sizeof q, 0);
            if (n <= 0 && !(n < 0 && errno == EINTR))
                return 0;
            if (n == (ssize_t)sizeof q && q.op == VMC_UCX_ATTACH)
                refuse((int)sock, UCS_ERR_UNSUPPORTED, "UCX did not start on the appliance (see the session log)");
        }
    }
    for (;;) {
        while (ucp_worker_progress(worker))
            ;
        ucs_status_t st = ucp_worker_arm(worker);
        if (st == UCS_ERR_BUSY)
            continue;
        struct pollfd p[2] = {{(int)sock, POLLIN, 0}, {efd, POLLIN, 0}};
        if (poll(p, 2, st == UCS_OK ? -1 : 10) < 0 && errno != EINTR)
            break;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && serve((int)sock) != 0)
            break;
    }
    for (int i = 0; i < MAX_RINGS; i++)
        detach(rings[i].id);
    ucp_worker_release_address(worker, address);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}

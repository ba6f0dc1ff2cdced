/* Bulk copies over UCX, the worker's end (PROTOCOL.md "Bulk copies over UCX"). A client that asks for it
 * gets a ring like the co-located one (worker_shm.c serves the copies: slots handed back and forth with
 * tokens on the connection), but the ring is a memfd of this worker that the session's UCX agent
 * (ucx_agent.c) has registered with UCX, and the client fills and drains the slots with UCX puts and gets
 * instead of memcpy. The agent is this worker's: the sandbox launcher starts it outside the sandbox and
 * hands its socket down in VMCUDA_UCX_AGENT_FD; an unsandboxed worker starts it itself on first use from
 * VMCUDA_UCX_AGENT (its path). Neither set: the appliance offers no UCX, and the client uses TCP. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ucx_agent.h"
#include "vmc_internal.h"
#include "worker.h"

#define REPLY_TIMEOUT_MS 10000

static pthread_mutex_t agent_lock = PTHREAD_MUTEX_INITIALIZER;
static int agent_fd = -2; /* -2: not looked for yet; -1: none */
static char agent_why[160];

/* Starts the agent at `path` with one end of a new socket pair; returns the other end or -1. */
static int spawn_agent(const char *path) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(agent_why, sizeof agent_why, "socketpair: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char num[16];
        snprintf(num, sizeof num, "%d", sv[1]);
        fcntl(sv[1], F_SETFD, 0);
        execl(path, "vmcuda-ucx-agent", num, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    if (pid < 0) {
        snprintf(agent_why, sizeof agent_why, "fork: %s", strerror(errno));
        close(sv[0]);
        return -1;
    }
    return sv[0]; /* the agent exits when this end closes; it is reaped with the worker's other children */
}

static int agent(void) {
    if (agent_fd != -2)
        return agent_fd;
    const char *fd = getenv("VMCUDA_UCX_AGENT_FD"), *path = getenv("VMCUDA_UCX_AGENT");
    agent_fd = -1;
    if (fd && *fd) {
        agent_fd = atoi(fd);
        fcntl(agent_fd, F_SETFD, FD_CLOEXEC);
    } else if (path && *path) {
        agent_fd = spawn_agent(path);
    } else {
        snprintf(agent_why, sizeof agent_why, "this appliance offers no UCX (its setting worker.ucx; its log says why)");
    }
    return agent_fd;
}

static int send_request(int fd, const struct vmc_ucx_request *q, int ring_fd) {
    return vmc_send_with_fd(fd, q, sizeof *q, ring_fd);
}

/* The agent's answer to an attach: the reply header, then its rkey and worker address in `blob`. */
static int receive_reply(int fd, struct vmc_ucx_reply *r, uint8_t *blob) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, REPLY_TIMEOUT_MS) != 1)
        return -1;
    struct iovec iov[2] = {{r, sizeof *r}, {blob, VMC_UCX_MAX_BLOB}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    ssize_t n = recvmsg(fd, &m, 0);
    if (n < (ssize_t)sizeof *r || (m.msg_flags & MSG_TRUNC))
        return -1;
    r->why[sizeof r->why - 1] = 0;
    r->tcp_segments[sizeof r->tcp_segments - 1] = 0;
    if (r->status == 0 && ((uint64_t)r->rkey_len + r->address_len > VMC_UCX_MAX_BLOB ||
                           (size_t)n != sizeof *r + r->rkey_len + r->address_len))
        return -1;
    return 0;
}

void vmc_w_ucx_detach(uint32_t ring) {
    struct vmc_ucx_request q = {VMC_UCX_DETACH, ring, 0};
    pthread_mutex_lock(&agent_lock);
    if (agent_fd >= 0)
        send_request(agent_fd, &q, -1);
    pthread_mutex_unlock(&agent_lock);
}

/* Asks the agent to register a new ring of `size` bytes, mapped here at *base; fills r, and *blob with the
 * rkey and worker address (malloc'd). 0, or -1 with the reason in why (nothing left mapped). */
static int register_ring(size_t size, void **base, struct vmc_ucx_reply *r, uint8_t **blob, char *why, size_t why_len) {
    int ring_fd = memfd_create("vmcuda-ucx-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *mapped = MAP_FAILED;
    *blob = malloc(VMC_UCX_MAX_BLOB);
    /* sealed at its size: the agent maps it too, and a ring that shrank would kill the agent at a put (SIGBUS) */
    if (!*blob || ring_fd < 0 || ftruncate(ring_fd, (off_t)size) != 0 ||
        fcntl(ring_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        (mapped = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0)) == MAP_FAILED) {
        snprintf(why, why_len, "ring of %zu bytes: %s", size, strerror(errno));
        if (ring_fd >= 0)
            close(ring_fd);
        free(*blob);
        return -1;
    }
    pthread_mutex_lock(&agent_lock);
    int fd = agent();
    struct vmc_ucx_request q = {VMC_UCX_ATTACH, 0, size};
    int rc = fd < 0 ? -1 : send_request(fd, &q, ring_fd) != 0 || receive_reply(fd, r, *blob) != 0 ? -2 : 0;
    if (rc == -2) { /* the agent died or answered nonsense: no UCX for this worker from now on */
        close(fd);
        agent_fd = -1;
        snprintf(agent_why, sizeof agent_why, "the UCX agent stopped answering");
    }
    if (rc != 0)
        snprintf(why, why_len, "%s", agent_why);
    else if (r->status != 0)
        snprintf(why, why_len, "the UCX agent refused the ring: %s", r->why);
    pthread_mutex_unlock(&agent_lock);
    close(ring_fd);
    if (rc != 0 || r->status != 0) {
        munmap(mapped, size);
        free(*blob);
        return -1;
    }
    *base = mapped;
    return 0;
}

/* The reply's payload: status, then (success) the ring's address in the agent, the rkey's and worker
 * address's lengths and bytes, and the agent's UCX tcp segment sizes; (refusal) one line saying why, for
 * the client to print. */
/* A refused attach: the reason travels in the reply's `why`. */
static enum vmc_w_result refuse(struct vmc_wcall *wc, cudaError_t st, const char *why) {
    vmc_w_reply_status(wc, st);
    vmc_put_ucx_attach_reply(vmc_w_reply_out(wc), &(struct vmc_ucx_attach_reply){.why_bytes = (uint32_t)strlen(why), .why = why});
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_ucx_attach(struct vmc_wcall *wc) {
    struct vmc_ucx_attach_args a;
    vmc_get_ucx_attach_args(&wc->in, &a);
    uint32_t slots = a.slots;
    uint64_t slot_size = a.slot_size;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    uint64_t size = (uint64_t)slots * slot_size;
    if (c->shm || !vmc_w_shm_ring_ok(slots, slot_size, size)) {
        const char *why = c->shm ? "this connection already has a ring"
                                 : "ring shape refused (2-64 slots of 64 KiB-256 MiB, whole pages, 4 GiB in all)";
        return refuse(wc, cudaErrorInvalidValue, why);
    }
    struct vmc_ucx_reply r;
    void *base = NULL;
    uint8_t *blob = NULL;
    char why[200];
    if (register_ring((size_t)size, &base, &r, &blob, why, sizeof why) != 0) {
        vmc_w_log("UCX ring refused: %s", why);
        return refuse(wc, cudaErrorNotSupported, why);
    }
    int registered = vmc_w_shm_adopt(c, base, (size_t)size, (size_t)slot_size, slots, r.ring);
    if (registered < 0) {
        static const char why[] = "the worker is out of memory";
        vmc_w_ucx_detach(r.ring);
        munmap(base, (size_t)size);
        free(blob);
        return refuse(wc, cudaErrorMemoryAllocation, why);
    }
    vmc_w_log("UCX ring attached: %u slots of %zu bytes%s", slots, (size_t)slot_size,
              registered ? ", registered with the runtime" : ", NOT registered (copies are pageable)");
    vmc_w_reply_status(wc, cudaSuccess);
    vmc_put_ucx_attach_reply(vmc_w_reply_out(wc), &(struct vmc_ucx_attach_reply){
        .remote_base = r.remote_base, .rkey_bytes = r.rkey_len, .rkey = blob, .address_bytes = r.address_len,
        .address = blob + r.rkey_len, .segments_bytes = (uint32_t)strlen(r.tcp_segments), .segments = r.tcp_segments});
    free(blob);
    return VMC_W_DONE;
}

/* A UCX agent that damages its answers, for UcxTransportTest: started by an unsandboxed worker in place of
 * vmcuda-ucx-agent (worker.extra_env VMCUDA_UCX_AGENT=this), it starts the real agent
 * ($VMCUDA_TEST_REAL_UCX_AGENT) behind a socket pair of its own and relays every message between it and the
 * worker (the ring's descriptor included), except that each successful attach reply reaches the worker damaged
 * as $VMCUDA_TEST_DAMAGE says:
 *   address   the first byte of the agent's worker address (its format's version) flipped: UCX 1.13 aborts the
 *             process that reads it
 *   segments  the tcp segment sizes replaced by "1g 1g"
 * The client must survive either, say why it does not use UCX, and move its copies over TCP.
 *   usage: damaging_ucx_agent FD   (the worker's end of its socket pair, as vmcuda-ucx-agent takes it) */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../appliance/src/main/c/ucx_agent.h"
#include "../../protocol/src/main/c/vmc_fds.h"
#include "../../protocol/src/main/c/vmc_io.h"

/* One message from `from` to `to`, with the descriptor it carried; `damage` applied to it first. -1 at the end. */
static int relay(int from, int to, void (*damage)(uint8_t *msg, size_t n)) {
    static uint8_t buf[sizeof(struct vmc_ucx_reply) + VMC_UCX_MAX_BLOB];
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n = recvmsg(from, &m, 0);
    if (n <= 0)
        return -1;
    int fd = vmc_take_one_fd(&m);
    if (damage)
        damage(buf, (size_t)n);
    int w = vmc_send_with_fd(to, buf, (size_t)n, fd);
    if (fd >= 0)
        close(fd);
    return w;
}

static const char *mode;

static void damage_reply(uint8_t *msg, size_t n) {
    struct vmc_ucx_reply r;
    if (n < sizeof r)
        return;
    memcpy(&r, msg, sizeof r);
    if (r.status != 0)
        return;
    if (strcmp(mode, "address") == 0 && r.address_len > 0 && sizeof r + r.rkey_len < n)
        msg[sizeof r + r.rkey_len] ^= 0x0f;
    else if (strcmp(mode, "segments") == 0)
        snprintf(((struct vmc_ucx_reply *)msg)->tcp_segments, sizeof r.tcp_segments, "1g 1g");
}

int main(int argc, char **argv) {
    const char *real = getenv("VMCUDA_TEST_REAL_UCX_AGENT");
    mode = getenv("VMCUDA_TEST_DAMAGE");
    if (argc != 2 || !real || !mode) {
        fprintf(stderr, "usage: VMCUDA_TEST_REAL_UCX_AGENT=PATH VMCUDA_TEST_DAMAGE=address|segments damaging_ucx_agent FD\n");
        return 2;
    }
    int worker = atoi(argv[1]), sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char num[16];
        int fd = dup(sv[1]); /* without close-on-exec, under the number the agent is told */
        snprintf(num, sizeof num, "%d", fd);
        execl(real, "vmcuda-ucx-agent", num, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    for (;;) {
        struct pollfd p[2] = {{worker, POLLIN, 0}, {sv[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        if ((p[0].revents & (POLLIN | POLLHUP)) && relay(worker, sv[0], NULL) != 0)
            break;
        if ((p[1].revents & (POLLIN | POLLHUP)) && relay(sv[0], worker, damage_reply) != 0)
            break;
    }
    close(sv[0]); /* the real agent exits when its end closes */
    waitpid(pid, NULL, 0);
    return 0;
}

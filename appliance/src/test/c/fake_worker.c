/*
 * TEST FIXTURE, not the product: plays a worker just far enough to test vmcudad's socket hand-off
 * (PROTOCOL.md "Worker <-> daemon"). Built as an ordinary PIE executable, uploaded as the "client
 * binary", rewritten by the daemon and started with the stub libvmcuda-worker.so.
 *  - connects to $VMCUDA_WORKER_SOCKET and writes "WORKER <id> <key>\n";
 *  - receives client sockets with recvmsg/SCM_RIGHTS; writes an empty MANIFEST on each;
 *  - echoes whatever a client sends; when the first (NEW) client hangs up, writes STATS and BYE and
 *    exits 0.
 * argv[0] (the program name from HELLO) selects misbehaviour: "silent" never connects, "crash" exits 3,
 * "chatty" writes 1000 ABORT lines of 400-odd bytes after its WORKER line (tenant code can write on that link).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 8

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void put_u16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }

/* MANIFEST with 0 functions and 0 variables, and this process's uid: header (16) + u32 + u32 + u32 */
static int send_manifest(int fd)
{
    unsigned char f[28] = {0};
    put_u32(f, 0x31434D56u);   /* magic */
    put_u16(f + 4, 4);         /* MANIFEST */
    put_u32(f + 12, 12);       /* len */
    put_u32(f + 24, (uint32_t)getuid());
    return write_all(fd, f, sizeof f);
}

static int recv_fd(int sock)
{
    char data[16];
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {data, sizeof data};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
            return fd;
        }
    }
    return -2; /* data without a descriptor */
}

int main(int argc, char **argv)
{
    (void)argc;
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    fprintf(stderr, "fake worker: argv0=%s CUDA_VISIBLE_DEVICES=%s VMCUDA_BLOCK_SIZE=%s\n", argv[0],
            cvd ? cvd : "(unset)", getenv("VMCUDA_BLOCK_SIZE") ? getenv("VMCUDA_BLOCK_SIZE") : "(unset)");
    if (strcmp(name, "crash") == 0) {
        fprintf(stderr, "fake worker: crashing on purpose\n");
        return 3;
    }
    if (strcmp(name, "silent") == 0) {
        fprintf(stderr, "fake worker: staying silent on purpose\n");
        for (;;) pause();
    }
    const char *path = getenv("VMCUDA_WORKER_SOCKET");
    const char *id = getenv("VMCUDA_SESSION_ID");
    const char *key = getenv("VMCUDA_WORKER_KEY");
    if (!path || !id || !key) {
        fprintf(stderr, "fake worker: VMCUDA_WORKER_SOCKET/SESSION_ID/WORKER_KEY missing\n");
        return 2;
    }
    int us = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (connect(us, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("fake worker: connect");
        return 2;
    }
    char line[256];
    int len = snprintf(line, sizeof line, "WORKER %s %s\n", id, key);
    if (write_all(us, line, (size_t)len) != 0) return 2;
    if (strcmp(name, "chatty") == 0) {
        char pad[400], report[512];
        memset(pad, 'Z', sizeof pad - 1);
        pad[sizeof pad - 1] = 0;
        for (int i = 0; i < 1000; i++) {
            len = snprintf(report, sizeof report, "ABORT forged reason %d %s\n", i, pad);
            if (write_all(us, report, (size_t)len) != 0) return 2;
        }
    }

    int clients[MAX_CLIENTS];
    int nclients = 0;
    long long echoed = 0, calls = 0;
    for (;;) {
        struct pollfd p[MAX_CLIENTS + 1];
        p[0].fd = us;
        p[0].events = POLLIN;
        for (int i = 0; i < nclients; i++) {
            p[i + 1].fd = clients[i];
            p[i + 1].events = POLLIN;
        }
        if (poll(p, (nfds_t)nclients + 1, -1) < 0) {
            if (errno == EINTR) continue;
            return 2;
        }
        /* only the connections this poll looked at have revents: one accepted below waits for the next round */
        int polled = nclients;
        if (p[0].revents) {
            int fd = recv_fd(us);
            if (fd == -1) {
                fprintf(stderr, "fake worker: daemon closed the worker socket\n");
                return 4;
            }
            if (fd >= 0 && nclients < MAX_CLIENTS) {
                send_manifest(fd);
                clients[nclients++] = fd;
                fprintf(stderr, "fake worker: got client %d\n", nclients);
            }
        }
        for (int i = 0; i < polled; i++) {
            if (!p[i + 1].revents) continue;
            char buf[4096];
            ssize_t n = read(clients[i], buf, sizeof buf);
            if (n > 0) {
                write_all(clients[i], buf, (size_t)n);
                echoed += n;
                calls++;
                continue;
            }
            if (i == 0) { /* the NEW connection closed: the session ends */
                len = snprintf(line, sizeof line, "STATS %lld %lld %lld\nBYE 0\n", echoed, echoed, calls);
                write_all(us, line, (size_t)len);
                fprintf(stderr, "fake worker: session over\n");
                return 0;
            }
            close(clients[i]);
            clients[i] = -1; /* keep index 0 as the NEW connection; a closed JOIN just stops being polled */
            p[i + 1].fd = -1;
        }
        /* drop closed JOIN connections from the list (never index 0) */
        int k = 1;
        for (int i = 1; i < nclients; i++) if (clients[i] >= 0) clients[k++] = clients[i];
        if (nclients > 0) nclients = k;
    }
}

/* Descriptors received over a Unix socket (SCM_RIGHTS) from a peer that may not be trusted: the worker's shareable
 * exports (worker_shareable.c) and the UCX agent's rings (ucx_agent.c) each expect exactly one. */
#ifndef VMC_FDS_H
#define VMC_FDS_H

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The descriptor a received message m carried when it carried exactly one and nothing was cut off (MSG_CTRUNC);
 * else -1, every descriptor it carried closed: a peer could send several, in one or several control messages. */
static inline int vmc_take_one_fd(struct msghdr *m) {
    int fd = -1, seen = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int got;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
            if (seen++ == 0)
                fd = got;
            else
                close(got);
        }
    }
    if (fd >= 0 && (seen > 1 || (m->msg_flags & MSG_CTRUNC))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

#endif

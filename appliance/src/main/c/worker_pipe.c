/* Calls through shared memory (vmc_pipe.h; PROTOCOL.md "Calls through shared memory"): a co-located client
 * asks, on a connection's first call, that the connection's bytes go through a pipe in a file it made. This
 * side answers on the socket and reads the next call from the pipe; the socket then only tells that the
 * client is gone (it closes) and carries the worker's last word when the session ends (worker_idle.c), which
 * the client finds there once the pipe is empty. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmc_internal.h"
#include "worker.h"

enum vmc_w_result vmc_w_pipe_attach(struct vmc_wcall *wc) {
    struct vmc_pipe_file_args a;
    vmc_get_pipe_file_args(&wc->in, &a);
    const char *path = vmc_w_text(wc, a.path, a.path_bytes);
    uint64_t size = a.size;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    int fd = c->piped || size > vmc_pipe_file_bytes(VMC_PIPE_MAX_CAPACITY) ? -1 : vmc_w_shm_open_file(path, size);
    if (fd < 0) {
        /* not co-located after all, or asked twice: the connection stays on its socket */
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    /* mapped in now: the first pass through the pipe must not fault at every new page */
    void *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    close(fd);
    const char *why = "cannot map it";
    if (base == MAP_FAILED || vmc_pipe_open(&c->pipe, base, (size_t)size, 0, c->fd, &why) != 0) {
        vmc_w_log("call pipe refused: %s", why);
        if (base != MAP_FAILED)
            munmap(base, (size_t)size);
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    /* the answer still goes on the socket, where the client waits for it; everything after through the pipe */
    vmc_w_reply_status(wc, cudaSuccess);
    if (vmc_w_send_reply(c, wc->id) != 0) {
        munmap(base, (size_t)size);
        memset(&c->pipe, 0, sizeof c->pipe);
        return VMC_W_FATAL;
    }
    wc->replied = 0; /* answered */
    c->piped = 1;
    vmc_w_log("calls through shared memory: a pipe of %llu KiB each way", (unsigned long long)(c->pipe.capacity >> 10));
    return VMC_W_DONE;
}

void vmc_w_pipe_release(struct vmc_wconn *c) {
    vmc_w_completion_release(c); /* the GPU lets go of the pages before this process does */
    if (c->pipe.base)
        munmap(c->pipe.base, c->pipe.size);
    memset(&c->pipe, 0, sizeof c->pipe);
    c->piped = 0;
}

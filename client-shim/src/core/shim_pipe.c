#include "shim_pipe.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim_call.h"
#include "shim_config.h"
#include "shim_session.h"
#include "shim_shm.h"
#include "vmc_api.h"
#include "vmc_internal.h"

/* Each direction's ring. A call frame is at most a few hundred bytes and an upload that is not bulk
 * (below VMC_SHM_MIN_BYTES, which the DMA ring carries) at most 256 KiB: 1 MiB holds several in flight. */
#define PIPE_CAPACITY (1u << 20)

void vmc_pipe_attach(struct vmc_conn *conn) {
    conn->pipe_state = -1; /* also what the attach call below sees: it goes over the socket */
    if (!vmc_client_config()->calls_in_region || !vmc_shm_colocated())
        return;
    size_t size = vmc_pipe_file_bytes(PIPE_CAPACITY);
    char path[128];
    /* reserved: a pipe whose pages /dev/shm cannot give later would kill the program with SIGBUS */
    void *base = vmc_shm_new_file(size, 1, path, sizeof path);
    if (!base)
        return;
    const char *why = NULL;
    /* a failed attach must not change what cudaGetLastError tells the program */
    int last_error = vmc_local_error_take(0);
    struct vmc_call c;
    cudaError_t st = vmc_pipe_format(base, size, PIPE_CAPACITY) == 0 ? vmc_call_begin_ex(&c, VMC_API_vmc_PipeAttach, 0, 0)
                                                                     : cudaErrorInvalidValue;
    if (st == cudaSuccess) {
        vmc_put_pipe_file_args(vmc_call_args(&c),
                               &(struct vmc_pipe_file_args){.path_bytes = (uint32_t)strlen(path), .path = path, .size = size});
        st = vmc_call_finish(&c);
    }
    unlink(path);
    vmc_local_error_restore(last_error);
    /* The worker reads its next call from the pipe once it has replied; this side sends nothing before it has
     * read that reply from the socket, so the switch needs no more than this. */
    if (st != cudaSuccess || vmc_pipe_open(&conn->pipe, base, size, 1, conn->fd, &why) != 0) {
        munmap(base, size);
        if (st == cudaSuccess) /* the worker took it, this side cannot: the connection cannot go on */
            vmc_session_lost(conn, why);
        return;
    }
    conn->pipe_state = 1;
}

void vmc_pipe_forget(struct vmc_conn *conn) {
    if (conn->pipe.base)
        munmap(conn->pipe.base, conn->pipe.size);
    memset(&conn->pipe, 0, sizeof conn->pipe);
    conn->pipe_state = -1;
}

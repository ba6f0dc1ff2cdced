/* Calls through shared memory for a co-located client (vmc_pipe.h; PROTOCOL.md "Calls through shared
 * memory"): each connection asks its worker, on its first call, to take its byte stream over a pipe in a
 * file both map. Where that cannot be (not co-located, switched off, the worker refuses), the connection
 * goes on over its socket, as before. */
#ifndef SHIM_PIPE_H
#define SHIM_PIPE_H

struct vmc_conn;

/* Tries once per connection; afterwards conn->pipe_state is 1 (the pipe carries it) or -1 (the socket). */
void vmc_pipe_attach(struct vmc_conn *conn);
/* Drops the connection's pipe (closed, or the worker went back to the socket). */
void vmc_pipe_forget(struct vmc_conn *conn);

#endif

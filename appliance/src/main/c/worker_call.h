/* One CALL frame being served: argument readers for the generated dispatch
 * (vmc_worker_dispatch.c, from cuda-api.spec) and the hand-written operations, and the reply writers. */
#ifndef WORKER_CALL_H
#define WORKER_CALL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"

struct vmc_wconn;

struct vmc_wcall {
    struct vmc_wconn *conn;
    uint32_t id;
    int async;
    struct vmc_in in;      /* the CALL payload */
    char *strings[4];      /* @str arguments, freed after the call */
    int n_strings;
    struct { void *p; uint64_t count; } arrays[4]; /* @in[N]/@out[N] arguments, freed after the call */
    int n_arrays;
    uint64_t number;       /* the client's number for the call (PROTOCOL.md "Calls from several threads"), 0: none */
    int order_released;    /* the calls numbered after it may go (vmc_w_order_submitted) */
    int replied;
};

enum vmc_w_result {
    VMC_W_DONE,      /* replied (sync) or recorded the outcome (async) */
    VMC_W_BAD_ARGS,  /* the payload did not match the call's arguments */
    VMC_W_UNKNOWN,   /* no such call id */
    VMC_W_FATAL,     /* the connection broke while serving the call */
    VMC_W_CLOSED,    /* the client closed the connection while the call waited for it to have work: a normal end */
};

void vmc_w_arg(struct vmc_wcall *wc, void *p, size_t n);
/* @out/@in: returns storage filled with the client's value, or NULL if the client passed NULL. */
void *vmc_w_arg_pointee(struct vmc_wcall *wc, void *storage, size_t n);
/* @func/@symbol: the worker's own host pointer for the client's registration index (NULL if unknown). */
const void *vmc_w_arg_func(struct vmc_wcall *wc);
const void *vmc_w_arg_symbol(struct vmc_wcall *wc);
const char *vmc_w_arg_str(struct vmc_wcall *wc);
/* A NUL-terminated copy of a text field of a typed layout (its n bytes as read), freed after the call; NULL, and
 * the arguments marked bad, when the field was missing from the frame. */
const char *vmc_w_text(struct vmc_wcall *wc, const void *bytes, uint32_t n);
/* @in[N]/@out[N]: storage for `count` elements of `size` bytes (the client's for @in, zeroed for @out), or
 * NULL for a NULL array; a count other than `count` marks the arguments bad. */
void *vmc_w_arg_array(struct vmc_wcall *wc, size_t size, uint64_t count);
/* An asynchronous call whose work is all queued says so before it waits for the GPU (the calls numbered
 * after it may then be dispatched). Idempotent; the dispatch loop does it after any other async call. */
void vmc_w_order_submitted(struct vmc_wcall *wc);
/* Frees what the argument readers allocated for the call. */
void vmc_w_call_release(struct vmc_wcall *wc);
/* All arguments read and nothing left over. */
int vmc_w_args_ok(struct vmc_wcall *wc);

/* Starts the REPLY (status + the connection's pending async error). */
void vmc_w_reply_status(struct vmc_wcall *wc, cudaError_t st);
void vmc_w_reply_pointee(struct vmc_wcall *wc, const void *p, size_t n);
void vmc_w_reply_u32(struct vmc_wcall *wc, uint32_t v);
/* Where a typed reply layout is written after vmc_w_reply_status (vmc_put_*_reply of vmc_internal.h). */
struct vmc_out *vmc_w_reply_out(struct vmc_wcall *wc);
/* An @out[N] array: the first min(room, count) elements (room: what vmc_w_arg_array gave it) when the call
 * succeeded, none when it failed. */
void vmc_w_reply_array(struct vmc_wcall *wc, const void *p, size_t size, uint64_t count, int succeeded);
/* A char @out[N] array (a log): its text up to and with its NUL, whether the call succeeded or not. */
void vmc_w_reply_text(struct vmc_wcall *wc, const char *p, uint64_t count);
/* Records the outcome of an async call (the first error is reported with the next REPLY). */
void vmc_w_async_done(struct vmc_wcall *wc, cudaError_t st);

enum vmc_w_result vmc_worker_dispatch_generated(struct vmc_wcall *wc);

#endif

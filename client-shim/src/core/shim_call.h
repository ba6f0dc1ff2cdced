/* The client side of one forwarded CUDA call: used by the generated stubs (vmc_client_stubs.c)
 * and by the hand-written functions (memory, launches). */
#ifndef SHIM_CALL_H
#define SHIM_CALL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"

struct vmc_conn;

struct vmc_call {
    struct vmc_conn *conn;
    uint32_t id;
    int async;
    int replied;          /* a REPLY was received: out-values may be read from `reply` */
    uint64_t number;      /* the call's number in this process's order of sending (set when it is sent) */
    struct vmc_in reply;  /* REPLY payload after status and async_error */
};

/* Opens the calling thread's connection if needed and starts a CALL frame.
 * Returns cudaSuccess, or the error every call gets while no appliance session is possible. */
cudaError_t vmc_call_begin(struct vmc_call *c, uint32_t id, int async);
/* The same; runtime_call says whether the call may change the worker thread's context state (runtime calls
 * do: vmc_call_begin assumes so for every id below the driver's). */
cudaError_t vmc_call_begin_ex(struct vmc_call *c, uint32_t id, int async, int runtime_call);
/* How many such calls this process has made: the driver front end's cached context answers are valid
 * while it does not change. */
uint64_t vmc_runtime_epoch(void);
/* Runtime calls that can change a thread's current context or a context's limits (cudaSetDevice,
 * cudaSetDeviceFlags, cudaInitDevice, cudaDeviceReset, cudaDeviceSetLimit), counted before they are sent and
 * again once answered: the driver front end keeps a known current context, a primary context's active state and
 * limits across the runtime's other calls (which use the current context and change none of them). */
uint64_t vmc_runtime_state_epoch(void);
/* The runtime front end's cudaDeviceReset succeeded: the driver front end, which registers the hook, forgets what
 * it remembered of functions and modules (their handles may come back naming others). */
void vmc_set_device_reset_hook(void (*hook)(void));
void vmc_device_reset_done(void);
/* A runtime call answered on the client returns `status` (recorded as this thread's last error when it is
 * one, as NVIDIA's runtime does); returns status. */
int vmc_local_error(int status);
/* That last error, unless a forwarded call failed since (then the worker's runtime holds the newer one);
 * cleared when `clear` (cudaGetLastError does, cudaPeekAtLastError does not). */
int vmc_local_error_take(int clear);
/* 1 when this thread sent an asynchronous runtime call after that last error: a failure the worker
 * reports for it (it surfaces later, as CUDA's do) is the newer error. */
int vmc_async_sent_since_local_error(void);
/* Puts back a last error taken without clearing (cudaPeekAtLastError), as it was. */
void vmc_local_error_restore(int status);
void vmc_arg(struct vmc_call *c, const void *p, size_t n);
/* @out/@in pointer: presence byte, then the pointee's current bytes. */
void vmc_arg_pointee(struct vmc_call *c, const void *p, size_t n);
void vmc_arg_func(struct vmc_call *c, const void *hostFun);
void vmc_arg_symbol(struct vmc_call *c, const void *hostVar);
void vmc_arg_str(struct vmc_call *c, const char *s);
/* An array argument (cuda-driver.spec's @in[N] / @out[N]) of `count` elements of `size` bytes: sent after
 * every other argument, with its elements when `with_data` (@in), as room to fill otherwise (@out). */
void vmc_arg_array(struct vmc_call *c, const void *p, size_t size, uint64_t count, int with_data);
void vmc_arg_u8(struct vmc_call *c, uint8_t v);
/* Where an internal operation's arguments are written (vmc_put_*_args of the generated vmc_internal.h). */
struct vmc_out *vmc_call_args(struct vmc_call *c);
void vmc_arg_u32(struct vmc_call *c, uint32_t v);
void vmc_arg_u64(struct vmc_call *c, uint64_t v);

/* 1 once any thread of this process has begun a stream capture (runtime or driver API). */
int vmc_capture_ever_begun(void);
/* 1 once the worker has answered a call with an error that leaves the context unusable (a kernel's illegal
 * address, a launch failure, ...) or the session's devices unavailable. */
int vmc_context_fault_seen(void);

/* Sends the frame. Sync calls wait for the REPLY and return its status; async calls return cudaSuccess. */
cudaError_t vmc_call_finish(struct vmc_call *c);
/* A function the client core calls with the call's id and status after each synchronous call's reply, on the
 * calling thread: the driver front end's mirrors of mapped host memory are brought up to date at synchronising
 * calls that succeeded (drv_mirror.c). Set once; NULL (the default) costs one test. */
void vmc_call_set_reply_hook(void (*hook)(uint32_t id, int status));
/* A synchronous call that returns nothing but its status, whose work the worker may have the GPU signal through the
 * pipe's completion word (PROTOCOL.md "Completion word"): returns cudaSuccess as soon as the word says this call is
 * done, leaving its REPLY to be read before anything else from the connection; else as vmc_call_finish. */
cudaError_t vmc_call_finish_signalled(struct vmc_call *c);
/* Reads the REPLY of the connection's call that returned on the completion word (vmc_conn_read does, before anything
 * else). 0, or -1 when the connection broke (the session is lost). An error it carries (the stream's, after the
 * copy) is the worker's last error now, and a context-wide one is seen as such. */
struct vmc_conn;
int vmc_call_settle_owed(struct vmc_conn *conn);
/* Sync call whose frame is followed by `count` raw bytes from `data` (host-to-device bulk). */
cudaError_t vmc_call_finish_upload(struct vmc_call *c, const void *data, size_t count);
/* Sync call whose REPLY, when successful, is followed by `count` raw bytes into `dst`
 * and a trailing REPLY (device-to-host bulk). */
cudaError_t vmc_call_finish_download(struct vmc_call *c, void *dst, size_t count);
/* The two halves of vmc_call_finish for calls that exchange more than one message (the shared-memory
 * fast path): send the CALL frame; later wait for a REPLY (callable more than once per call). */
cudaError_t vmc_call_send(struct vmc_call *c);
cudaError_t vmc_call_await(struct vmc_call *c);
/* Copies the next n reply bytes into p (when p is not NULL and the call was answered). */
void vmc_ret_pointee(struct vmc_call *c, void *p, size_t n);
/* The elements an @out[N] array came back with (at most the `room` it was sent with; the rest of the room
 * is set to zero, as the driver sets it to NULL), when the call succeeded; a failed call leaves it alone. */
void vmc_ret_array(struct vmc_call *c, void *p, size_t size, uint64_t room, int succeeded);
uint32_t vmc_ret_u32(struct vmc_call *c);
uint64_t vmc_ret_u64(struct vmc_call *c);
/* The call was answered and every value read from the answer so far was there. */
int vmc_call_reply_ok(const struct vmc_call *c);

#endif

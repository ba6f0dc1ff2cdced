#include "shim_call.h"

#include <stdio.h>
#include <string.h>
#include "call_stats.h"
#include "shim_pipe.h"
#include "shim_registry.h"
#include "shim_session.h"
#include "vmc_api.h"
#include "vmc_drv_api.h"

/* Counts calls that may have changed the worker thread's CUDA context state behind the driver front
 * end's back (every runtime call may initialise the runtime, which makes its primary context current). */
static uint64_t runtime_epoch;

/* The last error of a runtime call this thread's client answered itself (NVIDIA's runtime keeps one last
 * error per thread; the worker's runtime keeps the one of the forwarded calls). */
static __thread int local_error;
/* Asynchronous runtime calls this thread sent, and how many it had sent when local_error was recorded: an
 * error the worker reports for one sent later is the newer one. */
static __thread uint64_t async_sent, async_sent_at_local_error;

int vmc_local_error(int status) {
    if (status != 0) {
        local_error = status;
        async_sent_at_local_error = async_sent;
    }
    return status;
}

int vmc_local_error_take(int clear) {
    int e = local_error;
    if (clear)
        local_error = 0;
    return e;
}

int vmc_async_sent_since_local_error(void) { return async_sent > async_sent_at_local_error; }

void vmc_local_error_restore(int status) { local_error = status; }

uint64_t vmc_runtime_epoch(void) { return __atomic_load_n(&runtime_epoch, __ATOMIC_ACQUIRE); }

static uint64_t runtime_state_epoch;

uint64_t vmc_runtime_state_epoch(void) { return __atomic_load_n(&runtime_state_epoch, __ATOMIC_ACQUIRE); }

static int changes_runtime_state(uint32_t id) {
    switch (id) {
    case VMC_API_cudaSetDevice:
    case VMC_API_cudaSetDeviceFlags:
    case VMC_API_cudaInitDevice:
    case VMC_API_cudaDeviceReset:
    case VMC_API_cudaDeviceSetLimit: return 1;
    default: return 0;
    }
}

static void (*device_reset_hook)(void);

void vmc_set_device_reset_hook(void (*hook)(void)) { __atomic_store_n(&device_reset_hook, hook, __ATOMIC_RELEASE); }

void vmc_device_reset_done(void) {
    void (*hook)(void) = __atomic_load_n(&device_reset_hook, __ATOMIC_ACQUIRE);
    if (hook)
        hook();
}

cudaError_t vmc_call_begin(struct vmc_call *c, uint32_t id, int async) {
    return vmc_call_begin_ex(c, id, async, id < VMC_DRV_FIRST_ID);
}

/* Stream capture begun by any thread of this process through either front end (set before the call is sent, so
 * that a query racing with it is ordered before it), and an error that leaves the context unusable reported by the
 * worker: until either, the driver front end answers cuStreamIsCapturing on the default streams itself. */
static int capture_begun, context_fault;

static int begins_capture(uint32_t id) {
    switch (id) {
    case VMC_API_cudaStreamBeginCapture:
    case VMC_API_cudaStreamBeginCapture_ptsz:
    case VMC_DRV_cuStreamBeginCapture:
    case VMC_DRV_cuStreamBeginCapture_ptsz:
    case VMC_DRV_cuStreamBeginCapture_v2:
    case VMC_DRV_cuStreamBeginCapture_v2_ptsz:
    case VMC_DRV_cuStreamBeginCaptureToGraph:
    case VMC_DRV_cuStreamBeginCaptureToGraph_ptsz: return 1;
    default: return 0;
    }
}

/* The sticky errors of CUDA's runtime and driver (the same numbers in both): the context is unusable after them,
 * and every call says so. 46: the session's devices are gone. */
static int is_context_fault(int32_t status) {
    return status == 46 || status == 214 || status == 700 || status == 702 || (status >= 710 && status <= 719);
}

int vmc_capture_ever_begun(void) { return __atomic_load_n(&capture_begun, __ATOMIC_ACQUIRE); }
int vmc_context_fault_seen(void) { return __atomic_load_n(&context_fault, __ATOMIC_ACQUIRE); }

cudaError_t vmc_call_begin_ex(struct vmc_call *c, uint32_t id, int async, int runtime_call) {
    cudaError_t err = cudaSuccess;
    if (begins_capture(id))
        __atomic_store_n(&capture_begun, 1, __ATOMIC_RELEASE);
    if (runtime_call)
        __atomic_add_fetch(&runtime_epoch, 1, __ATOMIC_ACQ_REL);
    if (runtime_call && changes_runtime_state(id))
        __atomic_add_fetch(&runtime_state_epoch, 1, __ATOMIC_ACQ_REL);
    if (runtime_call && async)
        async_sent++;
    memset(c, 0, sizeof *c);
    c->id = id;
    c->async = async;
    vmc_call_stats_count(id, async);
    c->conn = vmc_thread_conn(&err);
    if (!c->conn)
        return err;
    if (c->conn->pipe_state == 0)
        vmc_pipe_attach(c->conn); /* before this call's frame: attaching is a call of its own */
    vmc_out_begin_frame(&c->conn->out);
    vmc_out_u64(&c->conn->out, 0); /* the call's number, set when it is sent */
    return cudaSuccess;
}

void vmc_arg(struct vmc_call *c, const void *p, size_t n) { vmc_out_bytes(&c->conn->out, p, n); }
void vmc_arg_u8(struct vmc_call *c, uint8_t v) { vmc_out_u8(&c->conn->out, v); }

void vmc_arg_array(struct vmc_call *c, const void *p, size_t size, uint64_t count, int with_data) {
    struct vmc_out *out = &c->conn->out;
    if (!p) {
        vmc_out_u8(out, VMC_ARRAY_NULL);
        return;
    }
    /* what cannot travel is refused by the worker (CUDA_ERROR_INVALID_VALUE), not sent: elements that would
     * not fit in this frame, room beyond what the worker makes */
    int fits = size && count <= (with_data ? VMC_MAX_CALL_PAYLOAD : VMC_ARRAY_MAX_ROOM_BYTES) / size &&
               (!with_data || out->len + 9 + count * size <= VMC_HEADER_BYTES + VMC_MAX_CALL_PAYLOAD);
    vmc_out_u8(out, !fits ? VMC_ARRAY_TOO_LARGE : with_data ? VMC_ARRAY_DATA : VMC_ARRAY_ROOM);
    vmc_out_u64(out, count);
    if (fits && with_data)
        vmc_out_bytes(out, p, (size_t)count * size);
}
void vmc_arg_u32(struct vmc_call *c, uint32_t v) { vmc_out_u32(&c->conn->out, v); }
struct vmc_out *vmc_call_args(struct vmc_call *c) { return &c->conn->out; }
void vmc_arg_u64(struct vmc_call *c, uint64_t v) { vmc_out_u64(&c->conn->out, v); }

void vmc_arg_pointee(struct vmc_call *c, const void *p, size_t n) {
    vmc_out_u8(&c->conn->out, p != NULL);
    if (p)
        vmc_out_bytes(&c->conn->out, p, n);
}

void vmc_arg_func(struct vmc_call *c, const void *hostFun) {
    const struct vmc_kernel *k = vmc_kernel_by_host_fun(hostFun);
    vmc_out_u32(&c->conn->out, k ? k->index : VMC_NO_INDEX);
}

void vmc_arg_symbol(struct vmc_call *c, const void *hostVar) {
    const struct vmc_var *v = vmc_var_by_host_var(hostVar);
    vmc_out_u32(&c->conn->out, v ? v->index : VMC_NO_INDEX);
}

void vmc_arg_str(struct vmc_call *c, const char *s) {
    if (!s) {
        vmc_out_u32(&c->conn->out, VMC_NO_INDEX);
        return;
    }
    size_t n = strlen(s);
    vmc_out_u32(&c->conn->out, (uint32_t)n);
    vmc_out_bytes(&c->conn->out, s, n);
}

/* Up to this many bytes of bulk data ride in the same write as their CALL frame. */
#define SMALL_UPLOAD (64u << 10)

/* The number of this process's next call: the worker dispatches the calls of all this process's connections
 * in this order (PROTOCOL.md "Calls from several threads"). Taken just before the frame is written, so
 * that a call another thread makes after this one returned has a higher number. */
static uint64_t next_call_number = 1;

static int finish_frame(struct vmc_call *c) {
    struct vmc_conn *conn = c->conn;
    if (conn->out.broken || conn->out.len - VMC_HEADER_BYTES > VMC_MAX_CALL_PAYLOAD)
        return -1;
    /* The callback channel's long poll is not the program's call: it carries "callback T ran", which the GPU
     * may be waiting for while earlier calls cannot be dispatched (a full launch queue behind a host function);
     * number 0 keeps it out of the order. */
    uint64_t seq = c->id == VMC_API_vmc_CallbackChannel ? 0 : __atomic_fetch_add(&next_call_number, 1, __ATOMIC_SEQ_CST);
    c->number = seq;
    for (int i = 0; i < 8; i++)
        conn->out.data[VMC_HEADER_BYTES + i] = (uint8_t)(seq >> (8 * i));
    vmc_out_finish_frame(&conn->out, VMC_CALL, (c->async ? VMC_FLAG_ASYNC : 0) | VMC_FLAG_ORDERED, c->id);
    return 0;
}

static int send_frame(struct vmc_call *c) {
    return finish_frame(c) == 0 ? vmc_conn_write(c->conn, c->conn->out.data, c->conn->out.len) : -1;
}

/* Waits for the REPLY to this call; returns its status, or the session-lost error. */
static cudaError_t await_reply(struct vmc_call *c) {
    struct vmc_frame_header h;
    if (vmc_conn_read_frame(c->conn, &h) != 0)
        return vmc_session_lost(c->conn, "connection to the worker closed");
    if (h.type == VMC_ERROR) {
        /* The appliance ended the session and said why (idle release, a protocol error, ...). */
        struct vmc_in in;
        char why[600];
        vmc_in_init(&in, c->conn->payload, h.len);
        (void)vmc_in_u32(&in);
        uint16_t n = vmc_in_u16(&in);
        const uint8_t *text = vmc_in_view(&in, n);
        snprintf(why, sizeof why, "%.*s", text ? (int)n : 0, text ? (const char *)text : "the worker sent an error");
        return vmc_session_lost(c->conn, why);
    }
    if (h.type != VMC_REPLY || h.id != c->id || h.len < 8)
        return vmc_session_lost(c->conn, "unexpected frame from the worker");
    vmc_in_init(&c->reply, c->conn->payload, h.len);
    int32_t status = (int32_t)vmc_in_u32(&c->reply);
    int32_t async_error = (int32_t)vmc_in_u32(&c->reply); /* the worker thread's own last-error state holds it */
    if (is_context_fault(status) || is_context_fault(async_error))
        __atomic_store_n(&context_fault, 1, __ATOMIC_RELEASE);
    c->replied = 1;
    if (status != 0 && c->id < VMC_DRV_FIRST_ID)
        local_error = 0; /* the worker's runtime now holds a newer last error than any answered here */
    return (cudaError_t)status;
}

static void (*reply_hook)(uint32_t id, int status);

void vmc_call_set_reply_hook(void (*hook)(uint32_t id, int status)) { __atomic_store_n(&reply_hook, hook, __ATOMIC_RELEASE); }

static void after_reply(uint32_t id, int status) {
    if (changes_runtime_state(id)) /* what another thread learnt while the call ran is stale too */
        __atomic_add_fetch(&runtime_state_epoch, 1, __ATOMIC_ACQ_REL);
    void (*hook)(uint32_t, int) = __atomic_load_n(&reply_hook, __ATOMIC_ACQUIRE);
    if (hook)
        hook(id, status);
}

cudaError_t vmc_call_finish(struct vmc_call *c) {
    if (send_frame(c) != 0)
        return vmc_session_lost(c->conn, c->conn->out.broken ? "out of memory building a call" : "cannot send to the worker");
    if (c->async)
        return cudaSuccess;
    cudaError_t st = await_reply(c);
    after_reply(c->id, st);
    return st;
}

cudaError_t vmc_call_finish_signalled(struct vmc_call *c) {
    struct vmc_conn *conn = c->conn;
    /* the number is the call's once the frame is finished; read the word before it can say this call's end */
    uint32_t before = conn->pipe_state == 1 ? __atomic_load_n(&conn->pipe.completion->done, __ATOMIC_ACQUIRE) : 0;
    if (send_frame(c) != 0)
        return vmc_session_lost(conn, conn->out.broken ? "out of memory building a call" : "cannot send to the worker");
    uint32_t number = (uint32_t)c->number;
    /* 0 is the word's initial value, never waited for; nor a number it said already (2^32 calls ago): the worker
     * does not signal such a call */
    if (conn->pipe_state == 1 && number != 0 && before != number) {
        /* the previous such call's REPLY first: it would otherwise look like this call's answer arriving */
        if (conn->owed_reply_id && vmc_call_settle_owed(conn) != 0)
            return vmc_session_lost(conn, "connection to the worker closed");
        long poll = vmc_conn_poll_ns(conn);
        if (poll > 0 && vmc_pipe_poll_done(&conn->pipe, number, poll) == 1) {
            vmc_pipe_mark_seen(&conn->pipe, number);
            conn->owed_reply_id = c->id;
            after_reply(c->id, cudaSuccess);
            return cudaSuccess;
        }
    }
    cudaError_t st = await_reply(c);
    after_reply(c->id, st);
    return st;
}

int vmc_call_settle_owed(struct vmc_conn *conn) {
    struct vmc_call owed = {.conn = conn, .id = conn->owed_reply_id};
    conn->owed_reply_id = 0; /* before reading: the read below goes through vmc_conn_read */
    (void)await_reply(&owed); /* its status needs no more: await_reply noted what matters of it */
    return owed.replied ? 0 : -1;
}

cudaError_t vmc_call_finish_upload(struct vmc_call *c, const void *data, size_t count) {
    int rc;
    if (count <= SMALL_UPLOAD) {
        /* Latency-bound: frame and data in one write (the data is outside the frame's length). */
        rc = finish_frame(c);
        vmc_out_bytes(&c->conn->out, data, count);
        rc = rc || c->conn->out.broken || vmc_conn_write(c->conn, c->conn->out.data, c->conn->out.len);
    } else {
        /* Bulk data is sent straight from the application's buffer. */
        rc = send_frame(c) || vmc_conn_write(c->conn, data, count);
    }
    if (rc != 0)
        return vmc_session_lost(c->conn, "cannot send to the worker");
    if (c->async)
        return cudaSuccess;
    return await_reply(c);
}

cudaError_t vmc_call_finish_download(struct vmc_call *c, void *dst, size_t count) {
    if (send_frame(c) != 0)
        return vmc_session_lost(c->conn, "cannot send to the worker");
    cudaError_t st = await_reply(c);
    if (!c->replied || st != cudaSuccess)
        return st;
    /* The data goes straight into the application's buffer: no staging copy on the client. */
    if (vmc_conn_read(c->conn, dst, count) != 0)
        return vmc_session_lost(c->conn, "connection closed during a device-to-host copy");
    return await_reply(c);
}

cudaError_t vmc_call_send(struct vmc_call *c) {
    if (send_frame(c) != 0)
        return vmc_session_lost(c->conn, "cannot send to the worker");
    return cudaSuccess;
}

cudaError_t vmc_call_await(struct vmc_call *c) { return await_reply(c); }

void vmc_ret_pointee(struct vmc_call *c, void *p, size_t n) {
    if (c->replied && p)
        vmc_in_bytes(&c->reply, p, n);
}

void vmc_ret_array(struct vmc_call *c, void *p, size_t size, uint64_t room, int succeeded) {
    if (!c->replied)
        return;
    uint64_t n = vmc_in_u64(&c->reply);
    if (n > room || (n && !p) || (n && !succeeded)) {
        c->reply.bad = 1;
        return;
    }
    if (!succeeded || !p)
        return; /* a failed call leaves the caller's array as it was */
    vmc_in_bytes(&c->reply, p, (size_t)n * size);
    /* the driver sets the entries past the ones it filled to NULL */
    memset((char *)p + (size_t)n * size, 0, (size_t)(room - n) * size);
}

uint32_t vmc_ret_u32(struct vmc_call *c) { return c->replied ? vmc_in_u32(&c->reply) : 0; }

uint64_t vmc_ret_u64(struct vmc_call *c) { return c->replied ? vmc_in_u64(&c->reply) : 0; }

int vmc_call_reply_ok(const struct vmc_call *c) { return c->replied && !c->reply.bad; }

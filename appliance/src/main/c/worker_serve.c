/* Serving one client connection: read CALL frames, validate them, run them on this thread's CUDA
 * state, and answer sync calls with a REPLY (preceded by the process's captured output). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "vmc_api.h"
#include "vmc_tls.h"
#include "vmc_drv_api.h"
#include "vmc_internal.h"
#include "worker.h"
#include "worker_driver.h"

/* ---- argument readers ---- */

void vmc_w_arg(struct vmc_wcall *wc, void *p, size_t n) { vmc_in_bytes(&wc->in, p, n); }

void *vmc_w_arg_pointee(struct vmc_wcall *wc, void *storage, size_t n) {
    if (!vmc_in_u8(&wc->in))
        return NULL;
    vmc_in_bytes(&wc->in, storage, n);
    return storage;
}

const void *vmc_w_arg_func(struct vmc_wcall *wc) { return vmc_w_kernel_host_fun(vmc_in_u32(&wc->in)); }
const void *vmc_w_arg_symbol(struct vmc_wcall *wc) { return vmc_w_var_host_var(vmc_in_u32(&wc->in)); }

const char *vmc_w_text(struct vmc_wcall *wc, const void *bytes, uint32_t n) {
    if (!bytes || wc->in.bad || wc->n_strings == (int)(sizeof wc->strings / sizeof wc->strings[0])) {
        wc->in.bad = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1); /* n is bounded by the payload, itself bounded by the limit */
    if (!s) {
        wc->in.bad = 1;
        return NULL;
    }
    memcpy(s, bytes, n);
    s[n] = 0;
    wc->strings[wc->n_strings++] = s;
    return s;
}

const char *vmc_w_arg_str(struct vmc_wcall *wc) {
    uint32_t n = vmc_in_u32(&wc->in);
    if (n == VMC_NO_INDEX || wc->in.bad)
        return NULL;
    return vmc_w_text(wc, vmc_in_view(&wc->in, n), n);
}

void *vmc_w_arg_array(struct vmc_wcall *wc, size_t size, uint64_t count) {
    unsigned how = vmc_in_u8(&wc->in);
    if (how == VMC_ARRAY_NULL || wc->in.bad)
        return NULL;
    uint64_t sent = vmc_in_u64(&wc->in);
    /* the driver takes its count from N: a buffer of any other size would let it read or write past ours */
    if (how > VMC_ARRAY_DATA || sent != count || !size ||
        count > (how == VMC_ARRAY_DATA ? VMC_MAX_CALL_PAYLOAD : VMC_ARRAY_MAX_ROOM_BYTES) / size ||
        wc->n_arrays == (int)(sizeof wc->arrays / sizeof wc->arrays[0])) {
        wc->in.bad = 1;
        return NULL;
    }
    size_t bytes = (size_t)count * size;
    void *p = calloc(1, bytes ? bytes : 1);
    const uint8_t *data = how == VMC_ARRAY_DATA ? vmc_in_view(&wc->in, bytes) : NULL;
    if (!p || (how == VMC_ARRAY_DATA && !data)) {
        free(p);
        wc->in.bad = 1;
        return NULL;
    }
    if (data)
        memcpy(p, data, bytes);
    wc->arrays[wc->n_arrays].p = p;
    wc->arrays[wc->n_arrays++].count = count;
    return p;
}

void vmc_w_order_submitted(struct vmc_wcall *wc) {
    /* before the next call of the client's order may run: an asynchronous call (a launch is a printf flush point)
     * makes the next reply look at the output pipes, whichever thread gives it */
    if (wc->async && !wc->order_released)
        vmc_w_output_call_served(wc->id);
    if (wc->number && !wc->order_released)
        vmc_w_order_done(wc->number);
    wc->order_released = 1;
}

void vmc_w_call_release(struct vmc_wcall *wc) {
    for (int i = 0; i < wc->n_strings; i++)
        free(wc->strings[i]);
    for (int i = 0; i < wc->n_arrays; i++)
        free(wc->arrays[i].p);
    wc->n_strings = wc->n_arrays = 0;
}

int vmc_w_args_ok(struct vmc_wcall *wc) { return !wc->in.bad && wc->in.pos == wc->in.len; }

/* ---- reply writers ---- */

void vmc_w_reply_status(struct vmc_wcall *wc, cudaError_t st) {
    struct vmc_wconn *c = wc->conn;
    vmc_out_begin_frame(&c->reply);
    vmc_out_u32(&c->reply, (uint32_t)st);
    vmc_out_u32(&c->reply, (uint32_t)c->async_error);
    c->async_error = cudaSuccess;
    wc->replied = 1;
}

void vmc_w_reply_pointee(struct vmc_wcall *wc, const void *p, size_t n) {
    if (p)
        vmc_out_bytes(&wc->conn->reply, p, n);
}

void vmc_w_reply_u32(struct vmc_wcall *wc, uint32_t v) { vmc_out_u32(&wc->conn->reply, v); }

struct vmc_out *vmc_w_reply_out(struct vmc_wcall *wc) { return &wc->conn->reply; }

void vmc_w_reply_text(struct vmc_wcall *wc, const char *p, uint64_t count) {
    uint64_t room = 0;
    for (int i = 0; i < wc->n_arrays; i++)
        if (p && wc->arrays[i].p == p)
            room = wc->arrays[i].count;
    uint64_t m = count < room ? count : room;
    uint64_t n = p ? strnlen(p, (size_t)m) : 0;
    if (n < m)
        n++; /* its NUL */
    vmc_out_u64(&wc->conn->reply, n);
    if (n)
        vmc_out_bytes(&wc->conn->reply, p, (size_t)n);
}

void vmc_w_reply_array(struct vmc_wcall *wc, const void *p, size_t size, uint64_t count, int succeeded) {
    uint64_t room = 0;
    for (int i = 0; i < wc->n_arrays; i++)
        if (p && succeeded && wc->arrays[i].p == p)
            room = wc->arrays[i].count;
    uint64_t n = count < room ? count : room;
    vmc_out_u64(&wc->conn->reply, n);
    if (n)
        vmc_out_bytes(&wc->conn->reply, p, (size_t)n * size);
}

void vmc_w_async_done(struct vmc_wcall *wc, cudaError_t st) {
    if (st != cudaSuccess && wc->conn->async_error == cudaSuccess)
        wc->conn->async_error = st;
}

/* Sends the REPLY built in c->reply. Through a pipe, writing never fails for a client that is gone: where its
 * answer ends is noted, so that a client that dies before reading it counts as lost during the call (serve()). */
static int answer(struct vmc_wconn *c) {
    if (vmc_w_write(c, c->reply.data, c->reply.len) != 0)
        return -1;
    if (c->piped) {
        c->answered_to = vmc_pipe_written(&c->pipe);
        c->answered_number = c->answering_number;
    }
    return 0;
}

int vmc_w_send_reply_with_data(struct vmc_wconn *c, uint32_t id, const void *data, size_t n, cudaError_t trailer) {
    if (vmc_w_output_flush(c, id) != 0)
        return -1;
    vmc_out_finish_frame(&c->reply, VMC_REPLY, 0, id);
    vmc_out_bytes(&c->reply, data, n);
    size_t trailer_at = c->reply.len;
    uint8_t zero[VMC_HEADER_BYTES] = {0};
    vmc_out_bytes(&c->reply, zero, sizeof zero);
    vmc_out_u32(&c->reply, (uint32_t)trailer);
    vmc_out_u32(&c->reply, 0);
    if (c->reply.broken)
        return -1;
    vmc_encode_header(c->reply.data + trailer_at, VMC_REPLY, 0, id, 8);
    return answer(c);
}

int vmc_w_send_reply(struct vmc_wconn *c, uint32_t id) {
    if (vmc_w_output_flush(c, id) != 0)
        return -1;
    if (!c->reply.broken && c->reply.len > VMC_HEADER_BYTES + VMC_MAX_CALL_PAYLOAD) {
        /* an answer larger than one frame (a graph with tens of thousands of edges asked for all of them):
         * the call fails as out of memory (2 in both APIs) rather than the client losing its session */
        const uint8_t *a = c->reply.data + VMC_HEADER_BYTES + 4;
        uint32_t async_error = (uint32_t)a[0] | (uint32_t)a[1] << 8 | (uint32_t)a[2] << 16 | (uint32_t)a[3] << 24;
        vmc_w_log("call %u: its answer (%zu bytes) does not fit one frame; it fails as out of memory", id,
                  c->reply.len - VMC_HEADER_BYTES);
        vmc_out_begin_frame(&c->reply);
        vmc_out_u32(&c->reply, 2);
        vmc_out_u32(&c->reply, async_error);
    }
    vmc_out_finish_frame(&c->reply, VMC_REPLY, 0, id);
    if (c->reply.broken)
        return -1;
    return answer(c);
}

/* ---- the manifest: what this process registered, in order ---- */

static int send_manifest(struct vmc_wconn *c) {
    struct vmc_out *o = &c->reply;
    vmc_out_begin_frame(o);
    uint32_t nk = vmc_w_kernel_count(), nv = vmc_w_var_count();
    vmc_out_u32(o, nk);
    for (uint32_t i = 0; i < nk; i++) {
        const char *name = vmc_w_kernel_name(i);
        size_t n = strlen(name);
        vmc_out_u16(o, (uint16_t)n);
        vmc_out_bytes(o, name, n);
    }
    vmc_out_u32(o, nv);
    for (uint32_t i = 0; i < nv; i++) {
        const char *name = vmc_w_var_name(i);
        size_t n = strlen(name);
        vmc_out_u16(o, (uint16_t)n);
        vmc_out_bytes(o, name, n);
        vmc_out_u64(o, vmc_w_var_size(i));
    }
    /* the uid this worker runs as: a co-located client opens the files it shares with the worker to this uid
     * alone (shim_shm.c) */
    vmc_out_u32(o, (uint32_t)getuid());
    if (o->len - VMC_HEADER_BYTES > VMC_MAX_CONTROL_PAYLOAD) {
        vmc_w_log("manifest of %u kernels and %u variables exceeds the protocol's %u-byte limit", nk, nv,
                  VMC_MAX_CONTROL_PAYLOAD);
        vmc_send_error(c->fd, VMC_ERROR_MANIFEST_TOO_LARGE, "this program registers more kernels than the protocol's manifest can carry");
        return -1;
    }
    vmc_out_finish_frame(o, VMC_MANIFEST, 0, 0);
    return o->broken ? -1 : vmc_w_write(c, o->data, o->len);
}

/* ---- dispatch ---- */

static enum vmc_w_result context_check(struct vmc_wcall *wc) {
    if (!vmc_w_args_ok(wc))
        return VMC_W_BAD_ARGS;
    /* cudaFree(NULL) is the runtime's documented way to create the context; its error is the one a
     * native cudaMallocHost would return on this appliance. */
    vmc_w_reply_status(wc, cudaFree(NULL));
    return VMC_W_DONE;
}

/* The client program's exit status: only the client knows it (its worker may well exit 0 after a program that
 * failed). Sent once, asynchronously, as the program exits. */
static enum vmc_w_result program_exit(struct vmc_wcall *wc) {
    struct vmc_program_exit_args a;
    vmc_get_program_exit_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || !wc->async || a.status > 255)
        return VMC_W_BAD_ARGS;
    vmc_w_log("the program exited with status %u", a.status);
    vmc_w_daemon_program_exit(a.status);
    return VMC_W_DONE;
}

static enum vmc_w_result dispatch_call(struct vmc_wcall *wc);

/* 1 when the call was answered (or is about to be) with status 0: its REPLY's first word. */
static int replied_success(const struct vmc_wconn *c, const struct vmc_wcall *wc) {
    const uint8_t *status = c->reply.data + VMC_HEADER_BYTES;
    return !wc->async && wc->replied && c->reply.len >= VMC_HEADER_BYTES + 4 &&
           (status[0] | status[1] | status[2] | status[3]) == 0;
}

/* The bulk copies between the client's memory and the device: each stands for one CUDA copy, which it makes of
 * queued copies and waits for its stream (worker_memcpy.c, worker_shm.c, worker_box.c, worker_hostmap.c). */
static int is_bulk_copy(uint32_t id) {
    switch (id) {
    case VMC_API_vmc_MemcpyHostToDevice:
    case VMC_API_vmc_MemcpyDeviceToHost:
    case VMC_API_vmc_MemcpyDeviceToHostLanding:
    case VMC_API_vmc_MemcpyHostToDeviceShm:
    case VMC_API_vmc_MemcpyDeviceToHostShm:
    case VMC_API_vmc_MemcpyBoxHost:
    case VMC_API_vmc_MemcpyBoxRing:
    case VMC_DRV_vmc_drv_MappedCopy: return 1;
    default: return 0;
    }
}

/* isolation hook (worker_idle.c): activity for idle release. (The memory quota sits in the generated
 * dispatch's allocator hooks, worker_quota*.c.) */
static enum vmc_w_result dispatch(struct vmc_wcall *wc) {
    vmc_w_activity_begin();
    /* a copy on a stream being captured is refused before it starts (worker_fidelity.c, worker_shm.c, worker_box.c);
     * one on another stream waits as the copy it stands for would, which another stream's capture allows */
    int capture_mode = is_bulk_copy(wc->id) ? vmc_w_capture_relax() : -1;
    enum vmc_w_result r = dispatch_call(wc);
    vmc_w_capture_restore(capture_mode);
    vmc_w_drv_end_call(); /* a context a bulk copy adopted is the thread's for that call only */
    vmc_w_activity_end();
    return r;
}

static enum vmc_w_result dispatch_call(struct vmc_wcall *wc) {
    if (wc->id >= VMC_DRV_FIRST_ID)
        return vmc_w_drv_dispatch(wc); /* the driver front end's calls (worker_driver.c) */
    enum vmc_w_result fidelity; /* host callbacks, box copies, capture guard (worker_fidelity.c) */
    if (vmc_w_fidelity_dispatch(wc, &fidelity))
        return fidelity;
    switch (wc->id) {
    case VMC_API_vmc_MemcpyHostToDevice: return vmc_w_memcpy_host_to_device(wc);
    case VMC_API_vmc_MemcpyDeviceToHost: return vmc_w_memcpy_device_to_host(wc);
    case VMC_API_vmc_MemcpyOnDevice: return vmc_w_memcpy_on_device(wc);
    case VMC_API_vmc_KernelParamLayout: return vmc_w_kernel_param_layout(wc);
    case VMC_API_vmc_LaunchKernel: return vmc_w_launch_kernel(wc);
    case VMC_API_vmc_LaunchKernelEx: return vmc_w_launch_kernel_ex(wc);
    case VMC_API_vmc_ContextCheck: return context_check(wc);
    case VMC_API_vmc_ProgramExit: return program_exit(wc);
    case VMC_API_vmc_ShmAttach: return vmc_w_shm_attach(wc);
    case VMC_API_vmc_ShmAttachRegion: return vmc_w_shm_attach_region(wc);
    case VMC_API_vmc_PipeAttach: return vmc_w_pipe_attach(wc);
    case VMC_API_vmc_UcxAttach: return vmc_w_ucx_attach(wc);
    case VMC_API_vmc_MemcpyHostToDeviceShm: return vmc_w_shm_host_to_device(wc);
    case VMC_API_vmc_MemcpyDeviceToHostShm: return vmc_w_shm_device_to_host(wc);
    case VMC_API_vmc_MemcpyDeviceToHostLanding: return vmc_w_memcpy_device_to_landing(wc);
    case VMC_API_cudaDeviceReset: {
        enum vmc_w_result r = vmc_worker_dispatch_generated(wc);
        vmc_w_staging_invalidate();
        vmc_w_quota_reset(); /* isolation hook */
        return r;
    }
    default: return vmc_worker_dispatch_generated(wc);
    }
}

#define IN_BUFFER_BYTES (256u << 10)

int vmc_w_read_bytes(struct vmc_wconn *c, void *dst, size_t n) {
    if (!c->piped)
        return vmc_reader_read(&c->in, c->fd, dst, n);
    int rc = vmc_pipe_read(&c->pipe, dst, n, vmc_poll_ns());
    if (rc > 0)
        errno = EPROTO; /* the client wrote on the socket while its pipe is up */
    return rc == 0 ? 0 : -1;
}

int vmc_w_write(struct vmc_wconn *c, const void *src, size_t n) {
    return c->piped ? vmc_pipe_write(&c->pipe, src, n) : vmc_write_full(c->fd, src, n);
}

void vmc_w_release_conn(struct vmc_wconn *c) {
    /* Giving page-locked memory back (staging, ring, completion area) in this thread's global capture mode would end
     * any capture another client thread has going (H200 probe, run 189: cudaFreeHost and cudaHostUnregister in the
     * global mode end it, in the relaxed mode not), and this runs whenever a client thread ends. */
    int capture_mode = vmc_w_capture_relax();
    for (int i = 0; i < VMC_W_STAGING_BUFFERS; i++)
        if (c->staging[i] && c->staging_state == 1)
            cudaFreeHost(c->staging[i]);
    vmc_w_shm_release(c);
    vmc_w_pipe_release(c);
    free(c->fallback);
    vmc_reader_free(&c->in);
    free(c->payload);
    vmc_out_free(&c->reply);
    vmc_w_callback_conn_closed(c); /* host callbacks it was running or had to run */
    vmc_w_capture_restore(capture_mode);
    vmc_w_conn_closing(c->fd); /* isolation hook */
    vmc_io_close(c->fd); /* and its TLS */
}

static size_t configured_block_size(void) {
    const char *s = getenv("VMCUDA_BLOCK_SIZE");
    unsigned long long v = s ? strtoull(s, NULL, 10) : 0;
    return v >= (64u << 10) && v <= (256u << 20) ? (size_t)v : (4u << 20);
}

/* How long the client may take to answer the link's TLS handshake. */
#define LINK_HANDSHAKE_SECONDS 30

/* The link's TLS (PROTOCOL.md "Encryption"), which the worker initiates; a client that never answers must not
 * hold this thread. 0, or -1 with why. */
static int open_link(int fd, const uint8_t key[VMC_LINK_KEY_BYTES], char *why, size_t why_len) {
    struct timeval limit = {LINK_HANDSHAKE_SECONDS, 0}, none = {0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    int rc = vmc_tls_link(fd, key, 1, why, why_len);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    return rc;
}

void vmc_w_serve(struct vmc_w_client_link *link, int primary) {
    int fd = link->fd;
    struct vmc_wconn c = {0};
    c.fd = fd;
    c.primary = primary;
    c.block_size = configured_block_size();
    c.payload = malloc(VMC_MAX_CALL_PAYLOAD);
    c.in.cap = IN_BUFFER_BYTES;
    int one = 1, buf = 8 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    /* With TLS the worker opens the link's own handshake: the client speaks only after it, as it speaks only
     * after the MANIFEST without TLS, so no byte of the client's can be left in the daemon (FdHandoff) */
    char why[256] = "";
    int linked = !link->keyed || open_link(fd, link->key, why, sizeof why) == 0;
    explicit_bzero(link->key, sizeof link->key);
    if (!linked)
        vmc_w_log("closing a client connection: %s", why);
    if (!linked || !c.payload || send_manifest(&c) != 0) {
        vmc_w_conn_opened(fd); /* isolation hook: release_conn unregisters it */
        vmc_w_log("cannot start serving a connection");
        vmc_w_release_conn(&c);
        return;
    }
    vmc_w_conn_opened(fd); /* isolation hook */
    for (;;) {
        struct vmc_frame_header h;
        const char *why = "connection closed";
        uint8_t raw[VMC_HEADER_BYTES];
        int rc = vmc_w_read_bytes(&c, raw, sizeof raw);
        /* a client killed while its data was in flight resets the connection instead of closing it */
        if (rc != 0 && (errno == ECONNRESET || errno == EPIPE))
            why = "client connection lost (reset by peer)";
        else if (rc != 0 && errno != 0)
            why = "read failed";
        else if (rc != 0 && c.piped && !vmc_pipe_peer_has_read(&c.pipe, c.answered_to) && !vmc_w_completion_taken(&c))
            /* the pipe's "reset": the client died waiting for (or reading) its last answer, which this side could
             * give without hearing from it again (an upload whose bytes were all in the ring); unless the client
             * took that call's completion from the GPU's word, and then had no reason to read the answer */
            why = "client connection lost (its last answer unread)";
        if (rc != 0 || vmc_parse_header(raw, &h, &why) != 0) {
            if (errno != 0 || strcmp(why, "connection closed") != 0)
                vmc_w_log("closing a client connection: %s", why);
            if (strcmp(why, "connection closed") != 0)
                vmc_w_note_abort(why); /* isolation hook */
            if (rc == 0) /* a malformed header from a live client: tell it why */
                vmc_send_error(fd, VMC_ERROR_PROTOCOL_VIOLATION, why);
            break;
        }
        if (h.type != VMC_CALL) {
            vmc_w_log("closing a client connection: frame type %u is not a CALL", h.type);
            vmc_send_error(fd, VMC_ERROR_PROTOCOL_VIOLATION, "only CALL frames are accepted by the worker");
            break;
        }
        if (h.len && vmc_w_read_bytes(&c, c.payload, h.len) != 0) {
            vmc_w_log("client connection closed inside a frame");
            vmc_w_note_abort("client connection lost inside a frame"); /* isolation hook */
            break;
        }
        struct vmc_wcall wc = {0};
        wc.conn = &c;
        wc.id = h.id;
        wc.async = (h.flags & VMC_FLAG_ASYNC) != 0;
        vmc_in_init(&wc.in, c.payload, h.len);
        /* the client's order across its threads (PROTOCOL.md "Calls from several threads") */
        wc.number = (h.flags & VMC_FLAG_ORDERED) ? vmc_in_u64(&wc.in) : 0;
        if (wc.number) {
            vmc_w_order_wait(wc.number);
            if (wc.async)
                vmc_w_order_holding(wc.number);
        }
        if (!wc.async)
            vmc_w_order_submitted(&wc); /* a synchronous call may block: what comes after it goes on */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        c.answering_number = wc.number;
        uint64_t launches_before = vmc_w_completion_call_begins(wc.id);
        enum vmc_w_result r = dispatch(&wc);
        vmc_w_completion_call_ended(wc.id, launches_before, r == VMC_W_DONE && replied_success(&c, &wc));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        vmc_w_count_call((uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec);
        vmc_w_order_submitted(&wc); /* an async call's work is on the GPU's queues now */
        vmc_w_call_release(&wc);
        if (r == VMC_W_FATAL) {
            vmc_w_note_abort("client connection lost during a call"); /* isolation hook */
            break;
        }
        if (r == VMC_W_CLOSED)
            break;
        if (r == VMC_W_BAD_ARGS || r == VMC_W_UNKNOWN) {
            const char *name = h.id >= VMC_DRV_FIRST_ID ? vmc_drv_api_name(h.id) : vmc_api_name(h.id);
            vmc_w_log("%s call %u (%s)", r == VMC_W_UNKNOWN ? "unsupported" : "malformed", h.id, name ? name : "unknown id");
            /* the same numbers in the runtime's and the driver's enums */
            cudaError_t st = r == VMC_W_UNKNOWN ? cudaErrorNotSupported : cudaErrorInvalidValue;
            if (wc.async) {
                vmc_w_async_done(&wc, st);
                continue;
            }
            vmc_w_reply_status(&wc, st);
        }
        if (!wc.async && wc.replied && vmc_w_send_reply(&c, h.id) != 0)
            break;
    }
    vmc_w_release_conn(&c);
}

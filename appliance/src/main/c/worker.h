/* The worker library: internal interfaces between its parts. */
#ifndef WORKER_H
#define WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"
#include "vmc_pipe.h"
#include "worker_call.h"

/* ---- registrations recorded while the application's constructors ran (worker_entry.c) ---- */
uint32_t vmc_w_kernel_count(void);
const void *vmc_w_kernel_host_fun(uint32_t index);   /* NULL if out of range */
const char *vmc_w_kernel_name(uint32_t index);
uint32_t vmc_w_var_count(void);
const void *vmc_w_var_host_var(uint32_t index);
const char *vmc_w_var_name(uint32_t index);
size_t vmc_w_var_size(uint32_t index);

/* ---- one client connection (worker_serve.c) ---- */
#define VMC_W_STAGING_BUFFERS 4

struct vmc_wshm;

struct vmc_wconn {
    int fd;
    int primary;
    cudaError_t async_error;       /* first error of an async call since the last REPLY */
    struct vmc_out reply;          /* the REPLY being built */
    uint8_t *payload;              /* CALL payload buffer (VMC_MAX_CALL_PAYLOAD) */
    /* Pinned staging for bulk copies (worker_memcpy.c), allocated on first use. */
    size_t block_size;
    int staging_state;             /* 0 = not tried, 1 = pinned, -1 = unavailable (pageable fallback) */
    unsigned staging_epoch;        /* see vmc_w_staging_invalidate */
    void *staging[VMC_W_STAGING_BUFFERS];
    void *fallback;                /* pageable block buffer when pinned memory is unavailable */
    struct vmc_wshm *shm;          /* the client's shared-memory ring, when attached */
    /* Buffered input: one read() can bring many small frames (launches arrive back to back). */
    struct vmc_reader in;
    /* Calls through shared memory (worker_pipe.c): once up, the connection's bytes go through it both
     * ways and the socket carries nothing but the end of the session. */
    int piped;
    struct vmc_pipe pipe;
    uint64_t answered_to; /* the pipe's position after the last REPLY sent: the client has read it once it is there */
    uint64_t answering_number, answered_number; /* the call being served, and the one that REPLY answered */
    /* The pipe's completion area (worker_completion.c): 0 = not tried, 1 = registered with the GPU, -1 = it cannot be */
    int completion_state;
    unsigned completion_epoch;
    uint64_t completion_word;   /* the GPU's address of the completion word */
    uint64_t signalled_number;  /* the last call whose completion the GPU was told to write */
    uint64_t signalled, answered_on_word; /* such calls, and those this thread answered on the word (logged at close) */
};

/* Reads exactly n bytes from the client connection (buffered input first). 0, or -1 on EOF/error.
 * Every read from a client connection must go through this, never read() on c->fd directly. */
int vmc_w_read_bytes(struct vmc_wconn *c, void *dst, size_t n);
/* Writes n bytes to the client: through the connection's pipe when it has one, else its socket. 0 or -1. */
int vmc_w_write(struct vmc_wconn *c, const void *src, size_t n);

/* A client connection the daemon handed over, with the key of its TLS link when the appliance encrypts. */
struct vmc_w_client_link {
    int fd;
    int keyed;
    uint8_t key[VMC_LINK_KEY_BYTES];
};
/* Serves one connection until the client closes it. */
void vmc_w_serve(struct vmc_w_client_link *link, int primary); /* wipes link's key */
/* Sends the pending REPLY (with any captured output before it). Returns 0 or -1 if the peer is gone. */
int vmc_w_send_reply(struct vmc_wconn *c, uint32_t id);
/* A successful device-to-host answer in one write: the REPLY, the n data bytes, the trailing REPLY. */
int vmc_w_send_reply_with_data(struct vmc_wconn *c, uint32_t id, const void *data, size_t n, cudaError_t trailer);
void vmc_w_release_conn(struct vmc_wconn *c);

/* ---- hand-written operations ---- */
enum vmc_w_result vmc_w_memcpy_host_to_device(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_memcpy_device_to_host(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_memcpy_on_device(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_memcpy_box_ring(struct vmc_wcall *wc); /* worker_box.c */
/* Every staging buffer died with its context (cudaDeviceReset): allocate new ones before the next copy. */
void vmc_w_staging_invalidate(void);
unsigned vmc_w_staging_epoch(void);

/* Bulk-copy building blocks shared by the socket path (worker_memcpy.c) and the shared-memory ring
 * (worker_shm.c). `mode` bits of the copy calls: COPY_* in vmc_wire.h. */
/* The device end of a copy: a plain device pointer, or a registered variable plus an offset. */
struct vmc_device_side {
    const void *symbol; /* host shadow of the variable, or NULL for a plain pointer */
    int is_symbol;
    char *ptr;          /* plain pointer, or the offset within the variable */
};
struct vmc_device_side vmc_w_device_side(uint32_t symbol, uint64_t addr_or_offset);
/* Copies n bytes between host memory and the device side at byte `at`: asynchronously on `stream`
 * when `pinned`, synchronously otherwise. */
cudaError_t vmc_w_copy_block(const struct vmc_device_side *d, size_t at, void *host, size_t n, int to_device, int pinned,
                             cudaStream_t stream, unsigned mode);
cudaStream_t vmc_w_copy_stream(uint64_t stream, unsigned mode);
/* Waits for a copy's stream with the API the copy came from (COPY_DRIVER: the driver's). */
cudaError_t vmc_w_copy_sync(cudaStream_t stream, unsigned mode);

/* The shared-memory ring (worker_shm.c). */
enum vmc_w_result vmc_w_shm_attach(struct vmc_wcall *wc);
/* A file a co-located client made for this worker (its private /dev/shm directory, a random name, a
 * regular file of exactly `size` bytes) opened read-write, or -1 for anything else. */
int vmc_w_shm_open_file(const char *path, uint64_t size);
enum vmc_w_result vmc_w_shm_attach_region(struct vmc_wcall *wc);
/* Gives back every shared-region lane still attached (the worker is exiting). */
void vmc_w_shm_release_all_lanes(void);
enum vmc_w_result vmc_w_shm_host_to_device(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_shm_device_to_host(struct vmc_wcall *wc);
void vmc_w_shm_release(struct vmc_wconn *c);
/* A ring's shape is one the worker accepts: 2..64 slots of 64 KiB..256 MiB (whole pages), 4 GiB at most. */
int vmc_w_shm_ring_ok(uint32_t slots, uint64_t slot_size, uint64_t size);
/* Makes `base` (size bytes, slots x slot_size, mapped shared) connection c's ring and registers it with the
 * runtime; `ucx_ring`: the UCX agent's id for it, 0 for none. 1 registered, 0 not (copies are pageable), -1
 * out of memory (nothing changed). */
int vmc_w_shm_adopt(struct vmc_wconn *c, void *base, size_t size, size_t slot_size, uint32_t slots, uint32_t ucx_ring);
/* The connection's ring for any copy cut into blocks (worker_shm.c; PROTOCOL.md "Co-located fast path"): its
 * slot size (0: no ring; the registration renewed if a device reset dropped it), and the block protocol. `move`
 * moves block k between its slot and the device, called for k = 0, 1, ... in order; it has finished with the
 * slot when it returns, or, for a receive given a `settle`, once that has returned. Receive (to the device)
 * replies with the first error; send (from the device) replies with block 0's status before any data, then the
 * trailing REPLY (wc->replied is 0 when the first REPLY was the whole answer). */
typedef cudaError_t (*vmc_w_block_mover)(void *ctx, uint32_t k, uint8_t *slot);
/* For a receive whose mover only starts each block's copy: waits for every copy started so far. Receive calls it
 * before it hands a slot back and before its REPLY; NULL when the mover finishes each block itself. */
typedef cudaError_t (*vmc_w_block_settler)(void *ctx);
size_t vmc_w_ring_slot_size(struct vmc_wconn *c);
enum vmc_w_result vmc_w_ring_receive(struct vmc_wcall *wc, uint32_t blocks, vmc_w_block_mover move,
                                     vmc_w_block_settler settle, void *ctx);
enum vmc_w_result vmc_w_ring_send(struct vmc_wcall *wc, uint32_t blocks, vmc_w_block_mover move, void *ctx);
/* Bulk copies over UCX (worker_ucx.c): a ring registered with the session's UCX agent. */
enum vmc_w_result vmc_w_ucx_attach(struct vmc_wcall *wc);
void vmc_w_ucx_detach(uint32_t ring);
/* Calls through shared memory (worker_pipe.c): the client's pipe taken over for this connection. */
enum vmc_w_result vmc_w_pipe_attach(struct vmc_wcall *wc);
void vmc_w_pipe_release(struct vmc_wconn *c);

/* The completion word (worker_completion.c; PROTOCOL.md "Completion word"). After a synchronous call's work was
 * enqueued on `stream` (a driver handle: 0 legacy, 2 per-thread), has the GPU write the call's number into the
 * connection's completion area once that work is done. 1 when it will; 0 when the connection has no pipe or the GPU
 * cannot write there. */
int vmc_w_completion_signal(struct vmc_wcall *wc, uint64_t stream);
/* Then waits for that work (a copy of `bytes`) before replying: for the word, as the client does, while it would
 * poll for such a copy; else, or when the word has not come by then, for the stream with the copy's API (which says
 * what went wrong, if anything did). */
cudaError_t vmc_w_completion_wait(struct vmc_wcall *wc, int signalled, size_t bytes, cudaStream_t stream, unsigned mode);
/* Every call passes these around its dispatch (worker_serve.c): kernel launches and device-wide synchronizes decide
 * when the word may be used (device printf). The first returns what the second needs. */
uint64_t vmc_w_completion_call_begins(uint32_t id);
void vmc_w_completion_call_ended(uint32_t id, uint64_t printing_before, int succeeded);
/* A module image the program loads (worker_driver.c), or a fat-binary wrapper it registers (worker_entry.c), before
 * its kernels can be launched: whether they can print decides whether launches keep the word unused. */
void vmc_w_completion_image_loaded(const void *image, size_t size);
void vmc_w_completion_wrapper_registered(const void *wrapper);
/* Where a small copy from the device lands (VMC_PIPE_LANDING_BYTES), or NULL without a pipe; *by_dma: the GPU can
 * write it directly (else the bytes are copied there). */
uint8_t *vmc_w_completion_landing(struct vmc_wconn *c, int *by_dma);
/* 1 when the last REPLY answered a call whose completion the client took from the word (it need not read it). */
int vmc_w_completion_taken(struct vmc_wconn *c);
void vmc_w_completion_release(struct vmc_wconn *c);
/* vmc_MemcpyDeviceToHostLanding (worker_memcpy.c): a small copy from the device into the landing. */
enum vmc_w_result vmc_w_memcpy_device_to_landing(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_kernel_param_layout(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_launch_kernel(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_launch_kernel_ex(struct vmc_wcall *wc);

/* ---- captured stdout/stderr (worker_output.c) ---- */
int vmc_w_output_start(void);
/* Sends everything the process wrote so far as OUTPUT frames on connection c. Returns 0 or -1. */
/* Before the REPLY to call `id`: the output written so far goes to the client first (worker_output.c). */
int vmc_w_output_flush(struct vmc_wconn *c, uint32_t id);
/* After serving call `id` without a reply (asynchronous): whether it may have written output. */
void vmc_w_output_call_served(uint32_t id);

/* ---- the daemon link (worker_daemon.c) ---- */
int vmc_w_daemon_connect(void);            /* returns 0 or -1 (reason logged) */
int vmc_w_daemon_receive_client(struct vmc_w_client_link *link); /* next client fd handed over by the daemon, or -1 */
/* Asks the daemon's module cache for an image (64 hex digits): 1 when it put the image at
 * $VMCUDA_MODULE_LEND_DIR/<sha> (a directory the worker can only read), 0 when it has none for this tenant. */
int vmc_w_daemon_module_lookup(const char *sha_hex, uint64_t size);
int vmc_w_daemon_linked(void); /* started by vmcudad (not a test harness): the daemon takes module offers */
#define VMC_W_MODULE_OFFER_DIR "module-offers" /* images uploaded here; the daemon caches them when the session ends */
void vmc_w_daemon_start_threads(void);     /* JOIN listener + stats reporter */
void vmc_w_daemon_bye(int status);
/* The client program's exit status (vmc_ProgramExit), for the session's record: an EXIT line to the daemon. */
void vmc_w_daemon_program_exit(unsigned status);
void vmc_w_count_call(uint64_t nanos); /* one call served, in this many ns (STATS: count and histogram) */
void vmc_w_count_h2d(uint64_t bytes);
void vmc_w_count_d2h(uint64_t bytes);

/* ---- diagnostics go to the session log (the worker's original stderr), never to the client ---- */
void vmc_w_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) writes its signal and stack to log_fd before it
 * ends the process (worker_crash.c). */
void vmc_w_crash_report_to(int log_fd);
/* The client's order of calls across its connections (worker_order.c): wait until every call numbered
 * below `number` is dispatched; say that call `number` is (async: submitted; sync: started). */
void vmc_w_order_wait(uint64_t number);
void vmc_w_order_done(uint64_t number);
/* An asynchronous call `number` is being dispatched and holds the order until vmc_w_order_done: the others
 * wait for it beyond the gap time (it has arrived; a long copy may take seconds). */
void vmc_w_order_holding(uint64_t number);
/* How long a number that has not arrived holds the others back (default 2 s; tests shorten it). */
void vmc_w_order_set_gap_ms(long ms);

/* ---- tenant isolation and fault handling (worker_quota.c, worker_idle.c, worker_daemon.c) ---- */
/* Device-memory quota (VMCUDA_MEMORY_QUOTA bytes, set by the daemon per tenant): the calls that allocate or
 * free device memory reach it through the generated dispatch's hooks (vmc_worker_hooks.h). */
void vmc_w_quota_reset(void);                 /* cudaDeviceReset freed every allocation */
void vmc_w_quota_forget_freed(int (*still_allocated)(uintptr_t ptr)); /* a driver context went */
/* A call starts / ends (the idle-release watchdog counts from the last one). */
void vmc_w_activity_begin(void);
void vmc_w_activity_end(void);
/* Client connections being served: session release writes an ERROR frame on each. */
void vmc_w_conn_opened(int fd);
void vmc_w_conn_closing(int fd);
/* The session ends abnormally (client lost mid-frame, idle release...): told to the daemon before BYE. */
void vmc_w_note_abort(const char *why);
/* A client connection goes (worker_callback.c): the host callback it ran as a channel never finishes there (the
 * session is noted aborted), and with no channel left the queued ones are let go. */
void vmc_w_callback_conn_closed(const struct vmc_wconn *c);
const char *vmc_w_abort_reason(void);
void vmc_w_idle_start(void);                  /* watchdog, when VMCUDA_IDLE_RELEASE_MINUTES > 0 */
/* Writes ERROR(code, msg) on every client connection, reports to the daemon and exits. */
void vmc_w_release_session(uint32_t code, const char *msg, int exit_status) __attribute__((noreturn));

/* ---- end of tenant isolation section ---- */

/* ---- fidelity features (worker_fidelity.c, worker_callback.c, worker_box.c) ---- */
/* Handles the call when it is one of these operations (or a bulk copy refused during stream capture):
 * returns 1 with *result set, else 0 and dispatch() goes on. */
int vmc_w_fidelity_dispatch(struct vmc_wcall *wc, enum vmc_w_result *result);
enum vmc_w_result vmc_w_callback_channel(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_enqueue_host_callback(struct vmc_wcall *wc);
/* A host function and its argument that run the client's callback `client_id` at every execution of a graph
 * (a host node); NULL when the session holds VMC_MAX_KEPT_CALLBACKS already or memory ran out. */
void *vmc_w_kept_callback(uint64_t client_id, void (**fn)(void *));
enum vmc_w_result vmc_w_memcpy_box_host(struct vmc_wcall *wc);
/* 1 when the client's stream (0 + per_thread = the per-thread default stream) is being captured. */
int vmc_w_stream_capturing(uint64_t stream, int per_thread);
/* A bulk copy made of queued copies and stream synchronizes (with the word or without) is allowed while another
 * stream is being captured, as the synchronous copy it stands for is, where a stream synchronize alone is not (H200
 * probe of the review, run 186: in the global and thread-local modes it is refused and ends the capture): this
 * thread's capture mode is relaxed around it (worker_serve.c), and so is a thread's that registers or allocates
 * page-locked memory for it (worker_box.c) or gives it back as a connection closes (vmc_w_release_conn). Returns what
 * to restore (-1: nothing). */
int vmc_w_capture_relax(void);
void vmc_w_capture_restore(int saved);
void vmc_w_capture_refusal_note(void);
/* ---- end of fidelity features ---- */

#endif

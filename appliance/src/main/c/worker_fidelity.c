/* The worker's entry for the fidelity operations (host callbacks, box copies) and the stream-capture
 * guard of the bulk copies: one hook in dispatch() (worker_serve.c) calls vmc_w_fidelity_dispatch first. */
#include <string.h>

#include "vmc_api.h"
#include "vmc_internal.h"
#include "worker.h"


/* A bulk copy between client host memory and the device on a stream that is being captured would put
 * the worker's staging buffer into the graph (and synchronise a capturing stream): refuse it, after
 * consuming its bytes so that the connection stays in step. The client says why, or captures the copy in
 * a form the graph can run (driver front end on the co-located path: drv_graph_staging.c). */
static int capture_guard(struct vmc_wcall *wc, enum vmc_w_result *result) {
    struct vmc_in peek = wc->in;
    struct vmc_copy_args a;
    vmc_get_copy_args(&peek, &a);
    uint64_t count = a.count, stream = a.stream;
    unsigned mode = a.mode;
    if (peek.bad || peek.pos != peek.len)
        return 0; /* malformed: the real handler says so */
    if (!vmc_w_stream_capturing(stream, (mode & COPY_PER_THREAD) != 0))
        return 0;
    if (wc->id == VMC_API_vmc_MemcpyHostToDevice) {
        uint8_t sink[4096];
        while (count) {
            size_t take = count < sizeof sink ? (size_t)count : sizeof sink;
            if (vmc_w_read_bytes(wc->conn, sink, take) != 0) {
                *result = VMC_W_FATAL;
                return 1;
            }
            count -= take;
        }
    }
    if (wc->async)
        vmc_w_async_done(wc, cudaErrorStreamCaptureUnsupported);
    else
        vmc_w_reply_status(wc, cudaErrorStreamCaptureUnsupported); /* no bytes follow an error REPLY */
    *result = VMC_W_DONE;
    return 1;
}

int vmc_w_fidelity_dispatch(struct vmc_wcall *wc, enum vmc_w_result *result) {
    switch (wc->id) {
    case VMC_API_vmc_CallbackChannel: *result = vmc_w_callback_channel(wc); return 1;
    case VMC_API_vmc_EnqueueHostCallback: *result = vmc_w_enqueue_host_callback(wc); return 1;
    case VMC_API_vmc_MemcpyBoxHost: *result = vmc_w_memcpy_box_host(wc); return 1;
    case VMC_API_vmc_MemcpyBoxRing: *result = vmc_w_memcpy_box_ring(wc); return 1;
    case VMC_API_vmc_MemcpyHostToDevice:
    case VMC_API_vmc_MemcpyDeviceToHost:
    case VMC_API_vmc_MemcpyDeviceToHostLanding: return capture_guard(wc, result);
    default: return 0;
    }
}

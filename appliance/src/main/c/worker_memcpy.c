/* Bulk copies (PROTOCOL.md "Bulk data"). Data moves in blocks through two pinned staging buffers so
 * that the wire and the copy engine work at the same time: while block k is copied between a staging
 * buffer and the device, block k+1 is received into (or sent from) the other one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_internal.h"
#include "worker.h"
#include "worker_driver.h"

#define BUFFERS 2
/* Copies up to this size travel in one write each way (they are latency-bound, not bandwidth-bound). */
#define SMALL_COPY (64u << 10)

extern cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s);
extern cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                           enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                                enum cudaMemcpyKind kind, cudaStream_t stream);
extern cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset,
                                             enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                                  enum cudaMemcpyKind kind, cudaStream_t stream);

struct staging_job {
    size_t block;
    void *buffers[BUFFERS];
    int ok;
};

/* Pinned memory is allocated on a helper thread so that a failure there (no usable GPU, no pinned
 * memory left) never becomes this client thread's "last error" as seen by cudaGetLastError. */
static void *allocate_staging(void *arg) {
    struct staging_job *job = arg;
    int capture_mode = vmc_w_capture_relax(); /* a program's capture meanwhile must not refuse it (worker.h) */
    job->ok = 1;
    for (int i = 0; i < BUFFERS && job->ok; i++)
        job->ok = cudaHostAlloc(&job->buffers[i], job->block, cudaHostAllocPortable) == cudaSuccess;
    if (!job->ok)
        for (int i = 0; i < BUFFERS; i++)
            if (job->buffers[i])
                cudaFreeHost(job->buffers[i]);
    vmc_w_capture_restore(capture_mode);
    return NULL;
}

/* cudaDeviceReset (from any client thread) destroys the context that owned every staging buffer:
 * each connection then allocates new ones before its next copy. The old pointers are already gone
 * with the context and must not be freed again. */
static unsigned staging_epoch;

void vmc_w_staging_invalidate(void) { __atomic_add_fetch(&staging_epoch, 1, __ATOMIC_ACQ_REL); }
unsigned vmc_w_staging_epoch(void) { return __atomic_load_n(&staging_epoch, __ATOMIC_ACQUIRE); }

/* Returns 1 with pinned buffers in c->staging, or 0 with a pageable c->fallback (-1: out of memory). */
static int staging(struct vmc_wconn *c) {
    unsigned epoch = __atomic_load_n(&staging_epoch, __ATOMIC_ACQUIRE);
    if (c->staging_state == 1 && c->staging_epoch != epoch) {
        memset(c->staging, 0, sizeof c->staging);
        c->staging_state = 0;
    }
    c->staging_epoch = epoch;
    if (c->staging_state == 0) {
        struct staging_job job = {c->block_size, {0}, 0};
        pthread_t t;
        if (pthread_create(&t, NULL, allocate_staging, &job) == 0)
            pthread_join(t, NULL);
        if (job.ok) {
            memcpy(c->staging, job.buffers, sizeof job.buffers);
            c->staging_state = 1;
        } else {
            c->staging_state = -1;
            vmc_w_log("no pinned staging memory; bulk copies use pageable memory");
        }
    }
    if (c->staging_state == 1)
        return 1;
    if (!c->fallback)
        c->fallback = malloc(c->block_size);
    return c->fallback ? 0 : -1;
}

/* Small copies to the device go as a native program's small pageable copies go: from pageable memory with
 * the stream-ordered copy, which the driver stages itself and returns from once the bytes are staged, where
 * a copy through pinned staging must then wait for the DMA. Measured on the H100 (GPU runs of 2026-11-23,
 * co-located): 4 KiB 0.34 -> 0.51 GB/s, 16 KiB 0.78 -> 0.92, but 64 KiB 2.9 -> 2.6, hence the limit
 * (VMC_PAGEABLE_UPLOAD_MAX, wire.spec: co-located clients send copies up to it inline). The
 * other direction stays on pinned staging: a copy into pageable memory waits for the DMA too, and then
 * copies once more (64 KiB from the device: 3.2 GB/s staged, 1.9 pageable). NULL when out of memory. */
static void *small_copy_buffer(struct vmc_wconn *c) {
    if (!c->fallback)
        c->fallback = malloc(c->block_size);
    return c->fallback;
}

cudaError_t vmc_w_copy_sync(cudaStream_t stream, unsigned mode) {
    return (mode & COPY_DRIVER) ? (cudaError_t)vmc_w_drv_stream_sync((CUstream)stream) : cudaStreamSynchronize(stream);
}

cudaStream_t vmc_w_copy_stream(uint64_t stream, unsigned mode) {
    if (stream == 0 && (mode & COPY_PER_THREAD))
        return cudaStreamPerThread;
    return (cudaStream_t)(uintptr_t)stream;
}

/* Where one side of a bulk copy is on the device: a plain device pointer, or a registered variable
 * plus an offset. Variables go through the runtime's own symbol copies, block by block, so that
 * every check (unknown symbol, offset or size out of range) is the runtime's and lands in this
 * thread's last-error state exactly as natively. */
struct vmc_device_side vmc_w_device_side(uint32_t symbol, uint64_t addr_or_offset) {
    struct vmc_device_side d = {NULL, symbol != VMC_NO_INDEX, (char *)(uintptr_t)addr_or_offset};
    if (d.is_symbol)
        d.symbol = vmc_w_var_host_var(symbol); /* NULL for an unknown index: the runtime rejects it */
    return d;
}

/* Copies one block between host memory `host` and the device side at byte `at`. Pinned staging
 * makes the copy asynchronous on `stream`; pageable memory makes it synchronous. */
cudaError_t vmc_w_copy_block(const struct vmc_device_side *d, size_t at, void *host, size_t n, int to_device, int pinned,
                             cudaStream_t stream, unsigned mode) {
    int per_thread = (mode & COPY_PER_THREAD) != 0;
    /* The driver API has no variables by index: a driver copy names a plain device address. */
    if (mode & COPY_DRIVER)
        return d->is_symbol ? cudaErrorInvalidValue
                            : (cudaError_t)vmc_w_drv_copy_block((CUdeviceptr)(uintptr_t)(d->ptr + at), host, n, to_device,
                                                                pinned, (CUstream)stream, per_thread);
    enum cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    size_t offset = (size_t)(uintptr_t)d->ptr + at;
    if (d->is_symbol && to_device)
        return pinned ? (per_thread ? cudaMemcpyToSymbolAsync_ptsz(d->symbol, host, n, offset, kind, stream)
                                    : cudaMemcpyToSymbolAsync(d->symbol, host, n, offset, kind, stream))
                      : (per_thread ? cudaMemcpyToSymbol_ptds(d->symbol, host, n, offset, kind)
                                    : cudaMemcpyToSymbol(d->symbol, host, n, offset, kind));
    if (d->is_symbol)
        return pinned ? (per_thread ? cudaMemcpyFromSymbolAsync_ptsz(host, d->symbol, n, offset, kind, stream)
                                    : cudaMemcpyFromSymbolAsync(host, d->symbol, n, offset, kind, stream))
                      : (per_thread ? cudaMemcpyFromSymbol_ptds(host, d->symbol, n, offset, kind)
                                    : cudaMemcpyFromSymbol(host, d->symbol, n, offset, kind));
    void *dst = to_device ? (void *)(d->ptr + at) : host;
    const void *src = to_device ? host : (const void *)(d->ptr + at);
    if (pinned)
        return cudaMemcpyAsync(dst, src, n, kind, stream);
    return per_thread ? cudaMemcpy_ptds(dst, src, n, kind) : cudaMemcpy(dst, src, n, kind);
}

/* Receives and discards n bytes (an error occurred, but the client's stream must be consumed). */
static int discard(struct vmc_wconn *c, void *buf, size_t block, size_t n) {
    while (n) {
        size_t take = n < block ? n : block;
        if (vmc_w_read_bytes(c, buf, take) != 0)
            return -1;
        n -= take;
    }
    return 0;
}

/* The end of a copy to the device: counted, and its status answered (a synchronous call) or kept for the next
 * answer (an asynchronous one). */
static enum vmc_w_result answer_upload(struct vmc_wcall *wc, uint64_t count, cudaError_t st) {
    vmc_w_count_h2d(count);
    if (wc->async)
        vmc_w_async_done(wc, st);
    else
        vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_memcpy_host_to_device(struct vmc_wcall *wc) {
    struct vmc_wconn *c = wc->conn;
    struct vmc_copy_args a;
    vmc_get_copy_args(&wc->in, &a);
    uint32_t symbol = a.symbol;
    uint64_t dst_arg = a.address, count = a.count, stream_arg = a.stream;
    unsigned mode = a.mode;
    /* Without a trustworthy count the byte stream cannot be resynchronised: close the connection. */
    if (!vmc_w_args_ok(wc) || (mode & ~COPY_MODE_BITS))
        return VMC_W_FATAL;
    cudaStream_t stream = vmc_w_copy_stream(stream_arg, mode);
    struct vmc_device_side dst = vmc_w_device_side(symbol, dst_arg);
    void *small = count <= VMC_PAGEABLE_UPLOAD_MAX && !(mode & COPY_COMPLETE) ? small_copy_buffer(c) : NULL;
    if (small) {
        /* through a call pipe the bytes are read where they lie when they can be (the driver stages them
         * before the copy returns, and only then are they marked read), else copied out first */
        const void *in_pipe = NULL;
        if (c->piped && count && vmc_pipe_peek(&c->pipe, (size_t)count, vmc_poll_ns(), &in_pipe) != 0)
            return VMC_W_FATAL;
        if (!in_pipe && vmc_w_read_bytes(c, small, (size_t)count) != 0)
            return VMC_W_FATAL;
        void *from = in_pipe ? (void *)(uintptr_t)in_pipe : small;
        /* the API the program called, from pageable memory: a synchronous copy synchronizes the stream first
         * and returns once the bytes are staged, an asynchronous one is ordered on its stream */
        int async = (mode & COPY_ASYNC) != 0;
        cudaError_t st = count ? vmc_w_copy_block(&dst, 0, from, (size_t)count, 1, async, stream, mode) : cudaSuccess;
        if (in_pipe)
            vmc_pipe_skip(&c->pipe, (size_t)count);
        vmc_w_order_submitted(wc);
        return answer_upload(wc, count, st);
    }
    int pinned = staging(c);
    if (pinned < 0)
        return VMC_W_FATAL;
    cudaError_t st = cudaSuccess;
    size_t done = 0, block = c->block_size;
    int k = 0;
    while (done < count) {
        size_t n = count - done < block ? (size_t)(count - done) : block;
        void *buf = pinned ? c->staging[k % BUFFERS] : c->fallback;
        /* Block k arrives while block k-1 is still being copied to the device from the other buffer. */
        if (vmc_w_read_bytes(c, buf, n) != 0)
            return VMC_W_FATAL;
        /* Before block k's copy is issued, block k-1's must be done: that frees its buffer for block k+1. */
        if (pinned && k >= 1 && st == cudaSuccess)
            st = vmc_w_copy_sync(stream, mode);
        if (st == cudaSuccess)
            st = vmc_w_copy_block(&dst, done, buf, n, 1, pinned, stream, mode);
        done += n;
        k++;
        if (st != cudaSuccess && discard(c, buf, block, (size_t)(count - done)) != 0)
            return VMC_W_FATAL;
        if (st != cudaSuccess)
            break;
    }
    /* The staging buffers are reused by the next copy, so the last block must have left them. Pageable
     * copies may also still be in flight when cudaMemcpy returns, and the client may have cut this copy
     * into stripes on other connections' streams (PROTOCOL.md "Bulk data"): it is done when we reply.
     * Every block is queued by now: calls the client made after this one need not wait for the GPU. */
    vmc_w_order_submitted(wc);
    if (st == cudaSuccess)
        st = vmc_w_copy_sync(stream, mode);
    return answer_upload(wc, count, st);
}

enum vmc_w_result vmc_w_memcpy_device_to_host(struct vmc_wcall *wc) {
    struct vmc_wconn *c = wc->conn;
    struct vmc_copy_args a;
    vmc_get_copy_args(&wc->in, &a);
    uint32_t symbol = a.symbol;
    uint64_t src_arg = a.address, count = a.count, stream_arg = a.stream;
    unsigned mode = a.mode;
    if (!vmc_w_args_ok(wc) || wc->async || (mode & ~COPY_MODE_BITS))
        return VMC_W_BAD_ARGS;
    cudaStream_t stream = vmc_w_copy_stream(stream_arg, mode);
    struct vmc_device_side src = vmc_w_device_side(symbol, src_arg);
    int pinned = staging(c);
    if (pinned < 0)
        return VMC_W_FATAL;
    size_t block = c->block_size;
    /* The first block is fetched before answering, so that an invalid source is reported as the
     * call's error with no data, as natively. */
    size_t first = count < block ? (size_t)count : block;
    void *buf0 = pinned ? c->staging[0] : c->fallback;
    cudaError_t st = vmc_w_copy_block(&src, 0, buf0, first, 0, pinned, stream, mode);
    if (st == cudaSuccess && pinned)
        st = vmc_w_copy_sync(stream, mode);
    vmc_w_reply_status(wc, st);
    if (st == cudaSuccess && count <= SMALL_COPY) {
        /* Small copies are latency-bound: answer, data and trailer leave in one write. */
        wc->replied = 0;
        vmc_w_count_d2h(count);
        return vmc_w_send_reply_with_data(c, wc->id, buf0, (size_t)count, cudaSuccess) == 0 ? VMC_W_DONE : VMC_W_FATAL;
    }
    if (vmc_w_send_reply(c, wc->id) != 0)
        return VMC_W_FATAL;
    if (st != cudaSuccess) {
        wc->replied = 0; /* the REPLY just sent was the whole answer */
        return VMC_W_DONE;
    }
    size_t done = 0;
    int k = 0;
    cudaError_t late = cudaSuccess;
    while (done < count) {
        size_t n = count - done < block ? (size_t)(count - done) : block;
        void *buf = pinned ? c->staging[k % BUFFERS] : c->fallback;
        size_t next_off = done + n;
        size_t next_n = count - next_off < block ? (size_t)(count - next_off) : block;
        /* Start fetching block k+1 into the other buffer while block k goes out on the wire. */
        if (pinned && next_off < count && late == cudaSuccess)
            late = vmc_w_copy_block(&src, next_off, c->staging[(k + 1) % BUFFERS], next_n, 0, 1, stream, mode);
        if (late != cudaSuccess && k > 0)
            memset(buf, 0, n);
        if (vmc_w_write(c, buf, n) != 0)
            return VMC_W_FATAL;
        if (next_off < count && late == cudaSuccess)
            late = pinned ? vmc_w_copy_sync(stream, mode) : vmc_w_copy_block(&src, next_off, c->fallback, next_n, 0, 0, stream, mode);
        done = next_off;
        k++;
    }
    vmc_w_count_d2h(count);
    vmc_w_reply_status(wc, late); /* the trailing REPLY */
    return VMC_W_DONE;
}

/* vmc_MemcpyDeviceToHostLanding (PROTOCOL.md "Completion word"): a synchronous copy from the device of at most
 * VMC_PIPE_LANDING_BYTES for a client whose calls come through a pipe. The GPU copies into the pipe's landing and
 * then writes the completion word (or, where it cannot write there, copies into staging and this thread copies
 * on); the REPLY carries the status alone, and the client reads the bytes from the landing. The copy is the one
 * vmc_w_memcpy_device_to_host makes for its first block, so its errors are the same. */
enum vmc_w_result vmc_w_memcpy_device_to_landing(struct vmc_wcall *wc) {
    struct vmc_wconn *c = wc->conn;
    struct vmc_copy_args a;
    vmc_get_copy_args(&wc->in, &a);
    unsigned mode = a.mode;
    int by_dma = 0;
    uint8_t *landing = vmc_w_completion_landing(c, &by_dma);
    if (!vmc_w_args_ok(wc) || wc->async || (mode & ~COPY_MODE_BITS) || a.count > VMC_PIPE_LANDING_BYTES || !landing)
        return VMC_W_BAD_ARGS;
    cudaStream_t stream = vmc_w_copy_stream(a.stream, mode);
    struct vmc_device_side src = vmc_w_device_side(a.symbol, a.address);
    size_t n = (size_t)a.count;
    cudaError_t st;
    if (by_dma) {
        st = vmc_w_copy_block(&src, 0, landing, n, 0, 1, stream, mode);
        if (st == cudaSuccess)
            st = vmc_w_completion_wait(wc, vmc_w_completion_signal(wc, (uint64_t)(uintptr_t)stream), n, stream, mode);
    } else {
        int pinned = staging(c);
        if (pinned < 0)
            return VMC_W_FATAL;
        void *buf = pinned ? c->staging[0] : c->fallback;
        st = vmc_w_copy_block(&src, 0, buf, n, 0, pinned, stream, mode);
        if (st == cudaSuccess && pinned)
            st = vmc_w_copy_sync(stream, mode);
        if (st == cudaSuccess)
            memcpy(landing, buf, n);
    }
    if (st == cudaSuccess)
        vmc_w_count_d2h(n);
    vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_memcpy_on_device(struct vmc_wcall *wc) {
    struct vmc_on_device_args a;
    vmc_get_on_device_args(&wc->in, &a);
    uint32_t dst_symbol = a.dst_symbol, src_symbol = a.src_symbol;
    uint64_t dst = a.dst, src = a.src, count = a.count;
    enum cudaMemcpyKind kind = (enum cudaMemcpyKind)a.kind;
    cudaStream_t stream = (cudaStream_t)(uintptr_t)a.stream;
    unsigned mode = a.mode;
    if (!vmc_w_args_ok(wc))
        return VMC_W_BAD_ARGS;
    int async = (mode & COPY_ASYNC) != 0, per_thread = (mode & COPY_PER_THREAD) != 0;
    void *d = (void *)(uintptr_t)dst;
    const void *s = (const void *)(uintptr_t)src;
    cudaError_t st;
    /* The real symbol entry points are used so that every error is the runtime's own. */
    if (dst_symbol != VMC_NO_INDEX) {
        const void *sym = vmc_w_var_host_var(dst_symbol);
        st = async ? (per_thread ? cudaMemcpyToSymbolAsync_ptsz(sym, s, count, dst, kind, stream)
                                 : cudaMemcpyToSymbolAsync(sym, s, count, dst, kind, stream))
                   : (per_thread ? cudaMemcpyToSymbol_ptds(sym, s, count, dst, kind)
                                 : cudaMemcpyToSymbol(sym, s, count, dst, kind));
    } else if (src_symbol != VMC_NO_INDEX) {
        const void *sym = vmc_w_var_host_var(src_symbol);
        st = async ? (per_thread ? cudaMemcpyFromSymbolAsync_ptsz(d, sym, count, src, kind, stream)
                                 : cudaMemcpyFromSymbolAsync(d, sym, count, src, kind, stream))
                   : (per_thread ? cudaMemcpyFromSymbol_ptds(d, sym, count, src, kind)
                                 : cudaMemcpyFromSymbol(d, sym, count, src, kind));
    } else {
        st = async ? (per_thread ? cudaMemcpyAsync_ptsz(d, s, count, kind, stream) : cudaMemcpyAsync(d, s, count, kind, stream))
                   : (per_thread ? cudaMemcpy_ptds(d, s, count, kind) : cudaMemcpy(d, s, count, kind));
    }
    if (wc->async)
        vmc_w_async_done(wc, st);
    else
        vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

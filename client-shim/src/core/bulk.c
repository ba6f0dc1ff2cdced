#include <stdio.h>
#include <string.h>
#include "bulk.h"

#include "hostmap.h"
#include "shim_call.h"
#include "shim_ranges.h"
#include "shim_session.h"
#include "shim_stripe.h"
#include "transport.h"
#include "vmc_internal.h"
#include "vmc_api.h"
#include "vmc_drv_api.h"

static struct vmc_range_set device_ranges = VMC_RANGE_SET_INIT;

void vmc_device_range_add(uint64_t base, size_t size) {
    vmc_ranges_add(&device_ranges, (const void *)(uintptr_t)base, size, 0);
}

void vmc_device_range_remove(uint64_t base) { vmc_ranges_remove(&device_ranges, (const void *)(uintptr_t)base); }

int vmc_device_range_find(uint64_t p, uint64_t *base, size_t *size) {
    struct vmc_range r;
    if (!vmc_ranges_find(&device_ranges, (const void *)(uintptr_t)p, &r))
        return 0;
    if (base)
        *base = r.base;
    if (size)
        *size = r.size;
    return 1;
}

cudaError_t vmc_sync_default_stream(unsigned mode) {
    /* What the application itself would call: the runtime's or the driver's stream synchronize, whose one
     * argument (the stream handle; 2 is the per-thread default stream in both APIs) travels by value. */
    struct vmc_call c;
    uint64_t stream = (mode & COPY_PER_THREAD) ? 2 : 0;
    cudaError_t st = vmc_call_begin(&c, (mode & COPY_DRIVER) ? VMC_DRV_cuStreamSynchronize : VMC_API_cudaStreamSynchronize, 0);
    if (st != cudaSuccess)
        return st;
    vmc_arg(&c, &stream, sizeof stream);
    return vmc_call_finish(&c);
}

/* Starts a byte-stream copy call `id` on the calling thread's connection with its copy arguments. */
static cudaError_t begin_copy(struct vmc_call *c, uint32_t id, int async, uint32_t symbol, uint64_t address, size_t count,
                              cudaStream_t stream, unsigned mode) {
    cudaError_t st = vmc_call_begin_ex(c, id, async, !(mode & COPY_DRIVER));
    if (st == cudaSuccess)
        vmc_put_copy_args(vmc_call_args(c), &(struct vmc_copy_args){.symbol = symbol, .address = address, .count = count,
                                                                    .stream = (uint64_t)(uintptr_t)stream,
                                                                    .mode = (uint8_t)mode});
    return st;
}

/* Host-to-device over the calling thread's connection: the frame, then `count` bytes straight from
 * the application's buffer. An async copy returns once the bytes are on the wire: the buffer may be
 * reused, as after a native cudaMemcpyAsync from pageable memory. */
static cudaError_t socket_host_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count,
                                         cudaStream_t stream, unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin_copy(&c, VMC_API_vmc_MemcpyHostToDevice, (mode & COPY_ASYNC) != 0, symbol, dst, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    return vmc_call_finish_upload(&c, src, count);
}

/* Device-to-host over the calling thread's connection: always waits for the data, even for
 * cudaMemcpyAsync (the bytes must land in the application's buffer, and only this thread reads its
 * connection). That is a stronger ordering than CUDA promises, never a weaker one. */
static cudaError_t socket_device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                         unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin_copy(&c, VMC_API_vmc_MemcpyDeviceToHost, 0, symbol, src, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    return vmc_call_finish_download(&c, dst, count);
}

/* Device-to-host of at most VMC_PIPE_LANDING_BYTES on a connection whose calls go through a pipe (PROTOCOL.md
 * "Completion word"): the GPU copies into the pipe's landing and writes the completion word, and this thread copies
 * the bytes out as soon as the word says so. */
static cudaError_t landing_device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                          unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin_copy(&c, VMC_API_vmc_MemcpyDeviceToHostLanding, 0, symbol, src, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    st = vmc_call_finish_signalled(&c);
    if (st == cudaSuccess)
        memcpy(dst, c.conn->pipe.landing, count);
    return st;
}

/* One stripe of a striped copy (shim_stripe.h), on the calling thread's own connection: through its ring
 * when it has one. */
static cudaError_t stripe_to_device(uint8_t *host, uint64_t device, size_t n, unsigned mode) {
    if (vmc_ring_for(n, 1))
        return vmc_ring_to_device(VMC_NO_INDEX, device, host, n, 0, mode);
    return socket_host_to_device(VMC_NO_INDEX, device, host, n, 0, mode);
}

static cudaError_t stripe_to_host(uint8_t *host, uint64_t device, size_t n, unsigned mode) {
    if (vmc_ring_for(n, 0))
        return vmc_ring_to_host(host, VMC_NO_INDEX, device, n, 0, mode);
    return socket_device_to_host(host, VMC_NO_INDEX, device, n, 0, mode);
}

/* How many stripes a copy gets: only synchronous copies of plain device memory that lie inside one
 * allocation (so that every stripe fails or succeeds as the whole copy would natively); as the byte stream's
 * policy says, or through a ring as its transport's says (never for some). */
static unsigned stripes_for(uint32_t symbol, uint64_t device, size_t count, unsigned mode, const struct vmc_ring *ring) {
    struct vmc_stripe_policy policy = ring ? ring->stripe : vmc_stream_stripe_policy();
    struct vmc_range r;
    if (symbol != VMC_NO_INDEX || (mode & COPY_ASYNC) || policy.min == 0 || count < policy.min)
        return 1;
    if (!vmc_ranges_find(&device_ranges, (const void *)(uintptr_t)device, &r) || device + count > r.base + r.size)
        return 1;
    return vmc_stripe_ways(count, policy);
}

/* Host-to-device: memory shared with the worker where it lies; else the connection's ring (transport.h)
 * when it has one, striped over several connections when the ring's transport gains from that; else the
 * byte stream (striped when large). */
void vmc_capture_refused_note(void) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
        fputs("vmcuda: a copy between this process's memory and the device cannot be captured into a CUDA graph "
              "here (the graph lives on the appliance; the driver API on the co-located path stages such copies); "
              "it returns cudaErrorStreamCaptureUnsupported\n", stderr);
        fflush(stderr);
    }
}

/* The runtime front end's copies say why a capture refused them; the driver front end's may still stage them. */
static cudaError_t noted(cudaError_t st, unsigned mode) {
    if (st == cudaErrorStreamCaptureUnsupported && !(mode & COPY_DRIVER))
        vmc_capture_refused_note();
    return st;
}

static cudaError_t copy_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, uint64_t stream_arg,
                                  unsigned mode);
static cudaError_t copy_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, uint64_t stream_arg,
                                unsigned mode);

cudaError_t vmc_copy_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, uint64_t stream_arg,
                               unsigned mode) {
    return noted(copy_to_device(symbol, dst, src, count, stream_arg, mode), mode);
}

cudaError_t vmc_copy_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, uint64_t stream_arg, unsigned mode) {
    return noted(copy_to_host(dst, symbol, src, count, stream_arg, mode), mode);
}

static cudaError_t copy_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, uint64_t stream_arg,
                                  unsigned mode) {
    cudaStream_t stream = (cudaStream_t)(uintptr_t)stream_arg;
    /* memory shared with the worker (page-locked with `pinned_in_region`, mapped, managed): the GPU reads it where
     * it is, in stream order (the bytes may still be a kernel's to write) */
    if (symbol == VMC_NO_INDEX && vmc_hostmap_contains(src, count))
        return vmc_hostmap_copy(dst, src, count, stream_arg, mode, 1);
    /* An async copy must return once its bytes have left the buffer, without waiting for the stream:
     * the socket gives that; the ring would wait for the device copy. */
    struct vmc_ring *ring = (mode & COPY_ASYNC) ? NULL : vmc_ring_for(count, 1);
    unsigned ways = stripes_for(symbol, dst, count, mode, ring);
    if (ways > 1)
        return vmc_striped_copy(ways, (uint8_t *)(uintptr_t)src, dst, count, mode, stripe_to_device);
    if (ring)
        return vmc_ring_to_device(symbol, dst, src, count, stream, mode);
    return socket_host_to_device(symbol, dst, src, count, stream, mode);
}

static cudaError_t copy_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, uint64_t stream_arg,
                                unsigned mode) {
    cudaStream_t stream = (cudaStream_t)(uintptr_t)stream_arg;
    if (symbol == VMC_NO_INDEX && vmc_hostmap_contains(dst, count))
        return vmc_hostmap_copy(src, dst, count, stream_arg, mode, 0);
    if (count <= VMC_PIPE_LANDING_BYTES && vmc_thread_piped())
        return landing_device_to_host(dst, symbol, src, count, stream, mode);
    struct vmc_ring *ring = vmc_ring_for(count, 0);
    unsigned ways = stripes_for(symbol, src, count, mode, ring);
    if (ways > 1)
        return vmc_striped_copy(ways, dst, src, count, mode, stripe_to_host);
    if (ring)
        return vmc_ring_to_host(dst, symbol, src, count, stream, mode);
    return socket_device_to_host(dst, symbol, src, count, stream, mode);
}

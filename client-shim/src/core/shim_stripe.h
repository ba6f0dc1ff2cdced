/* Large synchronous copies over TCP, striped over several connections of the session at once.
 *
 * One TCP stream is as fast as one core can copy bytes into and out of the kernel: on the H200
 * machine's loopback the sending thread of a 1 GiB copy spends its time in the kernel's
 * _copy_from_iter, at 4-5 GB/s, while the worker's receiving thread is half idle
 * (tests/gpu/profile-tcp.sh). So a copy of at least VMC_STRIPE_MIN bytes is cut into up to
 * `tcp_streams` contiguous stripes: the calling thread moves the first over its own connection,
 * helper threads (shim_parallel.c) the others, each over its own connection to the worker (joined
 * like any application thread's), where each is received, staged and copied by its own worker thread.
 * Nothing new goes over the wire: each stripe is an ordinary copy call. */
#ifndef SHIM_STRIPE_H
#define SHIM_STRIPE_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

/* When a copy is striped: from `min` bytes (0: never), in stripes of at least `piece` bytes each. */
struct vmc_stripe_policy {
    size_t min;
    size_t piece;
};

/* The byte stream's policy, over TCP and TLS alike: from VMC_STRIPE_MIN bytes in stripes of VMC_STRIPE_PIECE or
 * more. A stripe of one 4 MiB block does not pipeline on its connection (received, then copied), but four of
 * them move at once: H200 run 88 (BENCHMARKS.md "Striping from 4 MiB"), loopback TCP, 4 MiB 4.6-6.9 -> 10.6-12.5
 * GB/s and 16 MiB 3.3-6.1 -> 12.3-14.3 against striping from 32 MiB in 8 MiB stripes; striping 1 MiB in 256 KiB
 * stripes gained little (5.9-7.2 GB/s against 5.8-6.6 unstriped) and lost some at 4 MiB. Over TLS, where one
 * connection moves what one core encrypts (about 2 GB/s, run 72), copies were striped from 4 MiB in 1 MiB stripes
 * already (run 73, striping from 8 MiB: 16 MiB from about 2 to 6 GB/s). */
#define VMC_STRIPE_MIN (4u << 20)
#define VMC_STRIPE_PIECE (1u << 20)

static inline struct vmc_stripe_policy vmc_stream_stripe_policy(void) {
    return (struct vmc_stripe_policy){VMC_STRIPE_MIN, VMC_STRIPE_PIECE};
}

/* Moves one stripe over the calling thread's own connection: host <-> [device, device + n). */
typedef cudaError_t (*vmc_stripe_fn)(uint8_t *host, uint64_t device, size_t n, unsigned mode);

/* How many stripes a synchronous copy of `count` bytes should be cut into under `policy` (1: do not stripe):
 * vmc_stream_stripe_policy() over the byte stream, the ring's own through a ring (transport.h). At most
 * tcp_streams (client.conf), and only in single-GPU sessions. */
unsigned vmc_stripe_ways(size_t count, struct vmc_stripe_policy policy);

/* Moves `count` bytes in up to `ways` stripes with `move` and returns the first error among them (in
 * address order), or cudaSuccess. First waits for the work the calling thread queued before on the
 * default stream that `mode` names (legacy or per-thread): a stripe on another connection runs on that
 * connection's default stream, which is not ordered after this thread's. */
cudaError_t vmc_striped_copy(unsigned ways, uint8_t *host, uint64_t device, size_t count, unsigned mode,
                             vmc_stripe_fn move);

/* Waits for what the calling thread queued on the default stream that `mode` names (legacy or
 * per-thread; the runtime's or the driver's): bulk.c. */
cudaError_t vmc_sync_default_stream(unsigned mode);

#endif

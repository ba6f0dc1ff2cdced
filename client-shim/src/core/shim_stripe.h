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

#define VMC_STRIPE_MIN (32u << 20)
/* Over TLS one connection moves what one core encrypts and the worker's decrypts: about 2 GB/s on the H200
 * host against 5-7 for plain TCP (H200 run 72, tests/bench/results/h200-run72-tls-variants), so striping pays
 * from smaller copies, in smaller stripes. */
#define VMC_TLS_STRIPE_MIN (4u << 20)

/* The byte stream's striping threshold for this client: VMC_TLS_STRIPE_MIN with TLS (tls_ca), else VMC_STRIPE_MIN.
 * (Run 73 striped from 8 MiB: 16 MiB over TLS went from about 2 to 6 GB/s, 4 MiB stayed at 2.2.) */
size_t vmc_stream_stripe_min(void);

/* Moves one stripe over the calling thread's own connection: host <-> [device, device + n). */
typedef cudaError_t (*vmc_stripe_fn)(uint8_t *host, uint64_t device, size_t n, unsigned mode);

/* How many stripes a synchronous copy of `count` bytes should be cut into (1: do not stripe): from `min` bytes
 * (vmc_stream_stripe_min() over the byte stream; a ring's transport may start lower), each stripe at least
 * 8 MiB (1 MiB over TLS). */
unsigned vmc_stripe_ways(size_t count, size_t min);

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

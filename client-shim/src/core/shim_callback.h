/* Host callbacks run in the client process, in stream order (PROTOCOL.md "Host callbacks"): one channel
 * per process, shared by the runtime front end (cudaLaunchHostFunc...) and the driver front end
 * (cuLaunchHostFunc...). */
#ifndef SHIM_CALLBACK_H
#define SHIM_CALLBACK_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#define VMC_CALLBACK_HOST_FN 0u /* fn(user_data) */
#define VMC_CALLBACK_STREAM 1u  /* callback(stream, the stream's status, user_data) */

typedef void (*vmc_host_fn)(void *user_data);
typedef void (*vmc_stream_callback)(void *stream, int status, void *user_data);

/* Enqueues a callback on `stream` (0 + per_thread: the per-thread default stream). Returns the status the
 * API call returns; the status codes involved are the same numbers in the runtime's and the driver's enums. */
cudaError_t vmc_host_callback_enqueue(uint64_t stream, unsigned kind, vmc_host_fn fn, vmc_stream_callback callback,
                                      void *user_data, unsigned flags, int per_thread);

/* Registers fn(user_data) for a graph's host node: the entry is kept for the process (the graph runs it at every
 * execution); *id is what the worker is given for it. */
cudaError_t vmc_host_callback_keep(vmc_host_fn fn, void *user_data, uint64_t *id);

#endif

/* The runtime's host callbacks: cudaLaunchHostFunc, cudaStreamAddCallback (and per-thread variants),
 * served by the client core's callback channel (shim_callback.h). */
#include <cuda_runtime_api.h>

#include "shim_callback.h"

/* cudaStreamCallback_t and the core's vmc_stream_callback differ only in how they name their
 * arguments' types (a stream handle, an error code, user data): the same calling convention. */
#define STREAM_CALLBACK(cb) ((vmc_stream_callback)(void (*)(void))(cb))

__attribute__((visibility("default"))) cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
    return vmc_host_callback_enqueue((uint64_t)(uintptr_t)stream, VMC_CALLBACK_HOST_FN, fn, NULL, userData, 0, 0);
}

extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
__attribute__((visibility("default"))) cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn,
                                                                          void *userData) {
    return vmc_host_callback_enqueue((uint64_t)(uintptr_t)stream, VMC_CALLBACK_HOST_FN, fn, NULL, userData, 0, 1);
}

__attribute__((visibility("default"))) cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                                                        void *userData, unsigned int flags) {
    return vmc_host_callback_enqueue((uint64_t)(uintptr_t)stream, VMC_CALLBACK_STREAM, NULL, STREAM_CALLBACK(callback),
                                     userData, flags, 0);
}

extern cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                              unsigned int flags);
__attribute__((visibility("default"))) cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream,
                                                                             cudaStreamCallback_t callback,
                                                                             void *userData, unsigned int flags) {
    return vmc_host_callback_enqueue((uint64_t)(uintptr_t)stream, VMC_CALLBACK_STREAM, NULL, STREAM_CALLBACK(callback),
                                     userData, flags, 1);
}

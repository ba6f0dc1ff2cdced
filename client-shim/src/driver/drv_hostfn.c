/* cuLaunchHostFunc and cuStreamAddCallback: run in this process, in stream order, through the client
 * core's callback channel (shim_callback.h), which the runtime front end's callbacks share. */
#include "drv.h"
#include "shim_callback.h"

/* CUstreamCallback and the core's vmc_stream_callback differ only in how they name their arguments'
 * types (a stream handle, a status code, user data): the same calling convention. */
#define STREAM_CALLBACK(cb) ((vmc_stream_callback)(void (*)(void))(cb))

__attribute__((visibility("default"))) CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
    return (CUresult)vmc_host_callback_enqueue((uint64_t)(uintptr_t)hStream, VMC_CALLBACK_HOST_FN, fn, NULL, userData, 0, 0);
}

__attribute__((visibility("default"))) CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) {
    return (CUresult)vmc_host_callback_enqueue((uint64_t)(uintptr_t)hStream, VMC_CALLBACK_HOST_FN, fn, NULL, userData, 0, 1);
}

__attribute__((visibility("default"))) CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                                                    void *userData, unsigned int flags) {
    return (CUresult)vmc_host_callback_enqueue((uint64_t)(uintptr_t)hStream, VMC_CALLBACK_STREAM, NULL,
                                               STREAM_CALLBACK(callback), userData, flags, 0);
}

__attribute__((visibility("default"))) CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                                                         void *userData, unsigned int flags) {
    return (CUresult)vmc_host_callback_enqueue((uint64_t)(uintptr_t)hStream, VMC_CALLBACK_STREAM, NULL,
                                               STREAM_CALLBACK(callback), userData, flags, 1);
}

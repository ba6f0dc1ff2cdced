/* cudaGetLastError / cudaPeekAtLastError: NVIDIA's runtime keeps one last error per thread. The worker's
 * runtime holds the last error of the calls forwarded to it; the calls this client answers itself
 * (page-locked memory, refusals) record theirs here (vmc_local_error). The newer of the two is the
 * answer; getting it clears both, as natively. */
#include <cuda_runtime_api.h>

#include "shim_call.h"

cudaError_t vmc_forward_cudaGetLastError(void);
cudaError_t vmc_forward_cudaPeekAtLastError(void);

/* The local error is read before the forwarded call: a failing forwarded call counts as newer (shim_call.c),
 * and the worker's answer here is an older error, not a newer one. */
/* The local one, unless the worker reports an error and an asynchronous call went out after the local
 * one (its failure is newer; asynchronous errors surface late, so this is the best order known). */
static cudaError_t newer(int local, cudaError_t forwarded, int async_since) {
    if (!local || (forwarded != cudaSuccess && async_since))
        return forwarded;
    return (cudaError_t)local;
}

__attribute__((visibility("default"))) cudaError_t cudaGetLastError(void) {
    int async_since = vmc_async_sent_since_local_error();
    int local = vmc_local_error_take(1);
    cudaError_t forwarded = vmc_forward_cudaGetLastError(); /* clears the worker's too */
    return newer(local, forwarded, async_since);
}

__attribute__((visibility("default"))) cudaError_t cudaPeekAtLastError(void) {
    int async_since = vmc_async_sent_since_local_error();
    int local = vmc_local_error_take(0);
    cudaError_t forwarded = vmc_forward_cudaPeekAtLastError();
    if (local)
        vmc_local_error_restore(local); /* peeking changes nothing (the forwarded failure may have cleared it) */
    return newer(local, forwarded, async_since);
}

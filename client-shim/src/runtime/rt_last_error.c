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
__attribute__((visibility("default"))) cudaError_t cudaGetLastError(void) {
    int local = vmc_local_error_take(1);
    cudaError_t forwarded = vmc_forward_cudaGetLastError(); /* clears the worker's too */
    return local ? (cudaError_t)local : forwarded;
}

__attribute__((visibility("default"))) cudaError_t cudaPeekAtLastError(void) {
    int local = vmc_local_error_take(0);
    cudaError_t forwarded = vmc_forward_cudaPeekAtLastError();
    if (!local)
        return forwarded;
    vmc_local_error(local); /* still the newest: peeking changes nothing */
    return (cudaError_t)local;
}

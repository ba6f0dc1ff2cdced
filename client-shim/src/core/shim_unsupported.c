#include "shim_unsupported.h"

#include <stdio.h>

#include "shim_call.h"

#define CUDA_ERROR_NOT_SUPPORTED 801 /* cudaErrorNotSupported; this file avoids the CUDA headers */

int vmc_unsupported(const char *name, int *told) {
    if (!__atomic_exchange_n(told, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "vmcuda: %s is not supported yet; it returns cudaErrorNotSupported\n", name);
        fflush(stderr);
    }
    return vmc_local_error(CUDA_ERROR_NOT_SUPPORTED);
}

void vmc_not_supported_because(const char *what, const char *why, int *told) {
    if (!__atomic_exchange_n(told, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "vmcuda: %s is not supported: %s; it returns cudaErrorNotSupported\n", what, why);
        fflush(stderr);
    }
    vmc_local_error(CUDA_ERROR_NOT_SUPPORTED);
}

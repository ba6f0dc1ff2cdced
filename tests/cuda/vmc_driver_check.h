/* Driver-API functions in the test programs, reached through cudaGetDriverEntryPointByVersion as a runtime program
 * reaches them: vmc_driver_entry finds one, and CU runs a call that must succeed (on an error it prints the call and
 * the CUresult and stops, as CK does (vmc_check.h), with the same exit code). */
#ifndef VMC_DRIVER_CHECK_H
#define VMC_DRIVER_CHECK_H

#include <cuda.h>
#include "vmc_check.h"

#define CU(call)                                                                                                  \
    do {                                                                                                          \
        CUresult r_ = (call);                                                                                     \
        if (r_ != CUDA_SUCCESS) {                                                                                 \
            printf("CUDA_DRIVER_ERROR %s -> %d\nFAIL (stopped at the first CUDA error)\n", #call, (int)r_);       \
            exit(VMC_EXIT_CUDA_ERROR);                                                                            \
        }                                                                                                         \
    } while (0)

/* The driver's entry point `name` of the ABI of CUDA `version` (10020 for 10.2), or NULL where there is none. */
__attribute__((unused)) static void *vmc_driver_entry(const char *name, int version) {
    void *f = NULL;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion(name, &f, version, cudaEnableDefault, &q));
    return q == cudaDriverEntryPointSuccess ? f : NULL;
}

#endif

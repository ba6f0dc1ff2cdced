/* A driver-API call that must succeed, for the test programs that reach driver functions through
 * cudaGetDriverEntryPointByVersion: on an error it prints the call and the CUresult and stops, as CK does
 * (vmc_check.h), with the same exit code. */
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

#endif

/* Page-locked host memory lives on the client: shared helpers of shim_memory.c (allocations) and
 * shim_hostmem.c (registrations). */
#ifndef SHIM_HOSTMEM_H
#define SHIM_HOSTMEM_H

#include <cuda_runtime_api.h>

/* Asks the worker to create its context, as the native call would: the error a native
 * cudaMallocHost/cudaHostRegister would return on this appliance (shim_memory.c). */
cudaError_t vmc_context_check(void);

#endif

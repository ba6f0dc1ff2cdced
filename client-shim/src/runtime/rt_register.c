/* The registration entry points the application's constructors call: recorded in the client core's
 * registry (shim_registry.h), no network. Whether anything was registered decides whether the session
 * ships this executable to the appliance (shim_session.c). */
#include <cuda_runtime_api.h>

#include "shim_registry.h"

/* The fat binary itself is not needed on the client: the appliance runs the same executable,
 * whose constructors register the same images with the real runtime. The handle only has to be
 * unique and non-NULL. */
static int fatbin_handle_storage[1];

__attribute__((visibility("default"))) void **__cudaRegisterFatBinary(void *fatCubin) {
    (void)fatCubin;
    return (void **)fatbin_handle_storage;
}

__attribute__((visibility("default"))) void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) { (void)fatCubinHandle; }

__attribute__((visibility("default"))) void __cudaUnregisterFatBinary(void **fatCubinHandle) { (void)fatCubinHandle; }

__attribute__((visibility("default"))) char __cudaInitModule(void **fatCubinHandle) {
    (void)fatCubinHandle;
    return 1;
}

__attribute__((visibility("default"))) void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
        char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim,
        dim3 *gDim, int *wSize) {
    (void)fatCubinHandle; (void)deviceFun; (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    vmc_registry_add_kernel(hostFun, deviceName);
}

__attribute__((visibility("default"))) void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
        const char *deviceName, int ext, size_t size, int constant, int global) {
    (void)fatCubinHandle; (void)deviceAddress; (void)ext; (void)constant; (void)global;
    vmc_registry_add_var(hostVar, deviceName, size);
}

/* Managed variables are registered so that indices stay aligned with the worker's; using them
 * needs managed memory, which the shim does not support yet (cudaMallocManaged says so). */
__attribute__((visibility("default"))) void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
        char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global) {
    (void)fatCubinHandle; (void)deviceAddress; (void)ext; (void)constant; (void)global;
    vmc_registry_add_var(hostVarPtrAddress, deviceName, size);
}

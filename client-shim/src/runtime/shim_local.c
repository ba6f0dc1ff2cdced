/* Calls the shim answers without the appliance: error names and strings (the table is generated at
 * build time from NVIDIA's own runtime, so the text is identical), the runtime version, and
 * channel descriptors (a pure value constructor). */
#include <cuda_runtime_api.h>

#include "errtab.h"

__attribute__((visibility("default"))) const char *cudaGetErrorName(cudaError_t error) {
    const struct vmc_error_text *e = vmc_error_text((int)error);
    return e ? e->name : VMC_UNKNOWN_ERROR_NAME;
}

__attribute__((visibility("default"))) const char *cudaGetErrorString(cudaError_t error) {
    const struct vmc_error_text *e = vmc_error_text((int)error);
    return e ? e->text : VMC_UNKNOWN_ERROR_STRING;
}

/* The shim implements the runtime API of the headers it was built with. */
__attribute__((visibility("default"))) cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
    if (!runtimeVersion)
        return cudaErrorInvalidValue;
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

__attribute__((visibility("default"))) struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                                                         enum cudaChannelFormatKind f) {
    struct cudaChannelFormatDesc d = {x, y, z, w, f};
    return d;
}

/* CUDA IPC through the runtime (cudaIpc*): each function is its driver twin (drv_ipc.c says how vmcuda serves
 * them and when the appliance refuses), served through the driver front end (rt_driver.h). The runtime's handle
 * types are the driver's, byte for byte. */
#include <string.h>

#include "rt_driver.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle), "cudaIpcMemHandle_t is CUipcMemHandle");
_Static_assert(sizeof(cudaIpcEventHandle_t) == sizeof(CUipcEventHandle), "cudaIpcEventHandle_t is CUipcEventHandle");
_Static_assert(cudaIpcMemLazyEnablePeerAccess == (int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS,
               "cudaIpcMemLazyEnablePeerAccess is the driver's flag");

#define API __attribute__((visibility("default")))

API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
    VMC_RT_VIA_DRIVER(cuIpcGetMemHandle((CUipcMemHandle *)handle, (CUdeviceptr)(uintptr_t)devPtr));
}

API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event) {
    VMC_RT_VIA_DRIVER(cuIpcGetEventHandle((CUipcEventHandle *)handle, (CUevent)event));
}

API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle) {
    CUipcEventHandle h;
    memcpy(&h, &handle, sizeof h);
    VMC_RT_VIA_DRIVER(cuIpcOpenEventHandle((CUevent *)event, h));
}

API cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags) {
    CUipcMemHandle h;
    memcpy(&h, &handle, sizeof h);
    VMC_RT_VIA_DRIVER(cuIpcOpenMemHandle_v2((CUdeviceptr *)devPtr, h, flags));
}

API cudaError_t cudaIpcCloseMemHandle(void *devPtr) {
    VMC_RT_VIA_DRIVER(cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)devPtr));
}

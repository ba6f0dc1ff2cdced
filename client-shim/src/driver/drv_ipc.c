/* CUDA's legacy inter-process communication (cuIpc*): one process exports a device allocation or an event as a
 * 64-byte handle, passes it by its own means (shared memory, a pipe) to another process, which opens it. Through
 * vmcuda each client process has its own worker on the appliance, so the handle is the worker's, made by
 * NVIDIA's driver there, and it travels unchanged: the opening process's worker opens it with the driver. The
 * appliance serves these calls only where its operator allows (appliance setting worker.cuda_ipc, PROTOCOL.md
 * "CUDA IPC"): NVIDIA's driver opens a handle for any process of the machine that presents it, so with several
 * tenants on one appliance a tenant's exported buffers could be opened by another tenant's code. Refused, the
 * worker answers CUDA_ERROR_NOT_PERMITTED, and the program gets CUDA_ERROR_NOT_SUPPORTED with one line saying why.
 * An opened allocation is device memory here, as an allocation of this process is (a unified copy must see it so). */
#include "drv.h"
#include "bulk.h"
#include "drv_call.h"
#include "drv_memory.h"

CUresult vmc_forward_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr);
CUresult vmc_forward_cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event);
CUresult vmc_forward_cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult vmc_forward_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult vmc_forward_cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle);
CUresult vmc_forward_cuIpcCloseMemHandle(CUdeviceptr dptr);

#define API __attribute__((visibility("default")))

/* The worker's refusal as the program sees it: one line, once. */
static CUresult answer(CUresult st, const char *function) {
    static int told;
    if (st != CUDA_ERROR_NOT_PERMITTED)
        return st;
    return vmc_drv_not_supported(function,
                                 "this appliance does not serve CUDA IPC (its setting worker.cuda_ipc: off by default "
                                 "where it serves two or more tenants, whose code could open each other's handles)",
                                 &told);
}

API CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    return answer(vmc_forward_cuIpcGetMemHandle(pHandle, dptr), "cuIpcGetMemHandle");
}

API CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event) {
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    return answer(vmc_forward_cuIpcGetEventHandle(pHandle, event), "cuIpcGetEventHandle");
}

API CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle) {
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    return answer(vmc_forward_cuIpcOpenEventHandle(phEvent, handle), "cuIpcOpenEventHandle");
}

/* The whole allocation the handle opened is recorded, as the worker's driver sees it. */
static CUresult opened(CUresult st, const CUdeviceptr *pdptr) {
    if (st == CUDA_SUCCESS)
        vmc_drv_record_shared(*pdptr);
    return answer(st, "cuIpcOpenMemHandle");
}

API CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    if (!pdptr)
        return CUDA_ERROR_INVALID_VALUE;
    return opened(vmc_forward_cuIpcOpenMemHandle(pdptr, handle, Flags), pdptr);
}

API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    if (!pdptr)
        return CUDA_ERROR_INVALID_VALUE;
    return opened(vmc_forward_cuIpcOpenMemHandle_v2(pdptr, handle, Flags), pdptr);
}

API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
    CUresult st = vmc_forward_cuIpcCloseMemHandle(dptr);
    if (st == CUDA_SUCCESS)
        vmc_device_range_remove(dptr);
    return answer(st, "cuIpcCloseMemHandle");
}

/* CUDA IPC (cuIpc*; the client's drv_ipc.c): NVIDIA's driver opens a handle for whichever process of this machine
 * presents it, whatever its user or namespaces, so serving these calls lets one session's code open what another
 * session exported. The daemon says whether this worker may (VMCUDA_CUDA_IPC=1, from the appliance setting
 * worker.cuda_ipc); refused, the call is answered CUDA_ERROR_NOT_PERMITTED (PROTOCOL.md "CUDA IPC"), which the
 * client turns into CUDA_ERROR_NOT_SUPPORTED and a line saying why. Allowed, the generated dispatch serves them. */
#include <stdlib.h>
#include <string.h>

#include "worker.h"
#include "worker_driver.h"
#include "vmc_drv_api.h"

static int is_ipc(uint32_t id) {
    switch (id) {
    case VMC_DRV_cuIpcGetMemHandle:
    case VMC_DRV_cuIpcGetEventHandle:
    case VMC_DRV_cuIpcOpenMemHandle:
    case VMC_DRV_cuIpcOpenMemHandle_v2:
    case VMC_DRV_cuIpcOpenEventHandle:
    case VMC_DRV_cuIpcCloseMemHandle: return 1;
    default: return 0;
    }
}

int vmc_w_ipc_refused(struct vmc_wcall *wc, enum vmc_w_result *r) {
    static int told;
    if (!is_ipc(wc->id))
        return 0;
    const char *allowed = getenv("VMCUDA_CUDA_IPC");
    if (allowed && strcmp(allowed, "1") == 0)
        return 0;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        vmc_w_log("CUDA IPC refused: the appliance setting worker.cuda_ipc is off for this session");
    vmc_w_reply_status(wc, (cudaError_t)CUDA_ERROR_NOT_PERMITTED);
    *r = VMC_W_DONE;
    return 1;
}

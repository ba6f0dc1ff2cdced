/* drv_ipc_policy: exports a device allocation for CUDA IPC (cuIpcGetMemHandle) and prints the driver's answer by
 * name. Whether the appliance serves CUDA IPC is its operator's choice (worker.cuda_ipc); where it does not, the
 * answer is CUDA_ERROR_NOT_SUPPORTED and vmcuda says why on stderr (DriverFrontEndTest). */
#include "drv_check.h"

int main(void) {
    CUdeviceptr p;
    CUipcMemHandle h;
    const char *name = "?";
    use_primary_context();
    CU(cuMemAlloc(&p, 1 << 20));
    CUresult st = cuIpcGetMemHandle(&h, p);
    cuGetErrorName(st, &name);
    printf("cuIpcGetMemHandle: %s\n", name);
    CU(cuMemFree(p));
    return 0;
}

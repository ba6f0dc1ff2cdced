/* vmc_drv_MirrorAlloc / vmc_drv_MirrorFree (PROTOCOL.md "Mapped host memory across machines"): mapped host
 * memory for a client that does not share memory with this worker. The real mapped memory is this worker's
 * (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP), so kernels reach it as natively; the client keeps a
 * mirror of it and copies its changes in and the GPU's out at the synchronising calls (drv_mirror.c). The
 * worker answers the device address and frees what it allocated; the host address never leaves it. */
#include "worker_driver.h"
#include <cudaTypedefs.h>
#include <pthread.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"
#include "worker.h"

static struct {
    CUdeviceptr device;
    void *host;
} mirrors[VMC_MAX_MIRRORS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

enum vmc_w_result vmc_w_mirror_alloc(struct vmc_wcall *wc) {
    struct vmc_mirror_alloc_args a;
    vmc_get_mirror_alloc_args(&wc->in, &a);
    uint64_t size = a.size;
    uint32_t flags = a.flags;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuMemHostAlloc_v2020, host_alloc, "cuMemHostAlloc", 2020, 0);
    DRV(PFN_cuMemHostGetDevicePointer_v3020, device_pointer, "cuMemHostGetDevicePointer", 3020, 0);
    DRV(PFN_cuMemFreeHost_v2000, free_host, "cuMemFreeHost", 2000, 0);
    CUresult st = size == 0 || size > VMC_MAX_MIRROR_BYTES ? CUDA_ERROR_INVALID_VALUE
                  : !host_alloc || !device_pointer || !free_host ? vmc_w_drv_missing("cuMemHostAlloc")
                                                                 : CUDA_SUCCESS;
    void *host = NULL;
    CUdeviceptr device = 0;
    if (st == CUDA_SUCCESS)
        st = host_alloc(&host, (size_t)size, flags | CU_MEMHOSTALLOC_DEVICEMAP);
    if (st == CUDA_SUCCESS) {
        memset(host, 0, (size_t)size); /* as the client's mirror starts */
        st = device_pointer(&device, host, 0);
    }
    if (st == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        int slot = -1;
        for (int i = 0; i < VMC_MAX_MIRRORS && slot < 0; i++)
            if (!mirrors[i].host)
                slot = i;
        if (slot >= 0)
            mirrors[slot].device = device, mirrors[slot].host = host;
        pthread_mutex_unlock(&lock);
        if (slot < 0)
            st = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (st != CUDA_SUCCESS && host)
        free_host(host);
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_device_address(vmc_w_reply_out(wc), &(struct vmc_device_address){.address = (uint64_t)device});
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_mirror_free(struct vmc_wcall *wc) {
    struct vmc_device_address a;
    vmc_get_device_address(&wc->in, &a);
    CUdeviceptr device = (CUdeviceptr)a.address;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuMemFreeHost_v2000, free_host, "cuMemFreeHost", 2000, 0);
    void *host = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMC_MAX_MIRRORS && !host; i++)
        if (mirrors[i].host && mirrors[i].device == device) {
            host = mirrors[i].host;
            mirrors[i].host = NULL;
        }
    pthread_mutex_unlock(&lock);
    CUresult st = !host ? CUDA_ERROR_INVALID_VALUE : free_host ? free_host(host) : vmc_w_drv_missing("cuMemFreeHost");
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

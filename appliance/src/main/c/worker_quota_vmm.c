/* The device-memory quota (worker_quota.c) for the virtual memory management API: cuMemCreate makes
 * physical memory (counted with its size), cuMemRelease gives it back (the driver frees it once it is also
 * unmapped; counting it free at the release is the client's own promise). Same wire format as the
 * generated dispatch (cuda-driver.spec). Handles are kept with the two top bits set, apart from device
 * pointers and array handles. */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "worker_driver.h"
#include "worker_quota.h"
#include <cudaTypedefs.h>

#define VMM_TAG (VMC_QUOTA_HANDLE_TAG | (VMC_QUOTA_HANDLE_TAG >> 1))

static enum vmc_w_result create(struct vmc_wcall *wc) {
    CUmemGenericAllocationHandle handle_v = 0;
    CUmemAllocationProp prop_v;
    memset(&prop_v, 0, sizeof prop_v);
    CUmemGenericAllocationHandle *handle = vmc_w_arg_pointee(wc, &handle_v, sizeof handle_v);
    size_t size = 0;
    vmc_w_arg(wc, &size, sizeof size);
    CUmemAllocationProp *prop = vmc_w_arg_pointee(wc, &prop_v, sizeof prop_v);
    unsigned long long flags = 0;
    vmc_w_arg(wc, &flags, sizeof flags);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuMemCreate_v10020 fn = (PFN_cuMemCreate_v10020)vmc_w_drv_proc(wc->id, "cuMemCreate", 10020, 0);
    CUresult st;
    if (!vmc_w_quota_reserve(size)) {
        vmc_w_log("quota: refused cuMemCreate of %zu bytes", size);
        st = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        st = fn ? fn(handle, size, prop, flags) : vmc_w_drv_missing("cuMemCreate");
        vmc_w_quota_settle(st == CUDA_SUCCESS && handle && *handle, handle ? (uintptr_t)*handle | VMM_TAG : 0, size);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_w_reply_pointee(wc, handle, sizeof handle_v);
    return VMC_W_DONE;
}

static enum vmc_w_result release(struct vmc_wcall *wc) {
    CUmemGenericAllocationHandle handle = 0;
    vmc_w_arg(wc, &handle, sizeof handle);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuMemRelease_v10020 fn = (PFN_cuMemRelease_v10020)vmc_w_drv_proc(wc->id, "cuMemRelease", 10020, 0);
    CUresult st = fn ? fn(handle) : vmc_w_drv_missing("cuMemRelease");
    if (st == CUDA_SUCCESS && handle)
        vmc_w_quota_release((uintptr_t)handle | VMM_TAG);
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

int vmc_w_quota_intercept_vmm(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_DRV_cuMemCreate: *r = create(wc); return 1;
    case VMC_DRV_cuMemRelease: *r = release(wc); return 1;
    default: return 0;
    }
}

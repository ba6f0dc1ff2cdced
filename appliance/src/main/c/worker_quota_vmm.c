/* The device-memory quota (worker_quota.c) for the virtual memory management API. cuMemCreate makes
 * physical memory, counted with its size. It stays in use while it is mapped, even after cuMemRelease (the
 * usual pattern is create, map, release at once): its bytes go back only when it has been released and
 * every mapping of it is gone (cuMemUnmap), as the driver frees it then. Same wire format as the generated
 * dispatch (cuda-driver.spec). Quota keys are the handles with the two top bits set, apart from device
 * pointers and array handles. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "worker_driver.h"
#include "worker_quota.h"
#include <cudaTypedefs.h>

#define VMM_TAG (VMC_QUOTA_HANDLE_TAG | (VMC_QUOTA_HANDLE_TAG >> 1))
#define MAX_HANDLES 65536
#define MAX_MAPPINGS 65536

static struct handle {
    CUmemGenericAllocationHandle handle;
    int mappings;
    int released;
} handles[MAX_HANDLES];
static int n_handles;
static struct mapping {
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle handle;
} mappings[MAX_MAPPINGS];
static int n_mappings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct handle *find_handle(CUmemGenericAllocationHandle h) {
    for (int i = 0; i < n_handles; i++)
        if (handles[i].handle == h)
            return &handles[i];
    return NULL;
}

/* Gives the bytes back once the handle is released and unmapped. Caller holds lock. */
static void settle(struct handle *h) {
    if (!h->released || h->mappings > 0)
        return;
    vmc_w_quota_release((uintptr_t)h->handle | VMM_TAG);
    *h = handles[--n_handles];
}

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
    pthread_mutex_lock(&lock);
    int room = n_handles < MAX_HANDLES;
    pthread_mutex_unlock(&lock);
    if (!room || !vmc_w_quota_reserve(size)) {
        vmc_w_log("quota: refused cuMemCreate of %zu bytes", size);
        st = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        st = fn ? fn(handle, size, prop, flags) : vmc_w_drv_missing("cuMemCreate");
        int made = st == CUDA_SUCCESS && handle && *handle;
        vmc_w_quota_settle(made, made ? (uintptr_t)*handle | VMM_TAG : 0, size);
        if (made) {
            pthread_mutex_lock(&lock);
            handles[n_handles++] = (struct handle){*handle, 0, 0};
            pthread_mutex_unlock(&lock);
        }
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
    pthread_mutex_lock(&lock);
    struct handle *h = st == CUDA_SUCCESS ? find_handle(handle) : NULL;
    if (h) {
        h->released = 1;
        settle(h);
    }
    pthread_mutex_unlock(&lock);
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

static enum vmc_w_result map(struct vmc_wcall *wc) {
    CUdeviceptr ptr = 0;
    size_t size = 0, offset = 0;
    CUmemGenericAllocationHandle handle = 0;
    unsigned long long flags = 0;
    vmc_w_arg(wc, &ptr, sizeof ptr);
    vmc_w_arg(wc, &size, sizeof size);
    vmc_w_arg(wc, &offset, sizeof offset);
    vmc_w_arg(wc, &handle, sizeof handle);
    vmc_w_arg(wc, &flags, sizeof flags);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuMemMap_v10020 fn = (PFN_cuMemMap_v10020)vmc_w_drv_proc(wc->id, "cuMemMap", 10020, 0);
    CUresult st;
    pthread_mutex_lock(&lock);
    int room = n_mappings < MAX_MAPPINGS;
    pthread_mutex_unlock(&lock);
    st = !room ? CUDA_ERROR_OUT_OF_MEMORY : fn ? fn(ptr, size, offset, handle, flags) : vmc_w_drv_missing("cuMemMap");
    if (st == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        struct handle *h = find_handle(handle);
        if (h) {
            h->mappings++;
            mappings[n_mappings++] = (struct mapping){ptr, handle};
        }
        pthread_mutex_unlock(&lock);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

static enum vmc_w_result unmap(struct vmc_wcall *wc) {
    CUdeviceptr ptr = 0;
    size_t size = 0;
    vmc_w_arg(wc, &ptr, sizeof ptr);
    vmc_w_arg(wc, &size, sizeof size);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuMemUnmap_v10020 fn = (PFN_cuMemUnmap_v10020)vmc_w_drv_proc(wc->id, "cuMemUnmap", 10020, 0);
    CUresult st = fn ? fn(ptr, size) : vmc_w_drv_missing("cuMemUnmap");
    if (st == CUDA_SUCCESS) {
        /* every mapping that started inside the unmapped range is gone */
        pthread_mutex_lock(&lock);
        for (int i = 0; i < n_mappings;) {
            if (mappings[i].ptr - ptr < size) {
                struct handle *h = find_handle(mappings[i].handle);
                mappings[i] = mappings[--n_mappings];
                if (h) {
                    h->mappings--;
                    settle(h);
                }
            } else {
                i++;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

int vmc_w_quota_intercept_vmm(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_DRV_cuMemCreate: *r = create(wc); return 1;
    case VMC_DRV_cuMemRelease: *r = release(wc); return 1;
    case VMC_DRV_cuMemMap: *r = map(wc); return 1;
    case VMC_DRV_cuMemUnmap: *r = unmap(wc); return 1;
    default: return 0;
    }
}

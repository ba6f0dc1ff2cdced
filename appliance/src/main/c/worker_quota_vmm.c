/* The device-memory quota (worker_quota.c) for the virtual memory management API. cuMemCreate makes
 * physical memory, counted with its size. It stays in use while it is mapped, even after cuMemRelease (the
 * usual pattern is create, map, release at once): its bytes go back only when it has been released and
 * every mapping of it is gone (cuMemUnmap), as the driver frees it then. Served through the hooks the
 * generated dispatch calls (`hook` lines of cuda-driver.spec). Quota keys are the handles with the two top bits set, apart from device
 * pointers and array handles. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
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
static int n_handles, handles_promised; /* promised: room kept for calls under way, so that two at once fit too */
static struct mapping {
    CUdeviceptr ptr;
    CUmemGenericAllocationHandle handle;
} mappings[MAX_MAPPINGS];
static int n_mappings, mappings_promised;
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

CUresult vmc_w_hook_cuMemCreate(PFN_cuMemCreate_v10020 real, CUmemGenericAllocationHandle_v1 *handle, size_t size,
                                const CUmemAllocationProp_v1 *prop, unsigned long long flags) {
    if (!vmc_w_quota_on())
        return real(handle, size, prop, flags);
    pthread_mutex_lock(&lock);
    int room = n_handles + handles_promised < MAX_HANDLES;
    handles_promised += room;
    pthread_mutex_unlock(&lock);
    if (!room || !vmc_w_quota_reserve(size)) {
        pthread_mutex_lock(&lock);
        handles_promised -= room;
        pthread_mutex_unlock(&lock);
        return vmc_w_quota_refuse_driver("cuMemCreate", size);
    }
    CUresult st = real(handle, size, prop, flags);
    int made = st == CUDA_SUCCESS && handle && *handle;
    vmc_w_quota_settle(made, made ? (uintptr_t)*handle | VMM_TAG : 0, size);
    pthread_mutex_lock(&lock);
    handles_promised--;
    if (made)
        handles[n_handles++] = (struct handle){*handle, 0, 0};
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemRelease(PFN_cuMemRelease_v10020 real, CUmemGenericAllocationHandle_v1 handle) {
    CUresult st = real(handle);
    if (st == CUDA_SUCCESS)
        vmc_w_shareable_forget_allocation(handle);
    if (!vmc_w_quota_on() || st != CUDA_SUCCESS)
        return st;
    pthread_mutex_lock(&lock);
    struct handle *h = find_handle(handle);
    if (h) {
        h->released = 1;
        settle(h);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemMap(PFN_cuMemMap_v10020 real, CUdeviceptr_v2 ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle_v1 handle, unsigned long long flags) {
    if (!vmc_w_quota_on())
        return real(ptr, size, offset, handle, flags);
    pthread_mutex_lock(&lock);
    int room = n_mappings + mappings_promised < MAX_MAPPINGS;
    mappings_promised += room;
    pthread_mutex_unlock(&lock);
    CUresult st = room ? real(ptr, size, offset, handle, flags) : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    mappings_promised -= room;
    struct handle *h = st == CUDA_SUCCESS ? find_handle(handle) : NULL;
    if (h) {
        h->mappings++;
        mappings[n_mappings++] = (struct mapping){ptr, handle};
    }
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemUnmap(PFN_cuMemUnmap_v10020 real, CUdeviceptr_v2 ptr, size_t size) {
    CUresult st = real(ptr, size);
    if (!vmc_w_quota_on() || st != CUDA_SUCCESS)
        return st;
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
    return st;
}

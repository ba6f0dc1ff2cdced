/* The virtual memory API's physical allocations (cuMemCreate, and handles imported from another process): how long
 * each lives, for the device-memory quota (worker_quota.c) and for its shareable exports (worker_shareable.c).
 *
 * The driver frees an allocation once the program holds no reference to it and no mapping of it is left: cuMemCreate
 * and an import give a reference, cuMemRetainAllocationHandle another (the same handle value), cuMemRelease takes one
 * back, and cuMemMap / cuMemUnmap add and remove mappings (the usual pattern is create, map, release at once, so the
 * memory lives on until it is unmapped). Only then are its bytes given back to the quota and its exports closed
 * (natively an exported descriptor keeps the memory even longer, until the program closes it, which the worker
 * cannot see). Served through the hooks the generated dispatch calls (`hook` lines of cuda-driver.spec). Quota keys
 * are the handles with the two top bits set, apart from device pointers and array handles. */
#include <inttypes.h>
#include <limits.h>
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
    int refs;     /* the program's references: creation or import, retains, minus releases */
    int mappings; /* mappings of it that are left */
    int counted;  /* its bytes count against the quota (made by cuMemCreate with a quota on) */
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

/* Once nothing of the program's holds it, the driver has freed it: its bytes and its exports go. Caller holds lock. */
static void settle(struct handle *h) {
    if (h->refs > 0 || h->mappings > 0)
        return;
    if (h->counted)
        vmc_w_quota_release((uintptr_t)h->handle | VMM_TAG);
    vmc_w_shareable_forget_allocation(h->handle);
    *h = handles[--n_handles];
}

/* Room in the table for one more handle, kept for a call under way; 0 when full. */
static int promise_handle(void) {
    pthread_mutex_lock(&lock);
    int room = n_handles + handles_promised < MAX_HANDLES;
    handles_promised += room;
    pthread_mutex_unlock(&lock);
    return room;
}

/* The call a promise was kept for is over: `made` is the handle it gave, or 0. */
static void keep_promise(int promised, CUmemGenericAllocationHandle made, int counted) {
    pthread_mutex_lock(&lock);
    handles_promised -= promised;
    if (promised && made)
        handles[n_handles++] = (struct handle){made, 1, 0, counted};
    pthread_mutex_unlock(&lock);
}

CUresult vmc_w_hook_cuMemCreate(PFN_cuMemCreate_v10020 real, CUmemGenericAllocationHandle_v1 *handle, size_t size,
                                const CUmemAllocationProp_v1 *prop, unsigned long long flags) {
    int room = promise_handle();
    if (!vmc_w_quota_on()) {
        /* without a quota a full table refuses nothing: such a handle's exports go at its first release */
        CUresult st = real(handle, size, prop, flags);
        keep_promise(room, st == CUDA_SUCCESS && handle ? *handle : 0, 0);
        return st;
    }
    if (!room || !vmc_w_quota_reserve(size)) {
        keep_promise(room, 0, 0);
        return vmc_w_quota_refuse_driver("cuMemCreate", size);
    }
    CUresult st = real(handle, size, prop, flags);
    int made = st == CUDA_SUCCESS && handle && *handle;
    vmc_w_quota_settle(made, made ? (uintptr_t)*handle | VMM_TAG : 0, size);
    keep_promise(room, made ? *handle : 0, 1);
    return st;
}

void vmc_w_vmm_imported(CUmemGenericAllocationHandle handle) {
    keep_promise(promise_handle(), handle, 0);
}

CUresult vmc_w_hook_cuMemRetainAllocationHandle(PFN_cuMemRetainAllocationHandle_v11000 real,
                                                CUmemGenericAllocationHandle_v1 *handle, void *addr) {
    CUresult st = real(handle, addr);
    if (st != CUDA_SUCCESS || !handle)
        return st;
    pthread_mutex_lock(&lock);
    struct handle *h = find_handle(*handle);
    if (h && h->refs < INT_MAX) /* past that the program has retained it two billion times: it stays */
        h->refs++;
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemRelease(PFN_cuMemRelease_v10020 real, CUmemGenericAllocationHandle_v1 handle) {
    CUresult st = real(handle);
    if (st != CUDA_SUCCESS)
        return st;
    pthread_mutex_lock(&lock);
    struct handle *h = find_handle(handle);
    if (h) {
        h->refs--;
        settle(h);
    }
    pthread_mutex_unlock(&lock);
    if (!h) /* not tracked (the table was full): its exports go now, while the handle still names this memory */
        vmc_w_shareable_forget_allocation(handle);
    return st;
}

CUresult vmc_w_hook_cuMemMap(PFN_cuMemMap_v10020 real, CUdeviceptr_v2 ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle_v1 handle, unsigned long long flags) {
    pthread_mutex_lock(&lock);
    int room = n_mappings + mappings_promised < MAX_MAPPINGS;
    mappings_promised += room;
    pthread_mutex_unlock(&lock);
    /* with a quota a mapping that could not be followed is refused: its memory could outlive the count */
    CUresult st = room || !vmc_w_quota_on() ? real(ptr, size, offset, handle, flags) : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    mappings_promised -= room;
    struct handle *h = st == CUDA_SUCCESS && room ? find_handle(handle) : NULL;
    if (h) {
        h->mappings++;
        mappings[n_mappings++] = (struct mapping){ptr, handle};
    }
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemUnmap(PFN_cuMemUnmap_v10020 real, CUdeviceptr_v2 ptr, size_t size) {
    CUresult st = real(ptr, size);
    if (st != CUDA_SUCCESS)
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

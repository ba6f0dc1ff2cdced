/* The virtual memory API's physical allocations (cuMemCreate, and handles imported from another process): how long
 * each lives, for the device-memory quota (worker_quota.c) and for its shareable exports (worker_shareable.c).
 *
 * The driver frees an allocation once the program holds no reference to it and no mapping of it is left: cuMemCreate
 * and an import give a reference, cuMemRetainAllocationHandle another (the same handle value), cuMemRelease takes one
 * back, and cuMemMap / cuMemUnmap add and remove mappings (the usual pattern is create, map, release at once, so the
 * memory lives on until it is unmapped). Only then are its bytes given back to the quota and its exports closed
 * (natively an exported descriptor keeps the memory even longer, until the program closes it, which the worker
 * cannot see). Served through the hooks the generated dispatch calls (`hook` lines of cuda-driver.spec). Quota keys
 * are the handles with the two top bits set, apart from device pointers and array handles.
 *
 * Every hook holds one lock across the driver's call and the count: the driver may give a freed handle's value to the
 * next allocation at once, so a free and its count must not be split by another thread's allocation (it would be
 * counted under the value and then given back by the late free). These calls are rare and slow anyway. */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
#include "worker.h"
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

/* The allocation h named is gone: its bytes and its exports go, and so does what is known of its mappings. */
static void forget(struct handle *h) {
    if (h->counted)
        vmc_w_quota_release((uintptr_t)h->handle | VMM_TAG);
    vmc_w_shareable_forget_allocation(h->handle);
    for (int i = 0; i < n_mappings;)
        if (mappings[i].handle == h->handle)
            mappings[i] = mappings[--n_mappings];
        else
            i++;
    *h = handles[--n_handles];
}

/* Once nothing of the program's holds it, the driver has freed it. */
static void settle(struct handle *h) {
    if (h->refs <= 0 && h->mappings <= 0)
        forget(h);
}

/* The driver gives a freed handle's value again: an entry still under the value `made` that a call just returned
 * is of memory that went by a way not followed here, and goes (before a new count under the same quota key). */
static void forget_stale(CUmemGenericAllocationHandle made) {
    struct handle *stale = find_handle(made);
    if (stale)
        forget(stale);
}

/* A handle the driver has just made, with one reference (`counted`: its bytes are in the quota). */
static void track_new(CUmemGenericAllocationHandle made, int counted) {
    if (n_handles < MAX_HANDLES)
        handles[n_handles++] = (struct handle){made, 1, 0, counted};
}

CUresult vmc_w_hook_cuMemCreate(PFN_cuMemCreate_v10020 real, CUmemGenericAllocationHandle_v1 *handle, size_t size,
                                const CUmemAllocationProp_v1 *prop, unsigned long long flags) {
    pthread_mutex_lock(&lock);
    int quota = vmc_w_quota_on(), room = n_handles < MAX_HANDLES;
    CUresult st;
    if (!quota) {
        /* without a quota a full table refuses nothing: such a handle's exports go at its first release */
        st = real(handle, size, prop, flags);
        if (st == CUDA_SUCCESS && handle && *handle) {
            forget_stale(*handle);
            track_new(*handle, 0);
        }
    } else if (!room) { /* its bytes could not be followed to their free */
        vmc_w_log("quota: refused cuMemCreate of %zu bytes: the session holds %d allocations of the virtual memory API, "
                  "the most the quota follows", size, MAX_HANDLES);
        st = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (!vmc_w_quota_reserve(size)) {
        st = vmc_w_quota_refuse_driver("cuMemCreate", size);
    } else {
        st = real(handle, size, prop, flags);
        int made = st == CUDA_SUCCESS && handle && *handle;
        if (made)
            forget_stale(*handle);
        vmc_w_quota_settle(made, made ? (uintptr_t)*handle | VMM_TAG : 0, size);
        if (made)
            track_new(*handle, 1);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

void vmc_w_vmm_imported(CUmemGenericAllocationHandle handle) {
    pthread_mutex_lock(&lock);
    /* the driver may give an import the handle this process already holds for that memory: one reference more */
    struct handle *h = find_handle(handle);
    if (h && h->refs < INT_MAX)
        h->refs++;
    else if (!h)
        track_new(handle, 0);
    pthread_mutex_unlock(&lock);
}

CUresult vmc_w_hook_cuMemRetainAllocationHandle(PFN_cuMemRetainAllocationHandle_v11000 real,
                                                CUmemGenericAllocationHandle_v1 *handle, void *addr) {
    pthread_mutex_lock(&lock);
    CUresult st = real(handle, addr);
    struct handle *h = st == CUDA_SUCCESS && handle ? find_handle(*handle) : NULL;
    if (h && h->refs < INT_MAX) /* past that the program has retained it two billion times: it stays */
        h->refs++;
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemRelease(PFN_cuMemRelease_v10020 real, CUmemGenericAllocationHandle_v1 handle) {
    pthread_mutex_lock(&lock);
    CUresult st = real(handle);
    if (st == CUDA_SUCCESS) {
        struct handle *h = find_handle(handle);
        if (h) {
            h->refs--;
            settle(h);
        } else { /* not followed (the table was full): its exports go now, while the value still names this memory */
            vmc_w_shareable_forget_allocation(handle);
        }
    }
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemMap(PFN_cuMemMap_v10020 real, CUdeviceptr_v2 ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle_v1 handle, unsigned long long flags) {
    pthread_mutex_lock(&lock);
    int room = n_mappings < MAX_MAPPINGS;
    /* with a quota a mapping that could not be followed is refused: its memory could outlive the count */
    CUresult st = room || !vmc_w_quota_on() ? real(ptr, size, offset, handle, flags) : CUDA_ERROR_OUT_OF_MEMORY;
    struct handle *h = st == CUDA_SUCCESS && room ? find_handle(handle) : NULL;
    if (h) {
        h->mappings++;
        mappings[n_mappings++] = (struct mapping){ptr, handle};
    }
    pthread_mutex_unlock(&lock);
    return st;
}

CUresult vmc_w_hook_cuMemUnmap(PFN_cuMemUnmap_v10020 real, CUdeviceptr_v2 ptr, size_t size) {
    pthread_mutex_lock(&lock);
    CUresult st = real(ptr, size);
    /* every mapping that started inside the unmapped range is gone */
    for (int i = 0; st == CUDA_SUCCESS && i < n_mappings;) {
        if (mappings[i].ptr - ptr < size) {
            struct handle *h = find_handle(mappings[i].handle);
            mappings[i] = mappings[--n_mappings];
            if (h) {
                h->mappings--;
                settle(h); /* may drop other mappings of its handle: none is left, or it would not settle */
            }
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&lock);
    return st;
}

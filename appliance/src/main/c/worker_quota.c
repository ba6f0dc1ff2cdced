/* Per-session device-memory quota. The daemon sets VMCUDA_MEMORY_QUOTA (bytes) from the tenant's
 * max_memory_bytes. The generated dispatch hands the allocation and free calls, decoded, to the hooks here
 * (`hook` lines of the specs, vmc_worker_hooks.h / vmc_drv_worker_hooks.h); without a quota they call the
 * real function and nothing else. An allocation that would take the session past its quota never reaches the GPU: the worker calls the
 * real cudaMalloc with an impossible size instead, which fails with cudaErrorMemoryAllocation without
 * allocating, so the thread's last-error state is what a native out-of-memory leaves. Successful
 * allocations are remembered (pointer -> bytes) so that cudaFree/cudaFreeAsync give the bytes back.
 * Accounting counts what the application asked for (cudaMallocPitch: pitch * height); the runtime's own
 * context memory is not counted. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
#include "vmc_worker_hooks.h"
#include "worker.h"
#include "worker_driver.h"
#include "worker_quota.h"
#include <cudaTypedefs.h>

extern cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t quota;       /* 0 = no quota: nothing is intercepted */
static uint64_t used;        /* reserved + allocated bytes */

/* pointer -> size, open addressing with linear probing; key 0 = empty slot */
struct slot {
    uintptr_t ptr;
    uint64_t size;
};
static struct slot *table;
static size_t cap, count;

static void read_quota(void) {
    const char *s = getenv("VMCUDA_MEMORY_QUOTA");
    if (!s || !*s)
        return;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != 0 || v == 0) {
        vmc_w_log("ignoring VMCUDA_MEMORY_QUOTA='%s': not a positive number of bytes", s);
        return;
    }
    quota = v;
    vmc_w_log("device memory quota: %llu bytes", v);
}

/* Read before any code of the tenant runs: this library is the rewritten program's first DT_NEEDED, so
 * its constructors run before the program's, and a program that unsets or rewrites VMCUDA_MEMORY_QUOTA in
 * its own constructor changes nothing. (Code in the same process could still patch this memory: the
 * quota is enforced inside the tenant's process; appliance/CONFIG.md says what that means.) */
__attribute__((constructor)) static void capture_quota(void) {
    pthread_once(&once, read_quota);
}

static size_t hash_ptr(uintptr_t p, size_t mask) {
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & mask;
}

/* lock held */
static int table_grow(void) {
    size_t ncap = cap ? cap * 2 : 256;
    struct slot *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < cap; i++) {
        if (!table[i].ptr)
            continue;
        size_t j = hash_ptr(table[i].ptr, ncap - 1);
        while (n[j].ptr)
            j = (j + 1) & (ncap - 1);
        n[j] = table[i];
    }
    free(table);
    table = n;
    cap = ncap;
    return 0;
}

/* lock held; returns -1 when the table cannot grow (the allocation is then not tracked) */
static int table_put(uintptr_t p, uint64_t size) {
    if ((count + 1) * 2 > cap && table_grow() != 0)
        return -1;
    size_t j = hash_ptr(p, cap - 1);
    while (table[j].ptr && table[j].ptr != p)
        j = (j + 1) & (cap - 1);
    if (!table[j].ptr)
        count++;
    table[j].ptr = p;
    table[j].size = size;
    return 0;
}

/* lock held; returns the size removed, 0 when unknown */
static uint64_t table_take(uintptr_t p) {
    if (!cap || !p)
        return 0;
    size_t j = hash_ptr(p, cap - 1);
    while (table[j].ptr && table[j].ptr != p)
        j = (j + 1) & (cap - 1);
    if (!table[j].ptr)
        return 0;
    uint64_t size = table[j].size;
    table[j].ptr = 0;
    count--;
    /* backward-shift deletion keeps every probe chain unbroken */
    size_t hole = j;
    for (size_t k = (j + 1) & (cap - 1); table[k].ptr; k = (k + 1) & (cap - 1)) {
        size_t home = hash_ptr(table[k].ptr, cap - 1);
        int movable = hole <= k ? (home <= hole || home > k) : (home <= hole && home > k);
        if (movable) {
            table[hole] = table[k];
            table[k].ptr = 0;
            hole = k;
        }
    }
    return size;
}

static int reserve(uint64_t bytes) {
    pthread_mutex_lock(&lock);
    int ok = bytes <= quota && used <= quota - bytes;
    if (ok)
        used += bytes;
    pthread_mutex_unlock(&lock);
    return ok;
}

static void unreserve(uint64_t bytes) {
    pthread_mutex_lock(&lock);
    used = bytes > used ? 0 : used - bytes;
    pthread_mutex_unlock(&lock);
}

/* the reservation becomes a tracked allocation */
static void track(void *p, uint64_t bytes) {
    pthread_mutex_lock(&lock);
    if (p && table_put((uintptr_t)p, bytes) != 0) {
        vmc_w_log("quota: cannot track an allocation (out of memory); its %" PRIu64 " bytes stay counted", bytes);
    } else if (!p) {
        used = bytes > used ? 0 : used - bytes;
    }
    pthread_mutex_unlock(&lock);
}

static void release(void *p) {
    pthread_mutex_lock(&lock);
    uint64_t bytes = table_take((uintptr_t)p);
    used = bytes > used ? 0 : used - bytes;
    pthread_mutex_unlock(&lock);
}

/* For worker_quota_arrays.c (worker_quota.h): the same accounting under other keys. */
int vmc_w_quota_reserve(uint64_t bytes) { return reserve(bytes); }
void vmc_w_quota_release(uintptr_t key) { release((void *)key); }
void vmc_w_quota_settle(int allocated, uintptr_t key, uint64_t bytes) {
    if (allocated && key)
        track((void *)key, bytes);
    else
        unreserve(bytes);
}

/* The quota says no: fail the way the GPU does when it is full, without allocating anything. */
static cudaError_t refuse(const char *call, uint64_t bytes) {
    pthread_mutex_lock(&lock);
    uint64_t now = used;
    pthread_mutex_unlock(&lock);
    vmc_w_log("quota: refused %s of %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64 " bytes in use)", call, bytes, now, quota);
    void *never = NULL;
    cudaError_t st = cudaMalloc(&never, (size_t)-1);
    if (st == cudaSuccess) { /* cannot happen on a real GPU; never hand it out */
        cudaFree(never);
        st = cudaErrorMemoryAllocation;
    }
    return st;
}

cudaError_t vmc_w_quota_refuse(const char *call, uint64_t bytes) { return refuse(call, bytes); }

cudaError_t vmc_w_quota_settle_pitched(const char *call, cudaError_t st, void **ptr, uint64_t want, uint64_t got) {
    if (st != cudaSuccess || !ptr || !*ptr) {
        unreserve(want);
        return st;
    }
    if (got > want && !reserve(got - want)) {
        /* the padded rows do not fit: give it back and fail as the GPU would */
        cudaFree(*ptr);
        *ptr = NULL;
        unreserve(want);
        return refuse(call, got);
    }
    track(*ptr, got > want ? got : want);
    return cudaSuccess;
}

int vmc_w_quota_on(void) {
    pthread_once(&once, read_quota);
    return quota != 0;
}

/* ---- the runtime's allocations ---- */

cudaError_t vmc_w_hook_cudaMalloc(void **devPtr, size_t size) {
    VMC_W_QUOTA_ALLOC(size, devPtr, 0, cudaSuccess, refuse("cudaMalloc", size), cudaMalloc(devPtr, size));
}

cudaError_t vmc_w_hook_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    VMC_W_QUOTA_ALLOC(size, devPtr, 0, cudaSuccess, refuse("cudaMallocAsync", size), cudaMallocAsync(devPtr, size, hStream));
}

cudaError_t vmc_w_hook_cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
    VMC_W_QUOTA_ALLOC(size, devPtr, 0, cudaSuccess, refuse("cudaMallocAsync_ptsz", size),
                      cudaMallocAsync_ptsz(devPtr, size, hStream));
}

cudaError_t vmc_w_hook_cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
    if (!quota)
        return cudaMallocPitch(devPtr, pitch, width, height);
    uint64_t want;
    /* the pitch is at least the width: width * height is a lower bound of what the GPU gives */
    if (__builtin_mul_overflow((uint64_t)width, (uint64_t)height, &want))
        return refuse("cudaMallocPitch", UINT64_MAX);
    if (!reserve(want))
        return refuse("cudaMallocPitch", want);
    cudaError_t st = cudaMallocPitch(devPtr, pitch, width, height);
    uint64_t got = want;
    if (st == cudaSuccess && pitch && __builtin_mul_overflow((uint64_t)*pitch, (uint64_t)height, &got))
        got = UINT64_MAX;
    return vmc_w_quota_settle_pitched("cudaMallocPitch", st, devPtr, want, got);
}

/* A free that succeeded gives its bytes back (cudaFreeAsync's when the stream reaches it: the quota at once). */
static cudaError_t freed(cudaError_t st, void *p) {
    if (quota && st == cudaSuccess && p)
        release(p);
    return st;
}

cudaError_t vmc_w_hook_cudaFree(void *devPtr) { return freed(cudaFree(devPtr), devPtr); }

cudaError_t vmc_w_hook_cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    return freed(cudaFreeAsync(devPtr, hStream), devPtr);
}

cudaError_t vmc_w_hook_cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
    return freed(cudaFreeAsync_ptsz(devPtr, hStream), devPtr);
}

/* ---- the same for the driver API's allocations (static cudart, the CUDA libraries, frameworks) ----
 * A refusal is the driver's own CUDA_ERROR_OUT_OF_MEMORY (the driver API keeps no last-error state to leave
 * behind). */

CUresult vmc_w_quota_refuse_driver(const char *call, uint64_t bytes) {
    vmc_w_log("quota: refused %s of %" PRIu64 " bytes", call, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* After a driver allocation of `want` reserved bytes: tracked, or given back. */
static CUresult settle_driver(CUresult st, CUdeviceptr *dptr, uint64_t want) {
    int made = st == CUDA_SUCCESS && dptr && *dptr;
    vmc_w_quota_settle(made, made ? (uintptr_t)*dptr : 0, want);
    return st;
}

#define DRIVER_ALLOC(call, size, dptr, alloc) \
    VMC_W_QUOTA_ALLOC(size, dptr, 0, CUDA_SUCCESS, vmc_w_quota_refuse_driver(call, size), alloc)

CUresult vmc_w_hook_cuMemAlloc_v2(PFN_cuMemAlloc_v3020 real, CUdeviceptr_v2 *dptr, size_t bytesize) {
    DRIVER_ALLOC("cuMemAlloc_v2", bytesize, dptr, real(dptr, bytesize));
}

CUresult vmc_w_hook_cuMemAllocAsync(PFN_cuMemAllocAsync_v11020 real, CUdeviceptr_v2 *dptr, size_t bytesize, CUstream hStream) {
    DRIVER_ALLOC("cuMemAllocAsync", bytesize, dptr, real(dptr, bytesize, hStream));
}

CUresult vmc_w_hook_cuMemAllocAsync_ptsz(PFN_cuMemAllocAsync_v11020_ptsz real, CUdeviceptr_v2 *dptr, size_t bytesize,
                                         CUstream hStream) {
    DRIVER_ALLOC("cuMemAllocAsync_ptsz", bytesize, dptr, real(dptr, bytesize, hStream));
}

CUresult vmc_w_hook_cuMemAllocFromPoolAsync(PFN_cuMemAllocFromPoolAsync_v11020 real, CUdeviceptr_v2 *dptr, size_t bytesize,
                                            CUmemoryPool pool, CUstream hStream) {
    DRIVER_ALLOC("cuMemAllocFromPoolAsync", bytesize, dptr, real(dptr, bytesize, pool, hStream));
}

CUresult vmc_w_hook_cuMemAllocFromPoolAsync_ptsz(PFN_cuMemAllocFromPoolAsync_v11020_ptsz real, CUdeviceptr_v2 *dptr,
                                                 size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    DRIVER_ALLOC("cuMemAllocFromPoolAsync_ptsz", bytesize, dptr, real(dptr, bytesize, pool, hStream));
}

CUresult vmc_w_hook_cuMemAllocPitch_v2(PFN_cuMemAllocPitch_v3020 real, CUdeviceptr_v2 *dptr, size_t *pPitch,
                                       size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes) {
    if (!quota)
        return real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t want;
    if (__builtin_mul_overflow((uint64_t)WidthInBytes, (uint64_t)Height, &want))
        return vmc_w_quota_refuse_driver("cuMemAllocPitch_v2", UINT64_MAX);
    if (!reserve(want))
        return vmc_w_quota_refuse_driver("cuMemAllocPitch_v2", want);
    CUresult st = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    uint64_t got;
    if (st == CUDA_SUCCESS && dptr && *dptr && pPitch &&
        !__builtin_mul_overflow((uint64_t)*pPitch, (uint64_t)Height, &got) && got > want) {
        if (!reserve(got - want)) { /* the padded rows do not fit */
            PFN_cuMemFree_v3020 free_mem = (PFN_cuMemFree_v3020)vmc_w_drv_resolve("cuMemFree", 3020, 0);
            if (free_mem)
                free_mem(*dptr);
            *dptr = 0;
            unreserve(want);
            return vmc_w_quota_refuse_driver("cuMemAllocPitch_v2", got);
        }
        want = got;
    }
    return settle_driver(st, dptr, want);
}

static CUresult freed_driver(CUresult st, CUdeviceptr p) {
    if (quota && st == CUDA_SUCCESS && p)
        release((void *)(uintptr_t)p);
    return st;
}

CUresult vmc_w_hook_cuMemFree_v2(PFN_cuMemFree_v3020 real, CUdeviceptr_v2 dptr) { return freed_driver(real(dptr), dptr); }

CUresult vmc_w_hook_cuMemFreeAsync(PFN_cuMemFreeAsync_v11020 real, CUdeviceptr_v2 dptr, CUstream hStream) {
    return freed_driver(real(dptr, hStream), dptr);
}

CUresult vmc_w_hook_cuMemFreeAsync_ptsz(PFN_cuMemFreeAsync_v11020_ptsz real, CUdeviceptr_v2 dptr, CUstream hStream) {
    return freed_driver(real(dptr, hStream), dptr);
}

void vmc_w_quota_reset(void) {
    pthread_mutex_lock(&lock);
    if (table)
        memset(table, 0, cap * sizeof *table);
    count = 0;
    used = 0;
    pthread_mutex_unlock(&lock);
}

/* A driver client destroyed a context (cuCtxDestroy, cuDevicePrimaryCtxReset): the allocations that went
 * with it stop counting. Each tracked allocation is asked about (still_allocated: 0 = gone), so memory
 * of the contexts that live on stays counted and a reset cannot be used to step around the quota. */
void vmc_w_quota_forget_freed(int (*still_allocated)(uintptr_t ptr)) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < cap; i++) {
        uintptr_t p = table[i].ptr;
        /* an array's handle cannot be asked about once its context may be gone: it stays counted (the
         * quota errs on the side of the other tenants) */
        if (p && !(p & VMC_QUOTA_HANDLE_TAG) && !still_allocated(p)) {
            uint64_t bytes = table_take(p);
            used = bytes > used ? 0 : used - bytes;
            i--; /* table_take may have shifted a later entry into slot i */
        }
    }
    pthread_mutex_unlock(&lock);
}

/* For the C unit test: bytes counted against the quota now. */
uint64_t vmc_w_quota_used(void) {
    pthread_mutex_lock(&lock);
    uint64_t u = used;
    pthread_mutex_unlock(&lock);
    return u;
}

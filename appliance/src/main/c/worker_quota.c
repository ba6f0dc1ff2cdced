/* Per-session device-memory quota. The daemon sets VMCUDA_MEMORY_QUOTA (bytes) from the tenant's
 * max_memory_bytes; when it is set, the allocation and free calls are served here instead of by the
 * generated dispatch (same wire format: @out pointer = presence byte + 8-byte value, size_t by value).
 * An allocation that would take the session past its quota never reaches the GPU: the worker calls the
 * real cudaMalloc with an impossible size instead, which fails with cudaErrorMemoryAllocation without
 * allocating, so the thread's last-error state is what a native out-of-memory leaves. Successful
 * allocations are remembered (pointer -> bytes) so that cudaFree/cudaFreeAsync give the bytes back.
 * Accounting counts what the application asked for (cudaMallocPitch: pitch * height); the runtime's own
 * context memory is not counted. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
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

static enum vmc_w_result serve_malloc(struct vmc_wcall *wc) {
    void *v = NULL;
    void **devPtr = vmc_w_arg_pointee(wc, &v, sizeof v);
    size_t size;
    vmc_w_arg(wc, &size, sizeof size);
    cudaStream_t stream = NULL;
    if (wc->id != VMC_API_cudaMalloc)
        vmc_w_arg(wc, &stream, sizeof stream);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    cudaError_t st;
    if (!reserve(size)) {
        st = refuse(vmc_api_name(wc->id), size);
    } else {
        st = wc->id == VMC_API_cudaMalloc ? cudaMalloc(devPtr, size)
             : wc->id == VMC_API_cudaMallocAsync ? cudaMallocAsync(devPtr, size, stream)
                                                 : cudaMallocAsync_ptsz(devPtr, size, stream);
        vmc_w_quota_settle(st == cudaSuccess && devPtr, devPtr ? (uintptr_t)*devPtr : 0, size);
    }
    vmc_w_reply_status(wc, st);
    vmc_w_reply_pointee(wc, devPtr, sizeof v);
    return VMC_W_DONE;
}

static enum vmc_w_result serve_malloc_pitch(struct vmc_wcall *wc) {
    void *v = NULL;
    size_t pitch_v = 0;
    void **devPtr = vmc_w_arg_pointee(wc, &v, sizeof v);
    size_t *pitch = vmc_w_arg_pointee(wc, &pitch_v, sizeof pitch_v);
    size_t width, height;
    vmc_w_arg(wc, &width, sizeof width);
    vmc_w_arg(wc, &height, sizeof height);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    cudaError_t st;
    uint64_t want;
    /* the pitch is at least the width: width * height is a lower bound of what the GPU gives */
    if (__builtin_mul_overflow((uint64_t)width, (uint64_t)height, &want) || !reserve(want)) {
        st = refuse("cudaMallocPitch", __builtin_mul_overflow((uint64_t)width, (uint64_t)height, &want) ? UINT64_MAX : want);
    } else {
        st = cudaMallocPitch(devPtr, pitch, width, height);
        uint64_t got = want;
        if (st == cudaSuccess && pitch && __builtin_mul_overflow((uint64_t)*pitch, (uint64_t)height, &got))
            got = UINT64_MAX;
        st = vmc_w_quota_settle_pitched("cudaMallocPitch", st, devPtr, want, got);
    }
    vmc_w_reply_status(wc, st);
    vmc_w_reply_pointee(wc, devPtr, sizeof v);
    vmc_w_reply_pointee(wc, pitch, sizeof pitch_v);
    return VMC_W_DONE;
}

static enum vmc_w_result serve_free(struct vmc_wcall *wc) {
    void *p;
    vmc_w_arg(wc, &p, sizeof p);
    cudaStream_t stream = NULL;
    if (wc->id != VMC_API_cudaFree)
        vmc_w_arg(wc, &stream, sizeof stream);
    if (!vmc_w_args_ok(wc))
        return VMC_W_BAD_ARGS;
    cudaError_t st = wc->id == VMC_API_cudaFree ? cudaFree(p)
                     : wc->id == VMC_API_cudaFreeAsync ? cudaFreeAsync(p, stream)
                                                       : cudaFreeAsync_ptsz(p, stream);
    /* cudaFreeAsync's memory returns when the stream reaches it; the quota gives it back at once */
    if (st == cudaSuccess && p)
        release(p);
    if (wc->id == VMC_API_cudaFree)
        vmc_w_reply_status(wc, st);
    else if (wc->async)
        vmc_w_async_done(wc, st);
    else
        vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

/* ---- the same for the driver API's allocations (static cudart, the CUDA libraries, frameworks) ----
 * Same wire format as the generated dispatch (cuda-driver.spec); a refusal is the driver's own
 * CUDA_ERROR_OUT_OF_MEMORY (the driver API keeps no last-error state to leave behind). */

static enum vmc_w_result serve_drv_alloc(struct vmc_wcall *wc) {
    CUdeviceptr v = 0;
    CUdeviceptr *dptr = vmc_w_arg_pointee(wc, &v, sizeof v);
    size_t pitch_v = 0, *pitch = NULL, width = 0, height = 1, size = 0;
    unsigned elem = 0;
    CUmemoryPool pool = NULL;
    CUstream stream = NULL;
    int id = (int)wc->id;
    if (id == VMC_DRV_cuMemAllocPitch_v2) {
        pitch = vmc_w_arg_pointee(wc, &pitch_v, sizeof pitch_v);
        vmc_w_arg(wc, &width, sizeof width);
        vmc_w_arg(wc, &height, sizeof height);
        vmc_w_arg(wc, &elem, sizeof elem);
    } else {
        vmc_w_arg(wc, &size, sizeof size);
    }
    if (id == VMC_DRV_cuMemAllocFromPoolAsync || id == VMC_DRV_cuMemAllocFromPoolAsync_ptsz)
        vmc_w_arg(wc, &pool, sizeof pool);
    if (id != VMC_DRV_cuMemAlloc_v2 && id != VMC_DRV_cuMemAllocPitch_v2)
        vmc_w_arg(wc, &stream, sizeof stream);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    uint64_t want = size;
    CUresult st;
    if ((id == VMC_DRV_cuMemAllocPitch_v2 && __builtin_mul_overflow((uint64_t)width, (uint64_t)height, &want)) ||
        !reserve(want)) {
        vmc_w_log("quota: refused %s of %" PRIu64 " bytes", vmc_drv_api_name(wc->id), want);
        st = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        static PFN_cuMemAlloc_v3020 alloc;
        static PFN_cuMemAllocPitch_v3020 alloc_pitch;
        static PFN_cuMemAllocAsync_v11020 alloc_async, alloc_async_pt;
        static PFN_cuMemAllocFromPoolAsync_v11020 from_pool, from_pool_pt;
        static PFN_cuMemFree_v3020 free_mem;
        if (!free_mem) {
            alloc = (PFN_cuMemAlloc_v3020)vmc_w_drv_resolve("cuMemAlloc", 3020, 0);
            alloc_pitch = (PFN_cuMemAllocPitch_v3020)vmc_w_drv_resolve("cuMemAllocPitch", 3020, 0);
            alloc_async = (PFN_cuMemAllocAsync_v11020)vmc_w_drv_resolve("cuMemAllocAsync", 11020, 0);
            alloc_async_pt = (PFN_cuMemAllocAsync_v11020)vmc_w_drv_resolve("cuMemAllocAsync", 11020, 1);
            from_pool = (PFN_cuMemAllocFromPoolAsync_v11020)vmc_w_drv_resolve("cuMemAllocFromPoolAsync", 11020, 0);
            from_pool_pt = (PFN_cuMemAllocFromPoolAsync_v11020)vmc_w_drv_resolve("cuMemAllocFromPoolAsync", 11020, 1);
            free_mem = (PFN_cuMemFree_v3020)vmc_w_drv_resolve("cuMemFree", 3020, 0);
        }
        CUdeviceptr got = 0;
        if (!alloc || !alloc_pitch || !alloc_async || !alloc_async_pt || !from_pool || !from_pool_pt || !free_mem)
            st = vmc_w_drv_missing(vmc_drv_api_name(wc->id));
        else if (id == VMC_DRV_cuMemAlloc_v2)
            st = alloc(&got, size);
        else if (id == VMC_DRV_cuMemAllocPitch_v2)
            st = alloc_pitch(&got, &pitch_v, width, height, elem);
        else if (id == VMC_DRV_cuMemAllocAsync || id == VMC_DRV_cuMemAllocAsync_ptsz)
            st = (id == VMC_DRV_cuMemAllocAsync ? alloc_async : alloc_async_pt)(&got, size, stream);
        else
            st = (id == VMC_DRV_cuMemAllocFromPoolAsync ? from_pool : from_pool_pt)(&got, size, pool, stream);
        uint64_t bytes = want;
        if (st == CUDA_SUCCESS && id == VMC_DRV_cuMemAllocPitch_v2 &&
            !__builtin_mul_overflow((uint64_t)pitch_v, (uint64_t)height, &bytes) && bytes > want && !reserve(bytes - want)) {
            free_mem(got); /* the padded rows do not fit */
            got = 0;
            st = CUDA_ERROR_OUT_OF_MEMORY;
            bytes = want;
        }
        if (st == CUDA_SUCCESS)
            track((void *)(uintptr_t)got, bytes > want ? bytes : want);
        else
            unreserve(want);
        if (dptr)
            *dptr = got;
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_w_reply_pointee(wc, dptr, sizeof v);
    if (id == VMC_DRV_cuMemAllocPitch_v2)
        vmc_w_reply_pointee(wc, pitch, sizeof pitch_v);
    return VMC_W_DONE;
}

static enum vmc_w_result serve_drv_free(struct vmc_wcall *wc) {
    CUdeviceptr p;
    CUstream stream = NULL;
    vmc_w_arg(wc, &p, sizeof p);
    if (wc->id != VMC_DRV_cuMemFree_v2)
        vmc_w_arg(wc, &stream, sizeof stream);
    if (!vmc_w_args_ok(wc))
        return VMC_W_BAD_ARGS;
    static PFN_cuMemFree_v3020 free_mem;
    static PFN_cuMemFreeAsync_v11020 free_async, free_async_pt;
    if (!free_mem) {
        free_async = (PFN_cuMemFreeAsync_v11020)vmc_w_drv_resolve("cuMemFreeAsync", 11020, 0);
        free_async_pt = (PFN_cuMemFreeAsync_v11020)vmc_w_drv_resolve("cuMemFreeAsync", 11020, 1);
        free_mem = (PFN_cuMemFree_v3020)vmc_w_drv_resolve("cuMemFree", 3020, 0);
    }
    CUresult st = !free_mem || !free_async || !free_async_pt ? vmc_w_drv_missing(vmc_drv_api_name(wc->id))
                  : wc->id == VMC_DRV_cuMemFree_v2        ? free_mem(p)
                  : wc->id == VMC_DRV_cuMemFreeAsync      ? free_async(p, stream)
                                                           : free_async_pt(p, stream);
    if (st == CUDA_SUCCESS && p)
        release((void *)(uintptr_t)p);
    if (wc->async)
        vmc_w_async_done(wc, (cudaError_t)st);
    else
        vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

int vmc_w_quota_intercept(struct vmc_wcall *wc, enum vmc_w_result *r) {
    pthread_once(&once, read_quota);
    if (!quota)
        return 0;
    switch (wc->id) {
    case VMC_API_cudaMalloc:
    case VMC_API_cudaMallocAsync:
    case VMC_API_cudaMallocAsync_ptsz:
        *r = serve_malloc(wc);
        return 1;
    case VMC_API_cudaMallocPitch:
        *r = serve_malloc_pitch(wc);
        return 1;
    case VMC_API_cudaFree:
        if (wc->async)
            return 0; /* malformed for this id: let the generated dispatch judge it */
        *r = serve_free(wc);
        return 1;
    case VMC_API_cudaFreeAsync:
    case VMC_API_cudaFreeAsync_ptsz:
        *r = serve_free(wc);
        return 1;
    case VMC_DRV_cuMemAlloc_v2:
    case VMC_DRV_cuMemAllocPitch_v2:
    case VMC_DRV_cuMemAllocAsync:
    case VMC_DRV_cuMemAllocAsync_ptsz:
    case VMC_DRV_cuMemAllocFromPoolAsync:
    case VMC_DRV_cuMemAllocFromPoolAsync_ptsz:
        *r = serve_drv_alloc(wc);
        return 1;
    case VMC_DRV_cuMemFree_v2:
    case VMC_DRV_cuMemFreeAsync:
    case VMC_DRV_cuMemFreeAsync_ptsz:
        *r = serve_drv_free(wc);
        return 1;
    default:
        return vmc_w_quota_intercept_arrays(wc, r);
    }
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

/* worker_quota*.c's hooks (what the generated dispatch calls for the allocators, `hook` lines of the specs)
 * against a simulated GPU, under ASan/UBSan: allocations within the quota reach the
 * "GPU", one past it never does (the refusal calls cudaMalloc with an impossible size, which fails with
 * cudaErrorMemoryAllocation), frees give bytes back, pitch padding is counted, overflowing sizes are
 * refused, thousands of allocations in and out leave nothing counted, and cudaDeviceReset clears all.
 * The driver API's allocations (cuMemAlloc...) count against the same quota, refused with the driver's
 * CUDA_ERROR_OUT_OF_MEMORY; so do CUDA arrays and cudaMalloc3D (worker_quota_arrays.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
#include "vmc_worker_hooks.h"
#include "worker.h"
#include "worker_driver.h"

uint64_t vmc_w_quota_used(void);

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "test_quota:%d: CHECK(%s) failed\n", __LINE__, #c); failures++; } } while (0)

/* ---- the simulated GPU ---- */
static uint64_t gpu_bytes, gpu_allocs;
static uintptr_t next_ptr = 0x7f0000000000ull;
struct a { uintptr_t p; size_t n; };
static struct a live[100000];
static int n_live;
static size_t largest_request;

static cudaError_t gpu_alloc(void **p, size_t n) {
    if (n > largest_request) largest_request = n;
    if (!p) return cudaErrorInvalidValue;
    if (n > (1ull << 40)) return cudaErrorMemoryAllocation; /* the "impossible size" */
    if (n == 0) { *p = NULL; return cudaSuccess; }
    *p = (void *)next_ptr;
    live[n_live++] = (struct a){next_ptr, n};
    next_ptr += (n + 511) & ~(size_t)511;
    gpu_bytes += n;
    gpu_allocs++;
    return cudaSuccess;
}
static cudaError_t gpu_free(void *p) {
    if (!p) return cudaSuccess;
    for (int i = 0; i < n_live; i++)
        if (live[i].p == (uintptr_t)p) { gpu_bytes -= live[i].n; live[i] = live[--n_live]; return cudaSuccess; }
    return cudaErrorInvalidValue;
}
cudaError_t cudaMalloc(void **p, size_t n) { return gpu_alloc(p, n); }
cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { (void)s; return gpu_alloc(p, n); }
cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { (void)s; return gpu_alloc(p, n); }
cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h) {
    size_t pt = (w + 127) & ~(size_t)127;
    if (pitch) *pitch = pt;
    return gpu_alloc(p, pt * h);
}
cudaError_t cudaFree(void *p) { return gpu_free(p); }
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { (void)s; return gpu_free(p); }
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { (void)s; return gpu_free(p); }

/* arrays: the handle is an allocation of width x height x depth elements, as the quota counts them */
static cudaError_t array_alloc(void **handle, uint64_t n) { return gpu_alloc(handle, (size_t)n); }
static uint64_t elem_of(const struct cudaChannelFormatDesc *d) { return (uint64_t)(d->x + d->y + d->z + d->w) / 8; }
cudaError_t cudaMallocArray(cudaArray_t *a, const struct cudaChannelFormatDesc *d, size_t w, size_t h, unsigned f) {
    (void)f; return array_alloc((void **)a, w * (h ? h : 1) * elem_of(d));
}
cudaError_t cudaMalloc3DArray(cudaArray_t *a, const struct cudaChannelFormatDesc *d, struct cudaExtent e, unsigned f) {
    (void)f; return array_alloc((void **)a, e.width * (e.height ? e.height : 1) * (e.depth ? e.depth : 1) * elem_of(d));
}
cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *a, const struct cudaChannelFormatDesc *d, struct cudaExtent e,
                                     unsigned levels, unsigned f) {
    (void)levels; (void)f; return array_alloc((void **)a, e.width * (e.height ? e.height : 1) * elem_of(d));
}
cudaError_t cudaMalloc3D(struct cudaPitchedPtr *p, struct cudaExtent e) {
    size_t pitch = (e.width + 127) & ~(size_t)127;
    p->pitch = pitch; p->xsize = e.width; p->ysize = e.height;
    return gpu_alloc(&p->ptr, pitch * (e.height ? e.height : 1) * (e.depth ? e.depth : 1));
}
cudaError_t cudaFreeArray(cudaArray_t a) { return gpu_free(a); }
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t a) { return gpu_free(a); }

/* ---- the simulated driver (what worker_driver.c resolves in NVIDIA's libcuda) ---- */
static uint64_t driver_allocs;
static CUresult drv_alloc(CUdeviceptr *p, size_t n) {
    void *q = NULL;
    driver_allocs++;
    cudaError_t st = gpu_alloc(&q, n);
    *p = (CUdeviceptr)(uintptr_t)q;
    return st == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult drv_alloc_async(CUdeviceptr *p, size_t n, CUstream s) { (void)s; return drv_alloc(p, n); }
static CUresult drv_alloc_pool(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { (void)pool; (void)s; return drv_alloc(p, n); }
static CUresult drv_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e) {
    (void)e;
    *pitch = (w + 127) & ~(size_t)127;
    return drv_alloc(p, *pitch * h);
}
static CUresult drv_free(CUdeviceptr p) { return gpu_free((void *)(uintptr_t)p) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static CUresult drv_free_async(CUdeviceptr p, CUstream s) { (void)s; return drv_free(p); }
static CUresult drv_array(CUarray *a, const CUDA_ARRAY_DESCRIPTOR_v2 *d) {
    driver_allocs++;
    return gpu_alloc((void **)a, d->Width * d->Height * d->NumChannels * 4) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult drv_array_destroy(CUarray a) { return gpu_free(a) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
static CUresult drv_mem_create(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop, unsigned long long f) {
    (void)prop; (void)f;
    driver_allocs++;
    void *p = NULL;
    if (gpu_alloc(&p, n) != cudaSuccess) return CUDA_ERROR_OUT_OF_MEMORY;
    *h = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return CUDA_SUCCESS;
}
static CUresult drv_mem_release(CUmemGenericAllocationHandle h) {
    return gpu_free((void *)(uintptr_t)h) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult drv_mem_map(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f) {
    (void)p; (void)n; (void)off; (void)h; (void)f;
    return CUDA_SUCCESS;
}
static CUresult drv_mem_unmap(CUdeviceptr p, size_t n) { (void)p; (void)n; return CUDA_SUCCESS; }
/* what worker_quota.c resolves itself: cuMemFree, to give back a pitched allocation the quota refuses */
void *vmc_w_drv_resolve(const char *name, int version, int per_thread) {
    (void)version; (void)per_thread;
    return !strcmp(name, "cuMemFree") ? (void *)drv_free : NULL;
}

void vmc_w_log(const char *fmt, ...) { (void)fmt; }

/* worker_shareable.c's: the exports of a freed allocation go (recorded, checked below) */
#include "forget_recorder.h"

static void *do_malloc(int which, size_t n, cudaError_t *st) {
    void *p = NULL;
    *st = which == 0 ? vmc_w_hook_cudaMalloc(&p, n) : which == 1 ? vmc_w_hook_cudaMallocAsync(&p, n, NULL)
                                                                 : vmc_w_hook_cudaMallocAsync_ptsz(&p, n, NULL);
    return p;
}

static int everything_gone(uintptr_t ptr) { (void)ptr; return 0; }

/* The daemon puts the quota in the worker's environment before it starts; worker_quota.c reads it in a
 * constructor (before the program's own code), so the test sets it in an earlier one. */
__attribute__((constructor(101))) static void quota_environment(void) {
    setenv("VMCUDA_MEMORY_QUOTA", "1000000", 1);
}

int main(void) {
    cudaError_t st;
    void *a = do_malloc(0, 600000, &st);
    CHECK(st == cudaSuccess && a && vmc_w_quota_used() == 600000);
    /* over the quota: the GPU sees only the impossible size, never 500000 */
    uint64_t allocs = gpu_allocs;
    void *b = do_malloc(1, 500000, &st);
    CHECK(st == cudaErrorMemoryAllocation && b == NULL && gpu_allocs == allocs && largest_request > (1ull << 40));
    CHECK(vmc_w_quota_used() == 600000);
    CHECK(vmc_w_hook_cudaFree(a) == cudaSuccess && vmc_w_quota_used() == 0 && gpu_bytes == 0);
    /* exactly the quota fits; one byte more does not */
    a = do_malloc(2, 1000000, &st);
    CHECK(st == cudaSuccess && vmc_w_quota_used() == 1000000);
    b = do_malloc(0, 1, &st);
    CHECK(st == cudaErrorMemoryAllocation);
    CHECK(vmc_w_hook_cudaFreeAsync(a, NULL) == cudaSuccess && vmc_w_quota_used() == 0);
    /* freeing what was never allocated changes nothing */
    CHECK(vmc_w_hook_cudaFree((void *)0x1234) == cudaErrorInvalidValue && vmc_w_quota_used() == 0);
    /* pitch: the padded size counts */
    {
        void *p = NULL;
        size_t pitch = 0;
        CHECK(vmc_w_hook_cudaMallocPitch(&p, &pitch, 100, 1000) == cudaSuccess && pitch == 128 && vmc_w_quota_used() == 128 * 1000);
        CHECK(vmc_w_hook_cudaFree(p) == cudaSuccess && vmc_w_quota_used() == 0);
        /* width * height overflows: refused without reaching the GPU */
        allocs = gpu_allocs;
        CHECK(vmc_w_hook_cudaMallocPitch(&p, &pitch, SIZE_MAX, 2) == cudaErrorMemoryAllocation && gpu_allocs == allocs);
    }
    /* many allocations in and out (table growth, deletion in probe chains) */
    static void *ptrs[20000];
    for (int i = 0; i < 20000; i++) {
        ptrs[i] = do_malloc(0, 50, &st);
        CHECK(st == cudaSuccess);
    }
    CHECK(vmc_w_quota_used() == 1000000);
    do_malloc(0, 1, &st);
    CHECK(st == cudaErrorMemoryAllocation);
    for (int i = 0; i < 20000; i += 2) CHECK(vmc_w_hook_cudaFree(ptrs[i]) == cudaSuccess);
    CHECK(vmc_w_quota_used() == 500000);
    for (int i = 1; i < 20000; i += 2) CHECK(vmc_w_hook_cudaFreeAsync_ptsz(ptrs[i], NULL) == cudaSuccess);
    CHECK(vmc_w_quota_used() == 0 && gpu_bytes == 0);
    /* cudaDeviceReset frees everything */
    do_malloc(0, 999999, &st);
    vmc_w_quota_reset();
    CHECK(vmc_w_quota_used() == 0);
    /* the driver API: the same quota, the driver's out-of-memory error, nothing reaches the GPU past it */
    {
        uint64_t gpu_before = gpu_bytes; /* what the reset above left on the simulated GPU */
        CUdeviceptr first = 0, second = 0;
        CHECK(vmc_w_hook_cuMemAlloc_v2(drv_alloc, &first, 700000) == CUDA_SUCCESS && first && vmc_w_quota_used() == 700000);
        uint64_t before = driver_allocs;
        CHECK(vmc_w_hook_cuMemAllocAsync(drv_alloc_async, &second, 700000, NULL) == CUDA_ERROR_OUT_OF_MEMORY &&
              driver_allocs == before && vmc_w_quota_used() == 700000);
        CHECK(vmc_w_hook_cuMemAllocFromPoolAsync(drv_alloc_pool, &second, 300001, NULL, NULL) == CUDA_ERROR_OUT_OF_MEMORY);
        CHECK(vmc_w_hook_cuMemFree_v2(drv_free, first) == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* pitched: the padded rows count */
        CUdeviceptr pitched = 0;
        size_t pitch = 0;
        CHECK(vmc_w_hook_cuMemAllocPitch_v2(drv_alloc_pitch, &pitched, &pitch, 100, 1000, 4) == CUDA_SUCCESS &&
              vmc_w_quota_used() == 128 * 1000);
        CHECK(vmc_w_hook_cuMemFreeAsync(drv_free_async, pitched, NULL) == CUDA_SUCCESS && vmc_w_quota_used() == 0 &&
              gpu_bytes == gpu_before);
        /* the padded rows past the quota: freed again, refused */
        CHECK(vmc_w_hook_cuMemAllocPitch_v2(drv_alloc_pitch, &pitched, &pitch, 900, 1100, 4) == CUDA_ERROR_OUT_OF_MEMORY &&
              pitched == 0 && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
    }
    /* arrays count too: their elements' bytes, refused past the quota, given back when freed */
    {
        uint64_t gpu_before = gpu_bytes;
        struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat}; /* 16 bytes */
        cudaArray_t arr = NULL, arr2 = NULL;
        CHECK(vmc_w_hook_cudaMallocArray(&arr, &f4, 100, 100, 0) == cudaSuccess && vmc_w_quota_used() == 160000);
        /* 1000 x 100 float4 = 1.6 MB: past the quota, never reaches the GPU */
        allocs = gpu_allocs;
        CHECK(vmc_w_hook_cudaMallocArray(&arr2, &f4, 1000, 100, 0) == cudaErrorMemoryAllocation && gpu_allocs == allocs &&
              vmc_w_quota_used() == 160000);
        CHECK(vmc_w_hook_cudaFreeArray(arr) == cudaSuccess && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        cudaMipmappedArray_t mip = NULL;
        CHECK(vmc_w_hook_cudaMallocMipmappedArray(&mip, &f4, (struct cudaExtent){100, 100, 0}, 3, 0) == cudaSuccess &&
              vmc_w_quota_used() == 160000);
        CHECK(vmc_w_hook_cudaFreeMipmappedArray(mip) == cudaSuccess && vmc_w_quota_used() == 0);
        /* 3-D: width x height x depth elements (100 x 10 x 100 float4 = 1.6 MB does not fit, 10 x 10 x 10 does) */
        CHECK(vmc_w_hook_cudaMalloc3DArray(&arr, &f4, (struct cudaExtent){100, 10, 100}, 0) == cudaErrorMemoryAllocation &&
              vmc_w_quota_used() == 0);
        CHECK(vmc_w_hook_cudaMalloc3DArray(&arr, &f4, (struct cudaExtent){10, 10, 10}, 0) == cudaSuccess &&
              vmc_w_quota_used() == 16000);
        CHECK(vmc_w_hook_cudaFreeArray(arr) == cudaSuccess && vmc_w_quota_used() == 0);
        /* cudaMalloc3D: the pitched bytes count */
        struct cudaPitchedPtr pp;
        memset(&pp, 0, sizeof pp);
        CHECK(vmc_w_hook_cudaMalloc3D(&pp, (struct cudaExtent){100, 10, 10}) == cudaSuccess && vmc_w_quota_used() == 128 * 100);
        CHECK(vmc_w_hook_cudaFree(pp.ptr) == cudaSuccess && vmc_w_quota_used() == 0);
        /* the driver's cuArrayCreate: refused with its own out-of-memory error past the quota */
        CUDA_ARRAY_DESCRIPTOR_v2 d = {2000, 200, CU_AD_FORMAT_FLOAT, 1}; /* 1.6 MB */
        CUarray darr = NULL;
        uint64_t before = driver_allocs;
        CHECK(vmc_w_hook_cuArrayCreate_v2(drv_array, &darr, &d) == CUDA_ERROR_OUT_OF_MEMORY && driver_allocs == before);
        d.Width = 200; /* 160 KB */
        CHECK(vmc_w_hook_cuArrayCreate_v2(drv_array, &darr, &d) == CUDA_SUCCESS && vmc_w_quota_used() == 160000);
        CHECK(vmc_w_hook_cuArrayDestroy(drv_array_destroy, darr) == CUDA_SUCCESS && vmc_w_quota_used() == 0 &&
              gpu_bytes == gpu_before);
        /* the virtual memory API: cuMemCreate counts its size, refused past the quota, cuMemRelease frees */
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        CUmemGenericAllocationHandle vh = 0;
        before = driver_allocs;
        CHECK(vmc_w_hook_cuMemCreate(drv_mem_create, &vh, 2u << 20, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY && driver_allocs == before);
        CHECK(vmc_w_hook_cuMemCreate(drv_mem_create, &vh, 100000, &prop, 0) == CUDA_SUCCESS && vmc_w_quota_used() == 100000);
        CHECK(vmc_w_hook_cuMemRelease(drv_mem_release, vh) == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* its shareable exports went with it, and a release the driver refuses takes none */
        CHECK(forgets == 1 && forgotten == vh);
        CHECK(vmc_w_hook_cuMemRelease(drv_mem_release, vh) == CUDA_ERROR_INVALID_VALUE && forgets == 1);
        /* created, mapped, released at once (the usual pattern): still counted until it is unmapped */
        CHECK(vmc_w_hook_cuMemCreate(drv_mem_create, &vh, 100000, &prop, 0) == CUDA_SUCCESS);
        CHECK(vmc_w_hook_cuMemMap(drv_mem_map, 0x7e0000000000ull, 100000, 0, vh, 0) == CUDA_SUCCESS);
        CHECK(vmc_w_hook_cuMemRelease(drv_mem_release, vh) == CUDA_SUCCESS);
        CHECK(vmc_w_quota_used() == 100000 && forgets == 1); /* mapped: still in use, its exports kept */
        CHECK(vmc_w_hook_cuMemUnmap(drv_mem_unmap, 0x7e0000000000ull, 100000) == CUDA_SUCCESS);
        CHECK(vmc_w_quota_used() == 0 && forgets == 2 && forgotten == vh);
        /* a context destroyed: plain allocations the driver no longer knows stop counting, arrays do not
         * (their handles cannot be asked about), so destroying an empty context frees no quota */
        CHECK(vmc_w_hook_cuArrayCreate_v2(drv_array, &darr, &d) == CUDA_SUCCESS);
        void *plain_alloc = do_malloc(0, 1000, &st);
        CHECK(st == cudaSuccess && plain_alloc && vmc_w_quota_used() == 161000);
        vmc_w_quota_forget_freed(everything_gone);
        CHECK(vmc_w_quota_used() == 160000);
        CHECK(vmc_w_hook_cuArrayDestroy(drv_array_destroy, darr) == CUDA_SUCCESS && vmc_w_quota_used() == 0);
        gpu_free(plain_alloc);
    }
    if (failures) {
        fprintf(stderr, "test_quota: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_quota: ok\n");
    return 0;
}

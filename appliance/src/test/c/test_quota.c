/* worker_quota.c against a simulated GPU, under ASan/UBSan: allocations within the quota reach the
 * "GPU", one past it never does (the refusal calls cudaMalloc with an impossible size, which fails with
 * cudaErrorMemoryAllocation), frees give bytes back, pitch padding is counted, overflowing sizes are
 * refused, thousands of allocations in and out leave nothing counted, and cudaDeviceReset clears all.
 * The driver API's allocations (cuMemAlloc...) count against the same quota, refused with the driver's
 * CUDA_ERROR_OUT_OF_MEMORY; so do CUDA arrays and cudaMalloc3D (worker_quota_arrays.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
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
void *vmc_w_drv_resolve(const char *name, int version, int per_thread) {
    (void)version; (void)per_thread;
    if (!strcmp(name, "cuMemAlloc")) return (void *)drv_alloc;
    if (!strcmp(name, "cuMemAllocPitch")) return (void *)drv_alloc_pitch;
    if (!strcmp(name, "cuMemAllocAsync")) return (void *)drv_alloc_async;
    if (!strcmp(name, "cuMemAllocFromPoolAsync")) return (void *)drv_alloc_pool;
    if (!strcmp(name, "cuMemFree")) return (void *)drv_free;
    if (!strcmp(name, "cuMemFreeAsync")) return (void *)drv_free_async;
    if (!strcmp(name, "cuArrayCreate")) return (void *)drv_array;
    if (!strcmp(name, "cuArrayDestroy")) return (void *)drv_array_destroy;
    if (!strcmp(name, "cuMemCreate")) return (void *)drv_mem_create;
    if (!strcmp(name, "cuMemRelease")) return (void *)drv_mem_release;
    if (!strcmp(name, "cuMemMap")) return (void *)drv_mem_map;
    if (!strcmp(name, "cuMemUnmap")) return (void *)drv_mem_unmap;
    return NULL;
}
void *vmc_w_drv_proc(uint32_t id, const char *name, int version, int per_thread) {
    (void)id;
    return vmc_w_drv_resolve(name, version, per_thread);
}
CUresult vmc_w_drv_missing(const char *function) { (void)function; return CUDA_ERROR_NOT_SUPPORTED; }

/* ---- what worker_serve.c provides ---- */
static cudaError_t replied_status, async_status;
static uint8_t reply_buf[64];
static size_t reply_len;
void vmc_w_arg(struct vmc_wcall *wc, void *p, size_t n) { vmc_in_bytes(&wc->in, p, n); }
void *vmc_w_arg_pointee(struct vmc_wcall *wc, void *storage, size_t n) {
    if (!vmc_in_u8(&wc->in)) return NULL;
    vmc_in_bytes(&wc->in, storage, n);
    return storage;
}
int vmc_w_args_ok(struct vmc_wcall *wc) { return !wc->in.bad && wc->in.pos == wc->in.len; }
void vmc_w_reply_status(struct vmc_wcall *wc, cudaError_t st) { (void)wc; replied_status = st; reply_len = 0; }
void vmc_w_reply_pointee(struct vmc_wcall *wc, const void *p, size_t n) {
    (void)wc;
    if (p && reply_len + n <= sizeof reply_buf) { memcpy(reply_buf + reply_len, p, n); reply_len += n; }
}
void vmc_w_async_done(struct vmc_wcall *wc, cudaError_t st) { (void)wc; async_status = st; }
void vmc_w_log(const char *fmt, ...) { (void)fmt; }

/* ---- calls as the client encodes them ---- */
static uint8_t payload[64];
static enum vmc_w_result call(uint32_t id, int async, size_t len, int *handled) {
    struct vmc_wcall wc = {0};
    wc.id = id;
    wc.async = async;
    vmc_in_init(&wc.in, payload, len);
    enum vmc_w_result r = VMC_W_UNKNOWN;
    replied_status = (cudaError_t)-1;
    *handled = vmc_w_quota_intercept(&wc, &r);
    return r;
}
static void *do_malloc(uint32_t id, size_t n, cudaError_t *st) {
    size_t len = 0;
    payload[len++] = 1;
    memset(payload + len, 0, 8); len += 8;
    memcpy(payload + len, &n, 8); len += 8;
    if (id != VMC_API_cudaMalloc) { memset(payload + len, 0, 8); len += 8; }
    int h;
    CHECK(call(id, 0, len, &h) == VMC_W_DONE && h);
    *st = replied_status;
    void *p = NULL;
    if (reply_len == 8) memcpy(&p, reply_buf, 8);
    return p;
}
static cudaError_t do_free(uint32_t id, void *p, int async) {
    size_t len = 0;
    memcpy(payload, &p, 8); len += 8;
    if (id != VMC_API_cudaFree) { memset(payload + len, 0, 8); len += 8; }
    int h;
    async_status = (cudaError_t)-1;
    CHECK(call(id, async, len, &h) == VMC_W_DONE && h);
    return async ? async_status : replied_status;
}

static int everything_gone(uintptr_t ptr) { (void)ptr; return 0; }

/* The daemon puts the quota in the worker's environment before it starts; worker_quota.c reads it in a
 * constructor (before the program's own code), so the test sets it in an earlier one. */
__attribute__((constructor(101))) static void quota_environment(void) {
    setenv("VMCUDA_MEMORY_QUOTA", "1000000", 1);
}

int main(void) {
    cudaError_t st;
    void *a = do_malloc(VMC_API_cudaMalloc, 600000, &st);
    CHECK(st == cudaSuccess && a && vmc_w_quota_used() == 600000);
    /* over the quota: the GPU sees only the impossible size, never 500000 */
    uint64_t allocs = gpu_allocs;
    void *b = do_malloc(VMC_API_cudaMallocAsync, 500000, &st);
    CHECK(st == cudaErrorMemoryAllocation && b == NULL && gpu_allocs == allocs && largest_request > (1ull << 40));
    CHECK(vmc_w_quota_used() == 600000);
    CHECK(do_free(VMC_API_cudaFree, a, 0) == cudaSuccess && vmc_w_quota_used() == 0 && gpu_bytes == 0);
    /* exactly the quota fits; one byte more does not */
    a = do_malloc(VMC_API_cudaMallocAsync_ptsz, 1000000, &st);
    CHECK(st == cudaSuccess && vmc_w_quota_used() == 1000000);
    b = do_malloc(VMC_API_cudaMalloc, 1, &st);
    CHECK(st == cudaErrorMemoryAllocation);
    CHECK(do_free(VMC_API_cudaFreeAsync, a, 1) == cudaSuccess && vmc_w_quota_used() == 0);
    /* freeing what was never allocated changes nothing */
    CHECK(do_free(VMC_API_cudaFree, (void *)0x1234, 0) == cudaErrorInvalidValue && vmc_w_quota_used() == 0);
    /* pitch: the padded size counts */
    {
        size_t w = 100, hgt = 1000, len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        memcpy(payload + len, &w, 8); len += 8;
        memcpy(payload + len, &hgt, 8); len += 8;
        int h;
        CHECK(call(VMC_API_cudaMallocPitch, 0, len, &h) == VMC_W_DONE && h);
        CHECK(replied_status == cudaSuccess && vmc_w_quota_used() == 128 * 1000 && reply_len == 16);
        void *p; memcpy(&p, reply_buf, 8);
        CHECK(do_free(VMC_API_cudaFree, p, 0) == cudaSuccess && vmc_w_quota_used() == 0);
        /* width * height overflows: refused without reaching the GPU */
        w = SIZE_MAX; hgt = 2; len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        memcpy(payload + len, &w, 8); len += 8;
        memcpy(payload + len, &hgt, 8); len += 8;
        allocs = gpu_allocs;
        CHECK(call(VMC_API_cudaMallocPitch, 0, len, &h) == VMC_W_DONE && h);
        CHECK(replied_status == cudaErrorMemoryAllocation && gpu_allocs == allocs);
    }
    /* many allocations in and out (table growth, deletion in probe chains) */
    static void *ptrs[20000];
    for (int i = 0; i < 20000; i++) {
        ptrs[i] = do_malloc(VMC_API_cudaMalloc, 50, &st);
        CHECK(st == cudaSuccess);
    }
    CHECK(vmc_w_quota_used() == 1000000);
    do_malloc(VMC_API_cudaMalloc, 1, &st);
    CHECK(st == cudaErrorMemoryAllocation);
    for (int i = 0; i < 20000; i += 2) CHECK(do_free(VMC_API_cudaFree, ptrs[i], 0) == cudaSuccess);
    CHECK(vmc_w_quota_used() == 500000);
    for (int i = 1; i < 20000; i += 2) CHECK(do_free(VMC_API_cudaFree, ptrs[i], 0) == cudaSuccess);
    CHECK(vmc_w_quota_used() == 0 && gpu_bytes == 0);
    /* cudaDeviceReset frees everything */
    do_malloc(VMC_API_cudaMalloc, 999999, &st);
    vmc_w_quota_reset();
    CHECK(vmc_w_quota_used() == 0);
    /* the driver API: the same quota, the driver's out-of-memory error, nothing reaches the GPU past it */
    {
        size_t len = 0, n = 700000;
        uint64_t gpu_before = gpu_bytes; /* what the reset above left on the simulated GPU */
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        memcpy(payload + len, &n, 8); len += 8;
        int hd;
        CHECK(call(VMC_DRV_cuMemAlloc_v2, 0, len, &hd) == VMC_W_DONE && hd);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 700000 && reply_len == 8);
        CUdeviceptr first; memcpy(&first, reply_buf, 8);
        uint64_t before = driver_allocs;
        memset(payload + len, 0, 8); len += 8; /* cuMemAllocAsync: + stream */
        CHECK(call(VMC_DRV_cuMemAllocAsync, 0, len, &hd) == VMC_W_DONE && hd);
        CHECK((int)replied_status == CUDA_ERROR_OUT_OF_MEMORY && driver_allocs == before && vmc_w_quota_used() == 700000);
        memcpy(payload, &first, 8);
        CHECK(call(VMC_DRV_cuMemFree_v2, 0, 8, &hd) == VMC_W_DONE && hd);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* pitched: the padded rows count */
        size_t w = 100, hgt = 1000;
        unsigned elem = 4;
        len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        memcpy(payload + len, &w, 8); len += 8;
        memcpy(payload + len, &hgt, 8); len += 8;
        memcpy(payload + len, &elem, 4); len += 4;
        CHECK(call(VMC_DRV_cuMemAllocPitch_v2, 0, len, &hd) == VMC_W_DONE && hd);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 128 * 1000 && reply_len == 16);
        CUdeviceptr pitched; memcpy(&pitched, reply_buf, 8);
        memcpy(payload, &pitched, 8); memset(payload + 8, 0, 8);
        async_status = (cudaError_t)-1;
        CHECK(call(VMC_DRV_cuMemFreeAsync, 1, 16, &hd) == VMC_W_DONE && hd);
        CHECK((int)async_status == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* malformed: judged */
        CHECK(call(VMC_DRV_cuMemAlloc_v2, 0, 5, &hd) == VMC_W_BAD_ARGS && hd);
    }
    /* arrays count too: their elements' bytes, refused past the quota, given back when freed */
    {
        uint64_t gpu_before = gpu_bytes;
        struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat}; /* 16 bytes */
        size_t w = 100, hgt = 100, len = 0;
        unsigned flags = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memcpy(payload + len, &f4, sizeof f4); len += sizeof f4;
        memcpy(payload + len, &w, 8); len += 8;
        memcpy(payload + len, &hgt, 8); len += 8;
        memcpy(payload + len, &flags, 4); len += 4;
        int ha;
        CHECK(call(VMC_API_cudaMallocArray, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK(replied_status == cudaSuccess && vmc_w_quota_used() == 160000 && reply_len == 8);
        void *arr; memcpy(&arr, reply_buf, 8);
        /* 1000 x 100 float4 = 1.6 MB: past the quota, never reaches the GPU */
        w = 1000;
        memcpy(payload + 1 + 8 + 1 + sizeof f4, &w, 8);
        allocs = gpu_allocs;
        CHECK(call(VMC_API_cudaMallocArray, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK(replied_status == cudaErrorMemoryAllocation && gpu_allocs == allocs && vmc_w_quota_used() == 160000);
        memcpy(payload, &arr, 8);
        CHECK(call(VMC_API_cudaFreeArray, 0, 8, &ha) == VMC_W_DONE && ha);
        CHECK(replied_status == cudaSuccess && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* cudaMalloc3D: the pitched bytes count */
        struct cudaExtent e = {100, 10, 10};
        len = 0;
        payload[len++] = 1; memset(payload + len, 0, sizeof(struct cudaPitchedPtr)); len += sizeof(struct cudaPitchedPtr);
        memcpy(payload + len, &e, sizeof e); len += sizeof e;
        CHECK(call(VMC_API_cudaMalloc3D, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK(replied_status == cudaSuccess && vmc_w_quota_used() == 128 * 100);
        struct cudaPitchedPtr pp; memcpy(&pp, reply_buf, sizeof pp);
        CHECK(do_free(VMC_API_cudaFree, pp.ptr, 0) == cudaSuccess && vmc_w_quota_used() == 0);
        /* the driver's cuArrayCreate: refused with its own out-of-memory error past the quota */
        CUDA_ARRAY_DESCRIPTOR_v2 d = {2000, 200, CU_AD_FORMAT_FLOAT, 1}; /* 1.6 MB */
        len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memcpy(payload + len, &d, sizeof d); len += sizeof d;
        uint64_t before = driver_allocs;
        CHECK(call(VMC_DRV_cuArrayCreate_v2, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_ERROR_OUT_OF_MEMORY && driver_allocs == before);
        d.Width = 200; /* 160 KB */
        memcpy(payload + 1 + 8 + 1, &d, sizeof d);
        CHECK(call(VMC_DRV_cuArrayCreate_v2, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 160000);
        memcpy(&arr, reply_buf, 8);
        memcpy(payload, &arr, 8);
        CHECK(call(VMC_DRV_cuArrayDestroy, 0, 8, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        /* the virtual memory API: cuMemCreate counts its size, refused past the quota, cuMemRelease frees */
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        size_t vmm = 2u << 20; /* past the quota */
        len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        memcpy(payload + len, &vmm, 8); len += 8;
        payload[len++] = 1; memcpy(payload + len, &prop, sizeof prop); len += sizeof prop;
        memset(payload + len, 0, 8); len += 8;
        before = driver_allocs;
        CHECK(call(VMC_DRV_cuMemCreate, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_ERROR_OUT_OF_MEMORY && driver_allocs == before);
        vmm = 100000;
        memcpy(payload + 1 + 8, &vmm, 8);
        CHECK(call(VMC_DRV_cuMemCreate, 0, len, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 100000);
        CUmemGenericAllocationHandle vh = 0;
        memcpy(&vh, reply_buf, 8);
        memcpy(payload, &vh, 8);
        CHECK(call(VMC_DRV_cuMemRelease, 0, 8, &ha) == VMC_W_DONE && ha);
        CHECK((int)replied_status == CUDA_SUCCESS && vmc_w_quota_used() == 0 && gpu_bytes == gpu_before);
        CHECK(call(VMC_DRV_cuMemCreate, 0, 9, &ha) == VMC_W_BAD_ARGS && ha); /* malformed */
        /* created, mapped, released at once (the usual pattern): still counted until it is unmapped */
        memcpy(payload + 1 + 8, &vmm, 8);
        payload[0] = 1;
        CHECK(call(VMC_DRV_cuMemCreate, 0, len, &ha) == VMC_W_DONE && ha && (int)replied_status == CUDA_SUCCESS);
        memcpy(&vh, reply_buf, 8);
        uint64_t map_args[5] = {0x7e0000000000ull, 100000, 0, vh, 0};
        memcpy(payload, map_args, sizeof map_args);
        CHECK(call(VMC_DRV_cuMemMap, 0, sizeof map_args, &ha) == VMC_W_DONE && ha && (int)replied_status == CUDA_SUCCESS);
        memcpy(payload, &vh, 8);
        CHECK(call(VMC_DRV_cuMemRelease, 0, 8, &ha) == VMC_W_DONE && ha && (int)replied_status == CUDA_SUCCESS);
        CHECK(vmc_w_quota_used() == 100000); /* mapped: still in use */
        uint64_t unmap_args[2] = {0x7e0000000000ull, 100000};
        memcpy(payload, unmap_args, sizeof unmap_args);
        CHECK(call(VMC_DRV_cuMemUnmap, 0, sizeof unmap_args, &ha) == VMC_W_DONE && ha && (int)replied_status == CUDA_SUCCESS);
        CHECK(vmc_w_quota_used() == 0);
        /* a context destroyed: plain allocations the driver no longer knows stop counting, arrays do not
         * (their handles cannot be asked about), so destroying an empty context frees no quota */
        len = 0;
        payload[len++] = 1; memset(payload + len, 0, 8); len += 8;
        payload[len++] = 1; memcpy(payload + len, &d, sizeof d); len += sizeof d;
        CHECK(call(VMC_DRV_cuArrayCreate_v2, 0, len, &ha) == VMC_W_DONE && ha && (int)replied_status == CUDA_SUCCESS);
        memcpy(&arr, reply_buf, 8);
        void *plain_alloc = do_malloc(VMC_API_cudaMalloc, 1000, &st);
        CHECK(st == cudaSuccess && plain_alloc && vmc_w_quota_used() == 161000);
        vmc_w_quota_forget_freed(everything_gone);
        CHECK(vmc_w_quota_used() == 160000);
        memcpy(payload, &arr, 8);
        CHECK(call(VMC_DRV_cuArrayDestroy, 0, 8, &ha) == VMC_W_DONE && ha && vmc_w_quota_used() == 0);
        gpu_free(plain_alloc);
        /* malformed */
        CHECK(call(VMC_API_cudaMallocArray, 0, 7, &ha) == VMC_W_BAD_ARGS && ha);
    }
    /* malformed payloads: judged, not crashed on */
    int h;
    payload[0] = 1;
    CHECK(call(VMC_API_cudaMalloc, 0, 3, &h) == VMC_W_BAD_ARGS && h);
    CHECK(call(VMC_API_cudaFree, 0, 40, &h) == VMC_W_BAD_ARGS && h);
    CHECK(call(VMC_API_cudaMalloc, 1, 17, &h) == VMC_W_BAD_ARGS && h);
    CHECK(call(VMC_API_cudaGetDeviceCount, 0, 9, &h) == VMC_W_UNKNOWN && !h);
    if (failures) {
        fprintf(stderr, "test_quota: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_quota: ok\n");
    return 0;
}

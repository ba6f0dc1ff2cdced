/* The device-memory quota (worker_quota.c) for what is not a plain allocation: CUDA arrays (cudaMallocArray,
 * cudaMalloc3DArray, cudaMallocMipmappedArray; cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate) and
 * cudaMalloc3D's pitched memory. Same wire format as the generated dispatch (cuda-api.spec,
 * cuda-driver.spec). An array counts width × height × depth × element size, a lower bound of what the GPU
 * lays out (a mipmapped array counts its first level): the quota may let a little more through than it
 * says, never less. Array handles are kept with their top bit set, apart from device pointers. */
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
#include "worker_driver.h"
#include "worker_quota.h"
#include <cudaTypedefs.h>

#define HANDLE_TAG VMC_QUOTA_HANDLE_TAG

/* a × b × c, or UINT64_MAX when it overflows (then refused: no GPU has that much) */
static uint64_t product(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t ab, abc;
    if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc))
        return UINT64_MAX;
    return abc;
}

static uint64_t at_least_1(uint64_t v) { return v ? v : 1; }

static uint64_t runtime_element(const struct cudaChannelFormatDesc *d) {
    if (!d)
        return 1;
    uint64_t bits = (uint64_t)(d->x > 0 ? d->x : 0) + (uint64_t)(d->y > 0 ? d->y : 0) + (uint64_t)(d->z > 0 ? d->z : 0) +
                    (uint64_t)(d->w > 0 ? d->w : 0);
    return bits >= 8 ? bits / 8 : 1;
}

static uint64_t driver_element(CUarray_format f, unsigned channels) {
    uint64_t per_channel;
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: per_channel = 2; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: per_channel = 4; break;
    default: per_channel = 1; /* 8-bit, and formats we do not size: a lower bound */
    }
    return per_channel * at_least_1(channels);
}

/* ---- the runtime ---- */

static enum vmc_w_result runtime_array(struct vmc_wcall *wc) {
    cudaArray_t array_v = NULL;
    struct cudaChannelFormatDesc desc_v;
    memset(&desc_v, 0, sizeof desc_v);
    void *handle = vmc_w_arg_pointee(wc, &array_v, sizeof array_v);
    struct cudaChannelFormatDesc *desc = vmc_w_arg_pointee(wc, &desc_v, sizeof desc_v);
    size_t width = 0, height = 0;
    struct cudaExtent extent = {0, 0, 0};
    unsigned levels = 0, flags = 0;
    if (wc->id == VMC_API_cudaMallocArray) {
        vmc_w_arg(wc, &width, sizeof width);
        vmc_w_arg(wc, &height, sizeof height);
        extent.width = width;
        extent.height = height;
    } else {
        vmc_w_arg(wc, &extent, sizeof extent);
        if (wc->id == VMC_API_cudaMallocMipmappedArray)
            vmc_w_arg(wc, &levels, sizeof levels);
    }
    vmc_w_arg(wc, &flags, sizeof flags);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    uint64_t bytes = product(product(extent.width, runtime_element(desc), 1), at_least_1(extent.height),
                             at_least_1(extent.depth));
    cudaError_t st;
    if (!vmc_w_quota_reserve(bytes)) {
        st = vmc_w_quota_refuse(vmc_api_name(wc->id), bytes);
    } else {
        st = wc->id == VMC_API_cudaMallocArray     ? cudaMallocArray(handle, desc, width, height, flags)
             : wc->id == VMC_API_cudaMalloc3DArray ? cudaMalloc3DArray(handle, desc, extent, flags)
                                                   : cudaMallocMipmappedArray(handle, desc, extent, levels, flags);
        vmc_w_quota_settle(st == cudaSuccess && handle && *(void **)handle, handle ? (uintptr_t)*(void **)handle | HANDLE_TAG : 0, bytes);
    }
    vmc_w_reply_status(wc, st);
    vmc_w_reply_pointee(wc, handle, sizeof array_v);
    return VMC_W_DONE;
}

static enum vmc_w_result runtime_malloc3d(struct vmc_wcall *wc) {
    struct cudaPitchedPtr p_v;
    memset(&p_v, 0, sizeof p_v);
    struct cudaPitchedPtr *pitched = vmc_w_arg_pointee(wc, &p_v, sizeof p_v);
    struct cudaExtent extent;
    vmc_w_arg(wc, &extent, sizeof extent);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    /* the extent's width is in bytes here; the pitch is at least the width */
    uint64_t want = product(extent.width, at_least_1(extent.height), at_least_1(extent.depth));
    cudaError_t st;
    if (!vmc_w_quota_reserve(want)) {
        st = vmc_w_quota_refuse("cudaMalloc3D", want);
    } else {
        st = cudaMalloc3D(pitched, extent);
        uint64_t got = pitched && st == cudaSuccess ? product(pitched->pitch, at_least_1(extent.height), at_least_1(extent.depth)) : want;
        st = vmc_w_quota_settle_pitched("cudaMalloc3D", st, pitched ? &pitched->ptr : NULL, want, got);
        if (st != cudaSuccess && pitched)
            memset(pitched, 0, sizeof *pitched);
    }
    vmc_w_reply_status(wc, st);
    vmc_w_reply_pointee(wc, pitched, sizeof p_v);
    return VMC_W_DONE;
}

static enum vmc_w_result runtime_free_array(struct vmc_wcall *wc) {
    void *handle = NULL;
    vmc_w_arg(wc, &handle, sizeof handle);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    cudaError_t st = wc->id == VMC_API_cudaFreeArray ? cudaFreeArray(handle) : cudaFreeMipmappedArray(handle);
    if (st == cudaSuccess && handle)
        vmc_w_quota_release((uintptr_t)handle | HANDLE_TAG);
    vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

/* ---- the driver ---- */

/* NVIDIA's functions, resolved once for all threads */
static PFN_cuArrayCreate_v3020 create;
static PFN_cuArray3DCreate_v3020 create3d;
static PFN_cuMipmappedArrayCreate_v5000 create_mip;
static PFN_cuArrayDestroy_v2000 destroy;
static PFN_cuMipmappedArrayDestroy_v5000 destroy_mip;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void resolve(void) {
    create = (PFN_cuArrayCreate_v3020)vmc_w_drv_resolve("cuArrayCreate", 3020, 0);
    create3d = (PFN_cuArray3DCreate_v3020)vmc_w_drv_resolve("cuArray3DCreate", 3020, 0);
    create_mip = (PFN_cuMipmappedArrayCreate_v5000)vmc_w_drv_resolve("cuMipmappedArrayCreate", 5000, 0);
    destroy = (PFN_cuArrayDestroy_v2000)vmc_w_drv_resolve("cuArrayDestroy", 2000, 0);
    destroy_mip = (PFN_cuMipmappedArrayDestroy_v5000)vmc_w_drv_resolve("cuMipmappedArrayDestroy", 5000, 0);
}

static enum vmc_w_result driver_array(struct vmc_wcall *wc) {
    CUarray handle_v = NULL;
    void *handle = vmc_w_arg_pointee(wc, &handle_v, sizeof handle_v);
    CUDA_ARRAY_DESCRIPTOR_v2 d2;
    CUDA_ARRAY3D_DESCRIPTOR_v2 d3;
    memset(&d2, 0, sizeof d2);
    memset(&d3, 0, sizeof d3);
    void *desc;
    unsigned levels = 0;
    uint64_t bytes;
    if (wc->id == VMC_DRV_cuArrayCreate_v2) {
        desc = vmc_w_arg_pointee(wc, &d2, sizeof d2);
        bytes = product(d2.Width, at_least_1(d2.Height), driver_element(d2.Format, d2.NumChannels));
    } else {
        desc = vmc_w_arg_pointee(wc, &d3, sizeof d3);
        if (wc->id == VMC_DRV_cuMipmappedArrayCreate)
            vmc_w_arg(wc, &levels, sizeof levels);
        bytes = product(product(d3.Width, at_least_1(d3.Height), at_least_1(d3.Depth)), 1,
                        driver_element(d3.Format, d3.NumChannels));
    }
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    CUresult st;
    if (!desc || !vmc_w_quota_reserve(bytes)) {
        vmc_w_log("quota: refused %s of %" PRIu64 " bytes", vmc_drv_api_name(wc->id), bytes);
        st = desc ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
    } else {
        pthread_once(&resolved, resolve);
        if (wc->id == VMC_DRV_cuArrayCreate_v2)
            st = create ? create(handle, &d2) : vmc_w_drv_missing("cuArrayCreate_v2");
        else if (wc->id == VMC_DRV_cuArray3DCreate_v2)
            st = create3d ? create3d(handle, &d3) : vmc_w_drv_missing("cuArray3DCreate_v2");
        else
            st = create_mip ? create_mip(handle, &d3, levels) : vmc_w_drv_missing("cuMipmappedArrayCreate");
        vmc_w_quota_settle(st == CUDA_SUCCESS && handle && *(void **)handle, handle ? (uintptr_t)*(void **)handle | HANDLE_TAG : 0, bytes);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_w_reply_pointee(wc, handle, sizeof handle_v);
    return VMC_W_DONE;
}

static enum vmc_w_result driver_destroy(struct vmc_wcall *wc) {
    void *handle = NULL;
    vmc_w_arg(wc, &handle, sizeof handle);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    pthread_once(&resolved, resolve);
    CUresult st = wc->id == VMC_DRV_cuArrayDestroy ? (destroy ? destroy(handle) : vmc_w_drv_missing("cuArrayDestroy"))
                  : destroy_mip ? destroy_mip(handle) : vmc_w_drv_missing("cuMipmappedArrayDestroy");
    if (st == CUDA_SUCCESS && handle)
        vmc_w_quota_release((uintptr_t)handle | HANDLE_TAG);
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

int vmc_w_quota_intercept_arrays(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_API_cudaMallocArray:
    case VMC_API_cudaMalloc3DArray:
    case VMC_API_cudaMallocMipmappedArray: *r = runtime_array(wc); return 1;
    case VMC_API_cudaMalloc3D: *r = runtime_malloc3d(wc); return 1;
    case VMC_API_cudaFreeArray:
    case VMC_API_cudaFreeMipmappedArray: *r = runtime_free_array(wc); return 1;
    case VMC_DRV_cuArrayCreate_v2:
    case VMC_DRV_cuArray3DCreate_v2:
    case VMC_DRV_cuMipmappedArrayCreate: *r = driver_array(wc); return 1;
    case VMC_DRV_cuArrayDestroy:
    case VMC_DRV_cuMipmappedArrayDestroy: *r = driver_destroy(wc); return 1;
    default: return vmc_w_quota_intercept_vmm(wc, r);
    }
}

/* The device-memory quota (worker_quota.c) for what is not a plain allocation: CUDA arrays (cudaMallocArray,
 * cudaMalloc3DArray, cudaMallocMipmappedArray; cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate) and
 * cudaMalloc3D's pitched memory, through the hooks the generated dispatch calls (`hook` lines of the specs).
 * An array counts width × height × depth × element size, a lower bound of what the GPU
 * lays out (a mipmapped array counts its first level): the quota may let a little more through than it
 * says, never less. Array handles are kept with their top bit set, apart from device pointers. */
#include <inttypes.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
#include "vmc_worker_hooks.h"
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

static uint64_t runtime_bytes(const struct cudaChannelFormatDesc *desc, struct cudaExtent e) {
    return product(product(e.width, runtime_element(desc), 1), at_least_1(e.height), at_least_1(e.depth));
}

cudaError_t vmc_w_hook_cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
                                       size_t height, unsigned int flags) {
    uint64_t bytes = runtime_bytes(desc, (struct cudaExtent){width, height, 0});
    VMC_W_QUOTA_ALLOC(bytes, array, HANDLE_TAG, cudaSuccess, vmc_w_quota_refuse("cudaMallocArray", bytes),
                cudaMallocArray(array, desc, width, height, flags));
}

cudaError_t vmc_w_hook_cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                         struct cudaExtent extent, unsigned int flags) {
    uint64_t bytes = runtime_bytes(desc, extent);
    VMC_W_QUOTA_ALLOC(bytes, array, HANDLE_TAG, cudaSuccess, vmc_w_quota_refuse("cudaMalloc3DArray", bytes),
                cudaMalloc3DArray(array, desc, extent, flags));
}

cudaError_t vmc_w_hook_cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                                const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                                                unsigned int numLevels, unsigned int flags) {
    uint64_t bytes = runtime_bytes(desc, extent);
    VMC_W_QUOTA_ALLOC(bytes, mipmappedArray, HANDLE_TAG, cudaSuccess, vmc_w_quota_refuse("cudaMallocMipmappedArray", bytes),
                cudaMallocMipmappedArray(mipmappedArray, desc, extent, numLevels, flags));
}

cudaError_t vmc_w_hook_cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent) {
    if (!vmc_w_quota_on())
        return cudaMalloc3D(pitchedDevPtr, extent);
    /* the extent's width is in bytes here; the pitch is at least the width */
    uint64_t want = product(extent.width, at_least_1(extent.height), at_least_1(extent.depth));
    if (!vmc_w_quota_reserve(want))
        return vmc_w_quota_refuse("cudaMalloc3D", want);
    cudaError_t st = cudaMalloc3D(pitchedDevPtr, extent);
    uint64_t got = pitchedDevPtr && st == cudaSuccess
                       ? product(pitchedDevPtr->pitch, at_least_1(extent.height), at_least_1(extent.depth))
                       : want;
    st = vmc_w_quota_settle_pitched("cudaMalloc3D", st, pitchedDevPtr ? &pitchedDevPtr->ptr : NULL, want, got);
    if (st != cudaSuccess && pitchedDevPtr)
        memset(pitchedDevPtr, 0, sizeof *pitchedDevPtr);
    return st;
}

/* A destroyed array's bytes go back. */
static void array_gone(int succeeded, void *handle) {
    if (vmc_w_quota_on() && succeeded && handle)
        vmc_w_quota_release((uintptr_t)handle | HANDLE_TAG);
}

cudaError_t vmc_w_hook_cudaFreeArray(cudaArray_t array) {
    cudaError_t st = cudaFreeArray(array);
    array_gone(st == cudaSuccess, array);
    return st;
}

cudaError_t vmc_w_hook_cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray) {
    cudaError_t st = cudaFreeMipmappedArray(mipmappedArray);
    array_gone(st == cudaSuccess, mipmappedArray);
    return st;
}

/* ---- the driver's arrays: refused past the quota with the driver's own out-of-memory error ---- */

static uint64_t driver_bytes(size_t width, size_t height, size_t depth, CUarray_format format, unsigned channels) {
    return product(product(width, at_least_1(height), at_least_1(depth)), 1, driver_element(format, channels));
}

CUresult vmc_w_hook_cuArrayCreate_v2(PFN_cuArrayCreate_v3020 real, CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v2 *pAllocateArray) {
    if (!pAllocateArray) /* the driver's own answer, CUDA_ERROR_INVALID_VALUE */
        return real(pHandle, pAllocateArray);
    const CUDA_ARRAY_DESCRIPTOR_v2 *d = pAllocateArray;
    uint64_t bytes = driver_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels);
    VMC_W_QUOTA_ALLOC(bytes, pHandle, HANDLE_TAG, CUDA_SUCCESS, vmc_w_quota_refuse_driver("cuArrayCreate_v2", bytes), real(pHandle, d));
}

CUresult vmc_w_hook_cuArray3DCreate_v2(PFN_cuArray3DCreate_v3020 real, CUarray *pHandle,
                                       const CUDA_ARRAY3D_DESCRIPTOR_v2 *pAllocateArray) {
    if (!pAllocateArray)
        return real(pHandle, pAllocateArray);
    const CUDA_ARRAY3D_DESCRIPTOR_v2 *d = pAllocateArray;
    uint64_t bytes = driver_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    VMC_W_QUOTA_ALLOC(bytes, pHandle, HANDLE_TAG, CUDA_SUCCESS, vmc_w_quota_refuse_driver("cuArray3DCreate_v2", bytes), real(pHandle, d));
}

CUresult vmc_w_hook_cuMipmappedArrayCreate(PFN_cuMipmappedArrayCreate_v5000 real, CUmipmappedArray *pHandle,
                                           const CUDA_ARRAY3D_DESCRIPTOR_v2 *pMipmappedArrayDesc, unsigned int numMipmapLevels) {
    if (!pMipmappedArrayDesc)
        return real(pHandle, pMipmappedArrayDesc, numMipmapLevels);
    const CUDA_ARRAY3D_DESCRIPTOR_v2 *d = pMipmappedArrayDesc;
    uint64_t bytes = driver_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    VMC_W_QUOTA_ALLOC(bytes, pHandle, HANDLE_TAG, CUDA_SUCCESS, vmc_w_quota_refuse_driver("cuMipmappedArrayCreate", bytes), real(pHandle, d, numMipmapLevels));
}

CUresult vmc_w_hook_cuArrayDestroy(PFN_cuArrayDestroy_v2000 real, CUarray hArray) {
    CUresult st = real(hArray);
    array_gone(st == CUDA_SUCCESS, hArray);
    return st;
}

CUresult vmc_w_hook_cuMipmappedArrayDestroy(PFN_cuMipmappedArrayDestroy_v5000 real, CUmipmappedArray hMipmappedArray) {
    CUresult st = real(hMipmappedArray);
    array_gone(st == CUDA_SUCCESS, hMipmappedArray);
    return st;
}

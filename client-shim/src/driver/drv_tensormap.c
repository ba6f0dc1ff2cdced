/* Tensor maps (cuTensorMapEncode*, cuTensorMapReplaceAddress): the 128-byte descriptors of Hopper's TMA
 * copies, which Triton, XLA and CUTLASS-based kernels pass to their launches by value. Their encoding is the
 * driver's own, so the worker's driver encodes them (worker_tensormap.c) and the client keeps the bytes: the
 * launch then carries them like any other parameter. Each array travels with the number of elements the rank
 * gives it (PROTOCOL.md "Tensor maps"); the client checks the rank first, so it never reads past an array
 * that the driver's contract sizes by it, and a bad rank gets the driver's CUDA_ERROR_INVALID_VALUE. */
#include "drv_call.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

#define MAX_RANK 5

static int shape_ok(const CUtensorMap *map, cuuint32_t rank, cuuint32_t min_rank, const cuuint64_t *dims,
                    const cuuint64_t *strides, const cuuint32_t *element_strides) {
    return map && rank >= min_rank && rank <= MAX_RANK && dims && (rank == 1 || strides) && element_strides;
}

static struct vmc_tensor_shape wire_shape(CUtensorMapDataType type, cuuint32_t rank, void *address, const cuuint64_t *dims,
                                          const cuuint64_t *strides) {
    return (struct vmc_tensor_shape){.data_type = (uint32_t)type, .rank = rank, .address = (uint64_t)(uintptr_t)address,
                                     .n_dims = rank, .dims = dims, .n_strides = rank - 1, .strides = strides};
}

/* Waits and takes the descriptor (left as it was after an error). */
static CUresult finish_map(struct vmc_call *c, CUtensorMap *map) {
    CUresult st = (CUresult)vmc_call_finish(c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_tensor_map r;
    vmc_get_tensor_map(&c->reply, &r);
    if (!vmc_call_reply_ok(c))
        return CUDA_ERROR_UNKNOWN;
    *map = r.map;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress,
    const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
    if (!shape_ok(tensorMap, tensorRank, 1, globalDim, globalStrides, elementStrides) || !boxDim)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_cuTensorMapEncodeTiled, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_tensor_map_tiled_args(vmc_call_args(&c), &(struct vmc_tensor_map_tiled_args){
        .shape = wire_shape(tensorDataType, tensorRank, globalAddress, globalDim, globalStrides), .n_box = tensorRank,
        .box = boxDim, .n_element_strides = tensorRank, .element_strides = elementStrides, .interleave = (uint32_t)interleave,
        .swizzle = (uint32_t)swizzle, .l2_promotion = (uint32_t)l2Promotion, .oob_fill = (uint32_t)oobFill});
    return finish_map(&c, tensorMap);
}

/* Both im2col encoders: `corners` ints for each corner (rank - 2, or 1 for the wide one), and a mode. */
static CUresult encode_im2col(uint32_t id, CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
                              const cuuint64_t *dims, const cuuint64_t *strides, const int *lower, const int *upper,
                              size_t corners, cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *element_strides,
                              uint32_t interleave, uint32_t mode, uint32_t swizzle, uint32_t l2, uint32_t oob) {
    if (!shape_ok(map, rank, 3, dims, strides, element_strides) || !lower || !upper)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_tensor_map_im2col_args(vmc_call_args(&c), &(struct vmc_tensor_map_im2col_args){
        .shape = wire_shape(type, rank, address, dims, strides), .n_corner = (uint32_t)corners, .lower = lower,
        .upper = upper, .channels = channels, .pixels = pixels, .n_element_strides = rank, .element_strides = element_strides,
        .interleave = interleave, .mode = mode, .swizzle = swizzle, .l2_promotion = l2, .oob_fill = oob});
    return finish_map(&c, map);
}

__attribute__((visibility("default"))) CUresult cuTensorMapEncodeIm2col(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress,
    const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
    const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
    return encode_im2col(VMC_DRV_cuTensorMapEncodeIm2col, tensorMap, tensorDataType, tensorRank, globalAddress, globalDim,
                         globalStrides, pixelBoxLowerCorner, pixelBoxUpperCorner, tensorRank >= 3 ? tensorRank - 2 : 0,
                         channelsPerPixel, pixelsPerColumn, elementStrides, interleave, 0, swizzle, l2Promotion, oobFill);
}

__attribute__((visibility("default"))) CUresult cuTensorMapEncodeIm2colWide(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress,
    const cuuint64_t *globalDim, const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth,
    int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
    return encode_im2col(VMC_DRV_cuTensorMapEncodeIm2colWide, tensorMap, tensorDataType, tensorRank, globalAddress,
                         globalDim, globalStrides, &pixelBoxLowerCornerWidth, &pixelBoxUpperCornerWidth, 1,
                         channelsPerPixel, pixelsPerColumn, elementStrides, interleave, (uint32_t)mode, swizzle,
                         l2Promotion, oobFill);
}

__attribute__((visibility("default"))) CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress) {
    if (!tensorMap)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_cuTensorMapReplaceAddress, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_tensor_map_replace_args(vmc_call_args(&c), &(struct vmc_tensor_map_replace_args){
        .map = *tensorMap, .address = (uint64_t)(uintptr_t)globalAddress});
    return finish_map(&c, tensorMap);
}

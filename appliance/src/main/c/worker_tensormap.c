/* cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col / cuTensorMapEncodeIm2colWide / cuTensorMapReplaceAddress
 * (hand in cuda-driver.spec; PROTOCOL.md "Tensor maps"): the 128-byte descriptor a Hopper kernel's TMA copies
 * use, encoded by NVIDIA's driver here and sent back whole. The arrays travel with as many elements as the
 * rank gives each (the strides one fewer, the im2col corners two fewer), so the worker reads exactly what
 * the client sent and nothing of its own beyond a rank of 5, the most CUDA accepts. */
#include "worker_driver.h"
#include <cudaTypedefs.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

#define MAX_RANK 5

/* The arrays of a tensor: dims (rank), strides (rank - 1), element strides (rank). */
struct tensor_shape {
    uint32_t data_type, rank;
    uint64_t address;
    cuuint64_t dims[MAX_RANK], strides[MAX_RANK];
};

/* 0 when the shape is not one the client may send: a rank CUDA refuses, or arrays of other lengths. */
static int shape_of(const struct vmc_tensor_shape *w, struct tensor_shape *t, uint32_t min_rank) {
    t->data_type = w->data_type;
    t->rank = w->rank;
    t->address = w->address;
    if (t->rank < min_rank || t->rank > MAX_RANK || w->n_dims != t->rank || w->n_strides != t->rank - 1)
        return 0;
    for (uint32_t i = 0; i < t->rank; i++) {
        t->dims[i] = vmc_tensor_shape_dims_at(w, i);
        if (i + 1 < t->rank)
            t->strides[i] = vmc_tensor_shape_strides_at(w, i);
    }
    return 1;
}

/* The descriptor back (or nothing after an error); the connection's reply either way. */
static enum vmc_w_result reply_map(struct vmc_wcall *wc, CUresult st, const CUtensorMap *map) {
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_tensor_map(vmc_w_reply_out(wc), &(struct vmc_tensor_map){.map = *map});
    return VMC_W_DONE;
}

static enum vmc_w_result encode_tiled(struct vmc_wcall *wc) {
    struct vmc_tensor_map_tiled_args a;
    vmc_get_tensor_map_tiled_args(&wc->in, &a);
    struct tensor_shape t;
    cuuint32_t box[MAX_RANK], element_strides[MAX_RANK];
    if (!vmc_w_args_ok(wc) || wc->async || !shape_of(&a.shape, &t, 1) || a.n_box != t.rank || a.n_element_strides != t.rank)
        return VMC_W_BAD_ARGS;
    for (uint32_t i = 0; i < t.rank; i++) {
        box[i] = vmc_tensor_map_tiled_args_box_at(&a, i);
        element_strides[i] = vmc_tensor_map_tiled_args_element_strides_at(&a, i);
    }
    uint32_t interleave = a.interleave, swizzle = a.swizzle, l2 = a.l2_promotion, oob = a.oob_fill;
    DRV(PFN_cuTensorMapEncodeTiled_v12000, encode, "cuTensorMapEncodeTiled", 12000, 0);
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    CUresult st = encode ? encode(&map, (CUtensorMapDataType)t.data_type, t.rank, (void *)(uintptr_t)t.address, t.dims,
                                  t.strides, box, element_strides, (CUtensorMapInterleave)interleave,
                                  (CUtensorMapSwizzle)swizzle, (CUtensorMapL2promotion)l2, (CUtensorMapFloatOOBfill)oob)
                         : vmc_w_drv_missing("cuTensorMapEncodeTiled");
    return reply_map(wc, st, &map);
}

/* Im2col (wide = 0: the corners are rank - 2 ints each) and Im2colWide (wide = 1: one int each, and a mode). */
static enum vmc_w_result encode_im2col(struct vmc_wcall *wc, int wide) {
    struct vmc_tensor_map_im2col_args a;
    vmc_get_tensor_map_im2col_args(&wc->in, &a);
    struct tensor_shape t;
    int lower[MAX_RANK] = {0}, upper[MAX_RANK] = {0};
    cuuint32_t element_strides[MAX_RANK];
    if (!vmc_w_args_ok(wc) || wc->async || !shape_of(&a.shape, &t, 3) || a.n_element_strides != t.rank ||
        a.n_corner != (wide ? 1 : t.rank - 2))
        return VMC_W_BAD_ARGS;
    for (uint32_t i = 0; i < a.n_corner; i++) {
        lower[i] = (int)vmc_tensor_map_im2col_args_lower_at(&a, i);
        upper[i] = (int)vmc_tensor_map_im2col_args_upper_at(&a, i);
    }
    for (uint32_t i = 0; i < t.rank; i++)
        element_strides[i] = vmc_tensor_map_im2col_args_element_strides_at(&a, i);
    uint32_t channels = a.channels, pixels = a.pixels, interleave = a.interleave, mode = a.mode, swizzle = a.swizzle;
    uint32_t l2 = a.l2_promotion, oob = a.oob_fill;
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    CUresult st;
    if (wide) {
        DRV(PFN_cuTensorMapEncodeIm2colWide_v12080, encode, "cuTensorMapEncodeIm2colWide", 12080, 0);
        st = encode ? encode(&map, (CUtensorMapDataType)t.data_type, t.rank, (void *)(uintptr_t)t.address, t.dims,
                             t.strides, lower[0], upper[0], channels, pixels, element_strides,
                             (CUtensorMapInterleave)interleave, (CUtensorMapIm2ColWideMode)mode,
                             (CUtensorMapSwizzle)swizzle, (CUtensorMapL2promotion)l2, (CUtensorMapFloatOOBfill)oob)
                    : vmc_w_drv_missing("cuTensorMapEncodeIm2colWide");
    } else {
        DRV(PFN_cuTensorMapEncodeIm2col_v12000, encode, "cuTensorMapEncodeIm2col", 12000, 0);
        st = encode ? encode(&map, (CUtensorMapDataType)t.data_type, t.rank, (void *)(uintptr_t)t.address, t.dims,
                             t.strides, lower, upper, channels, pixels, element_strides,
                             (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
                             (CUtensorMapL2promotion)l2, (CUtensorMapFloatOOBfill)oob)
                    : vmc_w_drv_missing("cuTensorMapEncodeIm2col");
    }
    return reply_map(wc, st, &map);
}

static enum vmc_w_result replace_address(struct vmc_wcall *wc) {
    struct vmc_tensor_map_replace_args a;
    vmc_get_tensor_map_replace_args(&wc->in, &a);
    CUtensorMap map = a.map;
    uint64_t address = a.address;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuTensorMapReplaceAddress_v12000, replace, "cuTensorMapReplaceAddress", 12000, 0);
    CUresult st = replace ? replace(&map, (void *)(uintptr_t)address) : vmc_w_drv_missing("cuTensorMapReplaceAddress");
    return reply_map(wc, st, &map);
}

int vmc_w_tensormap_dispatch(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_DRV_cuTensorMapEncodeTiled: *r = encode_tiled(wc); return 1;
    case VMC_DRV_cuTensorMapEncodeIm2col: *r = encode_im2col(wc, 0); return 1;
    case VMC_DRV_cuTensorMapEncodeIm2colWide: *r = encode_im2col(wc, 1); return 1;
    case VMC_DRV_cuTensorMapReplaceAddress: *r = replace_address(wc); return 1;
    default: return 0;
    }
}

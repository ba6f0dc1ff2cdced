/* cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col / cuTensorMapEncodeIm2colWide / cuTensorMapReplaceAddress
 * (hand in cuda-driver.spec; PROTOCOL.md "Tensor maps"): the 128-byte descriptor a Hopper kernel's TMA copies
 * use, encoded by NVIDIA's driver here and sent back whole. The arrays travel with as many elements as the
 * rank gives each (the strides one fewer, the im2col corners two fewer), so the worker reads exactly what
 * the client sent and nothing of its own beyond a rank of 5, the most CUDA accepts. */
#include "worker_driver.h"
#include <cudaTypedefs.h>
#include <string.h>

#include "vmc_drv_api.h"

#define MAX_RANK 5

/* The arrays of a tensor: dims (rank), strides (rank - 1), element strides (rank). */
struct tensor_shape {
    uint32_t data_type, rank;
    uint64_t address;
    cuuint64_t dims[MAX_RANK], strides[MAX_RANK];
};

static int read_shape(struct vmc_in *in, struct tensor_shape *t, uint32_t min_rank) {
    t->data_type = vmc_in_u32(in);
    t->rank = vmc_in_u32(in);
    t->address = vmc_in_u64(in);
    if (t->rank < min_rank || t->rank > MAX_RANK)
        return 0;
    vmc_in_bytes(in, t->dims, t->rank * sizeof(cuuint64_t));
    vmc_in_bytes(in, t->strides, (t->rank - 1) * sizeof(cuuint64_t));
    return 1;
}

/* The descriptor back (or nothing after an error); the connection's reply either way. */
static enum vmc_w_result reply_map(struct vmc_wcall *wc, CUresult st, const CUtensorMap *map) {
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_w_reply_pointee(wc, map, sizeof *map);
    return VMC_W_DONE;
}

static enum vmc_w_result encode_tiled(struct vmc_wcall *wc) {
    struct tensor_shape t;
    cuuint32_t box[MAX_RANK], element_strides[MAX_RANK];
    if (!read_shape(&wc->in, &t, 1))
        return VMC_W_BAD_ARGS;
    vmc_in_bytes(&wc->in, box, t.rank * sizeof(cuuint32_t));
    vmc_in_bytes(&wc->in, element_strides, t.rank * sizeof(cuuint32_t));
    uint32_t interleave = vmc_in_u32(&wc->in), swizzle = vmc_in_u32(&wc->in);
    uint32_t l2 = vmc_in_u32(&wc->in), oob = vmc_in_u32(&wc->in);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
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
    struct tensor_shape t;
    int lower[MAX_RANK] = {0}, upper[MAX_RANK] = {0};
    cuuint32_t element_strides[MAX_RANK];
    if (!read_shape(&wc->in, &t, 3))
        return VMC_W_BAD_ARGS;
    size_t corners = wide ? 1 : t.rank - 2;
    vmc_in_bytes(&wc->in, lower, corners * sizeof(int));
    vmc_in_bytes(&wc->in, upper, corners * sizeof(int));
    uint32_t channels = vmc_in_u32(&wc->in), pixels = vmc_in_u32(&wc->in);
    vmc_in_bytes(&wc->in, element_strides, t.rank * sizeof(cuuint32_t));
    uint32_t interleave = vmc_in_u32(&wc->in), mode = vmc_in_u32(&wc->in), swizzle = vmc_in_u32(&wc->in);
    uint32_t l2 = vmc_in_u32(&wc->in), oob = vmc_in_u32(&wc->in);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
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
    CUtensorMap map;
    vmc_in_bytes(&wc->in, &map, sizeof map);
    uint64_t address = vmc_in_u64(&wc->in);
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

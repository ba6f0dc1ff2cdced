/* 2-D, 3-D and array copies whose other side is the client's host memory (vmc_MemcpyBoxHost,
 * PROTOCOL.md "Box copies"). The client packs its rows densely (width bytes each, height rows per slice,
 * depth slices) and streams them after the CALL (to the device) or receives them after the REPLY (from
 * the device). The worker moves them through one pageable buffer of at most its block size, a chunk at a
 * time: whole slices, whole rows of one slice, or one piece of one row (when a row is wider than the
 * block). Each chunk is one real 2-D/3-D/array copy on the client's stream, so every check (bad handle,
 * pitch, offset, extent) is the runtime's own (the driver's, for the driver front end's copies). No
 * client-given length sizes an allocation here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_box_plan.h"
#include "vmc_internal.h"
#include "worker.h"
#include "worker_driver.h"
#include <cudaTypedefs.h>

/* DEV_PITCHED: device pointer + pitch (+ rows per slice); DEV_ARRAY_2D: x in bytes, z = 0, one slice;
 * DEV_LINEAR: a byte run from (x, y), wrapping rows; DEV_ARRAY_3D: x in bytes (converted to elements here) */

struct box {
    unsigned to_device, mode, dev_kind;
    cudaStream_t stream;
    uint64_t handle, pitch, slice_rows, x, y, z, w, h, d;
    size_t elem;      /* element bytes of the array (DEV_ARRAY_3D, DEV_LINEAR) */
    uint64_t row_bytes; /* bytes per array row (DEV_LINEAR) */
};

int vmc_w_stream_capturing(uint64_t stream, int per_thread) {
    if (stream == 0 && !per_thread)
        return 0; /* the legacy stream is never captured; asking could disturb another stream's capture */
    cudaStream_t s = stream == 0 ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)stream;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess)
        return 0; /* an invalid stream: the copy itself reports it */
    return cs != cudaStreamCaptureStatusNone;
}

int vmc_w_capture_relax(void) {
    DRV(PFN_cuThreadExchangeStreamCaptureMode_v10010, exchange_mode, "cuThreadExchangeStreamCaptureMode", 10010, 0);
    CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    return exchange_mode && exchange_mode(&capture_mode) == CUDA_SUCCESS ? (int)capture_mode : -1;
}

void vmc_w_capture_restore(int saved) {
    if (saved < 0)
        return; /* nothing was relaxed: every call but a bulk copy comes here (worker_serve.c) */
    DRV(PFN_cuThreadExchangeStreamCaptureMode_v10010, exchange_mode, "cuThreadExchangeStreamCaptureMode", 10010, 0);
    CUstreamCaptureMode capture_mode = (CUstreamCaptureMode)saved;
    if (exchange_mode)
        exchange_mode(&capture_mode);
}

void vmc_w_capture_refusal_note(void) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
        fputs("vmcuda: a copy between client host memory and the device cannot be captured into a CUDA graph "
              "(the graph lives on the appliance, the memory in this process); it returns "
              "cudaErrorStreamCaptureUnsupported\n", stderr);
        fflush(stderr);
    }
}

static cudaError_t array_geometry(struct box *b) {
    struct cudaChannelFormatDesc desc;
    struct cudaExtent extent;
    unsigned flags = 0;
    memset(&desc, 0, sizeof desc);
    memset(&extent, 0, sizeof extent);
    cudaError_t st = cudaArrayGetInfo(&desc, &extent, &flags, (cudaArray_t)(uintptr_t)b->handle);
    if (st != cudaSuccess)
        return st;
    int bits = desc.x + desc.y + desc.z + desc.w;
    b->elem = bits >= 8 ? (size_t)bits / 8 : 1;
    b->row_bytes = (uint64_t)extent.width * b->elem;
    return cudaSuccess;
}

static struct cudaPitchedPtr pitched(void *ptr, size_t pitch, size_t xsize, size_t ysize) {
    struct cudaPitchedPtr p = {ptr, pitch, xsize, ysize};
    return p;
}

/* The driver front end's chunk: one cuMemcpy3DAsync (x in bytes for arrays too, as the driver counts). */
static cudaError_t copy_chunk_driver(const struct box *b, void *buf, const struct vmc_box_chunk *k) {
    uint64_t z0 = k->z0, nz = k->nz, y0 = k->y0, ny = k->ny, b0 = k->b0, nb = k->nb;
    CUDA_MEMCPY3D p;
    memset(&p, 0, sizeof p);
    CUmemorytype dev_type = b->dev_kind == DEV_PITCHED ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_ARRAY;
    size_t x = (size_t)(b->x + b0), y = (size_t)(b->y + y0), z = (size_t)(b->z + z0);
    if (b->to_device) {
        p.srcMemoryType = CU_MEMORYTYPE_HOST, p.srcHost = buf, p.srcPitch = (size_t)nb, p.srcHeight = (size_t)ny;
        p.dstMemoryType = dev_type, p.dstXInBytes = x, p.dstY = y, p.dstZ = z;
        if (dev_type == CU_MEMORYTYPE_ARRAY)
            p.dstArray = (CUarray)(uintptr_t)b->handle;
        else
            p.dstDevice = b->handle, p.dstPitch = (size_t)b->pitch, p.dstHeight = (size_t)b->slice_rows;
    } else {
        p.dstMemoryType = CU_MEMORYTYPE_HOST, p.dstHost = buf, p.dstPitch = (size_t)nb, p.dstHeight = (size_t)ny;
        p.srcMemoryType = dev_type, p.srcXInBytes = x, p.srcY = y, p.srcZ = z;
        if (dev_type == CU_MEMORYTYPE_ARRAY)
            p.srcArray = (CUarray)(uintptr_t)b->handle;
        else
            p.srcDevice = b->handle, p.srcPitch = (size_t)b->pitch, p.srcHeight = (size_t)b->slice_rows;
    }
    p.WidthInBytes = (size_t)nb;
    p.Height = (size_t)ny;
    p.Depth = (size_t)nz;
    static PFN_cuMemcpy3DAsync_v3020 copy3d;
    if (!copy3d)
        copy3d = (PFN_cuMemcpy3DAsync_v3020)vmc_w_drv_resolve("cuMemcpy3DAsync", 3020, 0);
    return (cudaError_t)(copy3d ? copy3d(&p, (CUstream)b->stream) : vmc_w_drv_missing("cuMemcpy3DAsync"));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* One chunk (slices [z0, z0+nz), rows [y0, y0+ny), bytes [b0, b0+nb) of each row), packed in buf. */
static cudaError_t copy_chunk(const struct box *b, void *buf, const struct vmc_box_chunk *k) {
    if (b->mode & BOX_DRIVER)
        return copy_chunk_driver(b, buf, k);
    uint64_t z0 = k->z0, nz = k->nz, y0 = k->y0, ny = k->ny, b0 = k->b0, nb = k->nb;
    enum cudaMemcpyKind kind = b->to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    switch (b->dev_kind) {
    case DEV_PITCHED:
        if (nz == 1) {
            char *dev = (char *)(uintptr_t)b->handle + ((b->z + z0) * b->slice_rows + b->y + y0) * b->pitch + b->x + b0;
            return b->to_device ? cudaMemcpy2DAsync(dev, b->pitch, buf, nb, nb, ny, kind, b->stream)
                                : cudaMemcpy2DAsync(buf, nb, dev, b->pitch, nb, ny, kind, b->stream);
        }
        /* several slices at once: the 3-D copy below */
        __attribute__((fallthrough));
    case DEV_ARRAY_3D: {
        struct cudaMemcpy3DParms p;
        memset(&p, 0, sizeof p);
        struct cudaPitchedPtr host = pitched(buf, nb, nb, ny);
        size_t unit = b->dev_kind == DEV_ARRAY_3D ? b->elem : 1;
        struct cudaPos pos = {(size_t)((b->x + b0) / unit), (size_t)(b->y + y0), (size_t)(b->z + z0)};
        if (b->dev_kind == DEV_ARRAY_3D) {
            if (b->to_device)
                p.dstArray = (cudaArray_t)(uintptr_t)b->handle;
            else
                p.srcArray = (cudaArray_t)(uintptr_t)b->handle;
        } else {
            struct cudaPitchedPtr dev = pitched((void *)(uintptr_t)b->handle, b->pitch, b->pitch, b->slice_rows);
            if (b->to_device)
                p.dstPtr = dev;
            else
                p.srcPtr = dev;
        }
        if (b->to_device) {
            p.srcPtr = host;
            p.dstPos = pos;
        } else {
            p.dstPtr = host;
            p.srcPos = pos;
        }
        p.extent.width = nb / unit;
        p.extent.height = ny;
        p.extent.depth = nz;
        p.kind = kind;
        return cudaMemcpy3DAsync(&p, b->stream);
    }
    case DEV_ARRAY_2D: {
        cudaArray_t a = (cudaArray_t)(uintptr_t)b->handle;
        return b->to_device ? cudaMemcpy2DToArrayAsync(a, b->x + b0, b->y + y0, buf, nb, nb, ny, kind, b->stream)
                            : cudaMemcpy2DFromArrayAsync(buf, nb, a, b->x + b0, b->y + y0, nb, ny, kind, b->stream);
    }
    default: { /* DEV_LINEAR: one run of nb bytes starting b0 bytes after (x, y) */
        cudaArray_t a = (cudaArray_t)(uintptr_t)b->handle;
        uint64_t row = b->row_bytes ? b->row_bytes : 1;
        uint64_t at = b->y * row + b->x + b0;
        return b->to_device ? cudaMemcpyToArrayAsync(a, at % row, at / row, buf, nb, kind, b->stream)
                            : cudaMemcpyFromArrayAsync(buf, a, at % row, at / row, nb, kind, b->stream);
    }
    }
}
#pragma GCC diagnostic pop

static int discard(struct vmc_wconn *c, void *buf, uint64_t cap, uint64_t n) {
    while (n) {
        size_t take = n < cap ? (size_t)n : (size_t)cap;
        if (vmc_w_read_bytes(c, buf, take) != 0)
            return -1;
        n -= take;
    }
    return 0;
}

static struct vmc_box_extent extent(const struct box *b) {
    struct vmc_box_extent e = {b->dev_kind, b->w, b->h, b->d};
    return e;
}

/* Reads a box copy's arguments (both operations have the same); *total: its dense byte count. VMC_W_DONE, or
 * the result for arguments without a trustworthy byte count (the stream cannot be resynchronised). */
static enum vmc_w_result read_box(struct vmc_wcall *wc, struct box *b, uint64_t *stream_arg, uint64_t *total) {
    struct vmc_box_args a;
    vmc_get_box_args(&wc->in, &a);
    memset(b, 0, sizeof *b);
    b->to_device = a.to_device;
    b->mode = a.mode;
    *stream_arg = a.stream;
    b->dev_kind = a.dev_kind;
    b->handle = a.handle;
    b->pitch = a.pitch;
    b->slice_rows = a.slice_rows;
    b->x = a.x;
    b->y = a.y;
    b->z = a.z;
    b->w = a.w;
    b->h = a.h;
    b->d = a.d;
    *total = 0;
    int sizes_ok = !__builtin_mul_overflow(b->w, b->h, total) && !__builtin_mul_overflow(*total, b->d, total);
    if (!vmc_w_args_ok(wc) || !sizes_ok || b->to_device > 1 || b->mode > 7 || b->dev_kind > DEV_ARRAY_3D ||
        ((b->mode & BOX_DRIVER) && b->dev_kind == DEV_LINEAR) ||
        (b->dev_kind == DEV_LINEAR && (b->h > 1 || b->d > 1)) || (b->dev_kind == DEV_ARRAY_2D && (b->z || b->d > 1)))
        return b->to_device ? VMC_W_FATAL : VMC_W_BAD_ARGS;
    if (!b->to_device && wc->async)
        return VMC_W_BAD_ARGS;
    b->stream = *stream_arg == 0 && (b->mode & BOX_PER_THREAD) ? cudaStreamPerThread : (cudaStream_t)(uintptr_t)*stream_arg;
    if (*total == 0)
        b->w = b->h = b->d = 0;
    return VMC_W_DONE;
}

/* What fails the whole copy before any chunk: a stream being captured, an array the runtime does not know. */
static cudaError_t check_box(struct box *b, uint64_t stream_arg, uint64_t total) {
    if (vmc_w_stream_capturing(stream_arg, (b->mode & BOX_PER_THREAD) != 0)) {
        vmc_w_capture_refusal_note();
        return cudaErrorStreamCaptureUnsupported;
    }
    if (total && !(b->mode & BOX_DRIVER) && (b->dev_kind == DEV_ARRAY_3D || b->dev_kind == DEV_LINEAR))
        return array_geometry(b);
    return cudaSuccess;
}

enum vmc_w_result vmc_w_memcpy_box_host(struct vmc_wcall *wc) {
    struct vmc_wconn *c = wc->conn;
    struct box b;
    uint64_t stream_arg, total;
    enum vmc_w_result bad = read_box(wc, &b, &stream_arg, &total);
    if (bad != VMC_W_DONE)
        return bad;
    uint64_t cap = c->block_size & ~(uint64_t)15;
    if (cap < 16)
        cap = 16;
    void *buf = malloc(total < cap ? (total ? (size_t)total : 1) : (size_t)cap);
    if (!buf)
        return VMC_W_FATAL;
    cudaError_t st = check_box(&b, stream_arg, total);
    struct vmc_box_extent e = extent(&b);
    struct vmc_box_plan plan = vmc_box_plan(&e, cap);
    struct vmc_box_cursor cur = {0, 0, 0};
    struct vmc_box_chunk k;
    uint64_t n;
    enum vmc_w_result result = VMC_W_DONE;
    if (b.to_device) {
        uint64_t received = 0;
        while (st == cudaSuccess && (n = vmc_box_next_chunk(&e, &plan, &cur, &k)) != 0) {
            if (vmc_w_read_bytes(c, buf, (size_t)n) != 0) {
                free(buf);
                return VMC_W_FATAL;
            }
            received += n;
            st = copy_chunk(&b, buf, &k);
        }
        if (discard(c, buf, cap, total - received) != 0) {
            free(buf);
            return VMC_W_FATAL;
        }
        vmc_w_count_h2d(total);
        if (wc->async)
            vmc_w_async_done(wc, st);
        else
            vmc_w_reply_status(wc, st);
        free(buf);
        return VMC_W_DONE;
    }
    /* From the device: the first chunk decides the call's status, as natively (no data on an error). */
    n = st == cudaSuccess ? vmc_box_next_chunk(&e, &plan, &cur, &k) : 0;
    if (n)
        st = copy_chunk(&b, buf, &k);
    vmc_w_reply_status(wc, st);
    if (vmc_w_send_reply(c, wc->id) != 0) {
        free(buf);
        return VMC_W_FATAL;
    }
    if (st != cudaSuccess) {
        wc->replied = 0; /* that REPLY was the whole answer */
        free(buf);
        return VMC_W_DONE;
    }
    cudaError_t late = cudaSuccess;
    while (n) {
        if (vmc_w_write(c, buf, (size_t)n) != 0) {
            result = VMC_W_FATAL;
            break;
        }
        n = vmc_box_next_chunk(&e, &plan, &cur, &k);
        if (n && late == cudaSuccess)
            late = copy_chunk(&b, buf, &k);
        if (n && late != cudaSuccess)
            memset(buf, 0, (size_t)n);
    }
    free(buf);
    if (result == VMC_W_FATAL)
        return result;
    vmc_w_count_d2h(total);
    vmc_w_reply_status(wc, late); /* the trailing REPLY */
    return VMC_W_DONE;
}

/* The box's chunks in order, one per ring block. */
struct box_blocks {
    const struct box *b;
    cudaError_t refused; /* the copy fails as a whole (check_box): no chunk moves */
    struct vmc_box_extent e;
    struct vmc_box_plan plan;
    struct vmc_box_cursor cur;
};

/* Block k (the next chunk) between its ring slot and the device, finished before the slot is handed back. */
static cudaError_t move_chunk(void *ctx, uint32_t k, uint8_t *slot) {
    struct box_blocks *bb = ctx;
    struct vmc_box_chunk chunk;
    (void)k;
    if (bb->refused != cudaSuccess)
        return bb->refused;
    vmc_box_next_chunk(&bb->e, &bb->plan, &bb->cur, &chunk);
    cudaError_t st = copy_chunk(bb->b, slot, &chunk);
    return st == cudaSuccess ? vmc_w_copy_sync(bb->b->stream, bb->b->mode) : st;
}

/* vmc_MemcpyBoxRing (PROTOCOL.md "Box copies"): the same box, its chunks through the connection's ring, one
 * chunk per block (the client computes the same plan with the ring's slot size). Synchronous only. */
enum vmc_w_result vmc_w_memcpy_box_ring(struct vmc_wcall *wc) {
    struct box b;
    uint64_t stream_arg, total;
    size_t slot_size = vmc_w_ring_slot_size(wc->conn);
    /* the client sends this only after a ring was attached; anything else breaks the stream */
    if (read_box(wc, &b, &stream_arg, &total) != VMC_W_DONE || wc->async || !slot_size)
        return VMC_W_FATAL;
    struct box_blocks bb = {&b, check_box(&b, stream_arg, total), extent(&b), {0, 0, 0}, {0, 0, 0}};
    bb.plan = vmc_box_plan(&bb.e, slot_size);
    uint32_t blocks = 0;
    struct vmc_box_cursor count = {0, 0, 0};
    struct vmc_box_chunk chunk;
    while (vmc_box_next_chunk(&bb.e, &bb.plan, &count, &chunk) != 0)
        if (++blocks == UINT32_MAX)
            return VMC_W_FATAL;
    /* a refused copy still takes and hands back the client's blocks (to the device), or answers at once */
    enum vmc_w_result r = b.to_device ? vmc_w_ring_receive(wc, blocks, move_chunk, NULL, &bb)
                                      : vmc_w_ring_send(wc, blocks, move_chunk, &bb);
    if (r == VMC_W_DONE && (b.to_device || wc->replied)) {
        if (b.to_device)
            vmc_w_count_h2d(total);
        else
            vmc_w_count_d2h(total);
    }
    return r;
}

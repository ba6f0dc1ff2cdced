/* Copies of a box (rows of a 2-D region, or slices of a 3-D one) between this process's memory and the
 * device (PROTOCOL.md "Box copies"): rows with a pitch are packed densely here before the upload and
 * scattered here after the download, or, through a ring, packed into and scattered from its slots chunk by
 * chunk. Host pointers never travel. */
#include "box.h"

#include <stdlib.h>
#include <string.h>

#include "shim_call.h"
#include "shim_copy.h"
#include "transport.h"
#include "vmc_api.h"
#include "vmc_internal.h"

/* Host rows: row r of slice k starts at host + (k * rows + r) * pitch; each row has w bytes. */
static void pack(unsigned char *dense, const unsigned char *host, size_t pitch, size_t rows, const struct vmc_box *b) {
    for (uint64_t k = 0; k < b->d; k++)
        for (uint64_t r = 0; r < b->h; r++)
            memcpy(dense + (k * b->h + r) * b->w, host + (k * rows + r) * pitch, b->w);
}

static void unpack(unsigned char *host, const unsigned char *dense, size_t pitch, size_t rows, const struct vmc_box *b) {
    for (uint64_t k = 0; k < b->d; k++)
        for (uint64_t r = 0; r < b->h; r++)
            memcpy(host + (k * rows + r) * pitch, dense + (k * b->h + r) * b->w, b->w);
}

static void plain_row(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

/* Chunk k's rows of the host side into its dense form (rows of k->nb bytes), each moved by copy_row. */
static void gather_with(void (*copy_row)(void *, const void *, size_t), unsigned char *dense, const unsigned char *host,
                        size_t pitch, size_t rows, const struct vmc_box_chunk *k) {
    for (uint64_t z = 0; z < k->nz; z++)
        for (uint64_t y = 0; y < k->ny; y++)
            copy_row(dense + (z * k->ny + y) * k->nb, host + ((k->z0 + z) * rows + k->y0 + y) * pitch + k->b0, k->nb);
}

static void scatter(unsigned char *host, const unsigned char *dense, size_t pitch, size_t rows, const struct vmc_box_chunk *k) {
    for (uint64_t z = 0; z < k->nz; z++)
        for (uint64_t y = 0; y < k->ny; y++)
            memcpy(host + ((k->z0 + z) * rows + k->y0 + y) * pitch + k->b0, dense + (z * k->ny + y) * k->nb, k->nb);
}

static void box_args(struct vmc_call *c, int to_device, const struct vmc_box *b, uint64_t stream, unsigned mode) {
    struct vmc_box_args a = {.to_device = (uint8_t)(to_device != 0), .mode = (uint8_t)mode, .stream = stream,
                             .dev_kind = (uint8_t)b->dev_kind, .handle = b->handle, .pitch = b->pitch,
                             .slice_rows = b->slice_rows, .x = b->x, .y = b->y, .z = b->z, .w = b->w, .h = b->h, .d = b->d};
    vmc_put_box_args(vmc_call_args(c), &a);
}

/* The box's chunks in order, one per ring block: the host rows, and a scratch chunk for a transport whose slots
 * are not mapped here. */
struct box_blocks {
    unsigned char *host, *scratch;
    size_t pitch, rows;
    struct vmc_box_extent e;
    struct vmc_box_plan plan;
    struct vmc_box_cursor cur;
    int streaming; /* rows go into mapped slots with streaming stores (a box of at most VMC_COPY_FOR_DMA_STREAMING_MAX) */
};

static int fill_chunk(void *ctx, struct vmc_ring *ring, uint32_t k, uint32_t slot) {
    struct box_blocks *bb = ctx;
    struct vmc_box_chunk chunk;
    uint64_t n = vmc_box_next_chunk(&bb->e, &bb->plan, &bb->cur, &chunk);
    (void)k;
    if (!bb->scratch) {
        /* Into a slot mapped here, which the GPU's DMA reads next: with streaming stores (shim_copy.h says why) when
         * the rows are whole cache lines, so that each starts on a line of the slot. Rows that are not split lines
         * between streaming and plain stores, which was 4.4 times slower than memcpy (H200 run 181: 1000 rows of
         * 1000 bytes 608 us, 138 with memcpy; rows of 4096 bytes 413 against 506 us, of 64 bytes 48 against 50). */
        int streaming = bb->streaming && chunk.nb % 64 == 0;
        gather_with(streaming ? vmc_copy_for_dma_unfenced : plain_row, ring->ops->slot_memory(ring, slot), bb->host,
                    bb->pitch, bb->rows, &chunk);
        if (streaming)
            vmc_copy_for_dma_fence(); /* one fence for all the rows, before the token says the slot is full */
        return 0;
    }
    gather_with(plain_row, bb->scratch, bb->host, bb->pitch, bb->rows, &chunk);
    return ring->ops->fill(ring, slot, bb->scratch, (size_t)n, (size_t)n); /* UCX: a put either way */
}

static int drain_chunk(void *ctx, struct vmc_ring *ring, uint32_t k, uint32_t slot) {
    struct box_blocks *bb = ctx;
    struct vmc_box_chunk chunk;
    uint64_t n = vmc_box_next_chunk(&bb->e, &bb->plan, &bb->cur, &chunk);
    (void)k;
    if (!bb->scratch) {
        scatter(bb->host, ring->ops->slot_memory(ring, slot), bb->pitch, bb->rows, &chunk);
        return 0;
    }
    if (ring->ops->drain(ring, slot, bb->scratch, (size_t)n) != 0)
        return -1;
    scatter(bb->host, bb->scratch, bb->pitch, bb->rows, &chunk);
    return 0;
}

/* The box through the calling thread's connection's ring (vmc_MemcpyBoxRing): chunk i of the worker's plan
 * (vmc_box_plan.h, the ring's slot size) is block i of the ring protocol (ring_copy.c). Rows are packed straight
 * into a slot mapped here, else into one scratch chunk that the transport then moves. */
static cudaError_t through_ring(struct vmc_ring *ring, int to_device, const struct vmc_box *b, unsigned char *host,
                                size_t pitch, size_t rows, uint64_t stream, unsigned mode) {
    struct box_blocks bb = {host, NULL, pitch, rows, {b->dev_kind, b->w, b->h, b->d}, {0, 0, 0}, {0, 0, 0},
                            b->w * b->h * b->d <= VMC_COPY_FOR_DMA_STREAMING_MAX};
    bb.plan = vmc_box_plan(&bb.e, ring->slot_size);
    uint32_t blocks = 0;
    struct vmc_box_cursor count = {0, 0, 0};
    struct vmc_box_chunk chunk;
    while (vmc_box_next_chunk(&bb.e, &bb.plan, &count, &chunk) != 0)
        blocks++;
    if (!ring->ops->slot_memory && !(bb.scratch = malloc(ring->slot_size)))
        return cudaErrorMemoryAllocation;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin_ex(&c, VMC_API_vmc_MemcpyBoxRing, 0, !(mode & BOX_DRIVER));
    if (st == cudaSuccess) {
        box_args(&c, to_device, b, stream, mode);
        st = vmc_call_send(&c);
    }
    if (st == cudaSuccess)
        st = to_device ? vmc_ring_upload(&c, blocks, fill_chunk, &bb) : vmc_ring_download(&c, blocks, drain_chunk, &bb);
    free(bb.scratch);
    return st;
}

/* One box between this process's memory and the device. */
cudaError_t vmc_box_copy(int to_device, const struct vmc_box *b, void *host, size_t pitch, size_t rows, uint64_t stream,
                         unsigned mode) {
    uint64_t total;
    if (__builtin_mul_overflow(b->w, b->h, &total) || __builtin_mul_overflow(total, b->d, &total) || total > SIZE_MAX)
        return cudaErrorInvalidValue;
    if (total && !host)
        return cudaErrorInvalidValue;
    if (total && ((b->h > 1 || b->d > 1) && pitch < b->w))
        return cudaErrorInvalidPitchValue;
    if (total && b->d > 1 && rows < b->h)
        return cudaErrorInvalidValue;
    /* an asynchronous upload must return once its bytes have left the buffer: the byte stream gives that */
    struct vmc_ring *ring = total && !(to_device && (mode & BOX_ASYNC)) ? vmc_ring_for((size_t)total, to_device) : NULL;
    if (ring)
        return through_ring(ring, to_device, b, host, pitch, rows, stream, mode);
    int dense = total == 0 || ((b->h <= 1 && b->d <= 1) || (pitch == b->w && (b->d <= 1 || rows == b->h)));
    unsigned char *buf = host;
    if (!dense) {
        buf = malloc((size_t)total);
        if (!buf)
            return cudaErrorMemoryAllocation;
        if (to_device)
            pack(buf, host, pitch, rows, b);
    }
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_MemcpyBoxHost, to_device && (mode & BOX_ASYNC));
    if (st == cudaSuccess) {
        box_args(&c, to_device, b, stream, mode);
        if (to_device) {
            st = vmc_call_finish_upload(&c, buf, (size_t)total);
        } else {
            st = vmc_call_finish_download(&c, buf, (size_t)total);
            if (st == cudaSuccess && !dense)
                unpack(host, buf, pitch, rows, b);
        }
    }
    if (!dense)
        free(buf);
    return st;
}

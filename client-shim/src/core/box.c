/* Copies of a box (rows of a 2-D region, or slices of a 3-D one) between this process's memory and the
 * device (PROTOCOL.md "Box copies"): rows with a pitch are packed densely here before the upload and
 * scattered here after the download, or, through a ring, packed into and scattered from its slots chunk by
 * chunk. Host pointers never travel. */
#include "box.h"

#include <stdlib.h>
#include <string.h>

#include "shim_call.h"
#include "shim_session.h"
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

/* Chunk k's rows of the host side, to or from its dense form (rows of k->nb bytes). */
static void gather(unsigned char *dense, const unsigned char *host, size_t pitch, size_t rows, const struct vmc_box_chunk *k) {
    for (uint64_t z = 0; z < k->nz; z++)
        for (uint64_t y = 0; y < k->ny; y++)
            memcpy(dense + (z * k->ny + y) * k->nb, host + ((k->z0 + z) * rows + k->y0 + y) * pitch + k->b0, k->nb);
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

/* The box through the calling thread's connection's ring (vmc_MemcpyBoxRing): chunk i of the worker's plan
 * (vmc_box_plan.h, the ring's slot size) is block i of the ring protocol (ring_copy.c). Rows are packed straight
 * into a slot mapped here, else into one scratch chunk that the transport then moves. */
static cudaError_t through_ring(struct vmc_ring *ring, int to_device, const struct vmc_box *b, unsigned char *host,
                                size_t pitch, size_t rows, uint64_t stream, unsigned mode) {
    unsigned char *scratch = ring->ops->slot_memory ? NULL : malloc(ring->slot_size);
    if (!ring->ops->slot_memory && !scratch)
        return cudaErrorMemoryAllocation;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin_ex(&c, VMC_API_vmc_MemcpyBoxRing, 0, !(mode & BOX_DRIVER));
    if (st == cudaSuccess) {
        box_args(&c, to_device, b, stream, mode);
        st = vmc_call_send(&c);
    }
    if (st != cudaSuccess) {
        free(scratch);
        return st;
    }
    struct vmc_conn *conn = c.conn;
    struct vmc_box_extent e = {b->dev_kind, b->w, b->h, b->d};
    struct vmc_box_plan plan = vmc_box_plan(&e, ring->slot_size);
    struct vmc_box_cursor cur = {0, 0, 0};
    struct vmc_box_chunk k;
    uint64_t n;
    uint32_t i = 0, freed = 0;
    const char *lost = NULL;
    if (to_device) {
        for (; !lost && (n = vmc_box_next_chunk(&e, &plan, &cur, &k)) != 0; i++) {
            uint32_t slot = i % ring->slots;
            if (i >= ring->slots && vmc_ring_take(conn, freed++) != 0) {
                lost = "ring out of step";
            } else if (scratch) {
                gather(scratch, host, pitch, rows, &k);
                if (ring->ops->fill(ring, slot, scratch, (size_t)n) != 0) {
                    free(scratch);
                    return vmc_ring_failed(conn);
                }
            } else {
                gather(ring->ops->slot_memory(ring, slot), host, pitch, rows, &k);
            }
            if (!lost && vmc_ring_give(conn, i) != 0)
                lost = "cannot send to the worker";
        }
        while (!lost && freed < i)
            if (vmc_ring_take(conn, freed++) != 0)
                lost = "ring out of step";
    } else {
        st = vmc_call_await(&c); /* the first chunk's status: the copy's own */
        if (c.replied && st == cudaSuccess) {
            for (; !lost && (n = vmc_box_next_chunk(&e, &plan, &cur, &k)) != 0; i++) {
                uint32_t slot = i % ring->slots;
                if (vmc_ring_take(conn, i) != 0) {
                    lost = "ring out of step";
                } else if (scratch) {
                    if (ring->ops->drain(ring, slot, scratch, (size_t)n) != 0) {
                        free(scratch);
                        return vmc_ring_failed(conn);
                    }
                    scatter(host, scratch, pitch, rows, &k);
                } else {
                    scatter(host, ring->ops->slot_memory(ring, slot), pitch, rows, &k);
                }
                if (!lost && vmc_ring_give(conn, i) != 0)
                    lost = "cannot send to the worker";
            }
        } else {
            free(scratch);
            return st;
        }
    }
    free(scratch);
    return lost ? vmc_session_lost(conn, lost) : vmc_call_await(&c);
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
    struct vmc_ring *ring = total && !(to_device && (mode & BOX_ASYNC)) ? vmc_ring_for((size_t)total) : NULL;
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

/* Copies of a box (rows of a 2-D region, or slices of a 3-D one) between this process's memory and the
 * device (PROTOCOL.md "Box copies"): rows with a pitch are packed densely here before the upload and
 * scattered here after the download. Host pointers never travel. */
#include "box.h"

#include <stdlib.h>
#include <string.h>

#include "shim_call.h"
#include "vmc_api.h"

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
        vmc_arg_u8(&c, (uint8_t)(to_device != 0));
        vmc_arg_u8(&c, (uint8_t)mode);
        vmc_arg_u64(&c, stream);
        vmc_arg_u8(&c, (uint8_t)b->dev_kind);
        vmc_arg_u64(&c, b->handle);
        vmc_arg_u64(&c, b->pitch);
        vmc_arg_u64(&c, b->slice_rows);
        vmc_arg_u64(&c, b->x);
        vmc_arg_u64(&c, b->y);
        vmc_arg_u64(&c, b->z);
        vmc_arg_u64(&c, b->w);
        vmc_arg_u64(&c, b->h);
        vmc_arg_u64(&c, b->d);
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

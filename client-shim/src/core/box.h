/* 2-D, 3-D and array copies with one side in this process's memory, for both front ends (box.c). */
#ifndef VMC_BOX_H
#define VMC_BOX_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "vmc_box_plan.h" /* BOX_* mode bits, the device side's kinds */

struct vmc_box {
    enum vmc_box_dev_kind dev_kind;
    uint64_t handle, pitch, slice_rows, x, y, z, w, h, d;
};

/* One box between `host` (rows of `pitch` bytes, `rows` rows per slice) and the device side: through the
 * connection's ring (transport.h) when it has one for a synchronous copy of this size, chunk by chunk as the
 * worker plans them, else packed densely over the byte stream. */
cudaError_t vmc_box_copy(int to_device, const struct vmc_box *b, void *host, size_t pitch, size_t rows, uint64_t stream,
                         unsigned mode);

#endif

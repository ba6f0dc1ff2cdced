/* 2-D, 3-D and array copies with one side in this process's memory, for both front ends (box.c). */
#ifndef VMC_BOX_H
#define VMC_BOX_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#define BOX_ASYNC 1u
#define BOX_PER_THREAD 2u
#define BOX_DRIVER 4u /* the driver front end's copy: done with the driver, answered with a CUresult */

/* How the device side is addressed: a pitched device pointer, a CUDA array through the 2-D API, an
 * array as a byte run that wraps rows (cudaMemcpyToArray/FromArray), an array through the 3-D API. */
enum vmc_box_dev_kind { DEV_PITCHED = 0, DEV_ARRAY_2D = 1, DEV_LINEAR = 2, DEV_ARRAY_3D = 3 };

struct vmc_box {
    enum vmc_box_dev_kind dev_kind;
    uint64_t handle, pitch, slice_rows, x, y, z, w, h, d;
};

/* One box between `host` (rows of `pitch` bytes, `rows` rows per slice) and the device side. */
cudaError_t vmc_box_copy(int to_device, const struct vmc_box *b, void *host, size_t pitch, size_t rows, uint64_t stream,
                         unsigned mode);

#endif

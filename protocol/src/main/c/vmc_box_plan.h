/* Box copies (PROTOCOL.md "Box copies"): the constants both sides share, and the chunk plan both sides
 * compute alike when a box travels through a ring (one chunk per ring block: vmc_MemcpyBoxRing). */
#ifndef VMC_BOX_PLAN_H
#define VMC_BOX_PLAN_H

#include <stdint.h>

#include "vmc_wire.h"

/* `mode` bits of a box copy: those of the 1-D copies */
#define BOX_ASYNC COPY_ASYNC
#define BOX_PER_THREAD COPY_PER_THREAD
#define BOX_DRIVER COPY_DRIVER /* the driver front end's copy: done with the driver, answered with a CUresult */

/* How the device side is addressed: a pitched device pointer, a CUDA array through the 2-D API, an array as
 * a byte run that wraps rows (cudaMemcpyToArray/FromArray), an array through the 3-D API. */
enum vmc_box_dev_kind { DEV_PITCHED = 0, DEV_ARRAY_2D = 1, DEV_LINEAR = 2, DEV_ARRAY_3D = 3 };

/* The box's shape: w bytes per row, h rows per slice, d slices. */
struct vmc_box_extent {
    unsigned dev_kind;
    uint64_t w, h, d;
};

/* Every chunk is at most `cap` bytes: whole slices, whole rows of one slice, or one piece of one row (when a
 * row is wider than cap; a byte run is always cut in pieces). */
struct vmc_box_plan {
    uint64_t slices_per, rows_per, piece;
};

struct vmc_box_cursor {
    uint64_t z, y, b;
};

/* One chunk: slices [z0, z0+nz), rows [y0, y0+ny) of each, bytes [b0, b0+nb) of each row. */
struct vmc_box_chunk {
    uint64_t z0, nz, y0, ny, b0, nb;
};

struct vmc_box_plan vmc_box_plan(const struct vmc_box_extent *e, uint64_t cap);
/* The next chunk from the cursor (which starts zeroed); returns its byte count, 0 when the box is done. */
uint64_t vmc_box_next_chunk(const struct vmc_box_extent *e, const struct vmc_box_plan *p, struct vmc_box_cursor *c,
                            struct vmc_box_chunk *out);

#endif

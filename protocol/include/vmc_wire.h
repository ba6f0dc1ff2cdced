/* C view of protocol/PROTOCOL.md: the frame header; the constants come from wire.spec (vmc_wire_constants.h). */
#ifndef VMC_WIRE_H
#define VMC_WIRE_H

#include <stdint.h>

/* Every constant of the protocol (frame types and their payload limits, flags, roles, statuses, ERROR codes, copy
 * mode bits, array markers, sizes) is generated from protocol/wire.spec, as io.vmcuda.protocol.Wire is for Java. */
#include "vmc_wire_constants.h"

/* The frame header is written and read field by field in little-endian order (see vmc_io.c);
 * this struct is only the decoded form. */
struct vmc_frame_header {
    uint32_t magic;
    uint16_t type;
    uint16_t flags;
    uint32_t id;
    uint32_t len;
};

#endif


/* Shared-memory regions (PROTOCOL.md "Shared regions"): one mappable area that several client
 * connections share with the appliance's workers, cut into lanes, each lane one connection's ring.
 * In production the area is the BAR of an ivshmem PCI device that a KVM host shares between a client VM
 * and the appliance VM; on one host (and in the tests) it is any file both sides map.
 *
 * Layout (little-endian, both sides x86-64), all in the region itself so that no side needs to ask the
 * other: a header at offset 0, the lanes from VMC_REGION_LANES_AT on. The first client lays the region
 * out (state 0 -> 1 -> 2, by compare-and-swap, so that two clients never both do); a connection claims a
 * lane by swapping its owner word from 0 to a random 64-bit nonce and tells the worker (lane, nonce); the
 * worker accepts only a lane whose owner word holds that nonce, and clears it when the connection ends.
 * Everything read from a region is untrusted: the other side may be another VM. */
#ifndef VMC_REGION_H
#define VMC_REGION_H

#include <stddef.h>
#include <stdint.h>

#define VMC_REGION_MAGIC 0x31474552434d56ull /* "VMCREG1" */
#define VMC_REGION_MAX_LANES 256
#define VMC_REGION_LANES_AT (2u << 20) /* 2 MiB: lanes start on a large-page boundary */

struct vmc_region_header {
    uint64_t magic;   /* valid once state is VMC_REGION_READY */
    uint32_t state;   /* 0 untouched (all zero), 1 being laid out, 2 ready */
    uint32_t lanes;
    uint64_t lane_size;
    uint64_t slot_size;
    uint32_t slots;
    uint32_t reserved;
    uint64_t owner[VMC_REGION_MAX_LANES]; /* 0 = free, else the nonce of the connection using the lane */
};

#define VMC_REGION_READY 2u

/* The geometry of a region, checked against its size; what both sides use after reading the header once. */
struct vmc_region_geometry {
    uint32_t lanes, slots;
    uint64_t lane_size, slot_size;
};

/* Lays out an untouched region of `size` bytes with lanes of `slots` x `slot_size`, or waits (up to about
 * a second) for another client that is doing so. Returns 0 with the region's geometry (possibly another
 * client's slot size), or -1 with a reason. */
int vmc_region_prepare(void *base, size_t size, uint64_t slot_size, uint32_t slots, struct vmc_region_geometry *g,
                       const char **why);

/* Reads and checks the geometry of a ready region (the worker's view). 0, or -1 with a reason. */
int vmc_region_geometry(const void *base, size_t size, struct vmc_region_geometry *g, const char **why);

/* Claims a free lane for `nonce` (non-zero); returns its index, or -1 when every lane is taken. */
int vmc_region_claim(void *base, const struct vmc_region_geometry *g, uint64_t nonce);

/* 1 if lane `lane` is held by `nonce`. */
int vmc_region_held(const void *base, const struct vmc_region_geometry *g, uint32_t lane, uint64_t nonce);

/* Gives lane `lane` back if `nonce` still holds it (either side may do it; the second does nothing). */
void vmc_region_release(void *base, const struct vmc_region_geometry *g, uint32_t lane, uint64_t nonce);

/* Start of lane `lane`. */
static inline uint8_t *vmc_region_lane(void *base, const struct vmc_region_geometry *g, uint32_t lane) {
    return (uint8_t *)base + VMC_REGION_LANES_AT + (size_t)lane * g->lane_size;
}

#endif

#include "vmc_region.h"

#include <time.h>

#define MIN_SLOT (64u << 10)
#define MAX_SLOT (256u << 20)
#define MAX_SLOTS 64

_Static_assert(sizeof(struct vmc_region_header) <= VMC_REGION_LANES_AT, "the header must fit before the lanes");

static int geometry_ok(const struct vmc_region_geometry *g, size_t size) {
    return g->slots >= 2 && g->slots <= MAX_SLOTS && g->slot_size >= MIN_SLOT && g->slot_size <= MAX_SLOT &&
           g->slot_size % 4096 == 0 && g->lane_size == g->slot_size * g->slots && g->lanes >= 1 &&
           g->lanes <= VMC_REGION_MAX_LANES && size >= VMC_REGION_LANES_AT &&
           g->lanes <= (size - VMC_REGION_LANES_AT) / g->lane_size;
}

int vmc_region_geometry(const void *base, size_t size, struct vmc_region_geometry *g, const char **why) {
    const struct vmc_region_header *h = base;
    if (size < VMC_REGION_LANES_AT) {
        *why = "the region is smaller than its header";
        return -1;
    }
    if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != VMC_REGION_READY || h->magic != VMC_REGION_MAGIC) {
        *why = "the region is not laid out (no client has used it yet, or it is not a vmcuda region)";
        return -1;
    }
    /* One snapshot; the other side may change the header afterwards, the snapshot is what counts. */
    *g = (struct vmc_region_geometry){h->lanes, h->slots, h->lane_size, h->slot_size};
    if (!geometry_ok(g, size)) {
        *why = "the region's header is inconsistent with its size";
        return -1;
    }
    return 0;
}

int vmc_region_prepare(void *base, size_t size, uint64_t slot_size, uint32_t slots, struct vmc_region_geometry *g,
                       const char **why) {
    struct vmc_region_header *h = base;
    uint32_t untouched = 0;
    if (size >= VMC_REGION_LANES_AT &&
        __atomic_compare_exchange_n(&h->state, &untouched, 1u, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        uint64_t lane_size = slot_size * slots;
        uint64_t lanes = lane_size ? (size - VMC_REGION_LANES_AT) / lane_size : 0;
        struct vmc_region_geometry mine = {(uint32_t)(lanes > VMC_REGION_MAX_LANES ? VMC_REGION_MAX_LANES : lanes),
                                           slots, lane_size, slot_size};
        if (!geometry_ok(&mine, size)) {
            __atomic_store_n(&h->state, 0u, __ATOMIC_RELEASE);
            *why = "the region is too small for one lane of the configured block size";
            return -1;
        }
        h->lanes = mine.lanes;
        h->slots = mine.slots;
        h->lane_size = mine.lane_size;
        h->slot_size = mine.slot_size;
        for (uint32_t i = 0; i < VMC_REGION_MAX_LANES; i++)
            __atomic_store_n(&h->owner[i], 0, __ATOMIC_RELAXED);
        h->magic = VMC_REGION_MAGIC;
        __atomic_store_n(&h->state, VMC_REGION_READY, __ATOMIC_RELEASE);
    }
    /* Another client may be laying it out right now: that takes microseconds. */
    for (int i = 0; i < 1000 && size >= VMC_REGION_LANES_AT && __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == 1; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return vmc_region_geometry(base, size, g, why);
}

int vmc_region_claim(void *base, const struct vmc_region_geometry *g, uint64_t nonce) {
    struct vmc_region_header *h = base;
    for (uint32_t i = 0; i < g->lanes && nonce; i++) {
        uint64_t free_lane = 0;
        if (__atomic_compare_exchange_n(&h->owner[i], &free_lane, nonce, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

int vmc_region_held(const void *base, const struct vmc_region_geometry *g, uint32_t lane, uint64_t nonce) {
    const struct vmc_region_header *h = base;
    return nonce && lane < g->lanes && __atomic_load_n(&h->owner[lane], __ATOMIC_ACQUIRE) == nonce;
}

void vmc_region_release(void *base, const struct vmc_region_geometry *g, uint32_t lane, uint64_t nonce) {
    struct vmc_region_header *h = base;
    uint64_t expected = nonce;
    if (nonce && lane < g->lanes)
        __atomic_compare_exchange_n(&h->owner[lane], &expected, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

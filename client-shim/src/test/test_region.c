/* Shared regions (protocol/src/main/c/vmc_region.c): the first client lays a region out, others see
 * the same geometry; lanes are handed out once each, even to threads racing for them; only the nonce
 * that holds a lane can be checked as holding it or give it back; a header that does not fit the region
 * (another VM may have written anything there) is refused. The region is plain memory here, as it is
 * a plain file on one host. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmc_region.h"

#define SIZE ((size_t)VMC_REGION_LANES_AT + 5 * (4u << 20) + 12345) /* room for 5 lanes of 4 x 1 MiB */

static uint8_t *region;
static struct vmc_region_geometry shared_g;
static int lanes_won[64];

static void *prepare_and_claim(void *arg) {
    struct vmc_region_geometry g;
    const char *why;
    long me = (long)arg;
    if (vmc_region_prepare(region, SIZE, 1u << 20, 4, &g, &why) != 0)
        return (void *)1;
    if (memcmp(&g, &shared_g, sizeof g) != 0)
        return (void *)2;
    int lane = vmc_region_claim(region, &g, 1000 + (uint64_t)me);
    if (lane >= 0)
        __atomic_add_fetch(&lanes_won[lane], 1, __ATOMIC_RELAXED);
    return NULL;
}

int main(void) {
    region = aligned_alloc(4096, (SIZE + 4095) / 4096 * 4096);
    memset(region, 0, SIZE);
    const char *why = NULL;
    struct vmc_region_geometry g;

    CHECK(vmc_region_geometry(region, SIZE, &g, &why) == -1, "an untouched region has a geometry");
    CHECK(vmc_region_prepare(region, SIZE, 1u << 20, 4, &g, &why) == 0, "prepare: %s", why);
    CHECK(g.lanes == 5 && g.slots == 4 && g.slot_size == (1u << 20) && g.lane_size == (4u << 20),
          "geometry %u lanes of %u x %llu", g.lanes, g.slots, (unsigned long long)g.slot_size);
    shared_g = g;
    struct vmc_region_geometry again;
    CHECK(vmc_region_prepare(region, SIZE, 8u << 20, 4, &again, &why) == 0 && memcmp(&g, &again, sizeof g) == 0,
          "a second client with another block size must get the first one's geometry");
    CHECK(vmc_region_geometry(region, SIZE, &again, &why) == 0 && memcmp(&g, &again, sizeof g) == 0,
          "the worker's view differs: %s", why ? why : "");

    /* lanes: each once, then none; held and release only with the right nonce */
    int a = vmc_region_claim(region, &g, 11), b = vmc_region_claim(region, &g, 22);
    CHECK(a == 0 && b == 1, "claims %d %d", a, b);
    CHECK(vmc_region_held(region, &g, 0, 11) && !vmc_region_held(region, &g, 0, 22) && !vmc_region_held(region, &g, 1, 11),
          "held answers for the wrong nonce");
    CHECK(!vmc_region_held(region, &g, 99, 11) && !vmc_region_held(region, &g, 0, 0), "held for a bad lane or nonce 0");
    CHECK(vmc_region_claim(region, &g, 0) == -1, "nonce 0 claimed a lane");
    vmc_region_release(region, &g, 0, 22); /* not its lane: nothing happens */
    CHECK(vmc_region_held(region, &g, 0, 11), "a wrong nonce released a lane");
    vmc_region_release(region, &g, 0, 11);
    vmc_region_release(region, &g, 0, 11); /* the other side too: harmless */
    CHECK(!vmc_region_held(region, &g, 0, 11), "release did not free the lane");
    CHECK(vmc_region_claim(region, &g, 33) == 0, "a freed lane is not reused first");
    for (int i = 0; i < 3; i++)
        CHECK(vmc_region_claim(region, &g, 40 + (uint64_t)i) == 2 + i, "lane %d", 2 + i);
    CHECK(vmc_region_claim(region, &g, 50) == -1, "a full region gave out a lane");
    uint8_t *lane4 = vmc_region_lane(region, &g, 4);
    CHECK(lane4 + g.lane_size <= region + SIZE, "lane 4 ends past the region");

    /* a header that does not fit: refused (the client may be another VM) */
    struct vmc_region_header *h = (struct vmc_region_header *)region;
    uint32_t lanes = h->lanes;
    h->lanes = 6;
    CHECK(vmc_region_geometry(region, SIZE, &again, &why) == -1, "6 lanes accepted in room for 5");
    h->lanes = lanes;
    h->slot_size = 1000;
    CHECK(vmc_region_geometry(region, SIZE, &again, &why) == -1, "an unaligned slot size accepted");
    h->slot_size = 1u << 20;
    h->magic ^= 1;
    CHECK(vmc_region_geometry(region, SIZE, &again, &why) == -1, "a wrong magic accepted");
    CHECK(vmc_region_geometry(region, 4096, &again, &why) == -1, "a region smaller than its header accepted");
    uint8_t small[VMC_REGION_LANES_AT + 4096] __attribute__((aligned(64)));
    memset(small, 0, sizeof small);
    CHECK(vmc_region_prepare(small, sizeof small, 1u << 20, 4, &again, &why) == -1, "a region with no room for a lane");
    CHECK(((struct vmc_region_header *)small)->state == 0, "a failed layout left the region marked");

    /* racing threads: one layout, every lane won once */
    memset(region, 0, SIZE);
    memset(&shared_g, 0, sizeof shared_g);
    CHECK(vmc_region_prepare(region, SIZE, 1u << 20, 4, &shared_g, &why) == 0, "prepare");
    memset(region, 0, SIZE); /* untouched again: the threads race for the layout too */
    pthread_t t[16];
    for (long i = 0; i < 16; i++)
        pthread_create(&t[i], NULL, prepare_and_claim, (void *)i);
    int bad = 0;
    for (int i = 0; i < 16; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += r != NULL;
    }
    CHECK(bad == 0, "%d threads saw another geometry or no region", bad);
    int won = 0;
    for (int i = 0; i < 5; i++) {
        CHECK(lanes_won[i] == 1, "lane %d won %d times", i, lanes_won[i]);
        won += lanes_won[i];
    }
    CHECK(won == 5, "%d lanes won by 16 threads, expected 5", won);
    free(region);
    return check_summary("test_region");
}

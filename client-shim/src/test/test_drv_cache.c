/* The driver front end's small map (drv_cache.c), under ASan/UBSan: answers survive growth, a value's
 * entries can be removed (what cuLibraryUnload does with the library's kernels) without breaking the
 * probe chains of the others, and clearing empties it. */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "drv_cache.h"

int main(void) {
    static struct vmc_drv_cache c = VMC_DRV_CACHE_INIT;
    uint64_t v;
    CHECK(!vmc_drv_cache_get(&c, 1, 2, 3, &v), "an empty map answers nothing");
    /* 5000 kernels of 10 libraries: far past the first table, many collisions */
    for (uint64_t k = 1; k <= 5000; k++)
        vmc_drv_cache_put(&c, 0x7f0000000000ull + k * 64, 0, 0, 100 + k % 10);
    int all = 1;
    for (uint64_t k = 1; k <= 5000; k++)
        all &= vmc_drv_cache_get(&c, 0x7f0000000000ull + k * 64, 0, 0, &v) && v == 100 + k % 10;
    CHECK(all, "every entry found after growing");
    vmc_drv_cache_remove_value(&c, 103); /* one library unloaded */
    int gone = 1, kept = 1;
    for (uint64_t k = 1; k <= 5000; k++) {
        int hit = vmc_drv_cache_get(&c, 0x7f0000000000ull + k * 64, 0, 0, &v);
        if (k % 10 == 3)
            gone &= !hit;
        else
            kept &= hit && v == 100 + k % 10;
    }
    CHECK(gone, "the unloaded library's entries are gone");
    CHECK(kept, "every other entry is still found");
    vmc_drv_cache_put(&c, 0x7f0000000000ull + 3 * 64, 0, 0, 999); /* a handle handed out again */
    CHECK(vmc_drv_cache_get(&c, 0x7f0000000000ull + 3 * 64, 0, 0, &v) && v == 999, "a reused handle gets its new value");
    vmc_drv_cache_clear(&c);
    CHECK(!vmc_drv_cache_get(&c, 0x7f0000000000ull + 64, 0, 0, &v), "cleared");
    vmc_drv_cache_remove_value(&c, 1); /* on an empty map: nothing to do */
    return check_summary("test_drv_cache");
}

/* The driver front end's small map (drv_cache.c), under ASan/UBSan: answers survive growth, a value's
 * entries can be removed (what cuLibraryUnload does with the library's kernels) without breaking the
 * probe chains of the others, and clearing empties it; a set attribute forgets only its handle's answers
 * (cu*SetAttribute), and a kernel's functions are found from it and it from them. */
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

    /* attributes of 300 kernels (10 attributes, 2 devices each): a set on one kernel forgets its own */
    for (uint64_t k = 1; k <= 300; k++)
        for (uint64_t a = 0; a < 10; a++)
            for (uint64_t d = 0; d < 2; d++)
                vmc_drv_cache_put(&c, k * 16, a, d, k + a + d);
    uint64_t forget[2] = {7 * 16, 250 * 16};
    vmc_drv_cache_remove_handles(&c, forget, 2);
    int forgotten = 1, others = 1;
    for (uint64_t k = 1; k <= 300; k++)
        for (uint64_t a = 0; a < 10; a++)
            for (uint64_t d = 0; d < 2; d++) {
                int hit = vmc_drv_cache_get(&c, k * 16, a, d, &v);
                if (k == 7 || k == 250)
                    forgotten &= !hit;
                else
                    others &= hit && v == k + a + d;
            }
    CHECK(forgotten, "the entries of the handles named are gone, on every attribute and device");
    CHECK(others, "the other handles' entries are all still there");

    /* kernel -> its function per context: related both ways */
    static struct vmc_drv_cache fns = VMC_DRV_CACHE_INIT;
    vmc_drv_cache_put(&fns, 0xA0, 0x1, 0, 0xF1); /* kernel A0 in context 1: function F1 */
    vmc_drv_cache_put(&fns, 0xA0, 0x2, 0, 0xF2);
    vmc_drv_cache_put(&fns, 0xB0, 0x1, 0, 0xF3);
    uint64_t rel[8];
    int n = vmc_drv_cache_related(&fns, 0xA0, rel, 8);
    CHECK(n == 2 && ((rel[0] == 0xF1 && rel[1] == 0xF2) || (rel[0] == 0xF2 && rel[1] == 0xF1)), "a kernel's functions");
    n = vmc_drv_cache_related(&fns, 0xF3, rel, 8);
    CHECK(n == 1 && rel[0] == 0xB0, "a function's kernel");
    CHECK(vmc_drv_cache_related(&fns, 0xA0, rel, 1) == 1, "no more than asked for");
    CHECK(vmc_drv_cache_related(&fns, 0xC0, rel, 8) == 0, "an unknown handle has none");
    return check_summary("test_drv_cache");
}

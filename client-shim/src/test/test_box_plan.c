/* The box chunk plan both sides compute (protocol/src/main/c/vmc_box_plan.c): for every shape, kind and cap,
 * the chunks cover each byte of the box exactly once, in order, none larger than the cap; an empty box (a zero
 * width, height or depth, as a zero-size cudaMemcpy2D sends it) has no chunk and no division by zero. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmc_box_plan.h"

static void covers_each_byte_once(unsigned kind, uint64_t w, uint64_t h, uint64_t d, uint64_t cap) {
    struct vmc_box_extent e = {kind, w, h, d};
    struct vmc_box_plan p = vmc_box_plan(&e, cap);
    struct vmc_box_cursor c = {0, 0, 0};
    struct vmc_box_chunk k;
    unsigned char *seen = calloc(w * h * d + 1, 1);
    uint64_t n, total = 0, chunks = 0, too_big = 0, twice = 0;
    while ((n = vmc_box_next_chunk(&e, &p, &c, &k)) != 0 && chunks < 100000) {
        chunks++;
        total += n;
        too_big += n > cap;
        for (uint64_t z = 0; z < k.nz; z++)
            for (uint64_t y = 0; y < k.ny; y++)
                for (uint64_t b = 0; b < k.nb; b++)
                    twice += seen[((k.z0 + z) * h + k.y0 + y) * w + k.b0 + b]++ != 0;
    }
    CHECK(total == w * h * d && !too_big && !twice, "kind %u, %llu x %llu x %llu, cap %llu: %llu bytes in %llu chunks, "
          "%llu over the cap, %llu twice", kind, (unsigned long long)w, (unsigned long long)h, (unsigned long long)d,
          (unsigned long long)cap, (unsigned long long)total, (unsigned long long)chunks, (unsigned long long)too_big,
          (unsigned long long)twice);
    free(seen);
}

int main(void) {
    static const uint64_t caps[] = {16, 64, 100, 4096};
    for (unsigned kind = DEV_PITCHED; kind <= DEV_ARRAY_3D; kind++)
        for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++)
            for (uint64_t w = 1; w <= 130; w += 7)
                for (uint64_t h = 1; h <= 9; h += 2)
                    for (uint64_t d = 1; d <= 5; d += 2) {
                        if (kind == DEV_LINEAR && (h > 1 || d > 1))
                            continue; /* a byte run is one row (the worker refuses anything else) */
                        if (kind == DEV_ARRAY_2D && d > 1)
                            continue;
                        covers_each_byte_once(kind, w, h, d, caps[ci]);
                    }
    /* empty boxes: the worker zeroes every dimension when one is zero */
    struct vmc_box_extent empty = {DEV_PITCHED, 0, 0, 0};
    struct vmc_box_plan p = vmc_box_plan(&empty, 4096);
    struct vmc_box_cursor c = {0, 0, 0};
    struct vmc_box_chunk k;
    CHECK(vmc_box_next_chunk(&empty, &p, &c, &k) == 0, "an empty box has a chunk");
    return check_summary("test_box_plan");
}

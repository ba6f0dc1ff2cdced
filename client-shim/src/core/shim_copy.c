#include "shim_copy.h"

#include <stdint.h>
#include <string.h>

#include "shim_parallel.h"

#define SPLIT_MIN (1u << 20) /* below this one thread is as fast as several */

struct copy_job {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
};

/* Part `part` of `ways` page-aligned pieces; the last one takes the remainder. */
static void copy_part(void *arg, unsigned part, unsigned ways) {
    struct copy_job *j = arg;
    size_t share = (j->n / ways + 4095) & ~(size_t)4095;
    size_t off = (size_t)part * share;
    if (off >= j->n)
        return;
    size_t len = part + 1 == ways || off + share > j->n ? j->n - off : share;
    memcpy(j->dst + off, j->src + off, len);
}

void vmc_copy(void *dst, const void *src, size_t n) {
    struct copy_job j = {dst, src, n};
    if (n < SPLIT_MIN) {
        memcpy(dst, src, n);
        return;
    }
    vmc_parallel(~0u, copy_part, &j);
}

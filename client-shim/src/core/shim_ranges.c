#include "shim_ranges.h"

#include <stdlib.h>
#include <string.h>

/* Index of the first item whose base is > key. */
static size_t upper_bound(const struct vmc_range_set *s, uintptr_t key) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->items[mid].base <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int vmc_ranges_add(struct vmc_range_set *s, const void *base, size_t size, unsigned tag) {
    int rc = 0;
    pthread_rwlock_wrlock(&s->lock);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct vmc_range *items = realloc(s->items, cap * sizeof *items);
        if (!items) {
            rc = -1;
            goto out;
        }
        s->items = items;
        s->cap = cap;
    }
    size_t at = upper_bound(s, (uintptr_t)base);
    memmove(s->items + at + 1, s->items + at, (s->n - at) * sizeof *s->items);
    s->items[at] = (struct vmc_range){(uintptr_t)base, size ? size : 1, tag};
    s->n++;
out:
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

int vmc_ranges_remove(struct vmc_range_set *s, const void *base) {
    int rc = -1;
    pthread_rwlock_wrlock(&s->lock);
    size_t at = upper_bound(s, (uintptr_t)base);
    if (at > 0 && s->items[at - 1].base == (uintptr_t)base) {
        memmove(s->items + at - 1, s->items + at, (s->n - at) * sizeof *s->items);
        s->n--;
        rc = 0;
    }
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

int vmc_ranges_find(struct vmc_range_set *s, const void *p, struct vmc_range *out) {
    int found = 0;
    pthread_rwlock_rdlock(&s->lock);
    size_t at = upper_bound(s, (uintptr_t)p);
    if (at > 0) {
        const struct vmc_range *r = &s->items[at - 1];
        if ((uintptr_t)p - r->base < r->size) {
            *out = *r;
            found = 1;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    return found;
}

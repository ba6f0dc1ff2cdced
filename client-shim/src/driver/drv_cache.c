#include "drv_cache.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t d) {
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL ^ d * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static struct vmc_drv_cache_slot *find(struct vmc_drv_cache *c, uint64_t a, uint64_t b, uint64_t d) {
    if (!c->cap)
        return NULL;
    for (uint64_t i = hash3(a, b, d) & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        struct vmc_drv_cache_slot *s = &c->slots[i];
        if (!s->used || (s->k[0] == a && s->k[1] == b && s->k[2] == d))
            return s;
    }
}

int vmc_drv_cache_get(struct vmc_drv_cache *c, uint64_t a, uint64_t b, uint64_t d, uint64_t *value) {
    pthread_mutex_lock(&c->lock);
    struct vmc_drv_cache_slot *s = find(c, a, b, d);
    int hit = s && s->used;
    if (hit)
        *value = s->value;
    pthread_mutex_unlock(&c->lock);
    return hit;
}

static int grow(struct vmc_drv_cache *c) {
    uint64_t cap = c->cap ? c->cap * 2 : 256;
    struct vmc_drv_cache_slot *old = c->slots;
    uint64_t old_cap = c->cap;
    struct vmc_drv_cache_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    c->slots = slots;
    c->cap = cap;
    for (uint64_t i = 0; i < old_cap; i++)
        if (old[i].used)
            *find(c, old[i].k[0], old[i].k[1], old[i].k[2]) = old[i];
    free(old);
    return 0;
}

void vmc_drv_cache_put(struct vmc_drv_cache *c, uint64_t a, uint64_t b, uint64_t d, uint64_t value) {
    pthread_mutex_lock(&c->lock);
    if ((c->used + 1) * 2 > c->cap && grow(c) != 0) {
        pthread_mutex_unlock(&c->lock);
        return; /* out of memory: the answer is simply not kept */
    }
    struct vmc_drv_cache_slot *s = find(c, a, b, d);
    if (!s->used) {
        c->used++;
        s->used = 1;
        s->k[0] = a, s->k[1] = b, s->k[2] = d;
    }
    s->value = value;
    pthread_mutex_unlock(&c->lock);
}

void vmc_drv_cache_clear(struct vmc_drv_cache *c) {
    pthread_mutex_lock(&c->lock);
    if (c->slots)
        memset(c->slots, 0, c->cap * sizeof *c->slots);
    c->used = 0;
    pthread_mutex_unlock(&c->lock);
}

/* Rebuilds the table without the entries `drop` picks (open addressing keeps no holes). Caller holds the lock. */
static void remove_where(struct vmc_drv_cache *c, int (*drop)(const struct vmc_drv_cache_slot *, const void *), const void *arg) {
    uint64_t cap = c->cap;
    struct vmc_drv_cache_slot *old = c->slots;
    struct vmc_drv_cache_slot *slots = cap ? calloc(cap, sizeof *slots) : NULL;
    if (slots) {
        c->slots = slots;
        c->used = 0;
        for (uint64_t i = 0; i < cap; i++)
            if (old[i].used && !drop(&old[i], arg)) {
                *find(c, old[i].k[0], old[i].k[1], old[i].k[2]) = old[i];
                c->used++;
            }
        free(old);
    } else if (old) { /* out of memory: forget everything rather than keep stale entries */
        memset(old, 0, cap * sizeof *old);
        c->used = 0;
    }
}

static int value_is(const struct vmc_drv_cache_slot *s, const void *arg) { return s->value == *(const uint64_t *)arg; }

void vmc_drv_cache_remove_value(struct vmc_drv_cache *c, uint64_t value) {
    pthread_mutex_lock(&c->lock);
    remove_where(c, value_is, &value);
    pthread_mutex_unlock(&c->lock);
}

struct handle_list {
    const uint64_t *handles;
    int n;
};

static int first_word_in(const struct vmc_drv_cache_slot *s, const void *arg) {
    const struct handle_list *l = arg;
    for (int i = 0; i < l->n; i++)
        if (s->k[0] == l->handles[i])
            return 1;
    return 0;
}

void vmc_drv_cache_remove_handles(struct vmc_drv_cache *c, const uint64_t *handles, int n) {
    struct handle_list l = {handles, n};
    pthread_mutex_lock(&c->lock);
    remove_where(c, first_word_in, &l);
    pthread_mutex_unlock(&c->lock);
}

int vmc_drv_cache_related(struct vmc_drv_cache *c, uint64_t handle, uint64_t *out, int max) {
    int n = 0;
    pthread_mutex_lock(&c->lock);
    for (uint64_t i = 0; i < c->cap && n < max; i++) {
        const struct vmc_drv_cache_slot *s = &c->slots[i];
        if (s->used && s->k[0] == handle)
            out[n++] = s->value;
        else if (s->used && s->value == handle)
            out[n++] = s->k[0];
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

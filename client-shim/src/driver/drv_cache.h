/* A small thread-safe map from three 64-bit words to one, for the answers the driver front end keeps:
 * kernels' parameter layouts, which handles are CUkernels, kernels' functions per context, immutable
 * function attributes. A whole map can be cleared, or the entries holding one value or keyed by given
 * handles removed. */
#ifndef DRV_CACHE_H
#define DRV_CACHE_H

#include <pthread.h>
#include <stdint.h>

struct vmc_drv_cache_slot {
    uint64_t k[3];
    uint64_t value;
    int used;
};

struct vmc_drv_cache {
    pthread_mutex_t lock;
    struct vmc_drv_cache_slot *slots;
    uint64_t cap, used; /* cap: a power of two */
};

#define VMC_DRV_CACHE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0}

/* 1 with *value when the key is there. */
int vmc_drv_cache_get(struct vmc_drv_cache *c, uint64_t a, uint64_t b, uint64_t d, uint64_t *value);
void vmc_drv_cache_put(struct vmc_drv_cache *c, uint64_t a, uint64_t b, uint64_t d, uint64_t value);
void vmc_drv_cache_clear(struct vmc_drv_cache *c);
/* Removes every entry whose value is `value`. */
void vmc_drv_cache_remove_value(struct vmc_drv_cache *c, uint64_t value);
/* Removes every entry whose first key word is one of the n handles. */
void vmc_drv_cache_remove_handles(struct vmc_drv_cache *c, const uint64_t *handles, int n);
/* The handles `handle` is paired with: the values of its entries (first key word = handle) and the first
 * key words of the entries whose value is handle; at most max of them in out, how many returned. */
int vmc_drv_cache_related(struct vmc_drv_cache *c, uint64_t handle, uint64_t *out, int max);

#endif

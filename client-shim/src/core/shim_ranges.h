/* A set of address ranges [base, base+size) with a tag, for the allocations the shim must recognise:
 * device memory (to resolve cudaMemcpyDefault) and host memory from cudaMallocHost/cudaHostAlloc. */
#ifndef SHIM_RANGES_H
#define SHIM_RANGES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct vmc_range {
    uintptr_t base;
    size_t size;
    unsigned tag;
};

struct vmc_range_set {
    pthread_rwlock_t lock;
    struct vmc_range *items; /* sorted by base */
    size_t n, cap;
};

#define VMC_RANGE_SET_INIT {PTHREAD_RWLOCK_INITIALIZER, NULL, 0, 0}

int vmc_ranges_add(struct vmc_range_set *s, const void *base, size_t size, unsigned tag);
/* Removes the range starting exactly at base; returns 0, or -1 if there is none. */
int vmc_ranges_remove(struct vmc_range_set *s, const void *base);
/* Finds the range containing p; returns 1 and fills *out, or 0. */
int vmc_ranges_find(struct vmc_range_set *s, const void *p, struct vmc_range *out);

#endif

#include "hostmem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "hostmap.h"
#include "shim_ranges.h"

static struct vmc_range_set allocations = VMC_RANGE_SET_INIT;
static struct vmc_range_set registered = VMC_RANGE_SET_INIT;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;

/* Shared anonymous pages: after fork a child shares them with its parent, as it shares the page-locked
 * memory NVIDIA's driver allocates (measured on the H100: tests/cuda/fork_pinned.cu), where private pages
 * would give it a copy of its own. */
cudaError_t vmc_host_alloc(void **pHost, size_t size, unsigned flags) {
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        *pHost = NULL;
        return cudaErrorMemoryAllocation;
    }
    /* Page-locked where the process may lock memory (RLIMIT_MEMLOCK); pageable otherwise, which only
     * the client's copy speed can tell. */
    (void)mlock(p, size);
    if (vmc_ranges_add(&allocations, p, size, flags) != 0) {
        munmap(p, size ? size : 1);
        *pHost = NULL;
        return cudaErrorMemoryAllocation;
    }
    *pHost = p;
    return cudaSuccess;
}

cudaError_t vmc_host_adopt(void *p, size_t size, unsigned flags) {
    return vmc_ranges_add(&allocations, p, size, flags) == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t vmc_host_free(void *p) {
    struct vmc_range r;
    if (!vmc_ranges_find(&allocations, p, &r) || r.base != (uintptr_t)p)
        return cudaErrorInvalidValue;
    vmc_ranges_remove(&allocations, p);
    if (vmc_hostmap_release(p, r.size))
        return cudaSuccess;
    munlock(p, r.size);
    munmap(p, r.size ? r.size : 1);
    return cudaSuccess;
}

int vmc_host_alloc_find(const void *p, void **base, size_t *size, unsigned *flags) {
    struct vmc_range r;
    if (!vmc_ranges_find(&allocations, p, &r))
        return 0;
    if (base)
        *base = (void *)r.base;
    if (size)
        *size = r.size;
    if (flags)
        *flags = r.tag;
    return 1;
}

int vmc_registered_flags(const void *p, unsigned int *flags) {
    struct vmc_range r;
    if (!vmc_ranges_find(&registered, p, &r))
        return 0;
    *flags = r.tag;
    return 1;
}

cudaError_t vmc_host_register(void *ptr, size_t size, unsigned flags) {
    pthread_mutex_lock(&register_lock);
    struct vmc_range r;
    const char *p = ptr;
    if (vmc_ranges_find(&registered, p, &r) || vmc_ranges_find(&registered, p + size - 1, &r)) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorHostMemoryAlreadyRegistered;
    }
    /* A range inside [ptr, ptr+size) that contains neither end. */
    for (size_t off = 0; off < size; off += 4096)
        if (vmc_ranges_find(&registered, p + off, &r)) {
            pthread_mutex_unlock(&register_lock);
            return cudaErrorHostMemoryAlreadyRegistered;
        }
    if (vmc_ranges_add(&registered, ptr, size, flags) != 0) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorMemoryAllocation;
    }
    pthread_mutex_unlock(&register_lock);
    (void)mlock(ptr, size);
    return cudaSuccess;
}

cudaError_t vmc_host_unregister(void *ptr) {
    struct vmc_range r;
    pthread_mutex_lock(&register_lock);
    if (!ptr || !vmc_ranges_find(&registered, ptr, &r) || r.base != (uintptr_t)ptr) {
        pthread_mutex_unlock(&register_lock);
        return cudaErrorHostMemoryNotRegistered;
    }
    vmc_ranges_remove(&registered, ptr);
    pthread_mutex_unlock(&register_lock);
    munlock(ptr, r.size);
    return cudaSuccess;
}

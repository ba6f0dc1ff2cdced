#include "hostmap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hostmem.h"
#include "shim_call.h"
#include "shim_shm.h"
#include "vmc_drv_api.h"
#include "vmc_wire.h"

struct mapping {
    uintptr_t base;
    size_t size;
    uint64_t device;
};

static struct mapping *mappings;
static size_t n_mappings, cap_mappings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The index of the mapping containing p, or -1. Caller holds lock. */
static long find(uintptr_t p) {
    for (size_t i = 0; i < n_mappings; i++)
        if (p - mappings[i].base < mappings[i].size)
            return (long)i;
    return -1;
}

static int remember(uintptr_t base, size_t size, uint64_t device) {
    pthread_mutex_lock(&lock);
    if (n_mappings == cap_mappings) {
        size_t cap = cap_mappings ? 2 * cap_mappings : 16;
        struct mapping *m = realloc(mappings, cap * sizeof *m);
        if (!m) {
            pthread_mutex_unlock(&lock);
            return -1;
        }
        mappings = m;
        cap_mappings = cap;
    }
    mappings[n_mappings++] = (struct mapping){base, size, device};
    pthread_mutex_unlock(&lock);
    return 0;
}

static void detach(uintptr_t base) {
    struct vmc_call c;
    if (vmc_call_begin(&c, VMC_DRV_vmc_drv_HostMapDetach, 0) != cudaSuccess)
        return;
    vmc_arg_u64(&c, base);
    (void)vmc_call_finish(&c); /* a worker that is gone has let go of it anyway */
}

cudaError_t vmc_hostmap_alloc(void **p, size_t size, unsigned flags) {
    *p = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = size ? (size + page - 1) / page * page : page;
    if (bytes < size)
        return cudaErrorMemoryAllocation;
    char path[128];
    void *base = vmc_shm_new_file(bytes, 1, path, sizeof path);
    if (!base)
        return cudaErrorMemoryAllocation;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_DRV_vmc_drv_HostMapAttach, 0);
    uint64_t device = 0;
    if (st == cudaSuccess) {
        vmc_arg_str(&c, path);
        vmc_arg_u64(&c, bytes);
        vmc_arg_u64(&c, (uint64_t)(uintptr_t)base);
        st = vmc_call_finish(&c);
        device = vmc_ret_u64(&c);
        if (st == cudaSuccess && !vmc_call_reply_ok(&c))
            st = cudaErrorUnknown;
    }
    unlink(path);
    if (st != cudaSuccess) {
        munmap(base, bytes);
        return st;
    }
    if (remember((uintptr_t)base, bytes, device) != 0) {
        detach((uintptr_t)base);
        munmap(base, bytes);
        return cudaErrorMemoryAllocation;
    }
    if (vmc_host_adopt(base, size ? size : 1, flags) != cudaSuccess) {
        vmc_hostmap_release(base, bytes);
        return cudaErrorMemoryAllocation;
    }
    *p = base;
    return cudaSuccess;
}

int vmc_hostmap_device_pointer(const void *p, uint64_t *device) {
    pthread_mutex_lock(&lock);
    long i = find((uintptr_t)p);
    if (i >= 0 && device)
        *device = mappings[i].device + ((uintptr_t)p - mappings[i].base);
    pthread_mutex_unlock(&lock);
    return i >= 0;
}

int vmc_hostmap_contains(const void *p, size_t n) {
    pthread_mutex_lock(&lock);
    long i = n ? find((uintptr_t)p) : -1;
    int inside = i >= 0 && n <= mappings[i].size - ((uintptr_t)p - mappings[i].base);
    pthread_mutex_unlock(&lock);
    return inside;
}

cudaError_t vmc_hostmap_copy(uint64_t device, const void *host, size_t count, uint64_t stream, unsigned mode, int to_device) {
    struct vmc_call c;
    int async = (mode & COPY_ASYNC) != 0;
    cudaError_t st = vmc_call_begin_ex(&c, VMC_DRV_vmc_drv_MappedCopy, async, !(mode & COPY_DRIVER));
    if (st != cudaSuccess)
        return st;
    vmc_arg_u64(&c, device);
    vmc_arg_u64(&c, (uint64_t)(uintptr_t)host);
    vmc_arg_u64(&c, count);
    vmc_arg_u64(&c, stream);
    vmc_arg_u8(&c, (uint8_t)mode);
    vmc_arg_u8(&c, (uint8_t)(to_device != 0));
    return vmc_call_finish(&c);
}

int vmc_hostmap_release(void *p, size_t size) {
    (void)size;
    pthread_mutex_lock(&lock);
    long i = find((uintptr_t)p);
    if (i < 0 || mappings[i].base != (uintptr_t)p) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    struct mapping m = mappings[i];
    mappings[i] = mappings[--n_mappings];
    pthread_mutex_unlock(&lock);
    detach(m.base); /* the GPU lets go of the pages before this process does */
    munmap((void *)m.base, m.size);
    return 1;
}

#define _GNU_SOURCE /* mremap's MREMAP_FIXED */
#include "hostmap.h"

#include <pthread.h>
#include <stdio.h>
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
    int registered; /* memory of the program's made shared by cuMemHostRegister/cudaHostRegister, not allocated here */
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

static int remember(uintptr_t base, size_t size, uint64_t device, int registered) {
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
    mappings[n_mappings++] = (struct mapping){base, size, device, registered};
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

/* Asks the worker to map and register the file at `path` (this process maps it at `base`); unlinks it. */
static cudaError_t attach(const char *path, uintptr_t base, size_t bytes, uint64_t *device) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_DRV_vmc_drv_HostMapAttach, 0);
    if (st == cudaSuccess) {
        vmc_arg_str(&c, path);
        vmc_arg_u64(&c, bytes);
        vmc_arg_u64(&c, (uint64_t)base);
        st = vmc_call_finish(&c);
        *device = vmc_ret_u64(&c);
        if (st == cudaSuccess && !vmc_call_reply_ok(&c))
            st = cudaErrorUnknown;
    }
    unlink(path);
    return st;
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

cudaError_t vmc_hostmap_alloc(void **p, size_t size, unsigned flags) {
    *p = NULL;
    size_t page = page_size();
    size_t bytes = size ? (size + page - 1) / page * page : page;
    if (bytes < size)
        return cudaErrorMemoryAllocation;
    char path[128];
    void *base = vmc_shm_new_file(bytes, 1, path, sizeof path);
    if (!base)
        return cudaErrorMemoryAllocation;
    uint64_t device = 0;
    cudaError_t st = attach(path, (uintptr_t)base, bytes, &device);
    if (st != cudaSuccess) {
        munmap(base, bytes);
        return st;
    }
    if (remember((uintptr_t)base, bytes, device, 0) != 0) {
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

/* Puts private pages with the same contents back under [start, start + len). */
static void make_private(uintptr_t start, size_t len) {
    void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return; /* the shared pages stay: their contents are right, only /dev/shm keeps them */
    memcpy(copy, (const void *)start, len);
    if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED)
        munmap(copy, len);
}

cudaError_t vmc_hostmap_register(void *p, size_t size) {
    size_t page = page_size();
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + size + page - 1) & ~(uintptr_t)(page - 1);
    size_t len = end - start;
    if (!size || end <= start)
        return cudaErrorInvalidValue;
    unsigned char *resident = malloc(len / page);
    if (!resident)
        return cudaErrorMemoryAllocation;
    int mapped = mincore((void *)start, len, resident) == 0; /* every page of the range exists */
    free(resident);
    if (!mapped)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&lock);
    int shares_a_page = 0;
    for (size_t i = 0; i < n_mappings; i++)
        shares_a_page |= mappings[i].base < end && start < mappings[i].base + mappings[i].size;
    pthread_mutex_unlock(&lock);
    if (shares_a_page) {
        static int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "vmcuda: registering mapped host memory that shares a page with other mapped host memory "
                            "is not supported; it returns cudaErrorNotSupported\n");
        return cudaErrorNotSupported;
    }
    /* The program's pages become shared ones with the same contents, in place: a copy in a new file,
     * moved over them. A write another thread makes to these pages meanwhile is lost (register memory
     * before using it from several threads, as CUDA's documentation advises anyway). */
    char path[128];
    void *shared = vmc_shm_new_file(len, 1, path, sizeof path);
    if (!shared)
        return cudaErrorMemoryAllocation;
    memcpy(shared, (const void *)start, len);
    if (mremap(shared, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)start) == MAP_FAILED) {
        munmap(shared, len);
        unlink(path);
        return cudaErrorMemoryAllocation;
    }
    uint64_t device = 0;
    cudaError_t st = attach(path, start, len, &device);
    if (st == cudaSuccess && remember(start, len, device, 1) != 0) {
        detach(start);
        st = cudaErrorMemoryAllocation;
    }
    if (st != cudaSuccess)
        make_private(start, len);
    return st;
}

int vmc_hostmap_unregister(void *p) {
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page_size() - 1);
    pthread_mutex_lock(&lock);
    long i = find(start);
    if (i < 0 || mappings[i].base != start || !mappings[i].registered) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    struct mapping m = mappings[i];
    mappings[i] = mappings[--n_mappings];
    pthread_mutex_unlock(&lock);
    detach(m.base); /* the GPU lets go of the pages before they become private again */
    make_private(m.base, m.size);
    return 1;
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
    if (i < 0 || mappings[i].base != (uintptr_t)p || mappings[i].registered) {
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

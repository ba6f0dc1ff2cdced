#define _GNU_SOURCE /* mremap's MREMAP_FIXED */
#include "hostmap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hostmem.h"
#include "shim_call.h"
#include "shim_session.h"
#include "shim_shm.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_wire.h"

struct mapping {
    uintptr_t base;
    size_t size;
    uint64_t device;
    int registered; /* memory of the program's made shared by cuMemHostRegister/cudaHostRegister, not allocated here */
    int orphaned;   /* in a child process after fork: no worker holds it (registered memory is private again) */
};

static struct mapping *mappings;
static size_t n_mappings, cap_mappings;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void watch_forks(void);

/* The index of the mapping containing p, or -1. Caller holds lock. */
static long find(uintptr_t p) {
    for (size_t i = 0; i < n_mappings; i++)
        if (p - mappings[i].base < mappings[i].size)
            return (long)i;
    return -1;
}

static int remember(uintptr_t base, size_t size, uint64_t device, int registered) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, watch_forks);
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
    mappings[n_mappings++] = (struct mapping){base, size, device, registered, 0};
    pthread_mutex_unlock(&lock);
    return 0;
}

static void detach(uintptr_t base) {
    struct vmc_call c;
    if (vmc_call_begin(&c, VMC_DRV_vmc_drv_HostMapDetach, 0) != cudaSuccess)
        return;
    vmc_put_client_address(vmc_call_args(&c), &(struct vmc_client_address){.address = base});
    (void)vmc_call_finish(&c); /* a worker that is gone has let go of it anyway */
}

/* Puts private pages with the same contents back under [start, start + len). */
static void make_private(uintptr_t start, size_t len);

static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER; /* one registration or unregistration at a time */

/* After fork, a child keeps what a native child keeps (measured on the H100, tests/cuda/fork_pinned.cu):
 * page-locked memory the driver allocated stays shared with the parent (a write by either is seen by the
 * other, as NVIDIA's driver maps it shared), while the program's own registered memory becomes the child's
 * private copy (anonymous pages pinned by the parent are copied for the child at fork). The child's worker
 * (if it ever has one) knows none of them: they are orphaned, plain memory to it. Both locks are held
 * across the fork, so that the list is whole and no registration is half done. */
static void before_fork(void) {
    pthread_mutex_lock(&register_lock);
    pthread_mutex_lock(&lock);
}

static void after_fork_in_parent(void) {
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&register_lock);
}

static void after_fork_in_child(void) {
    for (size_t i = 0; i < n_mappings; i++)
        if (!mappings[i].orphaned) {
            if (mappings[i].registered)
                make_private(mappings[i].base, mappings[i].size);
            mappings[i].orphaned = 1;
        }
    pthread_mutex_unlock(&lock); /* held by this thread, the child's only one */
    pthread_mutex_unlock(&register_lock);
}

static void watch_forks(void) { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); }

/* Asks the worker to map and register the file at `path` (this process maps it at `base`); unlinks it. */
static cudaError_t attach(const char *path, uintptr_t base, size_t bytes, uint64_t *device) {
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_DRV_vmc_drv_HostMapAttach, 0);
    if (st == cudaSuccess) {
        vmc_put_hostmap_attach_args(vmc_call_args(&c), &(struct vmc_hostmap_attach_args){
            .path_bytes = (uint32_t)strlen(path), .path = path, .size = bytes, .client_address = (uint64_t)base});
        st = vmc_call_finish(&c);
        struct vmc_device_address r;
        vmc_get_device_address(&c.reply, &r);
        *device = r.address;
        if (st == cudaSuccess && !vmc_call_reply_ok(&c)) {
            detach(base); /* the worker did map and register it: it must let go, or its pinned pages leak */
            st = cudaErrorUnknown;
        }
    }
    unlink(path);
    return st;
}

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Tries at placing a shared file where the worker can map it at the same address. */
#define MAP_ATTEMPTS 8

/* A 2 MiB-aligned address between 16 and 96 TiB: inside the 47-bit user space of x86-64, away from where the
 * kernel puts mappings by default (just below the stack, near 128 TiB). */
static void *random_hint(void) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull;
    uint64_t span = (80ull << 40) >> 21; /* 2 MiB steps in 80 TiB */
    return (void *)(uintptr_t)((16ull << 40) + (r % span << 21));
}

cudaError_t vmc_hostmap_alloc(void **p, size_t size, unsigned flags) {
    cudaError_t st = vmc_hostmap_map(p, size);
    if (st != cudaSuccess)
        return st;
    if (vmc_host_adopt(*p, size ? size : 1, flags) != cudaSuccess) {
        vmc_hostmap_release(*p, size);
        *p = NULL;
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t vmc_hostmap_map(void **p, size_t size) {
    *p = NULL;
    size_t page = page_size();
    size_t bytes = size ? (size + page - 1) / page * page : page;
    if (bytes < size)
        return cudaErrorMemoryAllocation;
    /* The worker maps the file at this process's address or not at all (programs use the host pointer as
     * the device pointer, as unified addressing lets them): when that range is taken there, try another. The
     * kernel would put the next file right below the last one, likely inside the same mapping of the worker
     * (its driver reserves large address ranges), so retries go to random addresses across the user space. */
    void *tried[MAP_ATTEMPTS] = {NULL};
    cudaError_t st = cudaErrorAlreadyMapped; /* the worker's answer when the range is taken there */
    uint64_t device = 0;
    void *base = NULL;
    for (int attempt = 0; attempt < MAP_ATTEMPTS && st == cudaErrorAlreadyMapped; attempt++) {
        char path[128];
        base = vmc_shm_new_file_at(attempt ? random_hint() : NULL, bytes, 1, path, sizeof path);
        if (!base)
            break;
        tried[attempt] = base; /* kept mapped meanwhile, so that the next try gets another address */
        st = attach(path, (uintptr_t)base, bytes, &device);
    }
    for (int k = 0; k < MAP_ATTEMPTS; k++)
        if (tried[k] && (st != cudaSuccess || tried[k] != base))
            munmap(tried[k], bytes);
    if (st == cudaErrorAlreadyMapped || (st != cudaSuccess && !base))
        return cudaErrorMemoryAllocation;
    if (st != cudaSuccess)
        return st;
    if (remember((uintptr_t)base, bytes, device, 0) != 0) {
        detach((uintptr_t)base);
        munmap(base, bytes);
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

/* What [start, end) is: 1 when every page is private, anonymous, readable, writable and not executable
 * memory (the heap, anonymous mappings: what can be moved), 0 when a page is of another kind (a file's pages
 * would stop reaching their file; executable pages would lose their execute permission), -1 when a page is
 * not mapped at all. */
static int movable(uintptr_t start, uintptr_t end) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    uintptr_t covered = start;
    int kind = 1;
    while (covered < end && getline(&line, &cap, f) > 0) {
        unsigned long lo, hi, inode;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &inode) != 4 || hi <= covered)
            continue;
        if (lo > covered)
            break; /* a hole */
        if (perms[0] != 'r' || perms[1] != 'w' || perms[2] != '-' || perms[3] != 'p' || inode != 0 || strstr(line, "[stack]")) {
            kind = 0;
            break;
        }
        covered = hi;
    }
    free(line);
    fclose(f);
    return kind == 0 ? 0 : covered >= end ? 1 : -1;
}

static cudaError_t refuse(const char *why) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "vmcuda: registering %s as mapped host memory is not supported; it returns "
                        "cudaErrorNotSupported\n", why);
    return cudaErrorNotSupported;
}

static cudaError_t register_locked(uintptr_t start, uintptr_t end) {
    size_t len = end - start;
    /* this thread's own stack: moving the page under the running call would lose what it pushed */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (start < here + (64u << 10) && here - (64u << 10) < end)
        return refuse("memory on the calling thread's stack");
    int kind = movable(start, end);
    if (kind < 0)
        return cudaErrorInvalidValue; /* not memory of this process, as natively */
    if (kind == 0)
        return refuse("memory that is not private, anonymous, readable, writable and not executable (a file's "
                      "pages, say)");
    pthread_mutex_lock(&lock);
    int shares_a_page = 0;
    for (size_t i = 0; i < n_mappings; i++)
        shares_a_page |= mappings[i].base < end && start < mappings[i].base + mappings[i].size;
    pthread_mutex_unlock(&lock);
    if (shares_a_page)
        return refuse("memory that shares a page with other mapped host memory");
    /* The program's pages become shared ones with the same contents, in place: a copy in a new file, moved
     * over them. The whole pages are moved: a write another thread makes to them meanwhile (to this range,
     * or to a neighbour on its first or last page) is lost; register memory before other threads use it. */
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

cudaError_t vmc_hostmap_register(void *p, size_t size) {
    size_t page = page_size();
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)p + size + page - 1) & ~(uintptr_t)(page - 1);
    if (!size || end <= start)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&register_lock);
    cudaError_t st = register_locked(start, end);
    pthread_mutex_unlock(&register_lock);
    return st;
}

int vmc_hostmap_unregister(void *p) {
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page_size() - 1);
    pthread_mutex_lock(&register_lock);
    pthread_mutex_lock(&lock);
    long i = find(start);
    if (i < 0 || mappings[i].base != start || !mappings[i].registered) {
        pthread_mutex_unlock(&lock);
        pthread_mutex_unlock(&register_lock);
        return 0;
    }
    struct mapping m = mappings[i];
    mappings[i] = mappings[--n_mappings];
    pthread_mutex_unlock(&lock);
    if (!m.orphaned) {
        detach(m.base); /* the GPU lets go of the pages before they become private again */
        make_private(m.base, m.size);
    }
    pthread_mutex_unlock(&register_lock);
    return 1;
}

int vmc_hostmap_device_pointer(const void *p, uint64_t *device) {
    pthread_mutex_lock(&lock);
    long i = find((uintptr_t)p);
    if (i >= 0 && mappings[i].orphaned)
        i = -1;
    if (i >= 0 && device)
        *device = mappings[i].device + ((uintptr_t)p - mappings[i].base);
    pthread_mutex_unlock(&lock);
    return i >= 0;
}

int vmc_hostmap_contains(const void *p, size_t n) {
    pthread_mutex_lock(&lock);
    long i = n ? find((uintptr_t)p) : -1;
    if (i >= 0 && mappings[i].orphaned)
        i = -1;
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
    vmc_put_mapped_copy_args(vmc_call_args(&c), &(struct vmc_mapped_copy_args){
        .device = device, .client_address = (uint64_t)(uintptr_t)host, .count = count, .stream = stream, .mode = (uint8_t)mode,
        .to_device = to_device != 0});
    struct vmc_conn *conn = c.conn;
    if (!async)
        vmc_conn_expect_copy(conn, count);
    /* a synchronous one returns when the GPU says it is done (the worker signals it where it can) */
    st = async ? vmc_call_finish(&c) : vmc_call_finish_signalled(&c);
    vmc_conn_expect_copy(conn, 0);
    return st;
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
    if (!m.orphaned)
        detach(m.base); /* the GPU lets go of the pages before this process does */
    munmap((void *)m.base, m.size);
    return 1;
}

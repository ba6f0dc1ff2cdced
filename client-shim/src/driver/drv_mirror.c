/* Mapped host memory across machines (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP when the client does
 * not share memory with its worker; PROTOCOL.md "Mapped host memory across machines"). The GPU cannot reach
 * this process's pages, so the real mapped memory is the worker's (worker_mirror.c) and the program gets a
 * mirror of it here: what the program writes is copied to the worker before its next driver call (bytes
 * that differ from what was last exchanged), and what the GPU wrote is copied back after each synchronising
 * call (stream, context and event synchronisation, and stream and event queries). A correctly synchronised
 * program, one that reads what kernels wrote only after synchronising with them and writes what they read
 * before launching them, sees what it sees natively; one that polls the memory while a kernel runs, without
 * CUDA calls, never sees the GPU's writes. cuDNN allocates such memory for its handles: with the mirror,
 * its convolutions work across machines. Every driver call compares each mirror with its shadow (memcmp) and
 * every synchronising call copies each mirror back whole, so mirrors are meant for flags and small buffers
 * and are limited to VMC_MAX_MIRROR_BYTES each. */
#define _GNU_SOURCE /* MAP_FIXED_NOREPLACE */
#include "drv_mirror.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bulk.h"
#include "drv_call.h"
#include "shim_call.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

struct mirror {
    unsigned char *local;  /* the program's view */
    unsigned char *shadow; /* what was last exchanged with the worker */
    size_t size;
    uint64_t device;       /* the worker's mapped memory */
};

static struct mirror mirrors[VMC_MAX_MIRRORS];
static int n_mirrors;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int exchanging; /* this thread is copying for the mirrors: its own calls change nothing */

static int synchronising(uint32_t id) {
    switch (id) {
    case VMC_DRV_cuStreamSynchronize:
    case VMC_DRV_cuStreamSynchronize_ptsz:
    case VMC_DRV_cuCtxSynchronize:
    case VMC_DRV_cuCtxSynchronize_v2:
    case VMC_DRV_cuEventSynchronize:
    case VMC_DRV_cuStreamQuery:
    case VMC_DRV_cuStreamQuery_ptsz:
    case VMC_DRV_cuEventQuery: return 1;
    default: return 0;
    }
}

/* After a synchronising call that succeeded: the GPU's writes come back into the program's view. (A query that
 * answered "not ready" pulls nothing: the pull's copy would wait for the very work the program polls.) */
static void pull(uint32_t id, int status) {
    if (status != 0 || exchanging || !synchronising(id) || !__atomic_load_n(&n_mirrors, __ATOMIC_ACQUIRE))
        return;
    exchanging = 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_mirrors; i++) {
        struct mirror *m = &mirrors[i];
        if (vmc_copy_to_host(m->shadow, VMC_NO_INDEX, m->device, m->size, 0, COPY_DRIVER) == cudaSuccess)
            memcpy(m->local, m->shadow, m->size);
    }
    pthread_mutex_unlock(&lock);
    exchanging = 0;
}

void vmc_drv_mirror_push(void) {
    if (exchanging || !__atomic_load_n(&n_mirrors, __ATOMIC_ACQUIRE))
        return;
    exchanging = 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_mirrors; i++) {
        struct mirror *m = &mirrors[i];
        if (memcmp(m->local, m->shadow, m->size) == 0) /* the usual case, at memcmp's speed */
            continue;
        size_t first = 0, last = m->size;
        while (m->local[first] == m->shadow[first])
            first++;
        while (last > first && m->local[last - 1] == m->shadow[last - 1])
            last--;
        if (vmc_copy_to_device(VMC_NO_INDEX, m->device + first, m->local + first, last - first, 0,
                               COPY_DRIVER | COPY_COMPLETE) ==
            cudaSuccess)
            memcpy(m->shadow + first, m->local + first, last - first);
    }
    pthread_mutex_unlock(&lock);
    exchanging = 0;
}

static CUresult worker_alloc(size_t size, unsigned flags, uint64_t *device) {
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_MirrorAlloc, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_mirror_alloc_args(vmc_call_args(&c), &(struct vmc_mirror_alloc_args){.size = size, .flags = flags});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_device_address r;
    vmc_get_device_address(&c.reply, &r);
    *device = r.address;
    return vmc_call_reply_ok(&c) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

static void worker_free(uint64_t device) {
    struct vmc_call c;
    if (vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_MirrorFree, 0) != CUDA_SUCCESS)
        return;
    vmc_put_device_address(vmc_call_args(&c), &(struct vmc_device_address){.address = device});
    (void)vmc_call_finish(&c); /* a worker that is gone has let go of it anyway */
}

/* The mirror's pages, at the worker's address when that range is free here: with unified addressing a
 * program (cuDNN among them) may hand the host address of mapped memory to its kernels as it is, which then
 * is the device address too, as natively. Elsewhere only cuMemHostGetDevicePointer's answer reaches it. */
static unsigned char *mirror_pages(uint64_t device, size_t bytes) {
    void *at = mmap((void *)(uintptr_t)device, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                    -1, 0);
    if (at != MAP_FAILED && (uintptr_t)at != device) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(at, bytes);
        at = MAP_FAILED;
    }
    if (at == MAP_FAILED)
        at = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return at;
}

CUresult vmc_drv_mirror_alloc(void **pp, size_t size, unsigned flags) {
    static int told_size;
    if (size > VMC_MAX_MIRROR_BYTES)
        return vmc_drv_not_supported("cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP) of more than 64 MiB across machines",
                                     "mapped host memory is mirrored between this process and the appliance at every "
                                     "synchronising call; copy large buffers explicitly",
                                     &told_size);
    size_t bytes = size ? size : 1;
    uint64_t device = 0;
    CUresult st = worker_alloc(bytes, flags, &device);
    if (st != CUDA_SUCCESS)
        return st;
    unsigned char *shadow = calloc(1, bytes);
    unsigned char *local = mirror_pages(device, bytes);
    if (local == MAP_FAILED || !shadow) {
        st = CUDA_ERROR_OUT_OF_MEMORY;
        worker_free(device);
    }
    if (st == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        if (n_mirrors < VMC_MAX_MIRRORS) {
            mirrors[n_mirrors] = (struct mirror){local, shadow, bytes, device};
            __atomic_store_n(&n_mirrors, n_mirrors + 1, __ATOMIC_RELEASE);
        } else {
            st = CUDA_ERROR_OUT_OF_MEMORY;
        }
        pthread_mutex_unlock(&lock);
        if (st != CUDA_SUCCESS)
            worker_free(device);
        else
            vmc_call_set_reply_hook(pull);
    }
    if (st != CUDA_SUCCESS) {
        if (local != MAP_FAILED)
            munmap(local, bytes);
        free(shadow);
        return st;
    }
    *pp = local;
    return CUDA_SUCCESS;
}

int vmc_drv_mirror_device_pointer(const void *p, uint64_t *device) {
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_mirrors && !found; i++)
        if ((uintptr_t)p - (uintptr_t)mirrors[i].local < mirrors[i].size) {
            *device = mirrors[i].device + ((uintptr_t)p - (uintptr_t)mirrors[i].local);
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

int vmc_drv_mirror_free(void *p) {
    struct mirror m = {0};
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_mirrors; i++)
        if (mirrors[i].local == p) {
            m = mirrors[i];
            mirrors[i] = mirrors[n_mirrors - 1];
            __atomic_store_n(&n_mirrors, n_mirrors - 1, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&lock);
    if (!m.local)
        return 0;
    worker_free(m.device);
    munmap(m.local, m.size);
    free(m.shadow);
    return 1;
}

/* Mapped host memory for a co-located client (PROTOCOL.md "Mapped host memory"; the client's side is
 * client-shim/src/core/hostmap.c): the client's file is mapped here at the client's own address (or the
 * attach fails) and registered with the GPU as mapped, portable memory, so that kernels read and write the
 * client's pages. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include "vmc_drv_internal.h"
#include "vmc_wire.h"
#include "worker.h"
#include "worker_driver.h"

#define MAX_HOSTMAPS 4096
#define MAX_HOSTMAP_BYTES (64ull << 30)

static struct hostmap {
    uint64_t client;   /* the client's address: its name for the mapping */
    void *here;
    size_t size;
} maps[MAX_HOSTMAPS];
static int n_maps;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* At the client's address, or not at all: programs use a host pointer of mapped memory as its device
 * pointer, as unified addressing lets them, and the GPU would fault on any other address (the client tries
 * another address when this one is taken here). */
static void *map_file(int fd, size_t size, uint64_t client) {
    void *p = mmap((void *)(uintptr_t)client, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
    if (p != MAP_FAILED && p != (void *)(uintptr_t)client) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
        munmap(p, size);
        p = MAP_FAILED;
    }
    return p == MAP_FAILED ? NULL : p;
}

enum vmc_w_result vmc_w_hostmap_attach(struct vmc_wcall *wc) {
    struct vmc_hostmap_attach_args a;
    vmc_get_hostmap_attach_args(&wc->in, &a);
    const char *path = vmc_w_text(wc, a.path, a.path_bytes);
    uint64_t size = a.size, client = a.client_address;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuMemHostRegister_v6050 host_register =
        (PFN_cuMemHostRegister_v6050)vmc_w_drv_resolve("cuMemHostRegister", 6050, 0);
    PFN_cuMemHostGetDevicePointer_v3020 device_pointer =
        (PFN_cuMemHostGetDevicePointer_v3020)vmc_w_drv_resolve("cuMemHostGetDevicePointer", 3020, 0);
    PFN_cuMemHostUnregister_v4000 host_unregister =
        (PFN_cuMemHostUnregister_v4000)vmc_w_drv_resolve("cuMemHostUnregister", 4000, 0);
    CUresult st = CUDA_SUCCESS;
    int fd = -1;
    void *here = NULL;
    CUdeviceptr device = 0;
    if (!host_register || !device_pointer || !host_unregister)
        st = vmc_w_drv_missing("cuMemHostRegister");
    else if (size == 0 || size > MAX_HOSTMAP_BYTES || size % 4096 != 0 || client % 4096 != 0)
        st = CUDA_ERROR_INVALID_VALUE;
    else if ((fd = vmc_w_shm_open_file(path, size)) < 0)
        st = CUDA_ERROR_INVALID_VALUE; /* not a file of this client's (or the client is not on this host) */
    else if (!(here = map_file(fd, (size_t)size, client)))
        st = CUDA_ERROR_ALREADY_MAPPED; /* that range is taken in this process: the client tries another */
    if (fd >= 0)
        close(fd);
    /* a graph's staging buffer may be made while the program captures a stream (drv_graph_staging.c): in the global
     * capture mode the registration, which the program never asked for, would be refused and end the capture.
     * This thread's mode becomes relaxed for it, as CUDA provides for such work. */
    int capture_mode = st == CUDA_SUCCESS ? vmc_w_capture_relax() : -1;
    if (st == CUDA_SUCCESS)
        st = host_register(here, (size_t)size, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
    if (st == CUDA_SUCCESS && (st = device_pointer(&device, here, 0)) != CUDA_SUCCESS)
        host_unregister(here);
    vmc_w_capture_restore(capture_mode); /* back to what the thread had */
    if (st == CUDA_SUCCESS) {
        pthread_mutex_lock(&lock);
        if (n_maps < MAX_HOSTMAPS)
            maps[n_maps++] = (struct hostmap){client, here, (size_t)size};
        else
            st = CUDA_ERROR_OUT_OF_MEMORY;
        pthread_mutex_unlock(&lock);
        if (st != CUDA_SUCCESS)
            host_unregister(here);
    }
    if (st != CUDA_SUCCESS && here)
        munmap(here, (size_t)size);
    else if (st == CUDA_SUCCESS)
        vmc_w_log("mapped host memory: %zu bytes at %#lx%s", (size_t)size, (unsigned long)device,
                  device == client ? " (the client's own address)" : " (the GPU addresses it elsewhere)");
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_device_address(vmc_w_reply_out(wc), &(struct vmc_device_address){.address = st == CUDA_SUCCESS ? (uint64_t)device : 0});
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_hostmap_detach(struct vmc_wcall *wc) {
    struct vmc_client_address a;
    vmc_get_client_address(&wc->in, &a);
    uint64_t client = a.address;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct hostmap m = {0, NULL, 0};
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_maps; i++)
        if (maps[i].client == client) {
            m = maps[i];
            maps[i] = maps[--n_maps];
            break;
        }
    pthread_mutex_unlock(&lock);
    CUresult st = CUDA_ERROR_INVALID_VALUE;
    if (m.here) {
        PFN_cuMemHostUnregister_v4000 host_unregister =
            (PFN_cuMemHostUnregister_v4000)vmc_w_drv_resolve("cuMemHostUnregister", 4000, 0);
        st = host_unregister ? host_unregister(m.here) : vmc_w_drv_missing("cuMemHostUnregister");
        munmap(m.here, m.size);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

/* This worker's address of [client, client + n) of a client's mapping, or NULL when it is not inside one. */
void *vmc_w_hostmap_translate(uint64_t client, uint64_t n) {
    void *here = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_maps; i++)
        if (client - maps[i].client < maps[i].size && n <= maps[i].size - (client - maps[i].client)) {
            here = (char *)maps[i].here + (client - maps[i].client);
            break;
        }
    pthread_mutex_unlock(&lock);
    return here;
}

/* The runtime's copy, for the runtime front end's calls (their statuses are cudaError_t). */
static cudaError_t runtime_copy(uint64_t device, void *host, size_t n, int to_device, cudaStream_t stream, unsigned mode) {
    void *dst = to_device ? (void *)(uintptr_t)device : host;
    const void *src = to_device ? host : (const void *)(uintptr_t)device;
    enum cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    if (!stream && (mode & COPY_PER_THREAD))
        stream = cudaStreamPerThread;
    if (mode & COPY_ASYNC)
        return cudaMemcpyAsync(dst, src, n, kind, stream);
    if (mode & COPY_PER_THREAD) {
        cudaError_t st = cudaMemcpyAsync(dst, src, n, kind, stream);
        return st == cudaSuccess ? cudaStreamSynchronize(stream) : st;
    }
    return cudaMemcpy(dst, src, n, kind);
}

/* A synchronous copy answered through the completion word (worker_completion.c): queued on its stream, the GPU told
 * to write the word once it is done, then waited for as the synchronous copy would have been (by then the client
 * may have returned: the word told it). Never on a stream being captured, where the queued copy and write would
 * become part of the graph: the caller makes the plain synchronous copy there, which the capture refuses. */
static cudaError_t signalled_copy(struct vmc_wcall *wc, uint64_t device, void *host, size_t n, int to_device, uint64_t stream,
                                  unsigned mode) {
    int per_thread = (mode & COPY_PER_THREAD) != 0;
    uint64_t handle = !stream && per_thread ? 2 : stream; /* 2: the per-thread default stream in both APIs */
    cudaError_t st = (mode & COPY_DRIVER)
                         ? (cudaError_t)vmc_w_drv_copy_block((CUdeviceptr)device, host, n, to_device, 1, (CUstream)(uintptr_t)handle, per_thread)
                         : runtime_copy(device, host, n, to_device, (cudaStream_t)(uintptr_t)handle, mode | COPY_ASYNC);
    if (st == cudaSuccess)
        st = vmc_w_completion_wait(wc, vmc_w_completion_signal(wc, handle), n, (cudaStream_t)(uintptr_t)handle, mode);
    return st;
}

enum vmc_w_result vmc_w_hostmap_copy(struct vmc_wcall *wc) {
    struct vmc_mapped_copy_args a;
    vmc_get_mapped_copy_args(&wc->in, &a);
    uint64_t device = a.device, client = a.client_address, count = a.count, stream = a.stream;
    unsigned mode = a.mode;
    int to_device = a.to_device != 0;
    if (!vmc_w_args_ok(wc) || (mode & ~COPY_MODE_BITS) || (wc->async != 0) != ((mode & COPY_ASYNC) != 0))
        return VMC_W_BAD_ARGS;
    void *host = vmc_w_hostmap_translate(client, count);
    int driver = (mode & COPY_DRIVER) != 0;
    cudaError_t st;
    if (!host) /* not memory this worker shares with the client: nothing is read or written */
        st = driver ? (cudaError_t)CUDA_ERROR_INVALID_VALUE : cudaErrorInvalidValue;
    /* a driver copy on another stream than the legacy one is left as it was: asking the runtime whether that stream is
     * being captured could make a context current on this thread that the program's copy did not */
    else if (!wc->async && wc->conn->piped && (!driver || (!stream && !(mode & COPY_PER_THREAD))) &&
             !vmc_w_stream_capturing(stream, (mode & COPY_PER_THREAD) != 0))
        st = signalled_copy(wc, device, host, (size_t)count, to_device, stream, mode);
    else if (driver)
        st = (cudaError_t)vmc_w_drv_copy_block((CUdeviceptr)device, host, (size_t)count, to_device, (mode & COPY_ASYNC) != 0,
                                               (CUstream)(uintptr_t)(!stream && (mode & COPY_PER_THREAD) ? 2 : stream),
                                               (mode & COPY_PER_THREAD) != 0);
    else
        st = runtime_copy(device, host, (size_t)count, to_device, (cudaStream_t)(uintptr_t)stream, mode);
    if (wc->async)
        vmc_w_async_done(wc, st);
    else
        vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

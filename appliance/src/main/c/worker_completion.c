/* The completion word (PROTOCOL.md "Completion word"). On a connection whose calls go through a pipe, the GPU
 * itself says when a synchronous copy is done: after the copy the worker enqueues a stream write of the call's
 * number into the completion area of the pipe's file, which it has registered with the GPU. Both sides wait for
 * that word: the client returns as soon as it sees it, as a native program returns once the GPU writes the
 * driver's semaphore, instead of after the REPLY has crossed the pipe; this thread replies then too, instead of
 * after the driver's own completion, which comes later (waiting for the stream after the write made a 4-byte copy
 * from the device 1 us slower than before; waiting for the word, 1 us faster: H200 runs 183-184). The REPLY still
 * carries the status, and the client reads it before anything else from the connection. Where the word does not
 * come while this thread polls (a long copy, a faulted context: the GPU never writes it), the stream is waited
 * for, which tells what went wrong. Small copies from the device land in the area too, by the GPU's DMA.
 *
 * The client can write the word itself: that makes this thread answer its own copy early, which only the client's
 * own results can suffer from (the memory involved is its own: its pipe file, its mapped memory). */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include <cudaTypedefs.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
#include "vmc_internal.h"
#include "worker.h"
#include "worker_driver.h"
#include "worker_printf_scan.h"

/* ---- device printf ----
 * The driver writes what kernels printed to stdout only at synchronising calls (the CUDA C++ Programming Guide,
 * "Formatted Output": a blocking copy is one). A copy answered on the word makes none, so the program could go on
 * before a kernel's lines that a native copy would have printed first. The word is therefore used after a kernel
 * launch only where that launch cannot have printed: while no module image of the session can print (device printf
 * or assert: worker_printf_scan.c reads each image the program registers or loads), launches do not count. Once one
 * can, every launch counts until a device-wide synchronize that succeeded (cudaDeviceSynchronize, cuCtxSynchronize)
 * has flushed what it printed. Counted across the worker's threads: every launch counts as started before it is
 * served; as it ends, as quiet (no image could print then, nor can a lazy load during the launch have made one
 * appear unseen: images are read before their load returns) or as printing; a synchronize flushes the printing
 * launches that had ended before it began. The word is used while every started launch was quiet or flushed (one
 * started but not ended keeps it unused). Such a synchronize covers one device's one context: with several GPUs in
 * the session, or contexts the program made (cuCtxCreate, green contexts), nothing counts as flushed. */
static uint64_t launches_started, launches_quiet, printing_ended, printing_flushed;
static int contexts_made, images_may_print;

enum call_kind { KIND_UNKNOWN, KIND_LAUNCH, KIND_DEVICE_SYNC, KIND_CONTEXT_CREATE, KIND_OTHER };
#define KINDS_KNOWN 4096
static uint8_t kinds[KINDS_KNOWN];

static enum call_kind kind_of(uint32_t id) {
    enum call_kind k = id < KINDS_KNOWN ? (enum call_kind)__atomic_load_n(&kinds[id], __ATOMIC_RELAXED) : KIND_UNKNOWN;
    if (k != KIND_UNKNOWN)
        return k;
    const char *name = id >= VMC_DRV_FIRST_ID ? vmc_drv_api_name(id) : vmc_api_name(id);
    if (!name)
        k = KIND_OTHER;
    else if (strstr(name, "Launch") && !strstr(name, "HostFunc")) /* kernels, cooperative ones, graphs */
        k = KIND_LAUNCH;
    else if (!strcmp(name, "cudaDeviceSynchronize") || !strncmp(name, "cuCtxSynchronize", 16))
        k = KIND_DEVICE_SYNC;
    else if (strstr(name, "CtxCreate"))
        k = KIND_CONTEXT_CREATE;
    else
        k = KIND_OTHER;
    if (id < KINDS_KNOWN) /* the ids beyond (none yet) are looked up each time */
        __atomic_store_n(&kinds[id], (uint8_t)k, __ATOMIC_RELAXED);
    return k;
}

static void may_print(const char *what, size_t size) {
    __atomic_store_n(&images_may_print, 1, __ATOMIC_SEQ_CST);
    vmc_w_log("device printf: %s (%zu bytes) may print, or cannot be read; synchronous copies after a kernel launch "
              "wait for the driver until a device-wide synchronize", what, size);
}

void vmc_w_completion_image_loaded(const void *image, size_t size) {
    /* once one may print, there is nothing left to learn: every launch counts already */
    if (!__atomic_load_n(&images_may_print, __ATOMIC_SEQ_CST) && vmc_w_image_may_print(image, size))
        may_print("a module image the program loaded", size);
}

void vmc_w_completion_wrapper_registered(const void *wrapper) {
    size_t bytes = 0;
    if (!__atomic_load_n(&images_may_print, __ATOMIC_SEQ_CST) && vmc_w_wrapper_may_print(wrapper, &bytes))
        may_print("a fat binary the program registered", bytes);
}

/* One GPU in the session (as the driver counts them here), and no context but the primary one. */
static int one_context(void) {
    static int devices = -1;
    if (devices < 0) {
        DRV(PFN_cuDeviceGetCount_v2000, device_count, "cuDeviceGetCount", 2000, 0);
        int n = 0;
        devices = device_count && device_count(&n) == CUDA_SUCCESS ? n : 0;
    }
    return devices == 1 && !__atomic_load_n(&contexts_made, __ATOMIC_ACQUIRE);
}

uint64_t vmc_w_completion_call_begins(uint32_t id) {
    switch (kind_of(id)) {
    case KIND_LAUNCH: __atomic_add_fetch(&launches_started, 1, __ATOMIC_SEQ_CST); return 0;
    case KIND_DEVICE_SYNC: return __atomic_load_n(&printing_ended, __ATOMIC_SEQ_CST);
    case KIND_CONTEXT_CREATE: __atomic_store_n(&contexts_made, 1, __ATOMIC_RELEASE); return 0;
    default: return 0;
    }
}

void vmc_w_completion_call_ended(uint32_t id, uint64_t printing_before, int succeeded) {
    enum call_kind k = kind_of(id);
    if (k == KIND_LAUNCH)
        __atomic_add_fetch(__atomic_load_n(&images_may_print, __ATOMIC_SEQ_CST) ? &printing_ended : &launches_quiet, 1,
                           __ATOMIC_SEQ_CST);
    if (k != KIND_DEVICE_SYNC || !succeeded || !one_context())
        return;
    uint64_t seen = __atomic_load_n(&printing_flushed, __ATOMIC_SEQ_CST);
    while (seen < printing_before &&
           !__atomic_compare_exchange_n(&printing_flushed, &seen, printing_before, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
}

static int printf_may_be_pending(void) {
    /* read in this order: both counts only grow, and a launch ends (quiet or printing) after it started, so a sum
     * equal to the starts read last means no launch was in flight and every printing one was flushed */
    uint64_t flushed = __atomic_load_n(&printing_flushed, __ATOMIC_SEQ_CST);
    uint64_t quiet = __atomic_load_n(&launches_quiet, __ATOMIC_SEQ_CST);
    return flushed + quiet != __atomic_load_n(&launches_started, __ATOMIC_SEQ_CST);
}

/* ---- the completion area ---- */

struct registration {
    void *area;
    uint64_t device_address;
    int ok;
};

/* On a helper thread, as the ring's registration: a failure must not become the client thread's last error. */
static void *register_area(void *arg) {
    struct registration *r = arg;
    void *device = NULL;
    /* this thread's own capture mode: in the global one a registration would be refused while the program captures
     * a stream, and end that capture (review probe on an H200) */
    int capture_mode = vmc_w_capture_relax();
    cudaError_t st = cudaHostRegister(r->area, VMC_PIPE_COMPLETION_BYTES, cudaHostRegisterPortable | cudaHostRegisterMapped);
    /* after a reset of another device than the one that registered it, it still is */
    r->ok = st == cudaSuccess || st == cudaErrorHostMemoryAlreadyRegistered;
    if (r->ok && cudaHostGetDevicePointer(&device, r->area, 0) != cudaSuccess) {
        cudaHostUnregister(r->area);
        r->ok = 0;
    }
    r->device_address = (uint64_t)(uintptr_t)device;
    vmc_w_capture_restore(capture_mode);
    return NULL;
}

/* 1 when the connection's completion area is registered in the current runtime epoch (a cudaDeviceReset drops
 * every registration: it is made again), 0 when it cannot be (not piped, or the GPU refused it once). */
static int registered(struct vmc_wconn *c) {
    if (!c->piped || c->completion_state < 0)
        return 0;
    unsigned epoch = vmc_w_staging_epoch();
    if (c->completion_state == 1 && c->completion_epoch == epoch)
        return 1;
    struct registration r = {vmc_pipe_completion_area(&c->pipe), 0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, register_area, &r) == 0)
        pthread_join(t, NULL);
    c->completion_state = r.ok ? 1 : -1;
    c->completion_epoch = epoch;
    c->completion_word = r.device_address + offsetof(struct vmc_pipe_completion, done);
    if (!r.ok)
        vmc_w_log("call pipe: the GPU cannot write its completion area; answers come through the pipe alone");
    return r.ok;
}

uint8_t *vmc_w_completion_landing(struct vmc_wconn *c, int *by_dma) {
    if (!c->piped)
        return NULL;
    *by_dma = registered(c);
    return c->pipe.landing;
}

int vmc_w_completion_signal(struct vmc_wcall *wc, uint64_t stream) {
    struct vmc_wconn *c = wc->conn;
    /* a number whose low 32 bits are 0 is the word's initial value: the client does not wait for it */
    if (wc->async || (uint32_t)wc->number == 0 || printf_may_be_pending() || !registered(c))
        return 0;
    /* the word still says this number from 2^32 calls ago: it cannot tell this call's end (the client checks too) */
    if (__atomic_load_n(&c->pipe.completion->done, __ATOMIC_ACQUIRE) == (uint32_t)wc->number)
        return 0;
    DRV(PFN_cuStreamWriteValue32_v11070, write_value, "cuStreamWriteValue32", 11070, 0);
    /* The default flags put a system-wide memory fence before the write: a copy's bytes are visible first. (Without
     * it, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER, the H200s' driver 580 refused the write: H200 run 184.) */
    CUresult r = write_value ? write_value((CUstream)(uintptr_t)stream, (CUdeviceptr)c->completion_word,
                                           (cuuint32_t)wc->number, CU_STREAM_WRITE_VALUE_DEFAULT)
                             : CUDA_ERROR_NOT_FOUND;
    if (r != CUDA_SUCCESS) {
        vmc_w_log("call pipe: the GPU's completion write was refused (CUresult %d); answers come through the pipe alone",
                  (int)r);
        c->completion_state = -1;
        return 0;
    }
    c->signalled_number = wc->number;
    c->signalled++;
    return 1;
}

cudaError_t vmc_w_completion_wait(struct vmc_wcall *wc, int signalled, size_t bytes, cudaStream_t stream, unsigned mode) {
    long poll = vmc_poll_ns(); /* 0: this thread must not spin (one CPU) */
    if (signalled && poll > 0) {
        /* the word, as the client sees it: the GPU wrote it after the work, and the driver's own completion comes
         * later (H200 run 184: a 4-byte copy from the device 8.7 -> 7.6 us, waiting for the word rather than the
         * stream after it) */
        uint32_t number = (uint32_t)wc->number;
        const uint32_t *done = &wc->conn->pipe.completion->done;
        long copy_ns = (long)(bytes / VMC_COPY_POLL_BYTES_PER_NS);
        if (copy_ns > poll)
            poll = copy_ns < (long)VMC_COPY_POLL_MAX_NS ? copy_ns : (long)VMC_COPY_POLL_MAX_NS;
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (unsigned spins = 0;; spins++) {
            if (__atomic_load_n(done, __ATOMIC_ACQUIRE) == number) {
                wc->conn->answered_on_word++;
                return cudaSuccess;
            }
            if ((spins & 63) == 63) {
                clock_gettime(CLOCK_MONOTONIC, &t);
                if ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) >= poll)
                    break;
            }
        }
    }
    /* not signalled, or not yet: the stream says when (and what went wrong, if anything did) */
    return vmc_w_copy_sync(stream, mode);
}

int vmc_w_completion_taken(struct vmc_wconn *c) {
    return c->piped && c->signalled_number && c->answered_number == c->signalled_number &&
           vmc_pipe_seen(&c->pipe) == (uint32_t)c->signalled_number;
}

void vmc_w_completion_release(struct vmc_wconn *c) {
    if (c->signalled)
        vmc_w_log("completion word: %llu copies signalled, %llu answered on it", (unsigned long long)c->signalled,
                  (unsigned long long)c->answered_on_word);
    if (c->completion_state == 1 && c->completion_epoch == vmc_w_staging_epoch())
        cudaHostUnregister(vmc_pipe_completion_area(&c->pipe)); /* in the relaxed capture mode (vmc_w_release_conn) */
    c->completion_state = 0;
}

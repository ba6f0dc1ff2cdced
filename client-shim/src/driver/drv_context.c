/* Contexts: the calling thread's current context, each context's device and each device's primary
 * context state are remembered here, so that cuCtxGetCurrent, cuCtxGetDevice and
 * cuDevicePrimaryCtxGetState (thousands of calls per PyTorch step) need no round trip. Every call that
 * changes them goes to the worker, whose answer updates what is remembered. A call through the runtime
 * front end may change them behind our back: any runtime call makes the primary context current where no
 * context is (vmc_runtime_epoch() counts them: a remembered "no context" goes stale), and a few change a known
 * current context or a primary context's state (cudaSetDevice, cudaDeviceReset, ...: vmc_runtime_state_epoch()). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "drv_context.h"
#include "drv_launch.h"
#include "drv_device.h"

CUresult vmc_forward_cuCtxGetCurrent(CUcontext *pctx);
CUresult vmc_forward_cuCtxSetCurrent(CUcontext ctx);
CUresult vmc_forward_cuCtxPushCurrent_v2(CUcontext ctx);
CUresult vmc_forward_cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult vmc_forward_cuCtxDestroy_v2(CUcontext ctx);
CUresult vmc_forward_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult vmc_forward_cuCtxGetDevice(CUdevice *device);
CUresult vmc_forward_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult vmc_forward_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult vmc_forward_cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult vmc_forward_cuDevicePrimaryCtxReset_v2(CUdevice dev);
CUresult vmc_forward_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);
CUresult vmc_forward_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);

/* ---- the calling thread's current context ---- */

struct current {
    int known;
    CUcontext ctx;
    uint64_t epoch, state_epoch;
};
static __thread struct current current;

static int current_known(void) {
    return current.known && (current.ctx ? current.state_epoch == vmc_runtime_state_epoch() : current.epoch == vmc_runtime_epoch());
}

static void set_current(CUcontext ctx) {
    current.known = 1;
    current.ctx = ctx;
    current.epoch = vmc_runtime_epoch();
    current.state_epoch = vmc_runtime_state_epoch();
}

static void forget_current(void) { current.known = 0; }

/* ---- which device each context belongs to ---- */

#define MAX_CONTEXTS 256
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUcontext ctx;
    CUdevice dev;
} contexts[MAX_CONTEXTS];
static int n_contexts;

static void note_device(CUcontext ctx, CUdevice dev) {
    if (!ctx)
        return;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < n_contexts && contexts[i].ctx != ctx)
        i++;
    if (i == n_contexts && n_contexts < MAX_CONTEXTS)
        n_contexts++;
    if (i < n_contexts) {
        contexts[i].ctx = ctx;
        contexts[i].dev = dev;
    }
    pthread_mutex_unlock(&lock);
}

static int device_of(CUcontext ctx, CUdevice *dev) {
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_contexts && !found; i++)
        if (contexts[i].ctx == ctx) {
            *dev = contexts[i].dev;
            found = 1;
        }
    pthread_mutex_unlock(&lock);
    return found;
}

static void forget_context(CUcontext ctx) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_contexts; i++)
        if (contexts[i].ctx == ctx) {
            contexts[i] = contexts[--n_contexts];
            break;
        }
    pthread_mutex_unlock(&lock);
}

/* ---- each device's primary context state ---- */

static struct {
    int known;
    unsigned flags;
    int active;
    uint64_t epoch;
} primary[VMC_DRV_MAX_DEVICES];

/* Each device's primary context handle, once retained: NVIDIA's driver keeps the handle across resets. */
static CUcontext primary_handle[VMC_DRV_MAX_DEVICES];

static CUcontext primary_of(CUdevice dev) {
    return dev >= 0 && dev < VMC_DRV_MAX_DEVICES ? __atomic_load_n(&primary_handle[dev], __ATOMIC_ACQUIRE) : NULL;
}

static void forget_primary(CUdevice dev) {
    if (dev >= 0 && dev < VMC_DRV_MAX_DEVICES)
        __atomic_store_n(&primary[dev].known, 0, __ATOMIC_RELEASE);
}

/* ---- the exported functions ---- */

__attribute__((visibility("default"))) CUresult cuCtxGetCurrent(CUcontext *pctx) {
    if (pctx && current_known()) {
        *pctx = current.ctx;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuCtxGetCurrent(pctx);
    if (st == CUDA_SUCCESS && pctx)
        set_current(*pctx);
    return st;
}

__attribute__((visibility("default"))) CUresult cuCtxSetCurrent(CUcontext ctx) {
    CUresult st = vmc_forward_cuCtxSetCurrent(ctx);
    if (st == CUDA_SUCCESS)
        set_current(ctx);
    else
        forget_current();
    return st;
}

__attribute__((visibility("default"))) CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    CUresult st = vmc_forward_cuCtxPushCurrent_v2(ctx);
    if (st == CUDA_SUCCESS)
        set_current(ctx);
    else
        forget_current();
    return st;
}

__attribute__((visibility("default"))) CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    CUresult st = vmc_forward_cuCtxPopCurrent_v2(pctx);
    forget_current(); /* the one below on the stack, which only the worker knows */
    return st;
}

__attribute__((visibility("default"))) CUresult cuCtxDestroy_v2(CUcontext ctx) {
    if (ctx)
        vmc_drv_context_storage_drop(ctx);
    CUresult st = vmc_forward_cuCtxDestroy_v2(ctx);
    if (st == CUDA_SUCCESS) {
        forget_context(ctx);
        forget_current();
        vmc_drv_forget_handles();
    }
    return st;
}

/* Parameters that ask for nothing (CUDA 13's samples pass a zeroed CUctxCreateParams) are NULL's twin; ones
 * that ask for an execution affinity or a CIG context go to the forwarder, which refuses them and says so. */
static int asks_nothing(const CUctxCreateParams *p) {
    return !p || ((!p->execAffinityParams || p->numExecAffinityParams == 0) && !p->cigParams);
}

__attribute__((visibility("default"))) CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                                              unsigned int flags, CUdevice dev) {
    if (asks_nothing(ctxCreateParams))
        ctxCreateParams = NULL;
    CUresult st = vmc_forward_cuCtxCreate_v4(pctx, ctxCreateParams, flags, dev);
    if (st == CUDA_SUCCESS && pctx) {
        note_device(*pctx, dev);
        set_current(*pctx); /* a new context is made current */
    } else {
        forget_current();
    }
    return st;
}

__attribute__((visibility("default"))) CUresult cuCtxGetDevice(CUdevice *device) {
    CUdevice dev;
    if (device && current_known() && current.ctx && device_of(current.ctx, &dev)) {
        *device = dev;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuCtxGetDevice(device);
    if (st == CUDA_SUCCESS && device && current_known())
        note_device(current.ctx, *device);
    return st;
}

/* CUDA 13's form, naming the context (NULL: the current one). */
__attribute__((visibility("default"))) CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
    CUdevice dev;
    if (!ctx)
        return cuCtxGetDevice(device);
    if (device && device_of(ctx, &dev)) {
        *device = dev;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuCtxGetDevice_v2(device, ctx);
    if (st == CUDA_SUCCESS && device)
        note_device(ctx, *device);
    return st;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    CUresult st = vmc_forward_cuDevicePrimaryCtxRetain(pctx, dev);
    if (st == CUDA_SUCCESS && pctx) {
        note_device(*pctx, dev);
        if (dev >= 0 && dev < VMC_DRV_MAX_DEVICES)
            __atomic_store_n(&primary_handle[dev], *pctx, __ATOMIC_RELEASE);
    }
    forget_primary(dev);
    return st;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    CUresult st = vmc_forward_cuDevicePrimaryCtxRelease_v2(dev);
    forget_primary(dev);
    unsigned flags;
    int active = 1;
    /* the last release destroys the primary context (only the worker counts the retains) */
    if (st == CUDA_SUCCESS && primary_of(dev) && cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active) {
        vmc_drv_context_storage_drop(primary_of(dev));
        vmc_drv_forget_handles();
    }
    return st;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    if (primary_of(dev))
        vmc_drv_context_storage_drop(primary_of(dev));
    CUresult st = vmc_forward_cuDevicePrimaryCtxReset_v2(dev);
    forget_primary(dev);
    forget_current();
    if (st == CUDA_SUCCESS)
        vmc_drv_forget_handles();
    return st;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
    CUresult st = vmc_forward_cuDevicePrimaryCtxSetFlags_v2(dev, flags);
    forget_primary(dev);
    return st;
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    uint64_t epoch = vmc_runtime_state_epoch(); /* an active primary context goes inactive only by a reset */
    if (flags && active && dev >= 0 && dev < VMC_DRV_MAX_DEVICES && __atomic_load_n(&primary[dev].known, __ATOMIC_ACQUIRE) &&
        primary[dev].epoch == epoch) {
        *flags = primary[dev].flags;
        *active = primary[dev].active;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuDevicePrimaryCtxGetState(dev, flags, active);
    /* Only an active primary context's state is final until one of the calls above changes it. */
    if (st == CUDA_SUCCESS && flags && active && *active && dev >= 0 && dev < VMC_DRV_MAX_DEVICES) {
        primary[dev].flags = *flags;
        primary[dev].active = *active;
        primary[dev].epoch = epoch;
        __atomic_store_n(&primary[dev].known, 1, __ATOMIC_RELEASE);
    }
    return st;
}

/* ---- the older ABIs of the same calls: one behaviour, the current one's (the runtimes still ask for
 * some of them by their first version, e.g. cuDevicePrimaryCtxReset@7000) ---- */

__attribute__((visibility("default"))) CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

/* The older ABIs of cuCtxCreate (programs that load the driver by hand, e.g. matrixMulDynlinkJIT) */
__attribute__((visibility("default"))) CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

__attribute__((visibility("default"))) CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                                              int numParams, unsigned int flags, CUdevice dev) {
    if (numParams > 0 && !paramsArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUctxCreateParams params = {.execAffinityParams = paramsArray, .numExecAffinityParams = numParams};
    return cuCtxCreate_v4(pctx, &params, flags, dev);
}

__attribute__((visibility("default"))) CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }

__attribute__((visibility("default"))) CUresult cuCtxPopCurrent(CUcontext *pctx) { return cuCtxPopCurrent_v2(pctx); }

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    return cuDevicePrimaryCtxRelease_v2(dev);
}

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

__attribute__((visibility("default"))) CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

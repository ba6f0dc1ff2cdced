/* Kernels and launches. A launch is sent without waiting (its errors surface at the next synchronising
 * call, as CUDA's do), with its arguments laid out at the offsets the worker's driver reports for that
 * kernel (cuFuncGetParamInfo / cuKernelGetParamInfo, asked once per kernel); the worker launches them as
 * one argument buffer (CU_LAUNCH_PARAM_BUFFER_POINTER). What cannot change about a kernel is
 * remembered: which handles are CUkernels, their functions per context, their fixed attributes, names. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "drv_cache.h"
#include "drv_call.h"
#include "drv_context.h"
#include "drv_device.h"
#include "drv_launch.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

CUresult vmc_forward_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult vmc_forward_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult vmc_forward_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev);
CUresult vmc_forward_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
CUresult vmc_forward_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev);
CUresult vmc_forward_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);

static struct vmc_drv_cache kernels = VMC_DRV_CACHE_INIT;    /* CUkernel handles this process was given */
static struct vmc_drv_cache functions = VMC_DRV_CACHE_INIT;  /* (kernel, context) -> CUfunction */
static struct vmc_drv_cache attributes = VMC_DRV_CACHE_INIT; /* (handle, attribute, device) -> value */
static struct vmc_drv_cache layouts = VMC_DRV_CACHE_INIT;    /* (handle, kind) -> struct layout * */
static struct vmc_drv_cache names = VMC_DRV_CACHE_INIT;      /* (handle, kind) -> char * */
/* (handle, kind) -> max threads per block << 32 | max dynamic shared bytes: changed by cu*SetAttribute */
static struct vmc_drv_cache limits = VMC_DRV_CACHE_INIT;
/* (handle, attribute, device) -> the value cu*SetAttribute last set successfully */
static struct vmc_drv_cache set_values = VMC_DRV_CACHE_INIT;

static unsigned kind_of(const void *handle) {
    uint64_t v;
    return vmc_drv_cache_get(&kernels, (uint64_t)(uintptr_t)handle, 0, 0, &v) ? VMC_KIND_KERNEL : VMC_KIND_FUNCTION;
}

__attribute__((visibility("default"))) CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    CUresult st = vmc_forward_cuLibraryGetKernel(pKernel, library, name);
    if (st == CUDA_SUCCESS && pKernel && *pKernel) /* remembered with its library, forgotten with it */
        vmc_drv_cache_put(&kernels, (uint64_t)(uintptr_t)*pKernel, 0, 0, (uint64_t)(uintptr_t)library);
    return st;
}

/* ---- handles the driver may hand out again ----
 * What is remembered here is keyed by the driver's handles (functions, kernels, contexts), which the
 * driver reuses once a module, library or context is gone: a layout remembered for a dead function would
 * pack a new function's arguments wrongly. So all of it goes with any module, library or context; the
 * layout objects themselves are kept, as a launch on another thread may still be packing with one. */
void vmc_drv_forget_handles(void) {
    vmc_drv_cache_clear(&layouts);
    vmc_drv_cache_clear(&limits);
    vmc_drv_cache_clear(&set_values);
    vmc_drv_forget_context_limits();
    vmc_drv_cache_clear(&names);
    vmc_drv_cache_clear(&attributes);
    vmc_drv_cache_clear(&functions);
}

CUresult vmc_forward_cuModuleUnload(CUmodule hmod);
CUresult vmc_forward_cuLibraryUnload(CUlibrary library);

__attribute__((visibility("default"))) CUresult cuModuleUnload(CUmodule hmod) {
    CUresult st = vmc_forward_cuModuleUnload(hmod);
    if (st == CUDA_SUCCESS)
        vmc_drv_forget_handles();
    return st;
}

__attribute__((visibility("default"))) CUresult cuLibraryUnload(CUlibrary library) {
    CUresult st = vmc_forward_cuLibraryUnload(library);
    if (st == CUDA_SUCCESS) {
        vmc_drv_cache_remove_value(&kernels, (uint64_t)(uintptr_t)library);
        vmc_drv_forget_handles();
    }
    return st;
}

__attribute__((visibility("default"))) CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    CUcontext ctx = NULL;
    uint64_t v;
    if (pFunc && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx &&
        vmc_drv_cache_get(&functions, (uint64_t)(uintptr_t)kernel, (uint64_t)(uintptr_t)ctx, 0, &v)) {
        *pFunc = (CUfunction)(uintptr_t)v;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuKernelGetFunction(pFunc, kernel);
    if (st == CUDA_SUCCESS && pFunc && ctx)
        vmc_drv_cache_put(&functions, (uint64_t)(uintptr_t)kernel, (uint64_t)(uintptr_t)ctx, 0, (uint64_t)(uintptr_t)*pFunc);
    return st;
}

/* A function's attributes change only through cu*SetAttribute on it or on its kernel (compilation fixed
 * the others), so every answer is kept until such a set: PyTorch asks a kernel's attributes and sets its
 * dynamic shared memory before many launches, hundreds of times per training step. */
/* Counts the sets that reached the worker: an answer fetched while one was under way is not kept. */
static uint64_t sets_made;

static CUresult get_attribute(int *pi, CUfunction_attribute attrib, uint64_t handle, uint64_t device,
                              CUresult (*ask)(int *pi, CUfunction_attribute attrib, uint64_t handle, uint64_t device)) {
    uint64_t v;
    if (pi && vmc_drv_cache_get(&attributes, handle, (uint64_t)attrib, device, &v)) {
        *pi = (int)v;
        return CUDA_SUCCESS;
    }
    uint64_t before = __atomic_load_n(&sets_made, __ATOMIC_ACQUIRE);
    CUresult st = ask(pi, attrib, handle, device);
    if (st == CUDA_SUCCESS && pi && __atomic_load_n(&sets_made, __ATOMIC_ACQUIRE) == before) {
        vmc_drv_cache_put(&attributes, handle, (uint64_t)attrib, device, (uint64_t)*pi);
        /* a set that began meanwhile may have forgotten this handle before the put: forget it again */
        if (__atomic_load_n(&sets_made, __ATOMIC_ACQUIRE) != before)
            vmc_drv_cache_remove_handles(&attributes, &handle, 1);
    }
    return st;
}

static CUresult ask_kernel(int *pi, CUfunction_attribute attrib, uint64_t handle, uint64_t device) {
    return vmc_forward_cuKernelGetAttribute(pi, attrib, (CUkernel)(uintptr_t)handle, (CUdevice)(int64_t)device);
}

static CUresult ask_function(int *pi, CUfunction_attribute attrib, uint64_t handle, uint64_t device) {
    (void)device;
    return vmc_forward_cuFuncGetAttribute(pi, attrib, (CUfunction)(uintptr_t)handle);
}

__attribute__((visibility("default"))) CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                                                     CUdevice dev) {
    return get_attribute(pi, attrib, (uint64_t)(uintptr_t)kernel, (uint64_t)(int64_t)dev, ask_kernel);
}

/* A function belongs to one context, hence one device: the key's device word is unused (-1). */
__attribute__((visibility("default"))) CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    return get_attribute(pi, attrib, (uint64_t)(uintptr_t)hfunc, UINT64_MAX, ask_function);
}

/* Setting an attribute can move others of the same function (a larger dynamic shared memory size lowers
 * the block limit), and a kernel's setting is its functions': what is kept about the handle, its kernel
 * and its functions goes. Other kernels' answers stay. */
static void forget_attributes_of(uint64_t handle) {
    uint64_t related[65];
    related[0] = handle;
    int n = 1 + vmc_drv_cache_related(&functions, handle, related + 1, 64);
    vmc_drv_cache_remove_handles(&attributes, related, n);
    vmc_drv_cache_remove_handles(&limits, related, n);
    /* what was set on the kernel or functions related to it no longer holds; what was set on this handle
     * for the other attributes does (settable attributes do not move each other) */
    vmc_drv_cache_remove_handles(&set_values, related + 1, n - 1);
}

/* Setting an attribute to the value it was last set to changes nothing, and natively succeeds again:
 * answered here (device word: the kernel's device, -1 for a function). */
static CUresult set_attribute(uint64_t handle, CUfunction_attribute attrib, int value, uint64_t device,
                              CUresult (*forward)(uint64_t handle, CUfunction_attribute attrib, int value, uint64_t device)) {
    uint64_t v;
    if (vmc_drv_cache_get(&set_values, handle, (uint64_t)attrib, device, &v) && v == (uint64_t)(int64_t)value)
        return CUDA_SUCCESS;
    __atomic_add_fetch(&sets_made, 1, __ATOMIC_ACQ_REL);
    CUresult st = forward(handle, attrib, value, device);
    __atomic_add_fetch(&sets_made, 1, __ATOMIC_ACQ_REL);
    forget_attributes_of(handle); /* after the set too, so that no answer fetched meanwhile survives it */
    if (st == CUDA_SUCCESS)
        vmc_drv_cache_put(&set_values, handle, (uint64_t)attrib, device, (uint64_t)(int64_t)value);
    return st;
}

static CUresult forward_kernel_set(uint64_t handle, CUfunction_attribute attrib, int value, uint64_t device) {
    return vmc_forward_cuKernelSetAttribute(attrib, value, (CUkernel)(uintptr_t)handle, (CUdevice)(int64_t)device);
}

static CUresult forward_function_set(uint64_t handle, CUfunction_attribute attrib, int value, uint64_t device) {
    (void)device;
    return vmc_forward_cuFuncSetAttribute((CUfunction)(uintptr_t)handle, attrib, value);
}

__attribute__((visibility("default"))) CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                                                     CUdevice dev) {
    return set_attribute((uint64_t)(uintptr_t)kernel, attrib, val, (uint64_t)(int64_t)dev, forward_kernel_set);
}

__attribute__((visibility("default"))) CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    return set_attribute((uint64_t)(uintptr_t)hfunc, attrib, value, UINT64_MAX, forward_function_set);
}

/* ---- names ---- */

static CUresult name_of(const char **name, const void *handle, unsigned kind) {
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v;
    if (vmc_drv_cache_get(&names, (uint64_t)(uintptr_t)handle, kind, 0, &v)) {
        *name = (const char *)(uintptr_t)v;
        return CUDA_SUCCESS;
    }
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_FunctionName, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_function_args(vmc_call_args(&c),
                          &(struct vmc_function_args){.handle = (uint64_t)(uintptr_t)handle, .kind = (uint8_t)kind});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_function_name_reply r;
    vmc_get_function_name_reply(&c.reply, &r);
    if (!vmc_call_reply_ok(&c) || r.name_bytes >= (1u << 16))
        return CUDA_ERROR_UNKNOWN;
    char *s = malloc((size_t)r.name_bytes + 1);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(s, r.name, r.name_bytes);
    s[r.name_bytes] = 0;
    /* the driver's string lives as long as the module; ours as long as the process */
    vmc_drv_cache_put(&names, (uint64_t)(uintptr_t)handle, kind, 0, (uint64_t)(uintptr_t)s);
    *name = s;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuFuncGetName(const char **name, CUfunction hfunc) {
    return name_of(name, hfunc, VMC_KIND_FUNCTION);
}

__attribute__((visibility("default"))) CUresult cuKernelGetName(const char **name, CUkernel hfunc) {
    return name_of(name, hfunc, VMC_KIND_KERNEL);
}

/* ---- parameter layouts ---- */

struct layout {
    uint32_t n;
    uint32_t extent;   /* end of the last parameter: the size of the laid-out buffer */
    uint32_t offset[]; /* n offsets, then n sizes */
};

static const uint32_t *sizes_of(const struct layout *l) { return l->offset + l->n; }

/* A CUkernel's limits are those of its function in the current context; a CUfunction has one context. */
static uint64_t limits_context(unsigned kind) {
    CUcontext ctx = NULL;
    if (kind == VMC_KIND_KERNEL && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS)
        return (uint64_t)(uintptr_t)ctx;
    return 0;
}

/* The kernel's parameter layout, and the limits a launch is checked against (check_launch below). */
static CUresult fetch_layout(const void *f, unsigned kind) {
    uint64_t where = limits_context(kind);
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_ParamLayout, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_function_args(vmc_call_args(&c), &(struct vmc_function_args){.handle = (uint64_t)(uintptr_t)f, .kind = (uint8_t)kind});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_param_layout_reply r;
    vmc_get_param_layout_reply(&c.reply, &r);
    uint32_t n = r.n;
    if (n > VMC_MAX_PARAMS || !vmc_call_reply_ok(&c))
        return CUDA_ERROR_UNKNOWN;
    struct layout *l = malloc(sizeof *l + 2 * (size_t)n * sizeof(uint32_t));
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->n = n;
    l->extent = 0;
    uint32_t *sizes = l->offset + n;
    for (uint32_t i = 0; i < n; i++) {
        l->offset[i] = vmc_param_layout_reply_offsets_at(&r, i);
        sizes[i] = vmc_param_layout_reply_sizes_at(&r, i);
        if (l->offset[i] + (uint64_t)sizes[i] > l->extent)
            l->extent = l->offset[i] + sizes[i];
    }
    uint64_t max_threads = r.max_threads_per_block, max_shared = r.max_dynamic_shared;
    if (l->extent > 64 * 1024) {
        free(l);
        return CUDA_ERROR_UNKNOWN;
    }
    uint64_t v;
    /* another thread may have fetched it too: the first layout stays, as callers may hold it */
    if (vmc_drv_cache_get(&layouts, (uint64_t)(uintptr_t)f, kind, 0, &v))
        free(l);
    else
        vmc_drv_cache_put(&layouts, (uint64_t)(uintptr_t)f, kind, 0, (uint64_t)(uintptr_t)l);
    vmc_drv_cache_put(&limits, (uint64_t)(uintptr_t)f, kind, where, max_threads << 32 | max_shared);
    return CUDA_SUCCESS;
}

static CUresult layout_of(const void *f, unsigned kind, const struct layout **out) {
    uint64_t v;
    if (!vmc_drv_cache_get(&layouts, (uint64_t)(uintptr_t)f, kind, 0, &v)) {
        CUresult st = fetch_layout(f, kind);
        if (st != CUDA_SUCCESS)
            return st;
        vmc_drv_cache_get(&layouts, (uint64_t)(uintptr_t)f, kind, 0, &v);
    }
    *out = (const struct layout *)(uintptr_t)v;
    return CUDA_SUCCESS;
}

/* ---- what the driver refuses at launch time ---- */

struct grid {
    unsigned gx, gy, gz, bx, by, bz, shared;
};

static int over(unsigned value, const struct vmc_drv_device *d, CUdevice_attribute limit) {
    return d->attr_status[limit] == CUDA_SUCCESS && d->attr[limit] > 0 && value > (unsigned)d->attr[limit];
}

/* Our launches are sent without waiting for an answer, but NVIDIA's driver refuses a bad configuration
 * at once (CUDA_ERROR_INVALID_VALUE, not sticky), and programs test for it right after the launch: the
 * configuration is checked here against the device's and the function's limits. */
static CUresult check_launch(const void *f, unsigned kind, const struct grid *g) {
    if (!g->gx || !g->gy || !g->gz || !g->bx || !g->by || !g->bz)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice dev;
    const struct vmc_drv_device *d;
    uint64_t threads = (uint64_t)g->bx * g->by * g->bz;
    if (cuCtxGetDevice(&dev) == CUDA_SUCCESS && vmc_drv_device(dev, &d) == CUDA_SUCCESS &&
        (over(g->bx, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X) || over(g->by, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y) ||
         over(g->bz, d, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z) || over(g->gx, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X) ||
         over(g->gy, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y) || over(g->gz, d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z) ||
         (threads > UINT32_MAX || over((unsigned)threads, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK))))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v, where = limits_context(kind);
    int refreshed = 0;
again:
    if (!vmc_drv_cache_get(&limits, (uint64_t)(uintptr_t)f, kind, where, &v)) {
        CUresult st = fetch_layout(f, kind);
        if (st != CUDA_SUCCESS)
            return st;
        if (!vmc_drv_cache_get(&limits, (uint64_t)(uintptr_t)f, kind, where, &v))
            return CUDA_SUCCESS;
    }
    uint64_t max_threads = v >> 32, max_shared = v & UINT32_MAX;
    if ((g->shared > max_shared || threads > max_threads) && !refreshed) {
        /* what is kept may predate a set made through a handle not known to be this function's: ask again
         * before refusing */
        refreshed = 1;
        uint64_t key = (uint64_t)(uintptr_t)f;
        vmc_drv_cache_remove_handles(&limits, &key, 1);
        goto again;
    }
    if (g->shared > max_shared)
        return CUDA_ERROR_INVALID_VALUE;
    /* within the device's limit but beyond this function's (its registers, __launch_bounds__) */
    if (threads > max_threads)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

/* The argument bytes, laid out: from kernelParams at the kernel's offsets, or as the caller laid them out
 * itself (`extra` with CU_LAUNCH_PARAM_BUFFER_POINTER). *buf is NULL for no arguments. */
static CUresult arguments(const void *f, unsigned kind, void **kernelParams, void **extra, unsigned char **buf,
                          size_t *size, int *owned) {
    *buf = NULL;
    *size = 0;
    *owned = 0;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (extra) {
        void *ptr = NULL;
        size_t *bytes = NULL;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (i > 64)
                return CUDA_ERROR_INVALID_VALUE;
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                ptr = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                bytes = extra[i + 1];
            else
                return CUDA_ERROR_INVALID_VALUE;
        }
        if (!ptr || !bytes || *bytes > VMC_MAX_LAUNCH_ARG_BYTES)
            return CUDA_ERROR_INVALID_VALUE;
        *buf = ptr;
        *size = *bytes;
        return CUDA_SUCCESS;
    }
    const struct layout *l;
    CUresult st = layout_of(f, kind, &l);
    if (st != CUDA_SUCCESS)
        return st;
    if (l->n == 0)
        return CUDA_SUCCESS;
    if (!kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *b = calloc(1, l->extent);
    if (!b)
        return CUDA_ERROR_OUT_OF_MEMORY;
    const uint32_t *sizes = sizes_of(l);
    for (uint32_t i = 0; i < l->n; i++)
        memcpy(b + l->offset[i], kernelParams[i], sizes[i]);
    *buf = b;
    *size = l->extent;
    *owned = 1;
    return CUDA_SUCCESS;
}

CUresult vmc_drv_kernel_arguments(const void *f, void **kernelParams, void **extra, unsigned char **buf, size_t *size,
                                  int *owned, unsigned *kind) {
    *kind = kind_of(f);
    return arguments(f, *kind, kernelParams, extra, buf, size, owned);
}

/* The grid part of a launch configuration, as the worker reads it (read_grid in worker_driver.c). */
static struct vmc_launch_grid wire_grid(const struct grid *g, CUstream stream) {
    return (struct vmc_launch_grid){.grid = {g->gx, g->gy, g->gz}, .block = {g->bx, g->by, g->bz}, .shared_mem = g->shared,
                                    .stream = (uint64_t)(uintptr_t)stream};
}

static CUresult launch(const void *f, const struct grid *g, CUstream stream, void **kernelParams, void **extra,
                       const CUlaunchAttribute *attrs, unsigned n_attrs, unsigned flags) {
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    if (n_attrs > VMC_MAX_LAUNCH_ATTRS || (n_attrs && !attrs))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned kind = kind_of(f);
    CUresult st = check_launch(f, kind, g);
    if (st != CUDA_SUCCESS)
        return st;
    unsigned char *buf;
    size_t size;
    int owned;
    st = arguments(f, kind, kernelParams, extra, &buf, &size, &owned);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_call c;
    st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_Launch, 1);
    if (st == CUDA_SUCCESS) {
        vmc_put_drv_launch_args(vmc_call_args(&c), &(struct vmc_drv_launch_args){
            .function = (uint64_t)(uintptr_t)f, .kind = (uint8_t)kind, .grid = wire_grid(g, stream), .flags = (uint8_t)flags,
            .n_attrs = n_attrs, .attrs = attrs, .params_bytes = (uint32_t)size, .params = buf});
        st = (CUresult)vmc_call_finish(&c);
    }
    if (owned)
        free(buf);
    return st;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                              unsigned shared, CUstream stream, void **kernelParams, void **extra, unsigned flags) {
    struct grid g = {gx, gy, gz, bx, by, bz, shared};
    return launch(f, &g, stream, kernelParams, extra, NULL, 0, flags);
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                               unsigned int gridDimZ, unsigned int blockDimX,
                                                               unsigned int blockDimY, unsigned int blockDimZ,
                                                               unsigned int sharedMemBytes, CUstream hStream,
                                                               void **kernelParams, void **extra) {
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, extra, 0);
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                                    unsigned int gridDimY, unsigned int gridDimZ,
                                                                    unsigned int blockDimX, unsigned int blockDimY,
                                                                    unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                                    CUstream hStream, void **kernelParams, void **extra) {
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, extra, VMC_LAUNCH_PER_THREAD);
}

__attribute__((visibility("default"))) CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                                          unsigned int gridDimY, unsigned int gridDimZ,
                                                                          unsigned int blockDimX, unsigned int blockDimY,
                                                                          unsigned int blockDimZ,
                                                                          unsigned int sharedMemBytes, CUstream hStream,
                                                                          void **kernelParams) {
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, NULL, VMC_LAUNCH_COOPERATIVE);
}

__attribute__((visibility("default"))) CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                                               unsigned int gridDimY,
                                                                               unsigned int gridDimZ,
                                                                               unsigned int blockDimX,
                                                                               unsigned int blockDimY,
                                                                               unsigned int blockDimZ,
                                                                               unsigned int sharedMemBytes,
                                                                               CUstream hStream, void **kernelParams) {
    return launch_kernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                         kernelParams, NULL, VMC_LAUNCH_COOPERATIVE | VMC_LAUNCH_PER_THREAD);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra, unsigned flags) {
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    struct grid g = {config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                     config->blockDimZ, config->sharedMemBytes};
    return launch(f, &g, config->hStream, kernelParams, extra, config->attrs, config->numAttrs, flags);
}

__attribute__((visibility("default"))) CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                                                 void **kernelParams, void **extra) {
    return launch_ex(config, f, kernelParams, extra, 0);
}

__attribute__((visibility("default"))) CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                                                      void **kernelParams, void **extra) {
    return launch_ex(config, f, kernelParams, extra, VMC_LAUNCH_PER_THREAD);
}

/* ---- cluster occupancy: the configuration travels as a launch's does ---- */

static CUresult cluster_occupancy(uint32_t id, int *value, CUfunction func, const CUlaunchConfig *config) {
    if (!value || !config || !func)
        return CUDA_ERROR_INVALID_VALUE;
    if (config->numAttrs > VMC_MAX_LAUNCH_ATTRS || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    struct grid g = {config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                     config->blockDimZ, config->sharedMemBytes};
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_cluster_occupancy_args(vmc_call_args(&c), &(struct vmc_cluster_occupancy_args){
        .function = (uint64_t)(uintptr_t)func, .grid = wire_grid(&g, config->hStream), .n_attrs = config->numAttrs,
        .attrs = config->attrs});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_int_value r;
    vmc_get_int_value(&c.reply, &r);
    if (!vmc_call_reply_ok(&c))
        return CUDA_ERROR_UNKNOWN;
    *value = (int)r.value;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func,
                                                                             const CUlaunchConfig *config) {
    return cluster_occupancy(VMC_DRV_cuOccupancyMaxActiveClusters, numClusters, func, config);
}

__attribute__((visibility("default"))) CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func,
                                                                                   const CUlaunchConfig *config) {
    return cluster_occupancy(VMC_DRV_cuOccupancyMaxPotentialClusterSize, clusterSize, func, config);
}

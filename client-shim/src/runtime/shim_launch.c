/* Kernel launches through every entry point CUDA 13 programs use:
 *   <<<>>>            __cudaPushCallConfiguration, __cudaPopCallConfiguration, __cudaGetKernel,
 *                     __cudaLaunchKernel / __cudaLaunchKernel_ptsz
 *   runtime API       cudaLaunchKernel(_ptsz), cudaLaunchKernelExC(_ptsz), cudaGetKernel
 * A launch is one asynchronous frame: kernel index, geometry and the packed argument bytes. The
 * argument sizes come from the worker (cudaFuncGetParamInfo there) once per kernel. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "shim_call.h"
#include "shim_registry.h"
#include "shim_session.h"
#include "vmc_api.h"
#include "vmc_internal.h"

#define MAX_LAUNCH_ATTRS 64
/* a kernel's parameters take at most 32,764 bytes (CUDA 12.1+); the worker's figures beyond 64 KiB are malformed */
#define MAX_PARAM_BYTES (64u << 10)

/* ---- <<<>>> configuration stack (per thread, as in the real runtime) ---- */

struct launch_config {
    dim3 grid, block;
    size_t shared_mem;
    void *stream;
};
#define CONFIG_DEPTH 32
static __thread struct launch_config config_stack[CONFIG_DEPTH];
static __thread int config_depth;

__attribute__((visibility("default"))) unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                                                            size_t sharedMem, struct CUstream_st *stream) {
    if (config_depth == CONFIG_DEPTH)
        return 1;
    config_stack[config_depth++] = (struct launch_config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

__attribute__((visibility("default"))) cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                                                             size_t *sharedMem, void *stream) {
    if (config_depth == 0)
        return cudaErrorMissingConfiguration;
    struct launch_config c = config_stack[--config_depth];
    *gridDim = c.grid;
    *blockDim = c.block;
    *sharedMem = c.shared_mem;
    *(void **)stream = c.stream;
    return cudaSuccess;
}

/* The kernel handle is the shim's record of the kernel: launches through it need no lookup. */
__attribute__((visibility("default"))) cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun) {
    struct vmc_kernel *k = vmc_kernel_mut(hostFun);
    if (!kernel)
        return cudaErrorInvalidValue;
    *kernel = (cudaKernel_t)k;
    return k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

__attribute__((visibility("default"))) cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr) {
    return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

/* ---- parameter layout ---- */

static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;

static cudaError_t ensure_layout(struct vmc_kernel *k) {
    if (__atomic_load_n(&k->layout_known, __ATOMIC_ACQUIRE))
        return cudaSuccess;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_KernelParamLayout, 0);
    if (st != cudaSuccess)
        return st;
    vmc_put_kernel_param_layout_args(vmc_call_args(&c), &(struct vmc_kernel_param_layout_args){.kernel = k->index});
    st = vmc_call_finish(&c);
    if (st != cudaSuccess)
        return st;
    struct vmc_kernel_param_layout_reply r;
    vmc_get_kernel_param_layout_reply(&c.reply, &r);
    if (r.n > 4096 || !vmc_call_reply_ok(&c))
        return vmc_session_lost(c.conn, "malformed kernel parameter layout");
    uint32_t n = r.n;
    uint32_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    if (!sizes)
        return cudaErrorMemoryAllocation;
    uint64_t total = 0; /* the worker's figures are checked: the packed arguments are copied by them */
    for (uint32_t i = 0; i < n; i++) {
        sizes[i] = vmc_kernel_param_layout_reply_sizes_at(&r, i);
        total += sizes[i];
    }
    if (total > MAX_PARAM_BYTES) {
        free(sizes);
        return vmc_session_lost(c.conn, "malformed kernel parameter layout");
    }
    pthread_mutex_lock(&layout_lock);
    if (!k->layout_known) {
        k->n_params = n;
        k->param_sizes = sizes;
        k->args_bytes = (uint32_t)total;
        __atomic_store_n(&k->layout_known, 1, __ATOMIC_RELEASE);
        sizes = NULL;
    }
    pthread_mutex_unlock(&layout_lock);
    free(sizes);
    return cudaSuccess;
}

/* The kernel's arguments packed in order (launch_args.params); small ones on the caller's stack. */
struct packed_args {
    uint8_t small[1024];
    uint8_t *bytes;
};

static cudaError_t pack_args(const struct vmc_kernel *k, void **args, struct packed_args *p) {
    p->bytes = k->args_bytes <= sizeof p->small ? p->small : malloc(k->args_bytes);
    if (!p->bytes)
        return cudaErrorMemoryAllocation;
    uint8_t *at = p->bytes;
    for (uint32_t i = 0; i < k->n_params; i++) {
        memcpy(at, args[i], k->param_sizes[i]);
        at += k->param_sizes[i];
    }
    return cudaSuccess;
}

static void release_packed(struct packed_args *p) {
    if (p->bytes != p->small)
        free(p->bytes);
}

/* Checks a launch and packs its arguments: what both launch operations do before their frame. */
static cudaError_t prepare_launch(struct vmc_kernel *k, void **args, struct packed_args *p) {
    if (!k)
        return cudaErrorInvalidDeviceFunction;
    cudaError_t st = ensure_layout(k);
    if (st != cudaSuccess)
        return st;
    if (k->n_params && !args)
        return cudaErrorInvalidValue;
    return pack_args(k, args, p);
}

static cudaError_t launch(struct vmc_kernel *k, dim3 grid, dim3 block, void **args, size_t shared_mem,
                          cudaStream_t stream, int per_thread) {
    struct packed_args p;
    cudaError_t st = prepare_launch(k, args, &p);
    if (st != cudaSuccess)
        return st;
    struct vmc_call c;
    st = vmc_call_begin(&c, VMC_API_vmc_LaunchKernel, 1);
    if (st == cudaSuccess) {
        vmc_put_launch_args(vmc_call_args(&c), &(struct vmc_launch_args){
            .kernel = k->index, .grid = {grid.x, grid.y, grid.z}, .block = {block.x, block.y, block.z},
            .shared_mem = shared_mem, .stream = (uint64_t)(uintptr_t)stream, .per_thread = (uint8_t)per_thread,
            .params_bytes = k->args_bytes, .params = p.bytes});
        st = vmc_call_finish(&c);
    }
    release_packed(&p);
    return st;
}

__attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                                     void **args, size_t sharedMem, cudaStream_t stream) {
    return launch((struct vmc_kernel *)kernel, gridDim, blockDim, args, sharedMem, stream, 0);
}

__attribute__((visibility("default"))) cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                                                          void **args, size_t sharedMem, cudaStream_t stream) {
    return launch((struct vmc_kernel *)kernel, gridDim, blockDim, args, sharedMem, stream, 1);
}

__attribute__((visibility("default"))) cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                                   void **args, size_t sharedMem, cudaStream_t stream) {
    return launch(vmc_kernel_mut(func), gridDim, blockDim, args, sharedMem, stream, 0);
}

extern cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                         cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                                                        void **args, size_t sharedMem, cudaStream_t stream) {
    return launch(vmc_kernel_mut(func), gridDim, blockDim, args, sharedMem, stream, 1);
}

/* cudaLaunchKernelEx: the configuration's attributes are plain values (no pointers inside), so
 * they travel as raw structs. */
static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args, int per_thread) {
    if (!config)
        return cudaErrorInvalidValue;
    if (config->numAttrs > MAX_LAUNCH_ATTRS || (config->numAttrs && !config->attrs))
        return cudaErrorInvalidValue;
    struct vmc_kernel *k = vmc_kernel_mut(func);
    struct packed_args p;
    cudaError_t st = prepare_launch(k, args, &p);
    if (st != cudaSuccess)
        return st;
    struct vmc_call c;
    st = vmc_call_begin(&c, VMC_API_vmc_LaunchKernelEx, 1);
    if (st == cudaSuccess) {
        dim3 grid = config->gridDim, block = config->blockDim;
        vmc_put_launch_ex_args(vmc_call_args(&c), &(struct vmc_launch_ex_args){
            .kernel = k->index, .grid = {grid.x, grid.y, grid.z}, .block = {block.x, block.y, block.z},
            .shared_mem = config->dynamicSmemBytes, .stream = (uint64_t)(uintptr_t)config->stream,
            .per_thread = (uint8_t)per_thread, .n_attrs = config->numAttrs, .attrs = config->attrs,
            .params_bytes = k->args_bytes, .params = p.bytes});
        st = vmc_call_finish(&c);
    }
    release_packed(&p);
    return st;
}

__attribute__((visibility("default"))) cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
                                                                      void **args) {
    return launch_ex(config, func, args, 0);
}

extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);
__attribute__((visibility("default"))) cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
                                                                           const void *func, void **args) {
    return launch_ex(config, func, args, 1);
}

/* cudaLaunchCooperativeKernel: cudaLaunchKernelEx with the cooperative attribute, as the runtime defines it. */
static cudaError_t launch_cooperative(const void *func, dim3 grid, dim3 block, void **args, size_t shared_mem,
                                      cudaStream_t stream, int per_thread) {
    cudaLaunchAttribute cooperative = {.id = cudaLaunchAttributeCooperative, .val.cooperative = 1};
    cudaLaunchConfig_t config = {.gridDim = grid, .blockDim = block, .dynamicSmemBytes = shared_mem, .stream = stream,
                                 .attrs = &cooperative, .numAttrs = 1};
    return launch_ex(&config, func, args, per_thread);
}

__attribute__((visibility("default"))) cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                                              void **args, size_t sharedMem, cudaStream_t stream) {
    return launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, 0);
}

extern cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                    size_t sharedMem, cudaStream_t stream);
__attribute__((visibility("default"))) cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim,
                                                                                   dim3 blockDim, void **args,
                                                                                   size_t sharedMem, cudaStream_t stream) {
    return launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, 1);
}

/* The kernel's name as the program registered it (its mangled device name), as cuFuncGetName gives it. */
__attribute__((visibility("default"))) cudaError_t cudaFuncGetName(const char **name, const void *func) {
    if (!name || !func)
        return cudaErrorInvalidValue;
    const struct vmc_kernel *k = vmc_kernel_by_host_fun(func);
    if (!k)
        return cudaErrorInvalidDeviceFunction;
    *name = k->device_name;
    return cudaSuccess;
}

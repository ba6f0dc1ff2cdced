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

#define MAX_LAUNCH_ATTRS 64

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
    vmc_arg_u32(&c, k->index);
    st = vmc_call_finish(&c);
    if (st != cudaSuccess)
        return st;
    uint32_t n = vmc_ret_u32(&c);
    if (n > 4096 || c.reply.len - c.reply.pos < (size_t)n * 4)
        return vmc_session_lost(c.conn, "malformed kernel parameter layout");
    uint32_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    if (!sizes)
        return cudaErrorMemoryAllocation;
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        sizes[i] = vmc_ret_u32(&c);
        total += sizes[i];
    }
    pthread_mutex_lock(&layout_lock);
    if (!k->layout_known) {
        k->n_params = n;
        k->param_sizes = sizes;
        k->args_bytes = total;
        __atomic_store_n(&k->layout_known, 1, __ATOMIC_RELEASE);
        sizes = NULL;
    }
    pthread_mutex_unlock(&layout_lock);
    free(sizes);
    return cudaSuccess;
}

static void put_dim3(struct vmc_call *c, dim3 d) {
    vmc_arg_u32(c, d.x);
    vmc_arg_u32(c, d.y);
    vmc_arg_u32(c, d.z);
}

/* Starts a launch frame (op `id`) with the fields both launch operations share: kernel index,
 * geometry, shared memory, stream, per-thread flag. */
static cudaError_t begin_launch(struct vmc_call *c, uint32_t id, struct vmc_kernel *k, void **args, dim3 grid, dim3 block,
                                size_t shared_mem, cudaStream_t stream, int per_thread) {
    if (!k)
        return cudaErrorInvalidDeviceFunction;
    cudaError_t st = ensure_layout(k);
    if (st != cudaSuccess)
        return st;
    if (k->n_params && !args)
        return cudaErrorInvalidValue;
    st = vmc_call_begin(c, id, 1);
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(c, k->index);
    put_dim3(c, grid);
    put_dim3(c, block);
    vmc_arg_u64(c, shared_mem);
    vmc_arg_u64(c, (uint64_t)(uintptr_t)stream);
    vmc_arg_u8(c, (uint8_t)per_thread);
    return cudaSuccess;
}

/* The packed arguments end every launch frame. */
static cudaError_t finish_launch(struct vmc_call *c, const struct vmc_kernel *k, void **args) {
    vmc_arg_u32(c, k->args_bytes);
    for (uint32_t i = 0; i < k->n_params; i++)
        vmc_arg(c, args[i], k->param_sizes[i]);
    return vmc_call_finish(c);
}

static cudaError_t launch(struct vmc_kernel *k, dim3 grid, dim3 block, void **args, size_t shared_mem,
                          cudaStream_t stream, int per_thread) {
    struct vmc_call c;
    cudaError_t st = begin_launch(&c, VMC_API_vmc_LaunchKernel, k, args, grid, block, shared_mem, stream, per_thread);
    return st != cudaSuccess ? st : finish_launch(&c, k, args);
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
    struct vmc_call c;
    cudaError_t st = begin_launch(&c, VMC_API_vmc_LaunchKernelEx, k, args, config->gridDim, config->blockDim,
                                  config->dynamicSmemBytes, config->stream, per_thread);
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(&c, config->numAttrs);
    vmc_arg(&c, config->attrs, config->numAttrs * sizeof *config->attrs);
    return finish_launch(&c, k, args);
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

/* Kernel launches. The client packs each argument's bytes in parameter order; the worker lays them
 * out again at the offsets the runtime reports (cudaFuncGetParamInfo) and launches with the real
 * cudaLaunchKernel(ExC), on this thread, so errors land in this thread's CUDA state as natively. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_internal.h"
#include "worker.h"

#define MAX_PARAMS 4096
#define MAX_ATTRS 64

extern cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                                         cudaStream_t stream);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args);

struct layout {
    uint32_t n;
    size_t *offsets, *sizes;
    size_t total;  /* sum of sizes: the packed form */
    size_t extent; /* end of the last parameter: the laid-out form */
};

static pthread_mutex_t layouts_lock = PTHREAD_MUTEX_INITIALIZER;
/* by kernel index; each layout is allocated once and never moves (callers keep it while the table grows) */
static struct layout **layouts;
static uint32_t n_layouts;

struct probe {
    const void *func;
    int device;
    cudaError_t status;
    struct layout result;
};

/* Counting parameters means asking for one index past the last, which fails; that failure must not
 * become the client thread's last error, so the probe runs on a helper thread. */
static void *probe_params(void *arg) {
    struct probe *p = arg;
    p->status = cudaSetDevice(p->device);
    size_t cap = 8;
    p->result.offsets = malloc(cap * sizeof(size_t));
    p->result.sizes = malloc(cap * sizeof(size_t));
    if (!p->result.offsets || !p->result.sizes) {
        p->status = cudaErrorMemoryAllocation;
        return NULL;
    }
    for (uint32_t i = 0; p->status == cudaSuccess && i < MAX_PARAMS; i++) {
        size_t off = 0, size = 0;
        cudaError_t st = cudaFuncGetParamInfo(p->func, i, &off, &size);
        if (st == cudaErrorInvalidValue && i > 0)
            break; /* past the last parameter */
        if (st == cudaErrorInvalidValue) {
            /* index 0 invalid: either no parameters or a bad function; cudaFuncGetAttributes tells */
            struct cudaFuncAttributes attr;
            p->status = cudaFuncGetAttributes(&attr, p->func);
            break;
        }
        if (st != cudaSuccess) {
            p->status = st;
            break;
        }
        if (i == cap) {
            cap *= 2;
            size_t *o = realloc(p->result.offsets, cap * sizeof(size_t));
            size_t *s = o ? realloc(p->result.sizes, cap * sizeof(size_t)) : NULL;
            if (o)
                p->result.offsets = o;
            if (!o || !s) {
                p->status = cudaErrorMemoryAllocation;
                break;
            }
            p->result.sizes = s;
        }
        p->result.offsets[i] = off;
        p->result.sizes[i] = size;
        p->result.n = i + 1;
        p->result.total += size;
        if (off + size > p->result.extent)
            p->result.extent = off + size;
    }
    return NULL;
}

/* The layout of kernel `index`, computed once. Returns the runtime's error if it cannot be known. */
static cudaError_t layout_of(uint32_t index, const void *func, const struct layout **out) {
    pthread_mutex_lock(&layouts_lock);
    if (index < n_layouts && layouts[index]) {
        *out = layouts[index];
        pthread_mutex_unlock(&layouts_lock);
        return cudaSuccess;
    }
    pthread_mutex_unlock(&layouts_lock);
    struct probe p = {func, 0, cudaSuccess, {0}};
    if (cudaGetDevice(&p.device) != cudaSuccess)
        p.device = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, probe_params, &p) != 0)
        return cudaErrorOperatingSystem;
    pthread_join(t, NULL);
    if (p.status != cudaSuccess) {
        free(p.result.offsets);
        free(p.result.sizes);
        /* Let this thread meet the same failure, so its last-error state is what a native launch leaves. */
        size_t off, size;
        cudaError_t again = cudaFuncGetParamInfo(func, 0, &off, &size);
        return again != cudaSuccess && again != cudaErrorInvalidValue ? again : p.status;
    }
    struct layout *mine = malloc(sizeof *mine);
    if (mine)
        *mine = p.result;
    pthread_mutex_lock(&layouts_lock);
    if (mine && index >= n_layouts) {
        uint32_t n = vmc_w_kernel_count();
        struct layout **l = n > index ? realloc(layouts, n * sizeof *l) : NULL;
        if (l) {
            memset(l + n_layouts, 0, (n - n_layouts) * sizeof *l);
            layouts = l;
            n_layouts = n;
        }
    }
    if (!mine || index >= n_layouts) {
        pthread_mutex_unlock(&layouts_lock);
        free(mine);
        free(p.result.offsets);
        free(p.result.sizes);
        return cudaErrorMemoryAllocation;
    }
    if (!layouts[index]) {
        layouts[index] = mine; /* another thread may have computed it meanwhile: the first stays */
        mine = NULL;
    }
    *out = layouts[index];
    pthread_mutex_unlock(&layouts_lock);
    if (mine) {
        free(mine->offsets);
        free(mine->sizes);
        free(mine);
    }
    return cudaSuccess;
}

enum vmc_w_result vmc_w_kernel_param_layout(struct vmc_wcall *wc) {
    struct vmc_kernel_param_layout_args a;
    vmc_get_kernel_param_layout_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    const void *func = vmc_w_kernel_host_fun(a.kernel);
    if (!func) {
        vmc_w_reply_status(wc, cudaErrorInvalidDeviceFunction);
        return VMC_W_DONE;
    }
    const struct layout *l = NULL;
    cudaError_t st = layout_of(a.kernel, func, &l);
    vmc_w_reply_status(wc, st);
    if (st == cudaSuccess) {
        uint32_t sizes[l->n ? l->n : 1];
        for (uint32_t i = 0; i < l->n; i++)
            sizes[i] = (uint32_t)l->sizes[i];
        vmc_put_kernel_param_layout_reply(vmc_w_reply_out(wc), &(struct vmc_kernel_param_layout_reply){.n = l->n, .sizes = sizes});
    }
    return VMC_W_DONE;
}

/* Places the packed arguments at their offsets in `storage`; fills argv. */
static int unpack_args(const struct layout *l, const uint8_t *packed, uint32_t bytes, uint8_t *storage, void **argv) {
    if (bytes != l->total)
        return -1;
    for (uint32_t i = 0; i < l->n; i++) {
        memcpy(storage + l->offsets[i], packed, l->sizes[i]);
        packed += l->sizes[i];
        argv[i] = storage + l->offsets[i];
    }
    return 0;
}

/* What both launch operations carry (launch_args, launch_ex_args), as read. */
struct launch_common {
    uint32_t index;
    const void *func;
    dim3 grid, block;
    uint64_t shared_mem;
    cudaStream_t stream;
    int per_thread;
    uint32_t params_bytes;
    const uint8_t *params;
    const struct layout *layout;
};

static void look_up(struct launch_common *lc, cudaError_t *st) {
    lc->func = vmc_w_kernel_host_fun(lc->index);
    *st = lc->func ? layout_of(lc->index, lc->func, &lc->layout) : cudaErrorInvalidDeviceFunction;
}

static dim3 dim3_of(const uint32_t d[3]) { return (dim3){d[0], d[1], d[2]}; }

#define COMMON_FIELDS(lc, a)                                                                                           \
    (lc) = (struct launch_common){.index = (a).kernel, .grid = dim3_of((a).grid), .block = dim3_of((a).block),       \
                                  .shared_mem = (a).shared_mem, .stream = (cudaStream_t)(uintptr_t)(a).stream,       \
                                  .per_thread = (a).per_thread, .params_bytes = (a).params_bytes, .params = (a).params}

static void finish(struct vmc_wcall *wc, cudaError_t st) {
    if (wc->async)
        vmc_w_async_done(wc, st);
    else
        vmc_w_reply_status(wc, st);
}

/* The laid-out arguments of one launch: small launches use the stack, large ones the heap. */
struct laid_out_args {
    _Alignas(16) uint8_t small[4096];
    void *small_argv[64];
    uint8_t *storage;
    void **argv;
};

static void release_args(struct laid_out_args *a) {
    if (a->storage && a->storage != a->small)
        free(a->storage);
    if (a->argv && a->argv != a->small_argv)
        free(a->argv);
}

/* Returns cudaSuccess, cudaErrorMemoryAllocation, or -1 for a payload that does not match the layout. */
static int lay_out_args(const struct launch_common *lc, struct laid_out_args *a) {
    const struct layout *l = lc->layout;
    a->storage = l->extent <= sizeof a->small ? a->small : calloc(1, l->extent);
    a->argv = l->n <= 64 ? a->small_argv : calloc(l->n, sizeof *a->argv);
    if (!a->storage || !a->argv)
        return cudaErrorMemoryAllocation;
    return unpack_args(l, lc->params, lc->params_bytes, a->storage, a->argv) == 0 ? cudaSuccess : -1;
}

/* Both launch operations: cudaLaunchKernelEx's only adds its attributes after the common fields. */
static enum vmc_w_result serve_launch(struct vmc_wcall *wc, int with_attrs) {
    struct launch_common lc;
    cudaError_t st = cudaSuccess;
    uint32_t n_attrs = 0;
    cudaLaunchAttribute attrs[MAX_ATTRS];
    if (with_attrs) {
        struct vmc_launch_ex_args a;
        vmc_get_launch_ex_args(&wc->in, &a);
        if (!vmc_w_args_ok(wc) || a.n_attrs > MAX_ATTRS)
            return VMC_W_BAD_ARGS;
        n_attrs = a.n_attrs;
        memcpy(attrs, a.attrs, n_attrs * sizeof attrs[0]);
        COMMON_FIELDS(lc, a);
    } else {
        struct vmc_launch_args a;
        vmc_get_launch_args(&wc->in, &a);
        if (!vmc_w_args_ok(wc))
            return VMC_W_BAD_ARGS;
        COMMON_FIELDS(lc, a);
    }
    look_up(&lc, &st);
    if (st != cudaSuccess) {
        finish(wc, st);
        return VMC_W_DONE;
    }
    struct laid_out_args a;
    int rc = lay_out_args(&lc, &a);
    if (rc == cudaSuccess && with_attrs) {
        cudaLaunchConfig_t config = {0};
        config.gridDim = lc.grid;
        config.blockDim = lc.block;
        config.dynamicSmemBytes = lc.shared_mem;
        config.stream = lc.stream;
        config.attrs = n_attrs ? attrs : NULL;
        config.numAttrs = n_attrs;
        st = lc.per_thread ? cudaLaunchKernelExC_ptsz(&config, lc.func, a.argv) : cudaLaunchKernelExC(&config, lc.func, a.argv);
    } else if (rc == cudaSuccess) {
        st = lc.per_thread ? cudaLaunchKernel_ptsz(lc.func, lc.grid, lc.block, a.argv, lc.shared_mem, lc.stream)
                           : cudaLaunchKernel(lc.func, lc.grid, lc.block, a.argv, lc.shared_mem, lc.stream);
    }
    release_args(&a);
    if (rc < 0)
        return VMC_W_BAD_ARGS;
    finish(wc, rc == cudaSuccess ? st : (cudaError_t)rc);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_launch_kernel(struct vmc_wcall *wc) { return serve_launch(wc, 0); }

enum vmc_w_result vmc_w_launch_kernel_ex(struct vmc_wcall *wc) { return serve_launch(wc, 1); }

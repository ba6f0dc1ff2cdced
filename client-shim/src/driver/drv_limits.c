/* cuCtxGetLimit answered from what the worker said before: a context's limits change only through
 * cuCtxSetLimit, except the stack size, which the driver raises itself when a kernel needs more (always
 * asked), and through the runtime front end's cudaDeviceSetLimit in a process that uses both front ends
 * (that, a reset or a change of device drops what is kept: vmc_runtime_state_epoch()). cuDNN and cuBLASLt ask a
 * limit many times per training step. */
#include "drv.h"
#include "drv_cache.h"
#include "drv_context.h"
#include "shim_call.h"

CUresult vmc_forward_cuCtxGetLimit(size_t *pvalue, CUlimit limit);
CUresult vmc_forward_cuCtxSetLimit(CUlimit limit, size_t value);

static struct vmc_drv_cache known = VMC_DRV_CACHE_INIT; /* (context, limit) -> value */

static uint64_t known_epoch; /* vmc_runtime_state_epoch() when `known` was last emptied */

void vmc_drv_forget_context_limits(void) { vmc_drv_cache_clear(&known); }

static void forget_after_runtime_calls(void) {
    uint64_t now = vmc_runtime_state_epoch();
    if (__atomic_exchange_n(&known_epoch, now, __ATOMIC_ACQ_REL) != now)
        vmc_drv_forget_context_limits();
}

__attribute__((visibility("default"))) CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
    CUcontext ctx = NULL;
    uint64_t v;
    forget_after_runtime_calls();
    int keep = limit != CU_LIMIT_STACK_SIZE && pvalue && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx;
    if (keep && vmc_drv_cache_get(&known, (uint64_t)(uintptr_t)ctx, (uint64_t)limit, 0, &v)) {
        *pvalue = (size_t)v;
        return CUDA_SUCCESS;
    }
    CUresult st = vmc_forward_cuCtxGetLimit(pvalue, limit);
    if (st == CUDA_SUCCESS && keep)
        vmc_drv_cache_put(&known, (uint64_t)(uintptr_t)ctx, (uint64_t)limit, 0, (uint64_t)*pvalue);
    return st;
}

/* The driver may round the value, or refuse it: the next cuCtxGetLimit asks. */
__attribute__((visibility("default"))) CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
    CUresult st = vmc_forward_cuCtxSetLimit(limit, value);
    vmc_drv_cache_clear(&known);
    return st;
}

#include "drv_call.h"

#include <stdio.h>

#include "drv_mirror.h"
#include "drv_unsupported.h"

CUresult vmc_drv_call_begin(struct vmc_call *c, uint32_t id, int async) {
    vmc_drv_mirror_push(); /* mapped memory across machines: the GPU must see what the program wrote */
    return (CUresult)vmc_call_begin_ex(c, id, async, 0);
}

static void say_once(int *told, const char *fmt, const char *a, const char *b) {
    if (!__atomic_exchange_n(told, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, fmt, a, b);
        fflush(stderr);
    }
}

CUresult vmc_drv_refuse_non_null(const char *function, const char *parameter, int *told) {
    say_once(told, "vmcuda: %s with a non-NULL %s is not supported yet; it returns CUDA_ERROR_NOT_SUPPORTED\n",
             function, parameter);
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult vmc_drv_not_supported(const char *what, const char *why, int *told) {
    say_once(told, "vmcuda: %s is not supported: %s; it returns CUDA_ERROR_NOT_SUPPORTED\n", what, why);
    return CUDA_ERROR_NOT_SUPPORTED;
}

void vmc_drv_explain(const char *what, const char *why, int *told) { say_once(told, "vmcuda: %s: %s\n", what, why); }

int vmc_drv_unsupported(const char *name, int *told) {
    say_once(told, "vmcuda: %s is not supported yet; it returns CUDA_ERROR_NOT_SUPPORTED%s\n", name, "");
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* JIT options on the worker (cuModuleLoadDataEx, cuLibraryLoadData, cuLinkCreate, cuLinkAddData): the client
 * sends them by value, a log buffer as its size; the worker gives the driver buffers of its own and sends back
 * what the driver wrote (worker_jit.c). */
#ifndef WORKER_JIT_H
#define WORKER_JIT_H

#include <stdint.h>

#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"
#include "worker_driver.h"

struct vmc_w_jit {
    uint32_t n;
    CUjit_option options[VMC_MAX_JIT_OPTIONS];
    void *values[VMC_MAX_JIT_OPTIONS];
    char *logs[VMC_MAX_JIT_OPTIONS]; /* the worker's log buffers, where options[i] is one */
};

/* Reads a's options into j (0 logs allocated on failure): CUDA_ERROR_INVALID_VALUE for an option that is not
 * sent by value, CUDA_ERROR_OUT_OF_MEMORY. The caller checked a.n_options <= VMC_MAX_JIT_OPTIONS. */
CUresult vmc_w_jit_read(const struct vmc_module_load_args *a, struct vmc_w_jit *j);
/* Replies with status st, handle, and the values and logs the driver left in j. */
void vmc_w_jit_reply(struct vmc_wcall *wc, CUresult st, uint64_t handle, const struct vmc_w_jit *j);
void vmc_w_jit_free(struct vmc_w_jit *j);

#endif

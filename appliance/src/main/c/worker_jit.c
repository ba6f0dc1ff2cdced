/* JIT options on the worker (worker_jit.h). */
#include "worker_jit.h"

#include <stdlib.h>
#include <string.h>

#include "worker.h"

CUresult vmc_w_jit_read(const struct vmc_module_load_args *a, struct vmc_w_jit *j) {
    memset(j, 0, sizeof *j);
    j->n = a->n_options;
    int allowed = 1;
    for (uint32_t i = 0; i < j->n; i++) {
        j->options[i] = (CUjit_option)vmc_module_load_args_options_at(a, i);
        uint64_t v = vmc_module_load_args_values_at(a, i);
        allowed = allowed && (vmc_jit_option_by_value(j->options[i]) || vmc_jit_option_is_log(j->options[i]));
        if (j->options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || j->options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            v = v < VMC_MAX_JIT_LOG ? v : VMC_MAX_JIT_LOG;
        j->values[i] = (void *)(uintptr_t)v;
    }
    if (!allowed)
        return CUDA_ERROR_INVALID_VALUE;
    /* Each log buffer is as large as its SIZE_BYTES option says (capped above), whatever value came with the
     * buffer option: the driver writes up to that size, so the two must agree (a client that sent a 1-byte
     * buffer with a 64 KiB size would have the driver write past it). Without a size the driver writes nothing. */
    for (uint32_t i = 0; i < j->n; i++)
        if (j->options[i] == CU_JIT_INFO_LOG_BUFFER || j->options[i] == CU_JIT_ERROR_LOG_BUFFER) {
            CUjit_option size_option = j->options[i] == CU_JIT_INFO_LOG_BUFFER ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                                                                               : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
            size_t size = 0;
            for (uint32_t k = 0; k < j->n; k++)
                if (j->options[k] == size_option)
                    size = (size_t)(uintptr_t)j->values[k]; /* capped to VMC_MAX_JIT_LOG above */
            j->logs[i] = calloc(1, size + 1);
            j->values[i] = j->logs[i];
            if (!j->logs[i]) {
                vmc_w_jit_free(j);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
    return CUDA_SUCCESS;
}

void vmc_w_jit_reply(struct vmc_wcall *wc, CUresult st, uint64_t handle, const struct vmc_w_jit *j) {
    uint64_t written[VMC_MAX_JIT_OPTIONS];
    const char *text[2] = {"", ""};
    for (uint32_t i = 0; i < j->n; i++) {
        written[i] = 0;
        if (!j->logs[i])
            memcpy(&written[i], &j->values[i], sizeof written[i]); /* what the driver wrote back in place (sizes, wall time) */
        else
            text[j->options[i] == CU_JIT_INFO_LOG_BUFFER ? 0 : 1] = j->logs[i];
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_module_load_reply(vmc_w_reply_out(wc), &(struct vmc_module_load_reply){
        .handle = handle, .n_values = j->n, .values = written,
        .info_log_bytes = (uint32_t)strnlen(text[0], VMC_MAX_JIT_LOG), .info_log = text[0],
        .error_log_bytes = (uint32_t)strnlen(text[1], VMC_MAX_JIT_LOG), .error_log = text[1]});
}

void vmc_w_jit_free(struct vmc_w_jit *j) {
    for (uint32_t i = 0; i < j->n; i++) {
        free(j->logs[i]);
        j->logs[i] = NULL;
    }
}

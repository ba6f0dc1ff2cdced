/* JIT options (drv_jit.h). */
#include "drv_jit.h"

#include <string.h>

#include "drv_call.h"
#include "vmc_drv_wire.h"

CUresult vmc_drv_jit_read(unsigned n, CUjit_option *options, void **values, struct vmc_drv_jit *j) {
    memset(j, 0, sizeof *j);
    if (n && (!options || !values))
        return CUDA_ERROR_INVALID_VALUE;
    if (n > VMC_MAX_JIT_OPTIONS) /* more than there are distinct options */
        return CUDA_ERROR_INVALID_VALUE;
    j->n = n;
    j->options = options;
    j->values = values;
    for (unsigned i = 0; i < n; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER)
            j->info_log = values[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
            j->error_log = values[i];
        else if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            j->info_size = (size_t)(uintptr_t)values[i];
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            j->error_size = (size_t)(uintptr_t)values[i];
        else if (!vmc_jit_option_by_value(options[i])) {
            static int told;
            return vmc_drv_not_supported("a JIT option that points into the program's memory (global symbols, "
                                         "LTO, referenced names)", "the appliance cannot read this process's memory",
                                         &told);
        }
    }
    return CUDA_SUCCESS;
}

void vmc_drv_jit_put(const struct vmc_drv_jit *j, struct vmc_module_load_args *a, uint32_t *options, uint64_t *values) {
    unsigned n = j ? j->n : 0;
    for (unsigned i = 0; i < n; i++) {
        CUjit_option o = j->options[i];
        options[i] = (uint32_t)o;
        /* a log buffer travels as its size: the worker has its own */
        uint64_t v = vmc_jit_option_is_log(o) ? (o == CU_JIT_INFO_LOG_BUFFER ? j->info_size : j->error_size)
                                              : (uint64_t)(uintptr_t)j->values[i];
        if (vmc_jit_option_is_log(o) || o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            v = v < VMC_MAX_JIT_LOG ? v : VMC_MAX_JIT_LOG;
        values[i] = v;
    }
    a->n_options = n;
    a->options = options;
    a->values = values;
}

int vmc_drv_jit_reply(struct vmc_call *c, struct vmc_module_load_reply *r) {
    vmc_get_module_load_reply(&c->reply, r);
    return vmc_call_reply_ok(c) && r->info_log_bytes <= VMC_MAX_JIT_LOG && r->error_log_bytes <= VMC_MAX_JIT_LOG;
}

void vmc_drv_jit_write_back(const struct vmc_module_load_reply *r, const struct vmc_drv_jit *j) {
    if (!j)
        return;
    for (unsigned i = 0; i < j->n && i < r->n_values; i++) {
        CUjit_option o = j->options[i];
        if (o == CU_JIT_WALL_TIME || o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            j->values[i] = (void *)(uintptr_t)vmc_module_load_reply_values_at(r, i);
    }
    for (int which = 0; which < 2; which++) {
        uint32_t n = which == 0 ? r->info_log_bytes : r->error_log_bytes;
        const char *text = which == 0 ? r->info_log : r->error_log;
        char *dst = which == 0 ? j->info_log : j->error_log;
        size_t cap = which == 0 ? j->info_size : j->error_size;
        if (dst && cap) {
            size_t m = n < cap - 1 ? n : cap - 1;
            memcpy(dst, text, m);
            dst[m] = 0;
        }
    }
}

/* JIT options (cuModuleLoadDataEx, cuLibraryLoadData, cuLinkCreate, cuLinkAddData): read from the caller's
 * arrays, sent by value (a log buffer as its size: the worker has its own), and what the driver wrote back
 * (log texts, log sizes used, wall time) put where the caller expects it (drv_jit.c). */
#ifndef DRV_JIT_H
#define DRV_JIT_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "shim_call.h"
#include "vmc_drv_internal.h"

struct vmc_drv_jit {
    unsigned n;
    CUjit_option *options;
    void **values;
    char *info_log, *error_log; /* the caller's buffers */
    size_t info_size, error_size;
};

/* Reads n options; refuses (CUDA_ERROR_NOT_SUPPORTED, saying why once) one that points into this process. */
CUresult vmc_drv_jit_read(unsigned n, CUjit_option *options, void **values, struct vmc_drv_jit *j);
/* Fills a's option arrays (options and values: VMC_MAX_JIT_OPTIONS each) from j (NULL: none). */
void vmc_drv_jit_put(const struct vmc_drv_jit *j, struct vmc_module_load_args *a, uint32_t *options, uint64_t *values);
/* Reads the reply of a call that answers with module_load_reply; 0 when it is malformed. */
int vmc_drv_jit_reply(struct vmc_call *c, struct vmc_module_load_reply *r);
/* Writes the driver's answers back into the caller's buffers and values (j may be NULL). */
void vmc_drv_jit_write_back(const struct vmc_module_load_reply *r, const struct vmc_drv_jit *j);

/* drv_module.c: makes sure the worker holds these bytes (sent by content, as module images are) */
CUresult vmc_drv_bytes_on_worker(const void *bytes, size_t size, uint8_t sha[32]);
/* drv_module.c: a whole file of this machine, NUL-terminated one byte past its size (free() it) */
CUresult vmc_drv_read_file(const char *path, unsigned char **bytes, size_t *size);

#endif

/* cuGetErrorName and cuGetErrorString, answered here. Names are cuda.h's. Texts: CUDA's runtime and
 * driver share their error numbers and texts (the runtime's table, read from NVIDIA's libcudart at build
 * time: errtab.c), except for the two driver codes the runtime has no twin for, whose texts are the
 * driver's as documented. */
#include <stddef.h>
#include "drv.h"

#include "drv_errors.h"
#include "errtab.h"

static const char *name_of(CUresult error) {
    for (unsigned i = 0; i < vmc_drv_error_name_count; i++)
        if (vmc_drv_error_names[i].code == (int)error)
            return vmc_drv_error_names[i].name;
    return NULL;
}

static const char *text_of(CUresult error) {
    switch (error) {
    case CUDA_ERROR_CONTEXT_ALREADY_CURRENT: return "context already current";
    case CUDA_ERROR_KEY_ROTATION: return "key rotation";
    default: break;
    }
    const struct vmc_error_text *t = vmc_error_text((int)error);
    return t ? t->text : NULL;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult error, const char **pStr) {
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = name_of(error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult error, const char **pStr) {
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = name_of(error) ? text_of(error) : NULL;
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

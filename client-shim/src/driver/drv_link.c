/* JIT linking (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete, cuLinkDestroy and their older
 * ABIs): the driver's linker runs on the worker (PROTOCOL.md "JIT linking"). Each input is sent by content,
 * as module images are (once per session); the linked image comes back in pieces and lives here until
 * cuLinkDestroy, as the driver's does. The create options' buffers and values are the caller's for the life of
 * the link (as CUDA documents): every step writes the logs and values the driver left back into them. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "drv_jit.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

struct link {
    uint64_t handle;        /* the worker's */
    struct vmc_drv_jit jit; /* the create options, the caller's arrays */
    unsigned char *image;   /* after cuLinkComplete */
    size_t image_size;
};

/* Sends a call whose reply is a module_load_reply and writes the create options' answers back. */
static CUresult finish_with_logs(struct vmc_call *c, const struct vmc_drv_jit *j, uint64_t *handle) {
    CUresult st = (CUresult)vmc_call_finish(c);
    struct vmc_module_load_reply r;
    if (!vmc_drv_jit_reply(c, &r))
        return st == CUDA_SUCCESS ? CUDA_ERROR_UNKNOWN : st;
    if (handle)
        *handle = r.handle;
    vmc_drv_jit_write_back(&r, j);
    return st;
}

__attribute__((visibility("default"))) CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options,
                                                               void **optionValues, CUlinkState *stateOut) {
    if (!stateOut)
        return CUDA_ERROR_INVALID_VALUE;
    struct link *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult st = vmc_drv_jit_read(numOptions, options, optionValues, &l->jit);
    struct vmc_call c;
    if (st == CUDA_SUCCESS)
        st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_LinkCreate, 0);
    if (st == CUDA_SUCCESS) {
        struct vmc_module_load_args a = {0};
        uint32_t o[VMC_MAX_JIT_OPTIONS];
        uint64_t v[VMC_MAX_JIT_OPTIONS];
        vmc_drv_jit_put(&l->jit, &a, o, v);
        vmc_put_module_load_args(vmc_call_args(&c), &a);
        st = finish_with_logs(&c, &l->jit, &l->handle);
    }
    if (st != CUDA_SUCCESS) {
        free(l);
        return st;
    }
    *stateOut = (CUlinkState)l;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options,
                                                            void **optionValues, CUlinkState *stateOut) {
    return cuLinkCreate_v2(numOptions, options, optionValues, stateOut);
}

__attribute__((visibility("default"))) CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data,
                                                                size_t size, const char *name, unsigned int numOptions,
                                                                CUjit_option *options, void **optionValues) {
    struct link *l = (struct link *)state;
    if (!l || !data || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t name_bytes = name ? strnlen(name, VMC_MAX_LINK_NAME + 1) : 0;
    if (name_bytes > VMC_MAX_LINK_NAME)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_drv_jit own;
    CUresult st = vmc_drv_jit_read(numOptions, options, optionValues, &own);
    if (st != CUDA_SUCCESS)
        return st;
    if (own.info_log || own.error_log) {
        static int told;
        return vmc_drv_not_supported("log buffers among cuLinkAddData's own options",
                                     "give them to cuLinkCreate, whose logs vmcuda fills", &told);
    }
    uint8_t sha[32];
    st = vmc_drv_bytes_on_worker(data, size, sha);
    struct vmc_call c;
    if (st == CUDA_SUCCESS)
        st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_LinkAdd, 0);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_link_add_args a = {.link = l->handle, .type = (uint32_t)type, .size = size,
                                  .name_bytes = (uint32_t)name_bytes, .name = name ? name : ""};
    uint32_t o[VMC_MAX_JIT_OPTIONS];
    uint64_t v[VMC_MAX_JIT_OPTIONS];
    vmc_drv_jit_put(&own, &a.input, o, v);
    memcpy(a.input.sha256, sha, sizeof sha);
    vmc_put_link_add_args(vmc_call_args(&c), &a);
    return finish_with_logs(&c, &l->jit, NULL);
}

__attribute__((visibility("default"))) CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data,
                                                             size_t size, const char *name, unsigned int numOptions,
                                                             CUjit_option *options, void **optionValues) {
    return cuLinkAddData_v2(state, type, data, size, name, numOptions, options, optionValues);
}

/* The path is this machine's: the file is read here and added as data under its path. */
__attribute__((visibility("default"))) CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path,
                                                                unsigned int numOptions, CUjit_option *options,
                                                                void **optionValues) {
    if (!state || !path)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *bytes = NULL;
    size_t size = 0;
    CUresult st = vmc_drv_read_file(path, &bytes, &size);
    if (st != CUDA_SUCCESS)
        return st;
    /* PTX text goes with its terminating NUL, as the driver reads it from a file */
    st = size == 0 ? CUDA_ERROR_INVALID_VALUE
                   : cuLinkAddData_v2(state, type, bytes, type == CU_JIT_INPUT_PTX ? size + 1 : size, path, numOptions,
                                      options, optionValues);
    free(bytes);
    return st;
}

__attribute__((visibility("default"))) CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
                                                             unsigned int numOptions, CUjit_option *options,
                                                             void **optionValues) {
    return cuLinkAddFile_v2(state, type, path, numOptions, options, optionValues);
}

/* Reads the linked image from the worker, VMC_LINK_READ_MAX bytes at a time. */
static CUresult fetch_image(struct link *l, size_t size) {
    unsigned char *image = malloc(size ? size : 1);
    if (!image)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t at = 0; at < size;) {
        struct vmc_call c;
        CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_LinkRead, 0);
        if (st == CUDA_SUCCESS) {
            vmc_put_link_read_args(vmc_call_args(&c), &(struct vmc_link_read_args){.link = l->handle, .offset = at});
            st = (CUresult)vmc_call_finish(&c);
        }
        struct vmc_link_bytes b;
        if (st == CUDA_SUCCESS) {
            vmc_get_link_bytes(&c.reply, &b);
            if (!vmc_call_reply_ok(&c) || b.n == 0 || b.n > size - at)
                st = CUDA_ERROR_UNKNOWN;
        }
        if (st != CUDA_SUCCESS) {
            free(image);
            return st;
        }
        memcpy(image + at, b.bytes, b.n);
        at += b.n;
    }
    free(l->image);
    l->image = image;
    l->image_size = size;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
    struct link *l = (struct link *)state;
    if (!l || !cubinOut || !sizeOut)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_LinkComplete, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_link_handle(vmc_call_args(&c), &(struct vmc_link_handle){.link = l->handle});
    uint64_t size = 0;
    st = finish_with_logs(&c, &l->jit, &size);
    if (st == CUDA_SUCCESS)
        st = size > SIZE_MAX / 2 ? CUDA_ERROR_UNKNOWN : fetch_image(l, (size_t)size);
    if (st == CUDA_SUCCESS) {
        *cubinOut = l->image;
        *sizeOut = l->image_size;
    }
    return st;
}

__attribute__((visibility("default"))) CUresult cuLinkDestroy(CUlinkState state) {
    struct link *l = (struct link *)state;
    if (!l)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_LinkDestroy, 0);
    if (st == CUDA_SUCCESS) {
        vmc_put_link_handle(vmc_call_args(&c), &(struct vmc_link_handle){.link = l->handle});
        st = (CUresult)vmc_call_finish(&c);
    }
    free(l->image);
    free(l);
    return st;
}

/* JIT linking on the worker (PROTOCOL.md "JIT linking"): each link is NVIDIA's CUlinkState with the option
 * arrays and log buffers it was created with, which the driver keeps using until the link is destroyed. The
 * client names a link by the handle given at its creation, which is looked up here, never dereferenced; its
 * inputs are images the session holds (worker_images.c). */
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "worker.h"
#include "worker_images.h"
#include "worker_jit.h"

struct link {
    uint64_t handle;
    CUlinkState state;
    struct vmc_w_jit jit;
    void *image; /* the driver's, after cuLinkComplete: valid until cuLinkDestroy */
    size_t image_size;
    struct link *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct link *links;
static uint64_t next_handle = 1;
static int n_links;

/* Every link operation holds the lock from lookup to reply: a client that destroys a link from one thread while
 * it adds to it from another gets an unknown handle, never a freed link. Links are few and the driver's linker
 * is not fast anyway. */
static struct link *find(uint64_t handle) {
    struct link *l = links;
    while (l && l->handle != handle)
        l = l->next;
    return l;
}

/* The link `handle` names, with the lock held; NULL (lock released, the call answered) for an unknown one. */
static struct link *lock_link(struct vmc_wcall *wc, uint64_t handle) {
    pthread_mutex_lock(&lock);
    struct link *l = find(handle);
    if (!l) {
        pthread_mutex_unlock(&lock);
        vmc_w_reply_status(wc, (cudaError_t)CUDA_ERROR_INVALID_HANDLE);
    }
    return l;
}

enum vmc_w_result vmc_w_link_create(struct vmc_wcall *wc) {
    struct vmc_module_load_args a;
    vmc_get_module_load_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async || a.n_options > VMC_MAX_JIT_OPTIONS)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuLinkCreate_v6050, create, "cuLinkCreate", 6050, 0);
    struct link *l = calloc(1, sizeof *l);
    CUresult st = l ? vmc_w_jit_read(&a, &l->jit) : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (st == CUDA_SUCCESS && n_links >= VMC_MAX_LINKS)
        st = CUDA_ERROR_OUT_OF_MEMORY;
    if (st == CUDA_SUCCESS)
        st = create ? create(l->jit.n, l->jit.n ? l->jit.options : NULL, l->jit.n ? l->jit.values : NULL, &l->state)
                    : vmc_w_drv_missing("cuLinkCreate");
    if (st == CUDA_SUCCESS) {
        l->handle = next_handle++;
        l->next = links;
        links = l;
        n_links++;
    }
    struct vmc_w_jit none = {0};
    vmc_w_jit_reply(wc, st, st == CUDA_SUCCESS ? l->handle : 0, l ? &l->jit : &none);
    pthread_mutex_unlock(&lock);
    if (st != CUDA_SUCCESS && l) {
        vmc_w_jit_free(&l->jit);
        free(l);
    }
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_link_add(struct vmc_wcall *wc) {
    struct vmc_link_add_args a;
    vmc_get_link_add_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async || a.input.n_options > VMC_MAX_JIT_OPTIONS || a.name_bytes > VMC_MAX_LINK_NAME)
        return VMC_W_BAD_ARGS;
    struct link *l = lock_link(wc, a.link);
    if (!l)
        return VMC_W_DONE;
    DRV(PFN_cuLinkAddData_v6050, add, "cuLinkAddData", 6050, 0);
    struct vmc_w_jit own;
    CUresult st = vmc_w_jit_read(&a.input, &own);
    for (uint32_t i = 0; i < own.n && st == CUDA_SUCCESS; i++)
        if (own.logs[i])
            st = CUDA_ERROR_INVALID_VALUE; /* an input's own log buffers: the client gives them to cuLinkCreate */
    const struct vmc_w_image *img = vmc_w_image_find(a.input.sha256);
    if (st == CUDA_SUCCESS && (!img || img->size != a.size))
        st = CUDA_ERROR_INVALID_VALUE; /* the client adds only what it made sure is here */
    char name[VMC_MAX_LINK_NAME + 1];
    memcpy(name, a.name, a.name_bytes);
    name[a.name_bytes] = 0;
    if (st == CUDA_SUCCESS)
        st = add ? add(l->state, (CUjitInputType)a.type, (void *)img->bytes, (size_t)img->size, name, own.n,
                       own.n ? own.options : NULL, own.n ? own.values : NULL)
                 : vmc_w_drv_missing("cuLinkAddData");
    vmc_w_jit_free(&own);
    vmc_w_jit_reply(wc, st, 0, &l->jit); /* the create options' logs: where the driver reports this input */
    pthread_mutex_unlock(&lock);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_link_complete(struct vmc_wcall *wc) {
    struct vmc_link_handle a;
    vmc_get_link_handle(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct link *l = lock_link(wc, a.link);
    if (!l)
        return VMC_W_DONE;
    DRV(PFN_cuLinkComplete_v5050, complete, "cuLinkComplete", 5050, 0);
    void *image = NULL;
    size_t size = 0;
    CUresult st = complete ? complete(l->state, &image, &size) : vmc_w_drv_missing("cuLinkComplete");
    if (st == CUDA_SUCCESS) {
        l->image = image;
        l->image_size = size;
    }
    vmc_w_jit_reply(wc, st, st == CUDA_SUCCESS ? (uint64_t)size : 0, &l->jit);
    pthread_mutex_unlock(&lock);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_link_read(struct vmc_wcall *wc) {
    struct vmc_link_read_args a;
    vmc_get_link_read_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct link *l = lock_link(wc, a.link);
    if (!l)
        return VMC_W_DONE;
    if (!l->image || a.offset >= l->image_size) {
        pthread_mutex_unlock(&lock);
        vmc_w_reply_status(wc, (cudaError_t)CUDA_ERROR_INVALID_VALUE);
        return VMC_W_DONE;
    }
    size_t n = l->image_size - a.offset;
    n = n < VMC_LINK_READ_MAX ? n : VMC_LINK_READ_MAX;
    vmc_w_reply_status(wc, cudaSuccess);
    vmc_put_link_bytes(vmc_w_reply_out(wc),
                       &(struct vmc_link_bytes){.n = (uint32_t)n, .bytes = (const uint8_t *)l->image + a.offset});
    pthread_mutex_unlock(&lock);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_link_destroy(struct vmc_wcall *wc) {
    struct vmc_link_handle a;
    vmc_get_link_handle(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    pthread_mutex_lock(&lock);
    struct link **p = &links;
    while (*p && (*p)->handle != a.link)
        p = &(*p)->next;
    struct link *l = *p;
    if (l) {
        *p = l->next;
        n_links--;
    }
    DRV(PFN_cuLinkDestroy_v5050, destroy, "cuLinkDestroy", 5050, 0);
    CUresult st = !l ? CUDA_ERROR_INVALID_HANDLE : destroy ? destroy(l->state) : vmc_w_drv_missing("cuLinkDestroy");
    pthread_mutex_unlock(&lock);
    if (!l) {
        vmc_w_reply_status(wc, (cudaError_t)st);
        return VMC_W_DONE;
    }
    vmc_w_jit_free(&l->jit);
    free(l);
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

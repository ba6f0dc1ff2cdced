/* Host callbacks (cudaLaunchHostFunc, cudaStreamAddCallback, cuLaunchHostFunc, cuStreamAddCallback and
 * their per-thread variants) run in this process, in stream order (PROTOCOL.md "Host callbacks"):
 *   - the calling thread sends vmc_EnqueueHostCallback: the worker enqueues a host function of its own on
 *     the stream, which blocks the stream until this process says it ran the callback;
 *   - one callback thread of this process holds its own connection (a JOIN, like any other thread) and
 *     loops on vmc_CallbackChannel: "I ran callback T, give me the next one". The worker answers when one
 *     of its host functions has started, with the client's id for it and the stream's status.
 * The worker only ever sees the ids of this table, never the function or user-data pointers. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "shim_call.h"
#include "shim_callback.h"
#include "shim_session.h"
#include "shim_unsupported.h"
#include "vmc_api.h"
#include "vmc_internal.h"

struct entry {
    uint64_t id;
    unsigned kind;
    int kept; /* part of a graph (a host node, a captured host function): runs at every execution */
    vmc_host_fn fn;
    vmc_stream_callback callback;
    void *user_data;
    uint64_t stream;
    struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct entry *entries; /* one-shot callbacks: few at a time */
static struct entry *kept;    /* graphs' callbacks: they stay, apart, so that they do not slow the others' lookup */
static uint64_t next_id = 1;
static int channel_state; /* 0 = not started, 1 = starting, 2 = up, -1 = failed */
static cudaError_t channel_error = cudaSuccess;

/* The entry for id: a one-shot one leaves its list, a kept one stays in its own. */
static struct entry *take(uint64_t id) {
    for (struct entry **p = &entries; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            struct entry *e = *p;
            *p = e->next;
            if (e->kept) { /* captured into a graph after it was enqueued: it moves to the kept list */
                e->next = kept;
                kept = e;
            }
            return e;
        }
    }
    for (struct entry *e = kept; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

static void set_state(int s, cudaError_t err) {
    pthread_mutex_lock(&lock);
    channel_state = s;
    channel_error = err;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void *callback_thread(void *arg) {
    (void)arg;
    uint64_t done = 0;
    int first = 1;
    for (;;) {
        struct vmc_call c;
        cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_CallbackChannel, 0);
        if (st != cudaSuccess) {
            if (first)
                set_state(-1, st);
            return NULL;
        }
        if (first) {
            set_state(2, cudaSuccess);
            first = 0;
        }
        vmc_put_callback_channel_args(vmc_call_args(&c), &(struct vmc_callback_channel_args){.done = done});
        st = vmc_call_finish(&c);
        if (st != cudaSuccess)
            return NULL; /* the session is over (or the worker refused the channel) */
        struct vmc_host_callback_due due;
        vmc_get_host_callback_due(&c.reply, &due);
        uint64_t token = due.token, id = due.id;
        uint32_t status = due.status;
        pthread_mutex_lock(&lock);
        struct entry *e = take(id);
        pthread_mutex_unlock(&lock);
        if (e) {
            if (e->kind == VMC_CALLBACK_HOST_FN)
                e->fn(e->user_data);
            else
                e->callback((void *)(uintptr_t)e->stream, (int)status, e->user_data);
            if (!e->kept)
                free(e);
        }
        done = token;
    }
}

static struct entry *new_entry(unsigned kind, vmc_host_fn fn, vmc_stream_callback callback, void *user_data,
                               uint64_t stream, int keep) {
    struct entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->kind = kind;
    e->fn = fn;
    e->callback = callback;
    e->user_data = user_data;
    e->stream = stream;
    e->kept = keep;
    pthread_mutex_lock(&lock);
    e->id = next_id++;
    struct entry **list = keep ? &kept : &entries;
    e->next = *list;
    *list = e;
    pthread_mutex_unlock(&lock);
    return e;
}

/* Starts the callback thread once; waits until its connection is open. */
static cudaError_t ensure_channel(void) {
    pthread_mutex_lock(&lock);
    if (channel_state == 0) {
        channel_state = 1;
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, callback_thread, NULL) != 0) {
            channel_state = -1;
            channel_error = cudaErrorMemoryAllocation;
        }
        pthread_attr_destroy(&attr);
    }
    while (channel_state == 1)
        pthread_cond_wait(&changed, &lock);
    cudaError_t st = channel_state == 2 ? cudaSuccess : channel_error;
    pthread_mutex_unlock(&lock);
    return st;
}

cudaError_t vmc_host_callback_enqueue(uint64_t stream, unsigned kind, vmc_host_fn fn, vmc_stream_callback callback,
                                      void *user_data, unsigned flags, int per_thread) {
    cudaError_t st = cudaSuccess;
    if (!vmc_thread_conn(&st))
        return st; /* no session: the same error every call gets */
    if ((kind == VMC_CALLBACK_HOST_FN && !fn) || (kind == VMC_CALLBACK_STREAM && !callback))
        return cudaErrorInvalidValue;
    st = ensure_channel();
    if (st != cudaSuccess)
        return st;
    struct entry *e = new_entry(kind, fn, callback, user_data, stream, 0);
    if (!e)
        return cudaErrorMemoryAllocation;
    uint64_t id = e->id;
    struct vmc_call c;
    st = vmc_call_begin(&c, VMC_API_vmc_EnqueueHostCallback, 0);
    if (st == cudaSuccess) {
        vmc_put_host_callback_args(vmc_call_args(&c), &(struct vmc_host_callback_args){
            .stream = stream, .id = id, .kind = (uint8_t)kind, .flags = flags, .per_thread = (uint8_t)per_thread});
        st = vmc_call_finish(&c);
    }
    struct vmc_host_callback_enqueued r = {0};
    if (st == cudaSuccess) {
        vmc_get_host_callback_enqueued(&c.reply, &r);
        if (!vmc_call_reply_ok(&c))
            r.kept = 0;
    }
    pthread_mutex_lock(&lock);
    if (st == cudaSuccess && r.kept)
        e->kept = 1; /* captured into a graph: asked for at every execution */
    else if (st != cudaSuccess)
        e = take(id); /* never enqueued on the worker: it will not be asked for */
    else
        e = NULL;
    pthread_mutex_unlock(&lock);
    if (st != cudaSuccess)
        free(e);
    return st;
}

cudaError_t vmc_host_callback_keep(vmc_host_fn fn, void *user_data, uint64_t *id) {
    cudaError_t st = cudaSuccess;
    if (!vmc_thread_conn(&st))
        return st;
    if (!fn || !id)
        return cudaErrorInvalidValue;
    st = ensure_channel();
    if (st != cudaSuccess)
        return st;
    struct entry *e = new_entry(VMC_CALLBACK_HOST_FN, fn, NULL, user_data, 0, 1);
    if (!e)
        return cudaErrorMemoryAllocation;
    *id = e->id;
    return cudaSuccess;
}

/* Host callbacks run in the client process, in stream order (PROTOCOL.md "Host callbacks").
 * vmc_EnqueueHostCallback puts a host function of the worker's own on the stream (the real
 * cudaLaunchHostFunc / cudaStreamAddCallback). When the stream reaches it, that function queues a request
 * and blocks the stream until the client's callback thread, which waits in vmc_CallbackChannel on a
 * connection of its own, has run the callback and acknowledged it with its next vmc_CallbackChannel.
 * Nothing the client sends is dereferenced: its callback id travels back opaque, acknowledgements are
 * matched against tokens the worker made. */
#define _GNU_SOURCE 1 /* POLLRDHUP */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vmc_api.h"
#include "vmc_internal.h"
#include "worker.h"

extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
extern cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                              unsigned int flags);

enum state { QUEUED, SENT, DONE };

struct request {
    uint64_t token;       /* the worker's name for it (acknowledgements must quote it) */
    uint64_t client_id;   /* opaque: the client's callback table index */
    uint32_t status;      /* the stream's status, for cudaStreamAddCallback */
    enum state state;
    const struct vmc_wconn *channel; /* the channel it was sent on */
    struct request *next; /* in `requests` */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct request *requests; /* QUEUED and SENT ones, oldest first */
static uint64_t next_token = 1;
static int live_channels;    /* channel calls waiting right now */
/* every connection that has served a channel call and is still open: the client's callback threads (one per
 * client process) */
#define MAX_CHANNELS 64
static const struct vmc_wconn *channels[MAX_CHANNELS];
static int n_channels;

static void unlink_request(struct request *r) {
    for (struct request **p = &requests; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

/* On CUDA's callback thread: hand the request to a channel, wait until the client ran it. */
static void run_in_client(struct request *r) {
    pthread_mutex_lock(&lock);
    r->token = next_token++;
    r->state = QUEUED;
    struct request **tail = &requests;
    while (*tail)
        tail = &(*tail)->next;
    r->next = NULL;
    *tail = r;
    pthread_cond_broadcast(&changed);
    while (r->state != DONE)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    free(r);
}

static void CUDART_CB host_function(void *arg) { run_in_client(arg); }

/* A callback a graph holds (a host node, or a host function captured from a stream) runs at every execution of
 * the graph: its record is kept for the session (graphs and their instances may outlive each other, so no one
 * call says when it is no longer needed) and each execution makes a request of its own. */
struct kept {
    uint64_t client_id;
    struct kept *next;
};
static struct kept *kept_callbacks;
static unsigned long n_kept;

static void CUDART_CB kept_function(void *arg) {
    struct request *r = calloc(1, sizeof *r);
    if (!r)
        return; /* out of memory on CUDA's callback thread: the callback is lost, the stream goes on */
    r->client_id = ((const struct kept *)arg)->client_id;
    run_in_client(r);
}

void *vmc_w_kept_callback(uint64_t client_id, void (**fn)(void *)) {
    struct kept *k = NULL;
    pthread_mutex_lock(&lock);
    if (n_kept < VMC_MAX_KEPT_CALLBACKS && (k = calloc(1, sizeof *k))) {
        k->client_id = client_id;
        k->next = kept_callbacks;
        kept_callbacks = k;
        n_kept++;
    }
    pthread_mutex_unlock(&lock);
    *fn = kept_function;
    return k;
}

static void CUDART_CB stream_callback(cudaStream_t stream, cudaError_t status, void *arg) {
    (void)stream;
    struct request *r = arg;
    r->status = (uint32_t)status;
    run_in_client(r);
}

enum vmc_w_result vmc_w_enqueue_host_callback(struct vmc_wcall *wc) {
    struct vmc_host_callback_args a;
    vmc_get_host_callback_args(&wc->in, &a);
    uint64_t stream_arg = a.stream, client_id = a.id;
    unsigned kind = a.kind, per_thread = a.per_thread;
    uint32_t flags = a.flags;
    if (!vmc_w_args_ok(wc) || wc->async || kind > 1 || per_thread > 1)
        return VMC_W_BAD_ARGS;
    cudaStream_t stream = (cudaStream_t)(uintptr_t)stream_arg;
    if (kind == 0 && vmc_w_stream_capturing(stream_arg, per_thread)) {
        /* captured into a graph, it runs at every execution: a kept record, and the client keeps its entry
         * (cudaStreamAddCallback is refused during a capture by the runtime itself, below) */
        void (*fn)(void *);
        void *k = vmc_w_kept_callback(client_id, &fn);
        cudaError_t st = !k ? cudaErrorMemoryAllocation
                            : per_thread ? cudaLaunchHostFunc_ptsz(stream, fn, k) : cudaLaunchHostFunc(stream, fn, k);
        vmc_w_reply_status(wc, st);
        vmc_put_host_callback_enqueued(vmc_w_reply_out(wc), &(struct vmc_host_callback_enqueued){.kept = 1});
        return VMC_W_DONE;
    }
    struct request *r = calloc(1, sizeof *r);
    if (!r) {
        vmc_w_reply_status(wc, cudaErrorMemoryAllocation);
        return VMC_W_DONE;
    }
    r->client_id = client_id;
    cudaError_t st;
    if (kind == 0)
        st = per_thread ? cudaLaunchHostFunc_ptsz(stream, host_function, r) : cudaLaunchHostFunc(stream, host_function, r);
    else
        st = per_thread ? cudaStreamAddCallback_ptsz(stream, stream_callback, r, flags)
                        : cudaStreamAddCallback(stream, stream_callback, r, flags);
    if (st != cudaSuccess)
        free(r);
    vmc_w_reply_status(wc, st);
    vmc_put_host_callback_enqueued(vmc_w_reply_out(wc), &(struct vmc_host_callback_enqueued){.kept = 0});
    return VMC_W_DONE;
}

enum gone { HERE, HUNG_UP, SENT_DATA };

/* Whether the client closed the channel (its process ends: its callback thread waits here for good), or broke
 * the protocol by sending on it while it waits. */
static enum gone channel_gone(struct vmc_wconn *c) {
    if (c->in.pos < c->in.len || (c->piped && vmc_pipe_readable(&c->pipe)))
        return SENT_DATA;
    struct pollfd p = {c->fd, POLLIN | POLLRDHUP, 0};
    int n = poll(&p, 1, 0);
    if (n < 0)
        return errno == EINTR ? HERE : HUNG_UP;
    if (n == 0)
        return HERE;
    return p.revents & (POLLRDHUP | POLLHUP | POLLERR) ? HUNG_UP : SENT_DATA;
}

/* lock held */
static void release_queued_if_no_channel(void) {
    if (n_channels > 0 || live_channels > 0)
        return;
    /* nothing can run them any more: their streams (and the worker's exit) go on */
    for (struct request **p = &requests; *p;) {
        struct request *r = *p;
        if (r->state == QUEUED) {
            *p = r->next;
            r->state = DONE;
        } else {
            p = &r->next;
        }
    }
}

void vmc_w_callback_conn_closed(const struct vmc_wconn *c) {
    pthread_mutex_lock(&lock);
    int known = 0;
    for (int i = 0; i < n_channels; i++)
        if (channels[i] == c) {
            channels[i] = channels[--n_channels];
            known = 1;
            break;
        }
    int lost = 0; /* a callback the client was running when its channel went: it never finished there */
    for (struct request **p = &requests; *p;) {
        struct request *r = *p;
        if (r->state == SENT && r->channel == c) {
            *p = r->next;
            r->state = DONE;
            lost = 1;
        } else {
            p = &r->next;
        }
    }
    if (known)
        release_queued_if_no_channel();
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    if (lost)
        vmc_w_note_abort("the client went while it ran a host callback"); /* isolation hook */
}

enum vmc_w_result vmc_w_callback_channel(struct vmc_wcall *wc) {
    struct vmc_callback_channel_args a;
    vmc_get_callback_channel_args(&wc->in, &a);
    uint64_t done = a.done;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    pthread_mutex_lock(&lock);
    live_channels++;
    int listed = 0;
    for (int i = 0; i < n_channels; i++)
        listed |= channels[i] == c;
    if (!listed && n_channels < MAX_CHANNELS)
        channels[n_channels++] = c;
    if (done) {
        for (struct request *r = requests; r; r = r->next)
            if (r->token == done && r->state == SENT && r->channel == c) {
                unlink_request(r);
                r->state = DONE;
                pthread_cond_broadcast(&changed);
                break;
            }
    }
    struct request *next = NULL;
    enum gone gone = HERE;
    while (!next && gone == HERE) {
        for (struct request *r = requests; r; r = r->next)
            if (r->state == QUEUED) {
                next = r;
                break;
            }
        if (next)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&changed, &lock, &until);
        pthread_mutex_unlock(&lock);
        gone = channel_gone(c);
        pthread_mutex_lock(&lock);
    }
    if (next) {
        next->state = SENT;
        next->channel = c;
    }
    live_channels--;
    uint64_t token = next ? next->token : 0, client_id = next ? next->client_id : 0;
    uint32_t status = next ? next->status : 0;
    pthread_mutex_unlock(&lock);
    /* a channel that hangs up while it waits is the program ending (its callback thread parks here for good);
     * one that sends while it waits broke the protocol. Either way the connection's release
     * (vmc_w_callback_conn_closed) lets the queued callbacks go when no channel is left. */
    if (gone != HERE)
        return gone == HUNG_UP ? VMC_W_CLOSED : VMC_W_FATAL;
    vmc_w_reply_status(wc, cudaSuccess);
    vmc_put_host_callback_due(vmc_w_reply_out(wc), &(struct vmc_host_callback_due){.token = token, .id = client_id, .status = status});
    return VMC_W_DONE;
}

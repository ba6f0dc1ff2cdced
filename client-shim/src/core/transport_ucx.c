/* Bulk copies over UCX (transport.h; PROTOCOL.md "Bulk copies over UCX"; docs/ucx.md). The worker's ring
 * lives on the appliance, registered with UCX by the session's UCX agent; this side fills a slot with a UCX
 * put followed by a flush (the bytes are in the ring when the flush completes) and drains one with a UCX
 * get. With an RDMA NIC (InfiniBand, RoCE, VMware PVRDMA) the NIC moves the bytes straight between the
 * application's buffer and the ring: no CPU copy on either side; over UCX's tcp or shared-memory transports
 * UCX emulates the one-sided operations.
 *
 * UCX is loaded at run time, only when the transport is configured (transport = ucx, or auto with an RDMA
 * device on this machine): a client without UCX installed works over TCP and says why UCX was not used.
 * UCX's own settings (UCX_TLS, UCX_NET_DEVICES, UCX_IB_GID_INDEX, ...) are read from the environment. */
#include "transport_ucx.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "errtab.h"
#include "shim_call.h"
#include "shim_config.h"
#include "shim_session.h"
#include "shim_shm.h"
#include "transport.h"
#include "ucx_blob_check.h"
#include "ucx_endpoint.h"
#include "vmc_api.h"
#include "vmc_internal.h"

#define SLOTS 4
/* One UCX stream moves 3.5-4.5 GB/s over UCX's tcp (emulated puts and gets) and 5-7 GB/s over its shared memory
 * (single-copy CMA) on the H200 host, each agent thread serving one ring: copies from 512 KiB are striped over
 * several connections in stripes of 256 KiB or more (the ring's smallest copy), so a mid-sized copy uses as many
 * streams as a large one (BENCHMARKS.md "Striping from 4 MiB, and UCX striping"). */
#define UCX_STRIPE_MIN (512u << 10)
#define UCX_STRIPE_PIECE VMC_SHM_MIN_BYTES
/* A put or get that makes no progress for this long means the appliance is unreachable over UCX. */
#define STALL_NS (15ll * 1000000000ll)
/* The same for the first flush of a new end point, which proves that UCX reaches the appliance at all. */
#define FIRST_CONTACT_NS (5ll * 1000000000ll)
/* How long vmcuda-ucx-check may take to read an appliance's address and rkey and reach its agent (UCX starts in
 * it, as here; half of it for the first contact, as FIRST_CONTACT_NS here). */
#define CHECK_MS 10000

/* ---- libucp, loaded on first use ---- */

static struct {
    ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **);
    void (*config_release)(ucp_config_t *);
    ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *, ucp_context_h *);
    ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *);
    void (*worker_destroy)(ucp_worker_h);
    unsigned (*worker_progress)(ucp_worker_h);
    ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);
    ucs_status_ptr_t (*ep_close_nbx)(ucp_ep_h, const ucp_request_param_t *);
    ucs_status_t (*ep_rkey_unpack)(ucp_ep_h, const void *, ucp_rkey_h *);
    void (*rkey_destroy)(ucp_rkey_h);
    ucs_status_ptr_t (*put_nbx)(ucp_ep_h, const void *, size_t, uint64_t, ucp_rkey_h, const ucp_request_param_t *);
    ucs_status_ptr_t (*get_nbx)(ucp_ep_h, void *, size_t, uint64_t, ucp_rkey_h, const ucp_request_param_t *);
    ucs_status_ptr_t (*ep_flush_nbx)(ucp_ep_h, const ucp_request_param_t *);
    ucs_status_t (*request_check_status)(void *);
    void (*request_free)(void *);
    const char *(*status_string)(ucs_status_t);
} ucp;

static ucp_context_h context;
static char load_why[200];
/* A connection could not reach the appliance over UCX, its answer could not be read, or UCX did not load: the
 * others would not do better (one message, no retries, no more rings asked of the appliance). */
static int unreachable, load_failed;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    /* UCX writes its log to stdout unless told otherwise, which would mix it into the program's output (read
     * once, when libucs loads) */
    setenv("UCX_LOG_FILE", "stderr", 0);
    void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_why, sizeof load_why, "cannot load libucp.so.0 (%s); install UCX (Debian: libucx0)", dlerror());
        return;
    }
    struct { void **slot; const char *name; } syms[] = {
        {(void **)&ucp.config_read, "ucp_config_read"}, {(void **)&ucp.config_release, "ucp_config_release"},
        {(void **)&ucp.init_version, "ucp_init_version"}, {(void **)&ucp.worker_create, "ucp_worker_create"},
        {(void **)&ucp.worker_destroy, "ucp_worker_destroy"}, {(void **)&ucp.worker_progress, "ucp_worker_progress"},
        {(void **)&ucp.ep_create, "ucp_ep_create"}, {(void **)&ucp.ep_close_nbx, "ucp_ep_close_nbx"},
        {(void **)&ucp.ep_rkey_unpack, "ucp_ep_rkey_unpack"}, {(void **)&ucp.rkey_destroy, "ucp_rkey_destroy"},
        {(void **)&ucp.put_nbx, "ucp_put_nbx"}, {(void **)&ucp.get_nbx, "ucp_get_nbx"},
        {(void **)&ucp.ep_flush_nbx, "ucp_ep_flush_nbx"}, {(void **)&ucp.request_check_status, "ucp_request_check_status"},
        {(void **)&ucp.request_free, "ucp_request_free"}, {(void **)&ucp.status_string, "ucs_status_string"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
            snprintf(load_why, sizeof load_why, "libucp.so.0 lacks %s (UCX older than 1.10?)", syms[i].name);
            return;
        }
    ucp_config_t *config;
    ucs_status_t st = ucp.config_read(NULL, NULL, &config);
    if (st == UCS_OK) {
        /* each connection's thread has a UCX worker of its own on this one context */
        ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                               .features = UCP_FEATURE_RMA, .mt_workers_shared = 1};
        st = ucp.init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context);
        ucp.config_release(config);
    }
    if (st != UCS_OK) {
        context = NULL;
        snprintf(load_why, sizeof load_why, "UCX did not start: %s", ucp.status_string(st));
    }
}

/* ---- the ring ---- */

struct ucx_ring {
    struct vmc_ring ring;
    ucp_worker_h worker; /* this connection's own: only its thread uses it */
    ucp_ep_h ep;
    ucp_rkey_h rkey;
    uint64_t remote_base;
    volatile int peer_failed;
    ucs_status_t peer_status;
    int peer_errors; /* the end point reports a failed peer (UCP_ERR_HANDLING_MODE_PEER) */
};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Waits up to `stall_ns` without progress for a request to complete; 0, or -1 with why set. */
static int wait_for(struct ucx_ring *u, ucs_status_ptr_t req, const char *what, int64_t stall_ns) {
    ucs_status_t st = UCS_OK;
    if (UCS_PTR_IS_ERR(req)) {
        st = UCS_PTR_STATUS(req);
    } else if (req) {
        int64_t since = now_ns();
        unsigned spins = 0;
        while ((st = ucp.request_check_status(req)) == UCS_INPROGRESS && !u->peer_failed) {
            if (ucp.worker_progress(u->worker)) {
                spins = 0;
                since = 0;
            } else if (++spins % 4096 == 0) {
                int64_t t = now_ns();
                if (!since)
                    since = t;
                else if (t - since > stall_ns)
                    break;
            }
        }
        if (st == UCS_INPROGRESS) {
            if (u->peer_failed)
                snprintf(u->ring.why, sizeof u->ring.why, "UCX %s: the appliance's end failed: %s", what,
                         ucp.status_string(u->peer_status));
            else
                snprintf(u->ring.why, sizeof u->ring.why, "UCX %s made no progress for %lld s", what,
                         (long long)(stall_ns / 1000000000ll));
            return -1; /* the request stays with UCX: the session is lost and the worker destroyed with it */
        }
        ucp.request_free(req);
    }
    if (st != UCS_OK) {
        snprintf(u->ring.why, sizeof u->ring.why, "UCX %s failed: %s", what, ucp.status_string(st));
        return -1;
    }
    return 0;
}

static int wait(struct ucx_ring *u, ucs_status_ptr_t req, const char *what) { return wait_for(u, req, what, STALL_NS); }

static int ucx_fill(struct vmc_ring *r, uint32_t slot, const void *src, size_t n, size_t whole) {
    (void)whole; /* a put is a put whatever the size of the copy */
    struct ucx_ring *u = (struct ucx_ring *)r;
    ucp_request_param_t p = {0};
    uint64_t at = u->remote_base + (uint64_t)slot * r->slot_size;
    /* the flush makes the put complete at the appliance: only then may the token say the slot is full */
    if (wait(u, ucp.put_nbx(u->ep, src, n, at, u->rkey, &p), "put") != 0 || wait(u, ucp.ep_flush_nbx(u->ep, &p), "flush") != 0)
        return -1;
    return 0;
}

static int ucx_drain(struct vmc_ring *r, uint32_t slot, void *dst, size_t n) {
    struct ucx_ring *u = (struct ucx_ring *)r;
    ucp_request_param_t p = {0};
    return wait(u, ucp.get_nbx(u->ep, dst, n, u->remote_base + (uint64_t)slot * r->slot_size, u->rkey, &p), "get");
}

static void ucx_close(struct vmc_ring *r, int forked) {
    struct ucx_ring *u = (struct ucx_ring *)r;
    if (forked) { /* the handles are the parent's too (and a UCX lock may have been held at the fork) */
        free(u);
        return;
    }
    if (u->ep) {
        /* the end point first, cancelling what is in flight on it: forced where the end point reports a failed
         * peer (the appliance may be gone, and a clean close would wait for it), flushed otherwise (UCX defines a
         * forced close only with peer error handling); a bounded wait either way */
        ucp_request_param_t p = {.op_attr_mask = u->peer_errors ? UCP_OP_ATTR_FIELD_FLAGS : 0,
                                 .flags = u->peer_errors ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        ucs_status_ptr_t req = ucp.ep_close_nbx(u->ep, &p);
        if (req && !UCS_PTR_IS_ERR(req)) {
            for (int i = 0; i < 100000 && ucp.request_check_status(req) == UCS_INPROGRESS; i++)
                ucp.worker_progress(u->worker);
            if (ucp.request_check_status(req) != UCS_INPROGRESS)
                ucp.request_free(req);
        }
    }
    if (u->rkey)
        ucp.rkey_destroy(u->rkey);
    if (u->worker) /* with it, any request still in flight */
        ucp.worker_destroy(u->worker);
    free(u);
}

static const struct vmc_ring_ops ucx_ops = {"UCX", 0, ucx_fill, ucx_drain, NULL, ucx_close};

static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
    (void)ep;
    struct ucx_ring *u = arg;
    u->peer_status = status;
    u->peer_failed = 1;
}

/* One line per process for each reason UCX is not used, when the user asked for it by name. */
static void say_not_used(const char *why) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char last[200];
    if (vmc_client_config()->transport != VMC_TRANSPORT_UCX)
        return;
    pthread_mutex_lock(&lock);
    if (strcmp(last, why) != 0) {
        snprintf(last, sizeof last, "%s", why);
        fprintf(stderr, "vmcuda: transport ucx not used: %s; bulk copies go over TCP\n", why);
    }
    pthread_mutex_unlock(&lock);
}

/* An RDMA device (InfiniBand, RoCE, PVRDMA) is present: what `auto` needs before it tries UCX. */
static int rdma_device_present(void) {
    DIR *d = opendir("/sys/class/infiniband");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = e->d_name[0] != '.';
    if (d)
        closedir(d);
    return found;
}

/* UCX's transfers are not encrypted (PROTOCOL.md "Encryption"): with TLS, `auto` never picks UCX, and a client
 * that names it is told once what it gives up. */
int vmc_ucx_wanted(void) {
    const struct vmc_client_config *cfg = vmc_client_config();
    if (cfg->transport == VMC_TRANSPORT_UCX && cfg->tls_ca[0]) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "vmcuda: transport ucx: bulk copies over UCX are not encrypted; TLS (tls_ca) covers the "
                            "calls only\n");
    }
    return cfg->transport == VMC_TRANSPORT_UCX ||
           (cfg->transport == VMC_TRANSPORT_AUTO && !cfg->tls_ca[0] && rdma_device_present());
}

/* UCX's shared-memory transports cannot report a failed peer, and an end point that asks for that over them is
 * refused with an ERROR line of UCX's own on stderr (one per connection, so four a striped copy). Not asked for where
 * UCX_TLS names shared-memory transports only, nor after the first refusal in this process. */
static int peer_mode_refused;

static int peer_mode_worth_asking(void) {
    if (__atomic_load_n(&peer_mode_refused, __ATOMIC_RELAXED))
        return 0;
    const char *tls = getenv("UCX_TLS");
    if (!tls || !*tls)
        return 1;
    /* and the host-local GPU transports, which a GPU-less client does not use anyway */
    static const char *const shared_memory[] = {"sm", "shm", "posix", "sysv", "cma", "knem", "xpmem", "self", "cuda_copy", "cuda_ipc"};
    char list[256];
    snprintf(list, sizeof list, "%s", tls[0] == '^' ? "" : tls); /* "^x,y": all but those, network ones included */
    if (!list[0])
        return 1;
    char *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int is_shared_memory = 0;
        for (size_t i = 0; i < sizeof shared_memory / sizeof *shared_memory; i++)
            is_shared_memory |= strcmp(t, shared_memory[i]) == 0;
        if (!is_shared_memory)
            return 1;
    }
    return 0;
}

/* Connects this connection's own UCX worker to the appliance's; NULL with why set on failure. */
static struct ucx_ring *connect_padded(const uint8_t *rkey, const uint8_t *address, uint64_t base,
                                       char *why, size_t why_len) {
    struct ucx_ring *u = calloc(1, sizeof *u);
    if (!u) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    u->ring = (struct vmc_ring){&ucx_ops, vmc_block_size(), SLOTS, VMC_SHM_MIN_BYTES, {UCX_STRIPE_MIN, UCX_STRIPE_PIECE}, ""};
    u->remote_base = base;
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucs_status_t st = ucp.worker_create(context, &wp, &u->worker);
    const char *step = "worker";
    if (st == UCS_OK) {
        step = "end point";
        int asked = peer_mode_worth_asking(), peer = asked;
        st = vmc_ucx_endpoint(ucp.ep_create, u->worker, address, &peer, on_peer_error, u, &u->ep);
        u->peer_errors = peer;
        /* UCX's shared-memory transports cannot report a failed peer: without that, a dead appliance shows as a put
         * or get that makes no progress (STALL_NS), and the byte stream's end */
        if (asked && !peer)
            __atomic_store_n(&peer_mode_refused, 1, __ATOMIC_RELAXED);
    }
    if (st == UCS_OK) {
        step = "rkey";
        st = ucp.ep_rkey_unpack(u->ep, rkey, &u->rkey);
    }
    if (st != UCS_OK) {
        snprintf(why, why_len, "UCX %s: %s", step, ucp.status_string(st));
        ucx_close(&u->ring, 0);
        return NULL;
    }
    /* the end point's first flush completes once UCX has reached the appliance's end: checked here, while the
     * byte stream can still carry every copy, rather than at a copy, where a failure would end the session */
    ucp_request_param_t p = {0};
    if (wait_for(u, ucp.ep_flush_nbx(u->ep, &p), "first contact", FIRST_CONTACT_NS) != 0) {
        snprintf(why, why_len, "%s", u->ring.why);
        ucx_close(&u->ring, 0);
        return NULL;
    }
    return u;
}

/* connect_padded on padded copies of the appliance's rkey and address; NULL with why set on failure. */
static struct ucx_ring *connect_ring(const uint8_t *rkey_bytes, uint32_t rkey_len, const uint8_t *address_bytes,
                                     uint32_t address_len, uint64_t base, char *why, size_t why_len) {
    /* UCX reads both without their lengths: copies padded as vmcuda-ucx-check's were, so that UCX reads here
     * exactly what it read there (ucx_blob_check.h); it keeps nothing of them once the end point and rkey exist */
    uint8_t *rkey = vmc_ucx_padded_copy(rkey_bytes, rkey_len), *address = vmc_ucx_padded_copy(address_bytes, address_len);
    struct ucx_ring *u = rkey && address ? connect_padded(rkey, address, base, why, why_len) : NULL;
    if (!rkey || !address)
        snprintf(why, why_len, "out of memory");
    free(rkey);
    free(address);
    return u;
}

/* One of UCX's memory sizes as an agent reports it ("64k", "65536", "1m", "8KB"), within what a tcp segment can
 * sensibly be: 1 KiB to 64 MiB. */
static int segment_size_ok(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *s == '-' || *s == '+')
        return 0;
    if (*end == 'k' || *end == 'K')
        v = v > (1ull << 40) ? 0 : v << 10, end++;
    else if (*end == 'm' || *end == 'M')
        v = v > (1ull << 40) ? 0 : v << 20, end++;
    if (*end == 'b' || *end == 'B')
        end++;
    return *end == 0 && v >= 1024 && v <= (64ull << 20);
}

/* UCX's tcp segment sizes must be the agent's ("TX RX" from its reply), or UCX aborts the side that receives
 * a larger segment than it expects: the appliance's choice is applied here, before UCX is loaded (it reads
 * its transports' settings from the environment only; every agent of an appliance says the same). -1 when the
 * appliance's answer is not two such sizes (or empty: the agent has no tcp transport). */
static int use_agents_segments(const char *segments) {
    char tx[16], rx[16], more;
    if (!segments[0])
        return 0;
    if (sscanf(segments, "%15s %15s %c", tx, rx, &more) != 2 || !segment_size_ok(tx) || !segment_size_ok(rx))
        return -1;
    const char *tls = getenv("UCX_TLS");
    if (!tls || strstr(tls, "tcp") || strstr(tls, "all")) {
        setenv("UCX_TCP_TX_SEG_SIZE", tx, 1);
        setenv("UCX_TCP_RX_SEG_SIZE", rx, 1);
    }
    return 0;
}

/* This connection will not use UCX, nor will any other of this process: said once (when UCX was asked for). */
static struct vmc_ring *not_for_this_process(const char *why) {
    __atomic_store_n(&unreachable, 1, __ATOMIC_RELAXED);
    say_not_used(why);
    return NULL;
}

struct vmc_ring *vmc_ucx_attach(void) {
    /* said once already; and no more rings the appliance would keep for nothing */
    if (__atomic_load_n(&unreachable, __ATOMIC_RELAXED) || __atomic_load_n(&load_failed, __ATOMIC_ACQUIRE))
        return NULL;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_UcxAttach, 0);
    if (st != cudaSuccess)
        return NULL;
    vmc_put_ucx_attach_args(vmc_call_args(&c), &(struct vmc_ucx_attach_args){.slots = SLOTS, .slot_size = vmc_block_size()});
    st = vmc_call_finish(&c);
    struct vmc_ucx_attach_reply r;
    vmc_get_ucx_attach_reply(&c.reply, &r);
    char why[240];
    if (st != cudaSuccess) {
        if (vmc_call_reply_ok(&c) && r.why_bytes)
            snprintf(why, sizeof why, "the appliance says: %.*s", (int)(r.why_bytes < 200 ? r.why_bytes : 200), (const char *)r.why);
        else
            snprintf(why, sizeof why, "the appliance gave this connection no UCX ring (%s)",
                     vmc_error_text(st) ? vmc_error_text(st)->name : VMC_UNKNOWN_ERROR_NAME);
        say_not_used(why);
        return NULL;
    }
    uint64_t base = r.remote_base;
    uint32_t rkey_len = r.rkey_bytes, address_len = r.address_bytes, segments_len = r.segments_bytes;
    const uint8_t *rkey = r.rkey, *address = r.address, *segments = r.segments;
    if (!vmc_call_reply_ok(&c) || !rkey || !address || !rkey_len || !address_len || segments_len >= 32 ||
        (uint64_t)rkey_len + address_len > VMC_UCX_MAX_BLOB)
        return not_for_this_process("the appliance's answer to the UCX attach is malformed");
    char seg[32];
    memcpy(seg, segments, segments_len);
    seg[segments_len] = 0;
    if (memchr(seg, 0, segments_len))
        return not_for_this_process("the appliance's answer to the UCX attach is malformed");
    static pthread_mutex_t settings_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&settings_lock);
    int segments_ok = context || load_why[0] || use_agents_segments(seg) == 0;
    pthread_mutex_unlock(&settings_lock);
    if (!segments_ok) {
        snprintf(why, sizeof why, "the appliance's UCX tcp segment sizes are not two sizes of 1 KiB-64 MiB: '%.31s'", seg);
        return not_for_this_process(why);
    }
    pthread_once(&load_once, load);
    if (!context) {
        __atomic_store_n(&load_failed, 1, __ATOMIC_RELEASE);
        say_not_used(load_why);
        return NULL;
    }
    /* UCX reads them here only once it has read them in a process of its own and that one lived */
    if (vmc_ucx_check_blobs(rkey, rkey_len, address, address_len, peer_mode_worth_asking(), CHECK_MS, why, sizeof why) != 0)
        return not_for_this_process(why);
    struct ucx_ring *u = connect_ring(rkey, rkey_len, address, address_len, base, why, sizeof why);
    if (!u)
        return not_for_this_process(why);
    return &u->ring;
}

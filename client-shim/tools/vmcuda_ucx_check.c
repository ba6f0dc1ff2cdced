/* vmcuda-ucx-check: has UCX read a worker address and a packed rkey that an appliance sent, in a process of its
 * own, so that the client's process hands them to UCX only once they did not kill this one.
 *
 * UCX's readers of a peer's worker address and packed rkey trust their input: fed damaged ones, UCX 1.13 fails
 * an assertion and aborts the process (address.c, "addr version"; mm_posix.c, "length > 0") or faults in its
 * own clean-up (uct_rkey_release), in 2-6 % of single-byte damages (a fuzz of 1000 each, docs/ucx.md). The
 * client's process is the user's program: a damaged reply (a link without TLS, a different UCX on the
 * appliance, a faulty agent) must cost it the UCX transport, not its life. transport_ucx.c runs this first.
 *
 * usage: vmcuda-ucx-check CONTACT_MS peer|plain. stdin: u32 rkey length, u32 address length (host order), the rkey,
 * the address. It makes a UCX context with the client's features, a worker, an end point to the address (asking
 * for peer error handling first when told "peer", as the client does) and unpacks the rkey on it, from copies
 * followed by VMC_UCX_BLOB_PAD zero bytes, as the client does (ucx_blob_check.h), so that both read the same bytes;
 * then it makes the first contact with the agent and closes the end point as the client's goes.
 * stdout: "ok" and exit 0, or "vmcuda-ucx-check: WHY" and exit 1. UCX's settings come from the environment
 * (UCX_TLS, UCX_NET_DEVICES, the appliance's tcp segment sizes), as the client's. UCX is loaded with dlopen, as
 * in the client: the package does not depend on UCX. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "ucx_blob_check.h"
#include "ucx_endpoint.h"

static int fail(const char *fmt, const char *detail) {
    printf("vmcuda-ucx-check: ");
    printf(fmt, detail);
    printf("\n");
    return 1;
}

/* How long the end point's close may take once it has reached the agent. */
#define CLOSE_MS 1000

static struct {
    unsigned (*progress)(ucp_worker_h);
    ucs_status_t (*check)(void *);
    void (*free)(void *);
} ucp;

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Progresses `worker` until `req` completes or `ms` have passed: its status, UCS_INPROGRESS when it did not end. */
static ucs_status_t finish(ucp_worker_h worker, ucs_status_ptr_t req, int ms) {
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    if (!req)
        return UCS_OK;
    for (int64_t end = now_ms() + ms; ucp.check(req) == UCS_INPROGRESS && now_ms() < end;)
        ucp.progress(worker);
    ucs_status_t st = ucp.check(req);
    if (st != UCS_INPROGRESS)
        ucp.free(req);
    return st;
}

static int read_all(void *buf, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t r = read(0, (char *)buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* A copy of `n` bytes from stdin followed by the padding the client gives its own copy. */
static uint8_t *read_blob(uint32_t n) {
    uint8_t *b = calloc(1, (size_t)n + VMC_UCX_BLOB_PAD);
    if (b && read_all(b, n) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

/* UCX's peer failure reports, asked for as the client asks for them (it only counts them) */
static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
    (void)arg;
    (void)ep;
    (void)status;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int contact_ms = argc == 3 ? atoi(argv[1]) : 0;
    int peer_mode = argc == 3 && strcmp(argv[2], "peer") == 0;
    if (contact_ms <= 0 || (!peer_mode && strcmp(argv[2], "plain") != 0))
        return fail("%s", "usage: vmcuda-ucx-check CONTACT_MS peer|plain < lengths, rkey, address (run by the vmcuda client)");
    /* a fault here should end this process at once: no backtrace, and never UCX's "freeze" waiting for a debugger */
    setenv("UCX_HANDLE_ERRORS", "none", 1);
    setenv("UCX_LOG_FILE", "stderr", 0);
    uint32_t len[2];
    if (read_all(len, sizeof len) != 0)
        return fail("%s", "no input");
    if ((uint64_t)len[0] + len[1] > VMC_UCX_MAX_BLOB || !len[0] || !len[1])
        return fail("%s", "an rkey and address of impossible lengths");
    uint8_t *rkey = read_blob(len[0]), *address = read_blob(len[1]);
    if (!rkey || !address)
        return fail("%s", "input shorter than its lengths");

    void *h = dlopen("libucp.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fail("cannot load libucp.so.0 (%s)", dlerror());
    ucs_status_t (*config_read)(const char *, const char *, ucp_config_t **) = dlsym(h, "ucp_config_read");
    ucs_status_t (*init_version)(unsigned, unsigned, const ucp_params_t *, const ucp_config_t *, ucp_context_h *) =
        dlsym(h, "ucp_init_version");
    ucs_status_t (*worker_create)(ucp_context_h, const ucp_worker_params_t *, ucp_worker_h *) = dlsym(h, "ucp_worker_create");
    ucs_status_t (*ep_create)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *) = dlsym(h, "ucp_ep_create");
    ucs_status_t (*rkey_unpack)(ucp_ep_h, const void *, ucp_rkey_h *) = dlsym(h, "ucp_ep_rkey_unpack");
    void (*rkey_destroy)(ucp_rkey_h) = dlsym(h, "ucp_rkey_destroy");
    const char *(*status_string)(ucs_status_t) = dlsym(h, "ucs_status_string");
    ucp.progress = dlsym(h, "ucp_worker_progress");
    ucp.check = dlsym(h, "ucp_request_check_status");
    ucp.free = dlsym(h, "ucp_request_free");
    ucs_status_ptr_t (*ep_flush)(ucp_ep_h, const ucp_request_param_t *) = dlsym(h, "ucp_ep_flush_nbx");
    ucs_status_ptr_t (*ep_close)(ucp_ep_h, const ucp_request_param_t *) = dlsym(h, "ucp_ep_close_nbx");
    if (!config_read || !init_version || !worker_create || !ep_create || !rkey_unpack || !rkey_destroy || !status_string ||
        !ucp.progress || !ucp.check || !ucp.free || !ep_flush || !ep_close)
        return fail("%s", "libucp.so.0 lacks a function the client uses");

    ucp_config_t *config;
    ucp_context_h context;
    ucp_worker_h worker;
    ucp_ep_h ep;
    ucp_rkey_h key;
    /* the client's context and worker (transport_ucx.c load, connect_ring) */
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA, .mt_workers_shared = 1};
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucs_status_t st = config_read(NULL, NULL, &config);
    if (st == UCS_OK)
        st = init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context);
    if (st != UCS_OK)
        return fail("UCX did not start: %s", status_string(st));
    if ((st = worker_create(context, &wp, &worker)) != UCS_OK)
        return fail("UCX worker: %s", status_string(st));
    /* the client's end point, made as it makes it (ucx_endpoint.h) */
    st = vmc_ucx_endpoint(ep_create, worker, address, &peer_mode, on_peer_error, NULL, &ep);
    if (st != UCS_OK)
        return fail("UCX end point: %s", status_string(st));
    if ((st = rkey_unpack(ep, rkey, &key)) != UCS_OK)
        return fail("UCX rkey: %s", status_string(st));
    /* UCX told the appliance's agent about this end point as it made it (its wire-up). The first flush completes
     * once UCX has reached the agent (the client's first contact, transport_ucx.c); then the end point is closed,
     * and the rkey destroyed after it, as a client's are when its ring goes (UCX's release of what it read has
     * faulted too), so that the agent does not reach back later for a process that is gone (over shared memory UCX
     * would complain of it in the agent). */
    ucp_request_param_t none = {0};
    if ((st = finish(worker, ep_flush(ep, &none), contact_ms)) == UCS_INPROGRESS) {
        char took[32];
        snprintf(took, sizeof took, "%d ms", contact_ms);
        return fail("UCX first contact made no progress for %s", took);
    }
    if (st != UCS_OK)
        return fail("UCX first contact failed: %s", status_string(st));
    ucp_request_param_t closing = {.op_attr_mask = peer_mode ? UCP_OP_ATTR_FIELD_FLAGS : 0,
                                   .flags = peer_mode ? UCP_EP_CLOSE_FLAG_FORCE : 0};
    finish(worker, ep_close(ep, &closing), CLOSE_MS);
    rkey_destroy(key);
    printf("ok\n");
    _exit(0);
}

#include "shim_stripe.h"

#include <stdio.h>

#include "shim_config.h"
#include "shim_parallel.h"
#include "shim_session.h"

#define MAX_STRIPES 8

/* Set once a helper thread could not join the session: from then on copies use one connection. */
static int helpers_cannot_join;

unsigned vmc_stripe_ways(size_t count, struct vmc_stripe_policy policy) {
    const struct vmc_client_config *cfg = vmc_client_config();
    /* Multi-GPU sessions: a helper's connection has device 0 current, not the caller's device. */
    if (cfg->tcp_streams <= 1 || cfg->gpus != 1 || policy.min == 0 || count < policy.min || policy.piece == 0 ||
        __atomic_load_n(&helpers_cannot_join, __ATOMIC_RELAXED))
        return 1;
    size_t by_size = count / policy.piece;
    unsigned ways = cfg->tcp_streams < MAX_STRIPES ? cfg->tcp_streams : MAX_STRIPES;
    return by_size < ways ? (unsigned)by_size : ways;
}

struct stripe_job {
    uint8_t *host;
    uint64_t device;
    size_t count;
    unsigned mode;
    vmc_stripe_fn move;
    cudaError_t status[MAX_STRIPES];
    unsigned char unserved[MAX_STRIPES]; /* a helper without a connection leaves its stripe to the caller */
};

/* Stripe `part` of `ways`: contiguous pieces of whole pages, the last one takes the remainder. Shares are rounded
 * down, so that no stripe is shorter than the policy's piece (vmc_stripe_ways gives at most count / piece ways, and
 * pieces are whole pages): a ring's stripe of its smallest size still goes through the ring. */
static void stripe_bounds(const struct stripe_job *j, unsigned part, unsigned ways, size_t *off, size_t *n) {
    size_t share = (j->count / ways) & ~(size_t)4095;
    if (share == 0) /* a copy of less than a page a stripe: the first takes it all */
        share = j->count;
    *off = (size_t)part * share;
    if (*off >= j->count)
        *n = 0;
    else
        *n = part + 1 == ways || *off + share > j->count ? j->count - *off : share;
}

static void stripe_part(void *arg, unsigned part, unsigned ways) {
    struct stripe_job *j = arg;
    size_t off, n;
    stripe_bounds(j, part, ways, &off, &n);
    j->status[part] = cudaSuccess;
    if (n == 0)
        return;
    cudaError_t err;
    if (part > 0 && !vmc_thread_conn(&err)) {
        j->unserved[part] = 1;
        return;
    }
    j->status[part] = j->move(j->host + off, j->device + off, n, j->mode);
}

cudaError_t vmc_striped_copy(unsigned ways, uint8_t *host, uint64_t device, size_t count, unsigned mode,
                             vmc_stripe_fn move) {
    cudaError_t st = vmc_sync_default_stream(mode);
    if (st != cudaSuccess)
        return st;
    struct stripe_job j = {host, device, count, mode, move, {cudaSuccess}, {0}};
    if (ways > MAX_STRIPES)
        ways = MAX_STRIPES;
    ways = vmc_parallel(ways, stripe_part, &j);
    for (unsigned p = 0; p < ways; p++)
        if (j.unserved[p]) {
            if (!__atomic_exchange_n(&helpers_cannot_join, 1, __ATOMIC_RELAXED))
                fprintf(stderr, "vmcuda: large copies use one connection from now on (a helper thread could not "
                                "join the session)\n");
            size_t off, n;
            stripe_bounds(&j, p, ways, &off, &n);
            j.status[p] = move(host + off, device + off, n, mode);
        }
    for (unsigned p = 0; p < ways; p++)
        if (j.status[p] != cudaSuccess)
            return j.status[p];
    return cudaSuccess;
}

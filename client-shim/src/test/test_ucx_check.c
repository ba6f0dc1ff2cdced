/* vmc_ucx_check_blobs (src/core/ucx_blob_check.c) with UCX itself: an appliance's worker address and packed rkey
 * are read by UCX in vmcuda-ucx-check first, so that damaged ones cost the client the UCX transport and not its
 * life. Checks: a real address and rkey pass; damaged ones that UCX cannot read are refused with a reason (some
 * of them kill the checker: UCX 1.13 aborts or faults on them); and every damaged pair the checker passed is then
 * read by UCX in this process too without harm (the padded copies make both read the same bytes). The "agent" is a
 * UCX worker of this process, progressed by a thread of its own. Runs with the UCX_TLS it is given (the Makefile:
 * tcp, then sm). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "check.h"
#include "ucx_blob_check.h"
#include "ucx_endpoint.h"

static ucp_worker_h client_worker, agent_worker;
static volatile int stopping;

/* The agent's side: its worker answers the checker's first contact (and this process's own end points). */
static void *agent_progress(void *arg) {
    (void)arg;
    while (!stopping)
        ucp_worker_progress(agent_worker);
    return NULL;
}

/* As the client asks: peer error handling where a network transport may be used (transport_ucx.c
 * peer_mode_worth_asking), so over tcp here, not over shared memory alone. */
static int peer_mode;

static void on_peer_error(void *arg, ucp_ep_h ep, ucs_status_t status) {
    (void)arg;
    (void)ep;
    (void)status;
}

/* What the client does once the checker passed them (transport_ucx.c connect_ring): padded copies, an end point
 * made as the client makes it, the rkey unpacked on it; when its ring goes, the end point closed and the rkey
 * destroyed. Crashing here fails the test. */
static void read_here(const uint8_t *rkey, uint32_t rkey_len, const uint8_t *address, uint32_t address_len) {
    uint8_t *r = vmc_ucx_padded_copy(rkey, rkey_len), *a = vmc_ucx_padded_copy(address, address_len);
    ucp_ep_h ep;
    ucp_rkey_h key;
    int peer = peer_mode;
    ucs_status_t st = vmc_ucx_endpoint(ucp_ep_create, client_worker, a, &peer, on_peer_error, NULL, &ep);
    if (st == UCS_OK) {
        int unpacked = ucp_ep_rkey_unpack(ep, r, &key) == UCS_OK;
        ucp_request_param_t closing = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &closing);
        for (int i = 0; i < 100000 && req && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS; i++)
            ucp_worker_progress(client_worker);
        if (req && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) != UCS_INPROGRESS)
            ucp_request_free(req);
        if (unpacked)
            ucp_rkey_destroy(key);
    }
    free(r);
    free(a);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    peer_mode = getenv("UCX_TLS") && strstr(getenv("UCX_TLS"), "tcp");
    ucp_config_t *config;
    ucp_context_h context;
    /* each worker has a thread of its own, as in the client */
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                           .features = UCP_FEATURE_RMA, .mt_workers_shared = 1};
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE};
    CHECK(ucp_config_read(NULL, NULL, &config) == UCS_OK && ucp_init(&params, config, &context) == UCS_OK, "UCX starts");
    CHECK(ucp_worker_create(context, &wp, &agent_worker) == UCS_OK && ucp_worker_create(context, &wp, &client_worker) == UCS_OK,
          "two UCX workers");
    /* what an agent sends: its worker's address and the rkey of a registered ring */
    ucp_address_t *addr;
    size_t address_len;
    void *rkey;
    size_t rkey_len;
    static uint8_t ring[1 << 20];
    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
                               .address = ring, .length = sizeof ring};
    ucp_mem_h memh;
    CHECK(ucp_worker_get_address(agent_worker, &addr, &address_len) == UCS_OK && ucp_mem_map(context, &mp, &memh) == UCS_OK &&
              ucp_rkey_pack(context, memh, &rkey, &rkey_len) == UCS_OK,
          "an address and an rkey");
    pthread_t progress;
    pthread_create(&progress, NULL, agent_progress, NULL);
    char why[256] = "";
    CHECK(vmc_ucx_check_blobs(rkey, (uint32_t)rkey_len, (const uint8_t *)addr, (uint32_t)address_len, peer_mode, 10000, why, sizeof why) == 0,
          "a real address and rkey pass (%s)", why);
    read_here(rkey, (uint32_t)rkey_len, (const uint8_t *)addr, (uint32_t)address_len);

    /* the address's first byte holds its format's version: UCX 1.13 aborts on one it does not know */
    uint8_t bad[8192];
    memcpy(bad, addr, address_len);
    bad[0] ^= 0x0f;
    why[0] = 0;
    CHECK(vmc_ucx_check_blobs(rkey, (uint32_t)rkey_len, bad, (uint32_t)address_len, peer_mode, 10000, why, sizeof why) != 0 && why[0],
          "an address of an unknown format is refused with a reason (%s)", why);

    /* random damage, each pair the checker passed read here as well (a damaged address that still parses may name
     * no agent: the checker's first contact gives up after 300 ms) */
    srand(7);
    int refused = 0, killed = 0;
    for (int i = 0; i < rounds; i++) {
        uint8_t r[4096], a[8192];
        uint32_t rl = (uint32_t)rkey_len, al = (uint32_t)address_len;
        memcpy(r, rkey, rl);
        memcpy(a, addr, al);
        for (int f = 1 + rand() % 3; f > 0; f--) {
            if (rand() % 2)
                r[rand() % rl] = (uint8_t)rand();
            else
                a[rand() % al] = (uint8_t)rand();
        }
        if (rand() % 5 == 0)
            al = 1 + (uint32_t)rand() % al;
        why[0] = 0;
        if (vmc_ucx_check_blobs(r, rl, a, al, peer_mode, 600, why, sizeof why) == 0) {
            read_here(r, rl, a, al);
        } else {
            refused++;
            killed += strstr(why, "killed") != NULL;
            CHECK(why[0] != 0, "a refusal says why");
        }
    }
    printf("test_ucx_check (UCX_TLS=%s): %d damaged pairs, %d refused (%d of them killed the checker), the rest read here too\n",
           getenv("UCX_TLS") ? getenv("UCX_TLS") : "", rounds, refused, killed);
    CHECK(refused > 0, "some damage is refused");
    stopping = 1;
    pthread_join(progress, NULL);
    return check_summary("test_ucx_check");
}

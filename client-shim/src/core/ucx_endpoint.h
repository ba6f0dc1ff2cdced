/* How the client makes its UCX end point to an appliance's agent: one definition for the client (transport_ucx.c),
 * vmcuda-ucx-check (client-shim/tools), which must make the very same end point to read the agent's address and
 * rkey the way the client will (UCX picks transports, and so which parts of the rkey it reads, by the error
 * handling asked for), and their test. Each passes the ucp_ep_create it has (the client and the checker load UCX
 * with dlopen). */
#ifndef VMC_UCX_ENDPOINT_H
#define VMC_UCX_ENDPOINT_H

#include <ucp/api/ucp.h>

typedef ucs_status_t (*vmc_ucx_ep_create_fn)(ucp_worker_h, const ucp_ep_params_t *, ucp_ep_h *);

/* An end point to `address`, asking for peer error handling (`on_error(arg, ...)`) first when *peer is set, and
 * without it where UCX refuses it (its shared-memory transports cannot report a failed peer): *peer says which it
 * got. */
static inline ucs_status_t vmc_ucx_endpoint(vmc_ucx_ep_create_fn ep_create, ucp_worker_h worker, const void *address,
                                            int *peer, ucp_err_handler_cb_t on_error, void *arg, ucp_ep_h *ep) {
    ucp_ep_params_t p = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                                       UCP_EP_PARAM_FIELD_ERR_HANDLER,
                         .address = (const ucp_address_t *)address,
                         .err_mode = UCP_ERR_HANDLING_MODE_PEER,
                         .err_handler = {on_error, arg}};
    ucs_status_t st = *peer ? ep_create(worker, &p, ep) : UCS_ERR_UNREACHABLE;
    if (st != UCS_ERR_UNREACHABLE)
        return st;
    *peer = 0;
    p.field_mask &= ~(uint64_t)(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER);
    return ep_create(worker, &p, ep);
}

#endif

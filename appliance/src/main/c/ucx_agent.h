/* The link between a worker and its UCX agent (vmcuda-ucx-agent, ucx_agent.c): one SOCK_SEQPACKET socket
 * pair per worker, one request and one reply per message (PROTOCOL.md "Bulk copies over UCX").
 *
 * The worker cannot speak UCX itself: the sandbox gives it no network and no RDMA device. So a small
 * process of ours, started outside the worker's namespaces (in the host's network namespace, with mount, PID
 * and IPC namespaces and a system-call filter of its own: ucx_agent.c "Confinement") with the session's uid,
 * holds the UCX end point: the worker makes a ring (a memfd it maps and registers with the CUDA runtime) and hands its
 * descriptor to the agent, which maps the same pages and registers them with UCX. The client's puts and
 * gets then land in the ring that the worker's GPU DMA reads and writes: no copy by the CPU on the
 * appliance. Everything the worker sends is tenant-controlled and checked as such. */
#ifndef VMC_UCX_AGENT_H
#define VMC_UCX_AGENT_H

#include <stdint.h>

#include "vmc_wire.h" /* VMC_UCX_MAX_BLOB: the largest UCX worker address plus packed rkey a reply may carry */

enum vmc_ucx_op {
    VMC_UCX_ATTACH = 1, /* the ring's memfd rides along (SCM_RIGHTS); `size` bytes */
    VMC_UCX_DETACH = 2, /* ring `ring` is no longer used: deregister and unmap it */
};

struct vmc_ucx_request {
    uint32_t op;
    uint32_t ring;
    uint64_t size;
};

#define VMC_UCX_MAX_RING (4ull << 30)

struct vmc_ucx_reply {
    int32_t status;       /* 0, or a negative ucs_status_t */
    uint32_t ring;        /* the ring's id for DETACH */
    uint64_t remote_base; /* where the ring lies in the agent: the address puts and gets name */
    uint32_t rkey_len;    /* then rkey_len bytes of packed rkey, address_len bytes of worker address */
    uint32_t address_len;
    char why[128];        /* one line when status != 0 */
    /* UCX's tcp segment sizes in this agent (UCX_TCP_TX_SEG_SIZE and UCX_TCP_RX_SEG_SIZE, as "TX RX"): the
     * client must use the same, or UCX aborts the receiving process on the first larger segment */
    char tcp_segments[32];
};

#endif

/* Which ring a connection's large copies take (transport.h): chosen once per connection. */
#include "transport.h"

#include "shim_config.h"
#include "shim_session.h"
#include "shim_shm.h"
#include "transport_ucx.h"

static void attach(struct vmc_conn *conn) {
    struct vmc_ring *ring = NULL;
    conn->ring_state = -1;
    if (vmc_shm_may_share())
        ring = vmc_shm_attach();
    else if (vmc_ucx_wanted())
        ring = vmc_ucx_attach();
    if (ring) {
        conn->ring = ring;
        conn->ring_state = 1;
    }
}

/* The least a copy in this direction must have to take the ring when calls go through shared memory. */
static size_t piped_ring_min(int to_device) {
    return (to_device ? VMC_PIPED_INLINE_TO_DEVICE_MAX : VMC_PIPED_INLINE_TO_HOST_MAX) + 1;
}

struct vmc_ring *vmc_ring_for(size_t count, int to_device) {
    if (count < piped_ring_min(to_device) || vmc_client_config()->transport == VMC_TRANSPORT_TCP)
        return NULL;
    cudaError_t err;
    struct vmc_conn *conn = vmc_thread_conn(&err);
    if (!conn)
        return NULL;
    size_t min = conn->pipe_state == 1 ? piped_ring_min(to_device) : VMC_SHM_MIN_BYTES;
    if (count < min)
        return NULL;
    if (conn->ring_state == 0)
        attach(conn);
    if (conn->ring_state != 1 || count < (conn->pipe_state == 1 ? min : conn->ring->min_bytes))
        return NULL;
    return conn->ring;
}

void vmc_ring_forget(struct vmc_conn *conn, int forked) {
    if (conn->ring)
        conn->ring->ops->close(conn->ring, forked);
    conn->ring = NULL;
    conn->ring_state = 0;
}

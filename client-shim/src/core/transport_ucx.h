/* Bulk copies over UCX (transport_ucx.c). */
#ifndef VMC_TRANSPORT_UCX_H
#define VMC_TRANSPORT_UCX_H

struct vmc_ring;

/* The configuration asks for UCX: transport ucx, or auto on a machine with an RDMA device. */
int vmc_ucx_wanted(void);
/* A UCX ring for the calling thread's connection, or NULL (the reason printed once when transport is ucx). */
struct vmc_ring *vmc_ucx_attach(void);

#endif

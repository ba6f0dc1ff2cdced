/* Client configuration: environment first, then the config file (VMCUDA_CONFIG or /etc/vmcuda/client.conf). */
#ifndef SHIM_CONFIG_H
#define SHIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct vmc_client_config {
    char appliance[256];   /* HOST:PORT of the appliance daemon; empty = not configured */
    char cluster[512];     /* etcd URLs of a pool of appliances (http://HOST:2379,...); empty = no pool */
    char cluster_prefix[128]; /* the pool's key prefix in etcd (default /vmcuda/) */
    char host_id[128];     /* this host's identity for the pool's locality policy (default /etc/machine-id) */
    char gpu_model[64];    /* in a pool: a part of the GPU's name the session needs ("H100"); empty = any */
    uint64_t gpu_memory;   /* in a pool: bytes each GPU must have at least; 0 = any */
    char token[512];       /* tenant token sent in HELLO */
    char tls_ca[256];      /* PEM certificate(s) the appliance's must chain to; set = every connection is TLS */
    int tls_verify_name;   /* the appliance's certificate must name the host or address connected to (default on) */
    size_t block_size;     /* bulk-transfer block size in bytes */
    uint32_t gpus;         /* GPUs wanted for the session */
    enum { VMC_TRANSPORT_AUTO, VMC_TRANSPORT_TCP, VMC_TRANSPORT_SHM, VMC_TRANSPORT_UCX } transport; /* bulk data path */
    long handshake_timeout_s; /* deadline for each read of the session handshake */
    uint32_t tcp_streams;  /* TCP connections one large synchronous copy is striped over */
    char shm_region[256];  /* a shared region (ivshmem BAR, or a file) the rings live in; empty = none */
    int pinned_in_region;  /* co-located: all page-locked allocations shared with the worker (default on) */
    int calls_in_region;   /* co-located: calls and replies through a shared-memory pipe (default on) */
    char config_path[256]; /* the file that was (or would have been) read */
    int config_unreadable; /* errno when the file exists but could not be read (EACCES: not in group vmcuda) */
};

/* Read once, on first use. */
const struct vmc_client_config *vmc_client_config(void);

/* The appliance a pool's placement chose: every connection of the process goes there from now on. Called
 * once, under the session lock, before any connection of the session is opened. */
void vmc_client_config_use_appliance(const char *endpoint);

#endif

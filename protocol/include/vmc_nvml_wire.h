/* The answer of vmc_drv_NvmlQuery (cuda-driver.spec 3012, PROTOCOL.md "NVML"): what the worker's own NVML
 * says of one GPU of the session (the session's CUDA device ordinal) or, for device -1, of the appliance.
 * The client's NVML front end (client-shim/src/nvml) returns each status as NVIDIA's NVML returned it on the
 * appliance (NVML_ERROR_NOT_SUPPORTED for a fan the board does not have, say), so a program sees the same
 * answer as on the appliance itself. Both ends are C compiled from this header on x86-64 (explicit widths);
 * the struct travels as one pointee of sizeof bytes after the REPLY status, and the client checks the size. */
#ifndef VMC_NVML_WIRE_H
#define VMC_NVML_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmc_nvml_abi.h"

/* Indexes of vmc_nvml_answer.status: one NVML return code per query. */
enum vmc_nvml_query {
    VMC_NVML_Q_MEMORY,       /* memory_* (nvmlDeviceGetMemoryInfo_v2, else v1: reserved then 0) */
    VMC_NVML_Q_UTILIZATION,  /* util_gpu, util_memory */
    VMC_NVML_Q_TEMPERATURE,  /* temperature_c (the GPU die sensor) */
    VMC_NVML_Q_POWER,        /* power_mw */
    VMC_NVML_Q_POWER_LIMIT,  /* power_limit_mw (nvmlDeviceGetPowerManagementLimit) */
    VMC_NVML_Q_ENFORCED_LIMIT, /* enforced_power_limit_mw */
    VMC_NVML_Q_FAN,          /* fan_percent */
    VMC_NVML_Q_PSTATE,       /* pstate */
    VMC_NVML_Q_CLOCK,        /* clock_mhz[0..3] = +0..+3 (graphics, SM, memory, video) */
    VMC_NVML_Q_MAX_CLOCK = VMC_NVML_Q_CLOCK + 4,
    VMC_NVML_Q_MINOR = VMC_NVML_Q_MAX_CLOCK + 4,
    VMC_NVML_Q_BRAND,
    VMC_NVML_Q_PCI,          /* pci_device_id, pci_subsystem_id */
    VMC_NVML_Q_PROCESS,      /* process_memory: this worker's entry in the compute-process list */
    VMC_NVML_Q_VERSIONS,     /* device -1: driver_version, nvml_version */
    VMC_NVML_Q_COUNT
};

struct vmc_nvml_answer {
    uint64_t memory_total, memory_reserved, memory_free, memory_used;
    uint64_t process_memory;   /* bytes NVML counts for the worker's process on this GPU */
    int32_t status[VMC_NVML_Q_COUNT];
    uint32_t util_gpu, util_memory;
    uint32_t temperature_c;
    uint32_t power_mw, power_limit_mw, enforced_power_limit_mw;
    uint32_t fan_percent;
    uint32_t pstate;
    uint32_t clock_mhz[4], max_clock_mhz[4];
    uint32_t minor_number;
    uint32_t brand;
    uint32_t pci_device_id, pci_subsystem_id;
    uint32_t context_active;   /* the worker holds this GPU's primary context: the program "runs" on it */
    uint32_t reserved0;
    char driver_version[80], nvml_version[80];
};

_Static_assert(sizeof(struct vmc_nvml_answer) == 376, "vmc_nvml_answer changed: both ends must agree");
/* the name cuda-driver.spec's layouts give it (a layout field's type is one word) */
typedef struct vmc_nvml_answer vmc_nvml_answer_t;

/* The answer of vmc_drv_NvmlTopology (cuda-driver.spec 3023, PROTOCOL.md "NVML"): how one GPU of the session is
 * connected, for the topology detection of NCCL and others. Kind VMC_NVML_TOPOLOGY_PEER: nvmlDeviceGetP2PStatus
 * toward the session's GPU of CUDA ordinal `index`, for each nvmlGpuP2PCapsIndex_t; kind VMC_NVML_TOPOLOGY_LINK:
 * NVLink `index`'s state (nvmlEnableState_t), capabilities (nvmlNvLinkCapability_t), the PCI location and the kind
 * of what it leads to. Each value with the return code of the appliance's NVML. */
enum vmc_nvml_topology_kind { VMC_NVML_TOPOLOGY_PEER, VMC_NVML_TOPOLOGY_LINK };
#define VMC_NVML_P2P_INDEXES 6 /* nvmlGpuP2PCapsIndex_t: READ, WRITE, NVLINK, ATOMICS, PCI (= PROP), UNKNOWN */
#define VMC_NVML_LINK_CAPS 6   /* nvmlNvLinkCapability_t: P2P_SUPPORTED, SYSMEM_ACCESS, P2P_ATOMICS, SYSMEM_ATOMICS, SLI_BRIDGE, VALID */

struct vmc_nvml_topology {
    int32_t p2p_call[VMC_NVML_P2P_INDEXES];
    uint32_t p2p_status[VMC_NVML_P2P_INDEXES]; /* nvmlGpuP2PStatus_t */
    int32_t link_state_call;
    uint32_t link_state;
    int32_t link_cap_call[VMC_NVML_LINK_CAPS];
    uint32_t link_cap[VMC_NVML_LINK_CAPS];
    int32_t remote_pci_call;
    nvmlPciInfo_t remote_pci;
    int32_t remote_type_call;
    uint32_t remote_type; /* nvmlIntNvLinkDeviceType_t: GPU, IBMNPU, SWITCH, UNKNOWN */
};

_Static_assert(sizeof(struct vmc_nvml_topology) == 184, "vmc_nvml_topology changed: both ends must agree");
typedef struct vmc_nvml_topology vmc_nvml_topology_t;

/* NVML's text form of a GPU UUID ("GPU-" and the 16 bytes of CUuuid as 8-4-4-4-12 hex digits). Both ends
 * write it, the worker to find its GPU in its own NVML and the client to answer nvmlDeviceGetUUID, and the
 * two texts must be identical for that lookup to work: hence one definition here. */
static inline void vmc_nvml_format_uuid(const unsigned char b[16], char *out, size_t room) {
    snprintf(out, room, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

#endif

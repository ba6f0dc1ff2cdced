/* NVML's device queries: handles and identity from the table read at nvmlInit (nvml_gpus.c), telemetry
 * from the appliance's NVML with NVML's own status for each value (vmc_nvml_wire.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "nvml_front.h"

/* The GPU behind a handle, or the status NVML gives for a bad one. */
static nvmlReturn_t gpu(nvmlDevice_t device, struct vmc_nvml_gpu **out) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    *out = vmc_nvml_gpu_of(device);
    return *out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* The appliance's answer for the GPU behind a handle. */
static nvmlReturn_t telemetry(nvmlDevice_t device, struct vmc_nvml_answer *a) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    return st == NVML_SUCCESS ? vmc_nvml_query(g->ordinal, a) : st;
}

/* ---- count and handles ---- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned int)vmc_nvml_gpu_count();
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    struct vmc_nvml_gpu *g = index < VMC_NVML_MAX_GPUS ? vmc_nvml_gpu_at((int)index) : NULL;
    if (!device || !g)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (g->hidden)
        return NVML_ERROR_NO_PERMISSION; /* a GPU of the session that the program's CUDA_VISIBLE_DEVICES hides */
    *device = (nvmlDevice_t)g;
    return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < vmc_nvml_gpu_count(); i++)
        if (!vmc_nvml_gpu_at(i)->hidden && strcasecmp(vmc_nvml_gpu_at(i)->uuid, uuid) == 0) {
            *device = (nvmlDevice_t)vmc_nvml_gpu_at(i);
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

/* A bus id in any of the forms NVML accepts: domain optional, 4 or 8 hex digits, function optional. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int domain = 0, bus = 0, dev = 0;
    if (sscanf(pciBusId, "%x:%x:%x", &domain, &bus, &dev) != 3) {
        domain = 0;
        if (sscanf(pciBusId, "%x:%x", &bus, &dev) != 2)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < vmc_nvml_gpu_count(); i++) {
        struct vmc_nvml_gpu *g = vmc_nvml_gpu_at(i);
        if (!g->hidden && g->pci.domain == domain && g->pci.bus == bus && g->pci.device == dev) {
            *device = (nvmlDevice_t)g;
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

/* ---- identity ---- */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    if (st == NVML_SUCCESS && !index)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        *index = (unsigned int)g->index;
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    return st == NVML_SUCCESS ? vmc_nvml_copy_text(name, length, g->name) : st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    return st == NVML_SUCCESS ? vmc_nvml_copy_text(uuid, length, g->uuid) : st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    if (st == NVML_SUCCESS && !pci)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        *pci = g->pci;
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return nvmlDeviceGetPciInfo_v3(device, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    if (st == NVML_SUCCESS && (!major || !minor))
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        *major = g->cc_major, *minor = g->cc_minor;
    return st;
}

/* ---- telemetry: one value of the appliance's answer, with NVML's status for it ---- */

#define TELEMETRY_VALUE(FUNCTION, QUERY, TYPE, FIELD)                                                       \
    NVML_EXPORT nvmlReturn_t FUNCTION(nvmlDevice_t device, TYPE *out) {                                     \
        struct vmc_nvml_answer a;                                                                           \
        nvmlReturn_t st = telemetry(device, &a);                                                            \
        if (st == NVML_SUCCESS && !out)                                                                     \
            st = NVML_ERROR_INVALID_ARGUMENT;                                                               \
        if (st == NVML_SUCCESS)                                                                             \
            st = a.status[QUERY];                                                                           \
        if (st == NVML_SUCCESS)                                                                             \
            *out = (TYPE)a.FIELD;                                                                           \
        return st;                                                                                          \
    }

TELEMETRY_VALUE(nvmlDeviceGetPowerUsage, VMC_NVML_Q_POWER, unsigned int, power_mw)
TELEMETRY_VALUE(nvmlDeviceGetPowerManagementLimit, VMC_NVML_Q_POWER_LIMIT, unsigned int, power_limit_mw)
TELEMETRY_VALUE(nvmlDeviceGetEnforcedPowerLimit, VMC_NVML_Q_ENFORCED_LIMIT, unsigned int, enforced_power_limit_mw)
TELEMETRY_VALUE(nvmlDeviceGetFanSpeed, VMC_NVML_Q_FAN, unsigned int, fan_percent)
TELEMETRY_VALUE(nvmlDeviceGetPerformanceState, VMC_NVML_Q_PSTATE, nvmlPstates_t, pstate)
TELEMETRY_VALUE(nvmlDeviceGetMinorNumber, VMC_NVML_Q_MINOR, unsigned int, minor_number)
TELEMETRY_VALUE(nvmlDeviceGetBrand, VMC_NVML_Q_BRAND, nvmlBrandType_t, brand)

NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp) {
    if (sensor != NVML_TEMPERATURE_GPU)
        return vmc_nvml_ready() == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    struct vmc_nvml_answer a;
    nvmlReturn_t st = telemetry(device, &a);
    if (st == NVML_SUCCESS && !temp)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        st = a.status[VMC_NVML_Q_TEMPERATURE];
    if (st == NVML_SUCCESS)
        *temp = a.temperature_c;
    return st;
}

static nvmlReturn_t clock_value(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock, int max) {
    if ((unsigned)type >= 4u)
        return vmc_nvml_ready() == NVML_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    struct vmc_nvml_answer a;
    nvmlReturn_t st = telemetry(device, &a);
    if (st == NVML_SUCCESS && !clock)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        st = a.status[(max ? VMC_NVML_Q_MAX_CLOCK : VMC_NVML_Q_CLOCK) + type];
    if (st == NVML_SUCCESS)
        *clock = max ? a.max_clock_mhz[type] : a.clock_mhz[type];
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
    return clock_value(device, type, clock, 0);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
    return clock_value(device, type, clock, 1);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    struct vmc_nvml_answer a;
    nvmlReturn_t st = telemetry(device, &a);
    if (st == NVML_SUCCESS && !utilization)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        st = a.status[VMC_NVML_Q_UTILIZATION];
    if (st == NVML_SUCCESS)
        utilization->gpu = a.util_gpu, utilization->memory = a.util_memory;
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    struct vmc_nvml_answer a;
    nvmlReturn_t st = telemetry(device, &a);
    if (st == NVML_SUCCESS && !memory)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS)
        st = a.status[VMC_NVML_Q_MEMORY];
    if (st == NVML_SUCCESS) /* version 1 counts the reserved memory as used */
        memory->total = a.memory_total, memory->free = a.memory_free, memory->used = a.memory_total - a.memory_free;
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    struct vmc_nvml_answer a;
    nvmlReturn_t st = telemetry(device, &a);
    if (st == NVML_SUCCESS && !memory)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st == NVML_SUCCESS && memory->version != nvmlMemory_v2)
        st = NVML_ERROR_FUNCTION_NOT_FOUND; /* what NVIDIA's NVML 580 answers for another version */
    if (st == NVML_SUCCESS)
        st = a.status[VMC_NVML_Q_MEMORY];
    if (st == NVML_SUCCESS) {
        memory->total = a.memory_total, memory->reserved = a.memory_reserved;
        memory->free = a.memory_free, memory->used = a.memory_used;
    }
    return st;
}

/* ---- processes: this program, when it holds a context on the GPU ---- */

/* How many entries there are and whether they fit, as NVML's list functions answer. */
static nvmlReturn_t process_count(nvmlDevice_t device, unsigned int *infoCount, int compute, struct vmc_nvml_answer *a,
                                  unsigned int *n) {
    nvmlReturn_t st = telemetry(device, a);
    if (st == NVML_SUCCESS && !infoCount)
        st = NVML_ERROR_INVALID_ARGUMENT;
    if (st != NVML_SUCCESS)
        return st;
    *n = compute && a->context_active ? 1 : 0;
    unsigned int room = *infoCount;
    *infoCount = *n;
    return room < *n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

/* The worker's use of the GPU is the program's: NVML's figure for the worker when it has one. */
static unsigned long long program_memory(const struct vmc_nvml_answer *a) {
    return a->status[VMC_NVML_Q_PROCESS] == NVML_SUCCESS ? a->process_memory : (unsigned long long)NVML_VALUE_NOT_AVAILABLE;
}

/* The list: this program alone, in the layout of version 1 (pid, memory) or 2 and 3 (+ MIG instance ids). */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *infoCount, void *infos, int compute, int layout_v2) {
    struct vmc_nvml_answer a;
    unsigned int n = 0;
    nvmlReturn_t st = process_count(device, infoCount, compute, &a, &n);
    if (st != NVML_SUCCESS || n == 0)
        return st;
    if (!infos)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int pid = (unsigned int)getpid();
    if (layout_v2) {
        nvmlProcessInfo_v2_t *p = infos;
        p->pid = pid, p->usedGpuMemory = program_memory(&a), p->gpuInstanceId = p->computeInstanceId = 0xFFFFFFFFu;
    } else {
        nvmlProcessInfo_v1_t *p = infos;
        p->pid = pid, p->usedGpuMemory = program_memory(&a);
    }
    return NVML_SUCCESS;
}

#define PROCESS_LISTS(NAME, COMPUTE)                                                                               \
    NVML_EXPORT nvmlReturn_t NAME(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_v1_t *i) {                      \
        return processes(d, n, i, COMPUTE, 0);                                                                     \
    }                                                                                                              \
    NVML_EXPORT nvmlReturn_t NAME##_v2(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_v2_t *i) {                 \
        return processes(d, n, i, COMPUTE, 1);                                                                     \
    }                                                                                                              \
    NVML_EXPORT nvmlReturn_t NAME##_v3(nvmlDevice_t d, unsigned int *n, nvmlProcessInfo_v2_t *i) {                 \
        return processes(d, n, i, COMPUTE, 1);                                                                     \
    }

/* The program is a compute process; it is never a graphics one, nor an MPS client on the appliance. */
PROCESS_LISTS(nvmlDeviceGetComputeRunningProcesses, 1)
PROCESS_LISTS(nvmlDeviceGetGraphicsRunningProcesses, 0)
PROCESS_LISTS(nvmlDeviceGetMPSComputeRunningProcesses, 0)

/* ---- topology: peer-to-peer status and NVLinks, as the appliance's NVML gives them (NCCL builds its topology from
 * them; the remote end of a link is named by its PCI location, which the session's own GPUs are known by too) ---- */

static nvmlReturn_t link_of(nvmlDevice_t device, unsigned int link, struct vmc_nvml_topology *t) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    return st == NVML_SUCCESS ? vmc_nvml_topology(g->ordinal, VMC_NVML_TOPOLOGY_LINK, link, t) : st;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex, int *p2pStatus) {
    struct vmc_nvml_gpu *a, *b;
    nvmlReturn_t st = gpu(device1, &a);
    if (st == NVML_SUCCESS)
        st = gpu(device2, &b);
    if (st != NVML_SUCCESS)
        return st;
    if (!p2pStatus || p2pIndex < 0 || p2pIndex >= VMC_NVML_P2P_INDEXES)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct vmc_nvml_topology t;
    st = vmc_nvml_topology(a->ordinal, VMC_NVML_TOPOLOGY_PEER, (unsigned int)b->ordinal, &t);
    if (st == NVML_SUCCESS && (st = t.p2p_call[p2pIndex]) == NVML_SUCCESS)
        *p2pStatus = (int)t.p2p_status[p2pIndex];
    return st;
}

/* One NVLink's answer, for the getters below: NVML's status for the value, and the value (an expression of t_)
 * into *out where that is success. */
#define NVLINK_ANSWER(out, call, value)                                                                              \
    do {                                                                                                             \
        if (!(out))                                                                                                  \
            return NVML_ERROR_INVALID_ARGUMENT;                                                                      \
        struct vmc_nvml_topology t_;                                                                                 \
        nvmlReturn_t st_ = link_of(device, link, &t_);                                                               \
        if (st_ == NVML_SUCCESS && (st_ = t_.call) == NVML_SUCCESS)                                                  \
            *(out) = (value);                                                                                        \
        return st_;                                                                                                  \
    } while (0)

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive) {
    NVLINK_ANSWER(isActive, link_state_call, (int)t_.link_state);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link, int capability,
                                                       unsigned int *capResult) {
    if (capability < 0 || capability >= VMC_NVML_LINK_CAPS)
        return NVML_ERROR_INVALID_ARGUMENT;
    NVLINK_ANSWER(capResult, link_cap_call[capability], t_.link_cap[capability]);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci) {
    NVLINK_ANSWER(pci, remote_pci_call, t_.remote_pci);
}

/* The unversioned name, which NCCL resolves, fills the same nvmlPciInfo_t as _v2 (NCCL reads its busId). */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci) {
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *pNvLinkDeviceType) {
    NVLINK_ANSWER(pNvLinkDeviceType, remote_type_call, (int)t_.remote_type);
}

/* Each value carries its own status (an NVLink that does not exist: NVML_ERROR_INVALID_ARGUMENT in its place); many
 * values go in as many calls as VMC_MAX_NVML_FIELD_VALUES allows. */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
    struct vmc_nvml_gpu *g;
    nvmlReturn_t st = gpu(device, &g);
    if (st != NVML_SUCCESS)
        return st;
    if (valuesCount < 0 || (valuesCount > 0 && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int done = 0; done < valuesCount && st == NVML_SUCCESS;) {
        unsigned int n = (unsigned int)(valuesCount - done);
        if (n > VMC_MAX_NVML_FIELD_VALUES)
            n = VMC_MAX_NVML_FIELD_VALUES;
        st = vmc_nvml_field_values(g->ordinal, n, values + done);
        done += (int)n;
    }
    return st;
}

/* The session's GPUs as NVML devices: read once through the driver front end (its answers are kept on the
 * client, so this costs a few round trips at nvmlInit), handles that point into the table, and the query of
 * the appliance's NVML through the worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_front.h"
#include "shim_call.h"
#include "shim_session.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

static struct vmc_nvml_gpu gpus[VMC_NVML_MAX_GPUS];
static int gpu_count;

int vmc_nvml_gpu_count(void) { return __atomic_load_n(&gpu_count, __ATOMIC_ACQUIRE); }

struct vmc_nvml_gpu *vmc_nvml_gpu_at(int index) {
    return index >= 0 && index < vmc_nvml_gpu_count() ? &gpus[index] : NULL;
}

struct vmc_nvml_gpu *vmc_nvml_gpu_of(nvmlDevice_t device) {
    for (int i = 0; i < vmc_nvml_gpu_count(); i++)
        if ((void *)device == (void *)&gpus[i] && !gpus[i].hidden)
            return &gpus[i];
    return NULL;
}

static CUresult read_gpu(struct vmc_nvml_gpu *g, int ordinal) {
    g->ordinal = ordinal;
    CUresult st = cuDeviceGet(&g->dev, ordinal);
    CUuuid u;
    int domain = 0, bus = 0, device = 0;
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetName(g->name, sizeof g->name, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetUuid_v2(&u, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&g->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&g->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, g->dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, g->dev);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_nvml_format_uuid((const unsigned char *)u.bytes, g->uuid, sizeof g->uuid);
    memset(&g->pci, 0, sizeof g->pci);
    g->pci.domain = (unsigned)domain, g->pci.bus = (unsigned)bus, g->pci.device = (unsigned)device;
    snprintf(g->pci.busIdLegacy, sizeof g->pci.busIdLegacy, "%04X:%02X:%02X.0", g->pci.domain & 0xffff, g->pci.bus, g->pci.device);
    snprintf(g->pci.busId, sizeof g->pci.busId, "%08X:%02X:%02X.0", g->pci.domain, g->pci.bus, g->pci.device);
    /* the PCI ids only the appliance's NVML knows (0 when it cannot say) */
    struct vmc_nvml_answer a;
    if (vmc_nvml_query(ordinal, &a) == NVML_SUCCESS && a.status[VMC_NVML_Q_PCI] == NVML_SUCCESS)
        g->pci.pciDeviceId = a.pci_device_id, g->pci.pciSubSystemId = a.pci_subsystem_id;
    return CUDA_SUCCESS;
}

/* Where each of this process's `cuda_count` CUDA devices sits among the session's `session_count` GPUs, when
 * the program's CUDA_VISIBLE_DEVICES selects them by index (the appliance applied that list within the
 * session, ClientVisibleDevices.java, reading it up to the first entry that names no GPU, as here): 1 and
 * place[] filled, else 0 (no such variable, or GPUs named by UUID: then NVML lists the visible ones only). */
static int session_places(int cuda_count, int session_count, int place[VMC_NVML_MAX_GPUS]) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v || session_count < cuda_count || session_count > VMC_NVML_MAX_GPUS)
        return 0;
    int n = 0, taken[VMC_NVML_MAX_GPUS] = {0};
    while (n < cuda_count) {
        while (*v == ' ')
            v++;
        if (*v < '0' || *v > '9')
            return 0;
        char *end;
        long i = strtol(v, &end, 10);
        if (i >= session_count || taken[i])
            return 0;
        taken[i] = 1;
        place[n++] = (int)i;
        v = end + strspn(end, " ");
        if (*v == ',')
            v++;
    }
    return 1;
}

CUresult vmc_nvml_read_gpus(void) {
    int count = 0;
    CUresult st = cuInit(0);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetCount(&count);
    if (st == CUDA_SUCCESS && count == 0)
        st = CUDA_ERROR_NO_DEVICE;
    if (count > VMC_NVML_MAX_GPUS)
        count = VMC_NVML_MAX_GPUS;
    int place[VMC_NVML_MAX_GPUS], listed = count;
    int session_count = (int)vmc_session_gpu_count();
    if (st == CUDA_SUCCESS && session_places(count, session_count, place)) {
        listed = session_count;
        for (int i = 0; i < listed; i++)
            gpus[i] = (struct vmc_nvml_gpu){.index = i, .hidden = 1, .ordinal = -1};
    } else {
        for (int i = 0; i < count; i++)
            place[i] = i;
    }
    for (int i = 0; st == CUDA_SUCCESS && i < count; i++) {
        st = read_gpu(&gpus[place[i]], i);
        gpus[place[i]].index = place[i];
        gpus[place[i]].hidden = 0;
    }
    if (st == CUDA_SUCCESS)
        __atomic_store_n(&gpu_count, listed, __ATOMIC_RELEASE);
    return st;
}

nvmlReturn_t vmc_nvml_query(int ordinal, struct vmc_nvml_answer *answer) {
    struct vmc_call c;
    if (vmc_call_begin_ex(&c, VMC_DRV_vmc_drv_NvmlQuery, 0, 0) != cudaSuccess)
        return NVML_ERROR_GPU_IS_LOST;
    vmc_put_nvml_query_args(vmc_call_args(&c), &(struct vmc_nvml_query_args){.ordinal = (uint32_t)(int32_t)ordinal});
    CUresult st = (CUresult)vmc_call_finish(&c);
    if (st == CUDA_SUCCESS) {
        struct vmc_nvml_query_reply r;
        vmc_get_nvml_query_reply(&c.reply, &r);
        if (!vmc_call_reply_ok(&c))
            return NVML_ERROR_UNKNOWN;
        *answer = r.answer;
        /* the worker runs the tenant's code: its strings are terminated here, not trusted to be */
        answer->driver_version[sizeof answer->driver_version - 1] = 0;
        answer->nvml_version[sizeof answer->nvml_version - 1] = 0;
        return NVML_SUCCESS;
    }
    /* the session is gone (CUDA's "devices unavailable"), or the worker could not ask its driver */
    return st == CUDA_ERROR_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_GPU_IS_LOST;
}

nvmlReturn_t vmc_nvml_topology(int ordinal, int kind, unsigned int index, struct vmc_nvml_topology *topology) {
    struct vmc_call c;
    if (vmc_call_begin_ex(&c, VMC_DRV_vmc_drv_NvmlTopology, 0, 0) != cudaSuccess)
        return NVML_ERROR_GPU_IS_LOST;
    vmc_put_nvml_topology_args(vmc_call_args(&c), &(struct vmc_nvml_topology_args){
        .ordinal = (uint32_t)ordinal, .kind = (uint32_t)kind, .index = index});
    CUresult st = (CUresult)vmc_call_finish(&c);
    if (st == CUDA_SUCCESS) {
        struct vmc_nvml_topology_reply r;
        vmc_get_nvml_topology_reply(&c.reply, &r);
        if (!vmc_call_reply_ok(&c))
            return NVML_ERROR_UNKNOWN;
        *topology = r.topology;
        /* the worker runs the tenant's code: its strings are terminated here, not trusted to be */
        topology->remote_pci.busId[sizeof topology->remote_pci.busId - 1] = 0;
        topology->remote_pci.busIdLegacy[sizeof topology->remote_pci.busIdLegacy - 1] = 0;
        return NVML_SUCCESS;
    }
    return st == CUDA_ERROR_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_GPU_IS_LOST;
}

nvmlReturn_t vmc_nvml_field_values(int ordinal, unsigned int n, nvmlFieldValue_t *values) {
    struct vmc_call c;
    if (n > VMC_MAX_NVML_FIELD_VALUES)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (vmc_call_begin_ex(&c, VMC_DRV_vmc_drv_NvmlFieldValues, 0, 0) != cudaSuccess)
        return NVML_ERROR_GPU_IS_LOST;
    vmc_put_nvml_field_values(vmc_call_args(&c), &(struct vmc_nvml_field_values){
        .ordinal = (uint32_t)ordinal, .n = n, .values = values});
    CUresult st = (CUresult)vmc_call_finish(&c);
    if (st == CUDA_SUCCESS) {
        struct vmc_nvml_field_values r;
        vmc_get_nvml_field_values(&c.reply, &r);
        if (!vmc_call_reply_ok(&c) || r.n != n || (n && !r.values))
            return NVML_ERROR_UNKNOWN;
        memcpy(values, r.values, n * sizeof *values);
        return NVML_SUCCESS;
    }
    return st == CUDA_ERROR_NOT_SUPPORTED ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_GPU_IS_LOST;
}

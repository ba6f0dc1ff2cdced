/* vmc_drv_NvmlQuery: what the appliance's NVML says of one GPU of the session (or, for device -1, of the
 * appliance), for the client's NVML front end (client-shim/src/nvml). NVIDIA's libnvidia-ml.so.1 is loaded
 * on the first query, from the directory of the libcuda.so.1 this worker uses (else by the usual search);
 * the GPU is found by the UUID the CUDA driver gives for the session's device ordinal, so the answer is
 * about the GPU the program runs on whatever order NVML numbers the appliance's GPUs in. Each value keeps
 * NVML's own status (see vmc_nvml_wire.h). Without NVML (a driver without it, CI's stand-in driver) every
 * status is NVML_ERROR_NOT_SUPPORTED, except the memory figures, which then come from cuMemGetInfo when the
 * session holds a context on the GPU. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_nvml_abi.h"
#include "vmc_nvml_wire.h"
#include "worker.h"
#include "worker_driver.h"

/* The NVML functions asked, by name; resolved together once. */
static struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*temperature)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*enforced_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*fan)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*pstate)(nvmlDevice_t, nvmlPstates_t *);
    nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
    nvmlReturn_t (*max_clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *);
    nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*brand)(nvmlDevice_t, nvmlBrandType_t *);
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_v2_t *);
    nvmlReturn_t (*driver_version)(char *, unsigned int);
    nvmlReturn_t (*nvml_version)(char *, unsigned int);
    nvmlReturn_t (*p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int *);
    nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*link_capability)(nvmlDevice_t, unsigned int, int, unsigned int *);
    nvmlReturn_t (*link_remote_pci)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
    nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t *);
    nvmlReturn_t (*link_remote_type)(nvmlDevice_t, unsigned int, int *);
} nvml;

static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;
static int nvml_ready;

/* NVIDIA ships libnvidia-ml.so.1 beside libcuda.so.1: look there first (the worker's library path may name
 * only the CUDA libraries' directory). */
static void *open_nvml(void) {
    void *any_driver_function = vmc_w_drv_resolve("cuInit", 2000, 0);
    Dl_info where;
    if (any_driver_function && dladdr(any_driver_function, &where) && where.dli_fname) {
        char dir[4096], path[4200];
        snprintf(dir, sizeof dir, "%s", where.dli_fname);
        snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", dirname(dir));
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
}

static void load_nvml(void) {
    void *h = open_nvml();
    if (!h) {
        vmc_w_log("nvml: NVIDIA's libnvidia-ml.so.1 is not available here (%s): NVML queries answer NOT_SUPPORTED", dlerror());
        return;
    }
#define SYM(field, name) (nvml.field = (__typeof__(nvml.field))dlsym(h, name))
    int all = SYM(init, "nvmlInit_v2") && SYM(by_uuid, "nvmlDeviceGetHandleByUUID");
    SYM(memory_v2, "nvmlDeviceGetMemoryInfo_v2");
    SYM(memory, "nvmlDeviceGetMemoryInfo");
    SYM(utilization, "nvmlDeviceGetUtilizationRates");
    SYM(temperature, "nvmlDeviceGetTemperature");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(power_limit, "nvmlDeviceGetPowerManagementLimit");
    SYM(enforced_limit, "nvmlDeviceGetEnforcedPowerLimit");
    SYM(fan, "nvmlDeviceGetFanSpeed");
    SYM(pstate, "nvmlDeviceGetPerformanceState");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(max_clock, "nvmlDeviceGetMaxClockInfo");
    SYM(minor, "nvmlDeviceGetMinorNumber");
    SYM(brand, "nvmlDeviceGetBrand");
    SYM(pci, "nvmlDeviceGetPciInfo_v3");
    SYM(processes, "nvmlDeviceGetComputeRunningProcesses_v3");
    SYM(driver_version, "nvmlSystemGetDriverVersion");
    SYM(nvml_version, "nvmlSystemGetNVMLVersion");
    SYM(p2p_status, "nvmlDeviceGetP2PStatus");
    SYM(link_state, "nvmlDeviceGetNvLinkState");
    SYM(link_capability, "nvmlDeviceGetNvLinkCapability");
    SYM(link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    SYM(field_values, "nvmlDeviceGetFieldValues");
    SYM(link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
#undef SYM
    nvmlReturn_t st = all ? nvml.init() : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (st != NVML_SUCCESS) {
        vmc_w_log("nvml: nvmlInit_v2 of the appliance's NVML failed (%d): NVML queries answer NOT_SUPPORTED", st);
        return;
    }
    nvml_ready = 1;
}

/* A function the appliance's NVML lacks reads as NOT_SUPPORTED, as an old board's answer would. */
#define ASK(fn, ...) (nvml.fn ? nvml.fn(__VA_ARGS__) : NVML_ERROR_NOT_SUPPORTED)

/* This worker's pid as the kernel's first PID namespace sees it (NVML's process list may use either). */
static unsigned int outer_pid(void) {
    FILE *f = fopen("/proc/self/status", "r");
    unsigned int pid = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "NSpid: %u", &pid) == 1)
            break;
    if (f)
        fclose(f);
    return pid;
}

static void process_memory(nvmlDevice_t d, struct vmc_nvml_answer *a) {
    nvmlProcessInfo_v2_t list[64];
    unsigned int n = 64;
    nvmlReturn_t st = ASK(processes, d, &n, list);
    a->status[VMC_NVML_Q_PROCESS] = st == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : st;
    unsigned int me = (unsigned int)getpid(), outer = outer_pid();
    for (unsigned int i = 0; st == NVML_SUCCESS && i < n && i < 64; i++)
        if (list[i].pid == me || (outer && list[i].pid == outer)) {
            a->process_memory = list[i].usedGpuMemory;
            a->status[VMC_NVML_Q_PROCESS] = NVML_SUCCESS;
        }
}

static void device_answer(nvmlDevice_t d, struct vmc_nvml_answer *a) {
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlReturn_t st = ASK(memory_v2, d, &m2);
    if (st == NVML_SUCCESS) {
        a->memory_total = m2.total, a->memory_reserved = m2.reserved, a->memory_free = m2.free, a->memory_used = m2.used;
    } else {
        nvmlMemory_t m1;
        st = ASK(memory, d, &m1);
        if (st == NVML_SUCCESS)
            a->memory_total = m1.total, a->memory_free = m1.free, a->memory_used = m1.used;
    }
    a->status[VMC_NVML_Q_MEMORY] = st;
    nvmlUtilization_t u = {0, 0};
    a->status[VMC_NVML_Q_UTILIZATION] = ASK(utilization, d, &u);
    a->util_gpu = u.gpu, a->util_memory = u.memory;
    a->status[VMC_NVML_Q_TEMPERATURE] = ASK(temperature, d, NVML_TEMPERATURE_GPU, &a->temperature_c);
    a->status[VMC_NVML_Q_POWER] = ASK(power, d, &a->power_mw);
    a->status[VMC_NVML_Q_POWER_LIMIT] = ASK(power_limit, d, &a->power_limit_mw);
    a->status[VMC_NVML_Q_ENFORCED_LIMIT] = ASK(enforced_limit, d, &a->enforced_power_limit_mw);
    a->status[VMC_NVML_Q_FAN] = ASK(fan, d, &a->fan_percent);
    nvmlPstates_t p = 32;
    a->status[VMC_NVML_Q_PSTATE] = ASK(pstate, d, &p);
    a->pstate = (uint32_t)p;
    for (int c = 0; c < 4; c++) {
        a->status[VMC_NVML_Q_CLOCK + c] = ASK(clock, d, (nvmlClockType_t)c, &a->clock_mhz[c]);
        a->status[VMC_NVML_Q_MAX_CLOCK + c] = ASK(max_clock, d, (nvmlClockType_t)c, &a->max_clock_mhz[c]);
    }
    a->status[VMC_NVML_Q_MINOR] = ASK(minor, d, &a->minor_number);
    nvmlBrandType_t b = 0;
    a->status[VMC_NVML_Q_BRAND] = ASK(brand, d, &b);
    a->brand = (uint32_t)b;
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    a->status[VMC_NVML_Q_PCI] = ASK(pci, d, &pci);
    a->pci_device_id = pci.pciDeviceId, a->pci_subsystem_id = pci.pciSubSystemId;
    process_memory(d, a);
}

/* The CUDA driver's side: is the program's context on this GPU, and (without NVML) its memory figures. */
static CUresult cuda_side(int ordinal, char *uuid_text, size_t room, struct vmc_nvml_answer *a) {
    CUresult (*device_get)(CUdevice *, int) = vmc_w_drv_resolve("cuDeviceGet", 2000, 0);
    CUresult (*get_uuid)(CUuuid *, CUdevice) = vmc_w_drv_resolve("cuDeviceGetUuid", 11040, 0);
    CUresult (*ctx_state)(CUdevice, unsigned int *, int *) = vmc_w_drv_resolve("cuDevicePrimaryCtxGetState", 7000, 0);
    if (!device_get || !get_uuid || !ctx_state)
        return vmc_w_drv_missing("cuDeviceGet/cuDeviceGetUuid/cuDevicePrimaryCtxGetState");
    CUdevice dev;
    CUuuid u;
    CUresult st = device_get(&dev, ordinal);
    if (st == CUDA_SUCCESS)
        st = get_uuid(&u, dev);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_nvml_format_uuid((const unsigned char *)u.bytes, uuid_text, room);
    unsigned int flags = 0;
    int active = 0;
    if (ctx_state(dev, &flags, &active) == CUDA_SUCCESS)
        a->context_active = active ? 1 : 0;
    return CUDA_SUCCESS;
}

static void memory_from_cuda(struct vmc_nvml_answer *a) {
    CUresult (*mem_info)(size_t *, size_t *) = vmc_w_drv_resolve("cuMemGetInfo", 3020, 0);
    size_t free_bytes = 0, total = 0;
    if (a->context_active && mem_info && mem_info(&free_bytes, &total) == CUDA_SUCCESS) {
        a->memory_total = total, a->memory_free = free_bytes, a->memory_used = total - free_bytes;
        a->status[VMC_NVML_Q_MEMORY] = NVML_SUCCESS;
    }
}

enum vmc_w_result vmc_w_nvml_query(struct vmc_wcall *wc) {
    struct vmc_nvml_query_args q;
    vmc_get_nvml_query_args(&wc->in, &q);
    int32_t ordinal = (int32_t)q.ordinal;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    pthread_once(&nvml_once, load_nvml);
    struct vmc_nvml_answer a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < VMC_NVML_Q_COUNT; i++)
        a.status[i] = nvml_ready ? NVML_ERROR_UNKNOWN : NVML_ERROR_NOT_SUPPORTED;
    CUresult st = CUDA_SUCCESS;
    if (ordinal < 0) {
        if (nvml_ready) {
            nvmlReturn_t d = ASK(driver_version, a.driver_version, sizeof a.driver_version);
            nvmlReturn_t v = ASK(nvml_version, a.nvml_version, sizeof a.nvml_version);
            a.status[VMC_NVML_Q_VERSIONS] = d != NVML_SUCCESS ? d : v;
        }
    } else {
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        st = cuda_side(ordinal, uuid, sizeof uuid, &a);
        nvmlDevice_t d = NULL;
        if (st == CUDA_SUCCESS && nvml_ready) {
            nvmlReturn_t found = nvml.by_uuid(uuid, &d);
            if (found == NVML_SUCCESS)
                device_answer(d, &a);
            else
                for (int i = 0; i < VMC_NVML_Q_COUNT; i++)
                    a.status[i] = found;
        }
        if (st == CUDA_SUCCESS && a.status[VMC_NVML_Q_MEMORY] != NVML_SUCCESS)
            memory_from_cuda(&a);
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_nvml_query_reply(vmc_w_reply_out(wc), &(struct vmc_nvml_query_reply){.answer = a});
    return VMC_W_DONE;
}

/* The appliance's NVML handle of the session's GPU of CUDA ordinal `ordinal`: CUDA_SUCCESS and *nvml_status. */
static CUresult nvml_device(int ordinal, nvmlDevice_t *d, nvmlReturn_t *nvml_status) {
    struct vmc_nvml_answer unused;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    CUresult st = cuda_side(ordinal, uuid, sizeof uuid, &unused);
    *nvml_status = st != CUDA_SUCCESS ? NVML_ERROR_INVALID_ARGUMENT
                   : nvml_ready       ? nvml.by_uuid(uuid, d)
                                      : NVML_ERROR_NOT_SUPPORTED;
    return st;
}

/* vmc_drv_NvmlTopology (vmc_nvml_wire.h): peer-to-peer status toward another GPU of the session, or one NVLink. A
 * peer outside the session is not one the program can name (its CUDA ordinals are the session's GPUs). */
enum vmc_w_result vmc_w_nvml_topology(struct vmc_wcall *wc) {
    struct vmc_nvml_topology_args q;
    vmc_get_nvml_topology_args(&wc->in, &q);
    if (!vmc_w_args_ok(wc) || wc->async || q.kind > VMC_NVML_TOPOLOGY_LINK)
        return VMC_W_BAD_ARGS;
    pthread_once(&nvml_once, load_nvml);
    struct vmc_nvml_topology t;
    memset(&t, 0, sizeof t);
    nvmlDevice_t d = NULL, peer = NULL;
    nvmlReturn_t found, peer_found = NVML_SUCCESS;
    CUresult st = nvml_device((int)q.ordinal, &d, &found);
    if (st == CUDA_SUCCESS && q.kind == VMC_NVML_TOPOLOGY_PEER)
        st = nvml_device((int)q.index, &peer, &peer_found);
    if (found == NVML_SUCCESS)
        found = peer_found;
    for (int i = 0; i < VMC_NVML_P2P_INDEXES; i++) {
        int status = 0;
        t.p2p_call[i] = q.kind != VMC_NVML_TOPOLOGY_PEER ? NVML_ERROR_INVALID_ARGUMENT
                        : found != NVML_SUCCESS          ? found
                                                         : ASK(p2p_status, d, peer, i, &status);
        t.p2p_status[i] = (uint32_t)status;
    }
    int on = 0;
    int link = q.kind == VMC_NVML_TOPOLOGY_LINK && found == NVML_SUCCESS;
    nvmlReturn_t not_asked = q.kind != VMC_NVML_TOPOLOGY_LINK ? NVML_ERROR_INVALID_ARGUMENT : found;
    t.link_state_call = link ? ASK(link_state, d, q.index, &on) : not_asked;
    t.link_state = (uint32_t)on;
    for (int c = 0; c < VMC_NVML_LINK_CAPS; c++)
        t.link_cap_call[c] = link ? ASK(link_capability, d, q.index, c, &t.link_cap[c]) : not_asked;
    t.remote_pci_call = link ? ASK(link_remote_pci, d, q.index, &t.remote_pci) : not_asked;
    int type = 0;
    t.remote_type_call = link ? ASK(link_remote_type, d, q.index, &type) : not_asked;
    t.remote_type = (uint32_t)type;
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_nvml_topology_reply(vmc_w_reply_out(wc), &(struct vmc_nvml_topology_reply){.topology = t});
    return VMC_W_DONE;
}

/* vmc_drv_NvmlFieldValues: nvmlDeviceGetFieldValues of one GPU of the session (NCCL reads NVLink states of Hopper GPUs
 * so). The CUDA status says whether the GPU is the session's; each value carries its own nvmlReturn, which is the
 * status of the whole call where the appliance's NVML could not be asked or failed. */
enum vmc_w_result vmc_w_nvml_field_values(struct vmc_wcall *wc) {
    struct vmc_nvml_field_values q;
    vmc_get_nvml_field_values(&wc->in, &q);
    if (!vmc_w_args_ok(wc) || wc->async || q.n > VMC_MAX_NVML_FIELD_VALUES)
        return VMC_W_BAD_ARGS;
    pthread_once(&nvml_once, load_nvml);
    nvmlFieldValue_t values[VMC_MAX_NVML_FIELD_VALUES];
    if (q.n)
        memcpy(values, q.values, q.n * sizeof *values);
    nvmlDevice_t d = NULL;
    nvmlReturn_t found;
    CUresult st = nvml_device((int)q.ordinal, &d, &found);
    nvmlReturn_t asked = found != NVML_SUCCESS ? found : ASK(field_values, d, (int)q.n, values);
    for (uint32_t i = 0; asked != NVML_SUCCESS && i < q.n; i++)
        values[i].nvmlReturn = asked;
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_nvml_field_values(vmc_w_reply_out(wc),
                                  &(struct vmc_nvml_field_values){.ordinal = q.ordinal, .n = q.n, .values = values});
    return VMC_W_DONE;
}

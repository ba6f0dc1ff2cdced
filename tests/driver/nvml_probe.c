/* NVML as a monitoring tool or a framework asks it (nvidia-ml-py, PyTorch, NCCL): init, the devices and
 * their identity, memory, telemetry, processes, error texts, shutdown. Built with vmcuda's declarations of
 * NVML's ABI (protocol/include/vmc_nvml_abi.h) and linked with -lnvidia-ml, it runs against NVIDIA's NVML
 * natively and against vmcuda's NVML front end under `vmcuda run`. It prints only what is the same for one
 * GPU whoever asks (identity, statuses, relations between values), so the two outputs can be compared.
 * Usage: nvml_probe [--context]   (--context: create a CUDA context first, so the process is listed). */
#include <stdio.h>
#include <string.h>
#include <cuda.h>

#include "vmc_nvml_abi.h"

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *milliwatts);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *milliwatts);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t *state);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int *percent);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *brand);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v2_t *infos);
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex, int *p2pStatus);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive);
nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link, int capability, unsigned int *capResult);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values);

static const char *text(nvmlReturn_t st) { return nvmlErrorString(st); }

static void device_report(unsigned int i) {
    nvmlDevice_t d, again;
    nvmlReturn_t st = nvmlDeviceGetHandleByIndex_v2(i, &d);
    printf("device %u handle: %s\n", i, text(st));
    if (st != NVML_SUCCESS)
        return;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = "", uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "", small[4];
    unsigned int index = 99;
    printf("  name: %s %s\n", text(nvmlDeviceGetName(d, name, sizeof name)), name);
    printf("  name into 4 bytes: %s\n", text(nvmlDeviceGetName(d, small, sizeof small)));
    printf("  uuid: %s %s\n", text(nvmlDeviceGetUUID(d, uuid, sizeof uuid)), uuid);
    st = nvmlDeviceGetIndex(d, &index);
    printf("  index: %s %u\n", text(st), index);
    st = nvmlDeviceGetHandleByUUID(uuid, &again);
    printf("  handle by uuid: %s, same: %s\n", text(st), st == NVML_SUCCESS && again == d ? "yes" : "no");
    printf("  handle by an unknown uuid: %s\n", text(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &again)));
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    st = nvmlDeviceGetPciInfo_v3(d, &pci);
    printf("  pci: %s bus id %s legacy %s domain %u bus %u device %u vendor 0x%04x\n", text(st), pci.busId,
           pci.busIdLegacy, pci.domain, pci.bus, pci.device, pci.pciDeviceId & 0xffff);
    st = nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &again);
    printf("  handle by pci bus id: %s, same: %s\n", text(st), st == NVML_SUCCESS && again == d ? "yes" : "no");
    int major = -1, minor = -1;
    st = nvmlDeviceGetCudaComputeCapability(d, &major, &minor);
    printf("  compute capability: %s %d.%d\n", text(st), major, minor);
    nvmlMemory_t m1;
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    nvmlReturn_t s1 = nvmlDeviceGetMemoryInfo(d, &m1), s2 = nvmlDeviceGetMemoryInfo_v2(d, &m2);
    printf("  memory: %s, total > 0: %s, free <= total: %s\n", text(s1), s1 == NVML_SUCCESS && m1.total > 0 ? "yes" : "no",
           s1 == NVML_SUCCESS && m1.free <= m1.total ? "yes" : "no");
    printf("  memory v2: %s, same total: %s, reserved + used + free <= total: %s\n", text(s2),
           s2 == NVML_SUCCESS && s1 == NVML_SUCCESS && m2.total == m1.total ? "yes" : "no",
           s2 == NVML_SUCCESS && m2.reserved + m2.used + m2.free <= m2.total ? "yes" : "no");
    nvmlMemory_v2_t wrong = {.version = 1};
    printf("  memory v2 with a wrong version: %s\n", text(nvmlDeviceGetMemoryInfo_v2(d, &wrong)));
    nvmlUtilization_t u;
    unsigned int v;
    nvmlPstates_t p;
    nvmlBrandType_t b;
    printf("  utilization: %s\n", text(nvmlDeviceGetUtilizationRates(d, &u)));
    printf("  temperature: %s\n", text(nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v)));
    printf("  power usage: %s\n", text(nvmlDeviceGetPowerUsage(d, &v)));
    printf("  enforced power limit: %s\n", text(nvmlDeviceGetEnforcedPowerLimit(d, &v)));
    printf("  performance state: %s\n", text(nvmlDeviceGetPerformanceState(d, &p)));
    printf("  SM clock: %s, max: %s\n", text(nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v)),
           text(nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &v)));
    printf("  fan speed: %s\n", text(nvmlDeviceGetFanSpeed(d, &v)));
    printf("  brand: %s\n", text(nvmlDeviceGetBrand(d, &b)));
    /* topology, as NCCL asks it: peer-to-peer reading from itself, the first NVLink (state, P2P capability, what
     * it leads to) */
    int p2p = -1, active = -1;
    unsigned int can = 7;
    nvmlPciInfo_t remote;
    memset(&remote, 0, sizeof remote);
    st = nvmlDeviceGetP2PStatus(d, d, 0, &p2p);
    printf("  p2p read to itself: %s %d\n", text(st), p2p);
    st = nvmlDeviceGetNvLinkState(d, 0, &active);
    printf("  nvlink 0 state: %s %d\n", text(st), active);
    st = nvmlDeviceGetNvLinkCapability(d, 0, 0, &can);
    printf("  nvlink 0 p2p capability: %s %u\n", text(st), can);
    st = nvmlDeviceGetNvLinkRemotePciInfo_v2(d, 0, &remote);
    printf("  nvlink 0 leads to: %s %s\n", text(st), remote.busId);
    nvmlFieldValue_t fv[2];
    memset(fv, 0, sizeof fv);
    fv[0].fieldId = fv[1].fieldId = NVML_FI_DEV_NVLINK_GET_STATE; /* as NCCL reads a Hopper GPU's links */
    fv[1].scopeId = 1;
    st = nvmlDeviceGetFieldValues(d, 2, fv);
    printf("  nvlink 0 and 1 states as field values: %s, %s %u, %s %u\n", text(st), text(fv[0].nvmlReturn),
           fv[0].value.uiVal, text(fv[1].nvmlReturn), fv[1].value.uiVal);
    unsigned int count = 0;
    st = nvmlDeviceGetComputeRunningProcesses_v3(d, &count, NULL);
    printf("  compute processes asked with no room: %s, count %u\n", text(st), count);
    nvmlProcessInfo_v2_t infos[8];
    count = 8;
    st = nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos);
    printf("  compute processes: %s, count %u%s\n", text(st), count,
           st != NVML_SUCCESS || count != 1                                   ? ""
           : infos[0].usedGpuMemory == (unsigned long long)NVML_VALUE_NOT_AVAILABLE ? ", memory not available"
           : infos[0].usedGpuMemory > 0                                         ? ", memory > 0"
                                                                                : ", memory 0");
}

int main(int argc, char **argv) {
    int with_context = argc > 1 && strcmp(argv[1], "--context") == 0;
    unsigned int count = 0;
    printf("before init, count: %s\n", text(nvmlDeviceGetCount_v2(&count)));
    nvmlReturn_t st = nvmlInit_v2();
    printf("nvmlInit_v2: %s\n", text(st));
    if (st != NVML_SUCCESS)
        return 1;
    CUcontext ctx = NULL;
    if (with_context) {
        CUdevice dev;
        CUresult cu = cuInit(0);
        if (cu == CUDA_SUCCESS)
            cu = cuDeviceGet(&dev, 0);
        if (cu == CUDA_SUCCESS)
            cu = cuDevicePrimaryCtxRetain(&ctx, dev);
        printf("a CUDA context: %s\n", cu == CUDA_SUCCESS ? "yes" : "no");
    }
    char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    int cuda = 0;
    printf("driver version: %s\n", text(nvmlSystemGetDriverVersion(version, sizeof version)));
    printf("NVML version: %s\n", text(nvmlSystemGetNVMLVersion(version, sizeof version)));
    st = nvmlSystemGetCudaDriverVersion_v2(&cuda);
    printf("CUDA driver version: %s %d\n", text(st), cuda);
    st = nvmlDeviceGetCount_v2(&count);
    printf("device count: %s %u\n", text(st), count);
    for (unsigned int i = 0; i < count; i++)
        device_report(i);
    nvmlDevice_t none;
    printf("handle of index %u: %s\n", count, text(nvmlDeviceGetHandleByIndex_v2(count, &none)));
    printf("a second init: %s\n", text(nvmlInit_v2()));
    printf("shutdown: %s\n", text(nvmlShutdown()));
    printf("still initialised, count: %s\n", text(nvmlDeviceGetCount_v2(&count)));
    printf("shutdown: %s\n", text(nvmlShutdown()));
    printf("shutdown again: %s\n", text(nvmlShutdown()));
    printf("error texts:");
    for (int code = 0; code <= 30; code++)
        printf(" %d=%s;", code, nvmlErrorString(code));
    printf(" 999=%s; 12345=%s\n", nvmlErrorString(999), nvmlErrorString(12345));
    if (ctx) {
        CUdevice dev;
        cuDeviceGet(&dev, 0);
        cuDevicePrimaryCtxRelease(dev);
    }
    return 0;
}

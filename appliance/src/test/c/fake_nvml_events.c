/* A stand-in for the driver's libnvidia-ml.so.1 with two GPUs and scripted XID events, for the tests of
 * vmcuda-xid-watch (XidWatchTest): FAKE_NVML_XIDS="79,13" makes GPU 0 report XID 79, then 13, then nothing
 * ("lost" in the list: that wait fails with NVML_ERROR_GPU_IS_LOST);
 * FAKE_NVML_GPU1_UNSUPPORTED=1 makes GPU 1 refuse event registration, as a GPU without the feature does;
 * FAKE_NVML_UUIDS="A,B" names the two GPUs (default GPU-fake-0, GPU-fake-1).
 * The live figures the daemon samples (NvmlTelemetryTest): GPU 0 reports them all (memory used 1 GiB, 37 %,
 * 41 C, 125.5 W, SM 1980 MHz, 0 uncorrected ECC errors, and two processes: the caller using 512 MiB and pid 1
 * with its memory "not available"); GPU 1 reports memory (2 GiB used) and temperature (42 C) only, the rest
 * NVML_ERROR_NOT_SUPPORTED, as a vGPU does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmc_nvml_abi.h"

#define EXPORT __attribute__((visibility("default")))

static struct nvmlDevice_st {
    int index;
} gpus[2] = {{0}, {1}};

EXPORT nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
EXPORT const char *nvmlErrorString(nvmlReturn_t r) { return r == NVML_ERROR_NOT_SUPPORTED ? "Not Supported" : "fake error"; }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) {
    *n = 2;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
    if (i >= 2)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &gpus[i];
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned len) {
    const char *names = getenv("FAKE_NVML_UUIDS"), *comma = names ? strchr(names, ',') : NULL;
    if (!comma)
        snprintf(out, len, "GPU-fake-%d", d->index);
    else if (d->index == 0)
        snprintf(out, len, "%.*s", (int)(comma - names), names);
    else
        snprintf(out, len, "%s", comma + 1);
    return NVML_SUCCESS;
}
static int the_set;
EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    *set = (nvmlEventSet_t)&the_set;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
    (void)set;
    if (d->index == 1 && getenv("FAKE_NVML_GPU1_UNSUPPORTED"))
        return NVML_ERROR_NOT_SUPPORTED;
    return types == nvmlEventTypeXidCriticalError ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *e, unsigned timeout_ms) {
    (void)set;
    static const char *next;
    static int started;
    if (!started) {
        started = 1;
        next = getenv("FAKE_NVML_XIDS");
    }
    if (next && strncmp(next, "lost", 4) == 0) { /* the GPU is lost: this wait fails, the next ones go on */
        next += next[4] == ',' ? 5 : 4;
        return NVML_ERROR_GPU_IS_LOST;
    }
    if (next && *next) {
        char *end;
        unsigned long long xid = strtoull(next, &end, 10);
        next = *end == ',' ? end + 1 : end;
        e->device = &gpus[0];
        e->eventType = nvmlEventTypeXidCriticalError;
        e->eventData = xid;
        return NVML_SUCCESS;
    }
    usleep((timeout_ms < 200 ? timeout_ms : 200) * 1000u);
    return NVML_ERROR_TIMEOUT;
}

/* ---- live figures ---- */

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    m->total = 80ull << 30;
    m->used = (unsigned long long)(d->index + 1) << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    if (d->index == 1)
        return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = 37;
    u->memory = 12;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *t) {
    if (sensor != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    *t = 41u + (unsigned)d->index;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *milliwatts) {
    if (d->index == 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *milliwatts = 125500;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type, unsigned *mhz) {
    if (d->index == 1)
        return NVML_ERROR_NOT_SUPPORTED;
    *mhz = type == NVML_CLOCK_SM ? 1980 : 1;
    return NVML_SUCCESS;
}
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type, unsigned long long *count) {
    if (d->index == 1 || error_type != 1 /* uncorrected */ || counter_type != 0 /* volatile */)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = 0;
    return NVML_SUCCESS;
}
/* GPU 0's processes: the caller's own (512 MiB) and pid 1 (NVML_VALUE_NOT_AVAILABLE); with too little room:
 * NVML_ERROR_INSUFFICIENT_SIZE (7) and the count, as NVML does */
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_v2_t *infos) {
    nvmlProcessInfo_v2_t found[2] = {{(unsigned)getpid(), 512ull << 20, 0xFFFFFFFFu, 0xFFFFFFFFu},
                                     {1, ~0ull, 0xFFFFFFFFu, 0xFFFFFFFFu}};
    unsigned n = d->index == 0 ? 2 : 0;
    if (*count < n) {
        *count = n;
        return 7;
    }
    *count = n;
    memcpy(infos, found, n * sizeof *infos);
    return NVML_SUCCESS;
}

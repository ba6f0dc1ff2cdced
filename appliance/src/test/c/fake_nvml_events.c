/* A stand-in for the driver's libnvidia-ml.so.1 with two GPUs and scripted XID events, for the tests of
 * vmcuda-xid-watch (XidWatchTest): FAKE_NVML_XIDS="79,13" makes GPU 0 report XID 79, then 13, then nothing
 * ("lost" in the list: that wait fails with NVML_ERROR_GPU_IS_LOST);
 * FAKE_NVML_GPU1_UNSUPPORTED=1 makes GPU 1 refuse event registration, as a GPU without the feature does;
 * FAKE_NVML_UUIDS="A,B" names the two GPUs (default GPU-fake-0, GPU-fake-1). */
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

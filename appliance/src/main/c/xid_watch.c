/* vmcuda-xid-watch: reports the appliance's GPU XID errors (the driver's critical error events: a GPU fallen off
 * the bus, a double-bit ECC error, a page retirement, a reset...) as they happen, for the daemon's metrics and log
 * (appliance/CONFIG.md "GPU health"). A process of its own because NVML's event wait blocks, and the daemon is
 * Java; it loads the driver's libnvidia-ml.so.1 at run time, so an appliance without a driver just says so.
 *
 * Lines on stdout, one per event:
 *   WATCHING <n>                      registered for XID events on n GPUs (after one UNSUPPORTED line per GPU that cannot)
 *   UNSUPPORTED <uuid> <reason>
 *   XID <uuid> <xid>
 *   WAITFAIL <reason>                 a wait failed (once per kind of failure); it waits again a second later
 *   ERROR <reason>                    then exit 1 (no NVML, no GPU to watch)
 * It ends with its parent (PR_SET_PDEATHSIG), or when stdout closes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vmc_nvml_abi.h"

#define MAX_GPUS 64
#define WAIT_MS 5000

static void *nvml;

static void *symbol(const char *name) {
    void *f = dlsym(nvml, name);
    if (!f) {
        printf("ERROR libnvidia-ml.so.1 has no %s\n", name);
        exit(1);
    }
    return f;
}

int main(void) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    signal(SIGPIPE, SIG_DFL); /* the daemon gone: a write ends this process */
    setvbuf(stdout, NULL, _IOLBF, 0);
    nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml) {
        printf("ERROR cannot load libnvidia-ml.so.1 (no NVIDIA driver?): %s\n", dlerror());
        return 1;
    }
    nvmlReturn_t (*init)(void) = symbol("nvmlInit_v2");
    const char *(*error_string)(nvmlReturn_t) = symbol("nvmlErrorString");
    nvmlReturn_t (*count)(unsigned *) = symbol("nvmlDeviceGetCount_v2");
    nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *) = symbol("nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*uuid_of)(nvmlDevice_t, char *, unsigned) = symbol("nvmlDeviceGetUUID");
    nvmlReturn_t (*set_create)(nvmlEventSet_t *) = symbol("nvmlEventSetCreate");
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = symbol("nvmlDeviceRegisterEvents");
    nvmlReturn_t (*wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned) = symbol("nvmlEventSetWait_v2");
    nvmlReturn_t st = init();
    unsigned n = 0;
    nvmlEventSet_t set = NULL;
    if (st == NVML_SUCCESS)
        st = count(&n);
    if (st == NVML_SUCCESS)
        st = set_create(&set);
    if (st != NVML_SUCCESS) {
        printf("ERROR NVML: %s\n", error_string(st));
        return 1;
    }
    struct {
        nvmlDevice_t device;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    } gpu[MAX_GPUS];
    unsigned watched = 0, known = 0;
    for (unsigned i = 0; i < n && known < MAX_GPUS; i++) {
        if (handle(i, &gpu[known].device) != NVML_SUCCESS ||
            uuid_of(gpu[known].device, gpu[known].uuid, sizeof gpu[known].uuid) != NVML_SUCCESS)
            continue;
        st = register_events(gpu[known].device, nvmlEventTypeXidCriticalError, set);
        if (st == NVML_SUCCESS)
            watched++;
        else
            printf("UNSUPPORTED %s %s\n", gpu[known].uuid, error_string(st));
        known++;
    }
    if (watched == 0) {
        printf("ERROR no GPU reports XID events here (%u GPUs)\n", n);
        return 1;
    }
    printf("WATCHING %u\n", watched);
    for (;;) {
        nvmlEventData_t e;
        memset(&e, 0, sizeof e);
        st = wait(set, &e, WAIT_MS);
        if (st == NVML_ERROR_TIMEOUT)
            continue;
        if (st != NVML_SUCCESS) {
            /* one GPU's trouble (lost after an XID 79, say) must not end the watching of the others: say it once per
             * kind, then wait again, a second later */
            static nvmlReturn_t last_failure = NVML_SUCCESS;
            if (st != last_failure && printf("WAITFAIL %s\n", error_string(st)) < 0)
                return 0;
            last_failure = st;
            sleep(1);
            continue;
        }
        if (!(e.eventType & nvmlEventTypeXidCriticalError))
            continue;
        const char *uuid = "unknown";
        for (unsigned i = 0; i < known; i++)
            if (gpu[i].device == e.device)
                uuid = gpu[i].uuid;
        if (printf("XID %s %llu\n", uuid, e.eventData) < 0)
            return 0;
    }
}

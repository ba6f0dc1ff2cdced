/* cuInit, cuDriverGetVersion and the device queries (cuDeviceGet*, cuDeviceGetAttribute...), answered
 * from one snapshot the worker takes of its driver and GPUs: a PyTorch step asks these thousands of
 * times, and the answers cannot change during a session. */
#include "drv_device.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_view.h"
#include "drv_call.h"
#include "drv_launch.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

static struct vmc_drv_snapshot snapshot;
static pthread_once_t snapshot_once = PTHREAD_ONCE_INIT;
static int initialized; /* cuInit(0) returned CUDA_SUCCESS in this process */

/* Whether the driver is initialised: cuInit succeeded, or the program's CUDA runtime has reached the appliance
 * (vmcuda's runtime front end: a forwarded call was made), as NVIDIA's runtime calls cuInit when it starts and a
 * program built with it may call the driver API without calling cuInit itself. */
static int is_initialized(const struct vmc_drv_snapshot *s) {
    if (__atomic_load_n(&initialized, __ATOMIC_ACQUIRE))
        return 1;
    if (vmc_runtime_epoch() == 0 || s->init_status != CUDA_SUCCESS)
        return 0;
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    return 1;
}

/* Reply layout: PROTOCOL.md "Driver front end" (vmc_drv_Snapshot). */
static void load(void) {
    vmc_set_device_reset_hook(vmc_drv_forget_handles); /* a reset through the runtime front end */
    snapshot.driver_version = CUDA_VERSION; /* what this front end implements, when no appliance answers */
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_Snapshot, 0);
    if (st == CUDA_SUCCESS)
        st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS) {
        snapshot.init_status = st; /* no session: every device query fails as cuInit does */
        return;
    }
    static struct vmc_snapshot_device wire[VMC_DRV_MAX_DEVICES]; /* once per process (pthread_once): off the stack */
    struct vmc_snapshot_reply r = {.devices = wire, .devices_room = VMC_DRV_MAX_DEVICES};
    vmc_get_snapshot_reply(&c.reply, &r);
    uint32_t n = vmc_call_reply_ok(&c) ? r.n_devices : 0;
    snapshot.driver_version = (int)r.driver_version;
    snapshot.init_status = (CUresult)r.init_status;
    for (uint32_t d = 0; d < n; d++) {
        struct vmc_drv_device *dev = &snapshot.devices[d];
        const struct vmc_snapshot_device *w = &wire[d];
        memcpy(dev->name, w->name, sizeof dev->name);
        dev->name[sizeof dev->name - 1] = 0;
        memcpy(&dev->uuid, w->uuid, sizeof dev->uuid);
        memcpy(dev->luid, w->luid, sizeof dev->luid);
        dev->luid_mask = w->luid_mask;
        dev->luid_status = (CUresult)w->luid_status;
        dev->total_mem = w->total_memory;
        memcpy(dev->pci_bus_id, w->pci_bus_id, sizeof dev->pci_bus_id);
        dev->pci_bus_id[sizeof dev->pci_bus_id - 1] = 0;
        for (uint32_t a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
            /* attributes the appliance's driver does not know (an older one) */
            dev->attr_status[a] = a < w->n_attributes ? (CUresult)vmc_snapshot_device_attribute_status_at(w, a)
                                                      : CUDA_ERROR_INVALID_VALUE;
            dev->attr[a] = a < w->n_attributes ? vmc_device_view_attribute((int)a, (int)vmc_snapshot_device_attribute_value_at(w, a)) : 0;
        }
    }
    if (!vmc_call_reply_ok(&c)) {
        fprintf(stderr, "vmcuda: the appliance's description of its GPUs was malformed; reporting none\n");
        snapshot.init_status = CUDA_ERROR_NO_DEVICE;
        n = 0;
    }
    snapshot.device_count = (int)n;
}

const struct vmc_drv_snapshot *vmc_drv_snapshot(void) {
    pthread_once(&snapshot_once, load);
    return &snapshot;
}

CUresult vmc_drv_device(CUdevice dev, const struct vmc_drv_device **out) {
    const struct vmc_drv_snapshot *s = vmc_drv_snapshot();
    if (!is_initialized(s))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= s->device_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *out = &s->devices[dev];
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int Flags) {
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult st = vmc_drv_snapshot()->init_status;
    if (st == CUDA_SUCCESS)
        __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
    return st;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *driverVersion) {
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = vmc_drv_snapshot()->driver_version;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int *count) {
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    const struct vmc_drv_snapshot *s = vmc_drv_snapshot();
    if (!is_initialized(s))
        return CUDA_ERROR_NOT_INITIALIZED;
    *count = s->device_count;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(ordinal, &d);
    if (st == CUDA_SUCCESS)
        *device = ordinal; /* as in NVIDIA's driver, a device handle is its ordinal */
    return st;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if ((int)attrib <= 0 || (int)attrib >= CU_DEVICE_ATTRIBUTE_MAX || d->attr_status[attrib] != CUDA_SUCCESS)
        return (int)attrib > 0 && (int)attrib < CU_DEVICE_ATTRIBUTE_MAX ? d->attr_status[attrib] : CUDA_ERROR_INVALID_VALUE;
    *pi = d->attr[attrib];
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", d->name);
    return CUDA_SUCCESS;
}

static CUresult uuid_of(CUuuid *uuid, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    *uuid = d->uuid;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return uuid_of(uuid, dev); }
__attribute__((visibility("default"))) CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return uuid_of(uuid, dev); }

__attribute__((visibility("default"))) CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)d->total_mem;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!luid || !deviceNodeMask)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->luid_status != CUDA_SUCCESS)
        return d->luid_status;
    memcpy(luid, d->luid, sizeof d->luid);
    *deviceNodeMask = d->luid_mask;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%s", d->pci_bus_id);
    return CUDA_SUCCESS;
}

/* "[domain]:bus:device.function", hexadecimal; the domain may be left out. */
static int parse_bus_id(const char *s, unsigned *domain, unsigned *bus, unsigned *device) {
    unsigned a, b, c, f;
    if (sscanf(s, "%x:%x:%x.%x", &a, &b, &c, &f) == 4) {
        *domain = a, *bus = b, *device = c;
        return 1;
    }
    if (sscanf(s, "%x:%x.%x", &b, &c, &f) == 3) {
        *domain = 0, *bus = b, *device = c;
        return 1;
    }
    return 0;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    const struct vmc_drv_snapshot *s = vmc_drv_snapshot();
    if (!is_initialized(s))
        return CUDA_ERROR_NOT_INITIALIZED;
    unsigned dom, bus, d;
    if (!parse_bus_id(pciBusId, &dom, &bus, &d))
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < s->device_count; i++) {
        unsigned dom2, bus2, d2;
        if (parse_bus_id(s->devices[i].pci_bus_id, &dom2, &bus2, &d2) && dom == dom2 && bus == bus2 && d == d2) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

__attribute__((visibility("default"))) CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    *major = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    *minor = d->attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev) {
    const struct vmc_drv_device *d;
    CUresult st = vmc_drv_device(dev, &d);
    if (st != CUDA_SUCCESS)
        return st;
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    memset(prop, 0, sizeof *prop);
    prop->maxThreadsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    prop->maxThreadsDim[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
    prop->maxThreadsDim[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
    prop->maxThreadsDim[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
    prop->maxGridSize[0] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
    prop->maxGridSize[1] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
    prop->maxGridSize[2] = d->attr[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
    prop->sharedMemPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    prop->totalConstantMemory = d->attr[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
    prop->SIMDWidth = d->attr[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
    prop->memPitch = d->attr[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
    prop->regsPerBlock = d->attr[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
    prop->clockRate = d->attr[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
    prop->textureAlign = d->attr[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
    return CUDA_SUCCESS;
}

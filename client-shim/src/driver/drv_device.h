/* What the appliance's driver says about itself and the session's GPUs, asked once per process
 * (vmc_drv_Snapshot) and answered locally from then on: versions, cuInit, every device query. */
#ifndef DRV_DEVICE_H
#define DRV_DEVICE_H

#include <stdint.h>
#include "drv.h"

#define VMC_DRV_MAX_DEVICES 64

struct vmc_drv_device {
    char name[256];
    CUuuid uuid;
    char luid[8];
    unsigned luid_mask;
    CUresult luid_status;
    uint64_t total_mem;
    char pci_bus_id[32];
    CUresult attr_status[CU_DEVICE_ATTRIBUTE_MAX];
    int attr[CU_DEVICE_ATTRIBUTE_MAX];
};

struct vmc_drv_snapshot {
    int driver_version;  /* 0: the appliance has no CUDA driver */
    CUresult init_status; /* cuInit(0) there, or the session's error when there is no session */
    int device_count;
    struct vmc_drv_device devices[VMC_DRV_MAX_DEVICES];
};

/* Loaded on first use (which opens the session). Never NULL. */
const struct vmc_drv_snapshot *vmc_drv_snapshot(void);
/* CUDA_SUCCESS with the device when cuInit has succeeded and dev is one of the session's GPUs. */
CUresult vmc_drv_device(CUdevice dev, const struct vmc_drv_device **out);

#endif

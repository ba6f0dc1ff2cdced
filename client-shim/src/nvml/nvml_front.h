/* vmcuda's NVML front end (libnvidia-ml.so.1): NVML's device queries answered from the program's vmcuda
 * session. The GPUs are the session's, all of them, as NVML natively lists every GPU whatever
 * CUDA_VISIBLE_DEVICES says (frameworks count devices by applying CUDA_VISIBLE_DEVICES to NVML's list);
 * those the program's CUDA_VISIBLE_DEVICES hides are counted but answer nothing (nvml_gpus.c); identity (name, UUID, PCI location, compute capability) comes from the
 * driver front end's calls, telemetry (memory, utilisation, temperature, power, clocks, processes) from the
 * appliance's own NVML through the worker (vmc_drv_NvmlQuery, vmc_nvml_wire.h). */
#ifndef NVML_FRONT_H
#define NVML_FRONT_H

#include <cuda.h>
#include "vmc_nvml_abi.h"
#include "vmc_nvml_wire.h"
#include "vmc_wire.h"

#define NVML_EXPORT __attribute__((visibility("default")))
#define VMC_NVML_MAX_GPUS 64

/* One GPU of the session; nvmlDevice_t handles point at these. */
struct vmc_nvml_gpu {
    int index;   /* NVML's index: the GPU's place in the session */
    int hidden;  /* hidden from the program's CUDA by CUDA_VISIBLE_DEVICES: counted, no handle */
    int ordinal; /* its CUDA ordinal in this process (visible GPUs) */
    CUdevice dev;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlPciInfo_t pci;
    int cc_major, cc_minor;
};

/* NVML_SUCCESS while initialised (nvmlInit* more often than nvmlShutdown), else NVML_ERROR_UNINITIALIZED. */
nvmlReturn_t vmc_nvml_ready(void);
/* The session's GPUs, known since nvmlInit. */
int vmc_nvml_gpu_count(void);
struct vmc_nvml_gpu *vmc_nvml_gpu_at(int index);
/* The GPU a handle names, or NULL for anything that is not one of our handles (or a hidden GPU). */
struct vmc_nvml_gpu *vmc_nvml_gpu_of(nvmlDevice_t device);
/* Reads the session's GPUs through the driver front end (nvml_gpus.c); a CUDA status. */
CUresult vmc_nvml_read_gpus(void);

/* What the appliance's NVML says of a GPU of the session (ordinal), or of the appliance (-1). */
nvmlReturn_t vmc_nvml_query(int ordinal, struct vmc_nvml_answer *answer);
/* How a GPU of the session (ordinal) is connected, as the appliance's NVML says: toward another GPU of the session
 * (kind VMC_NVML_TOPOLOGY_PEER, index: its ordinal) or through one NVLink (VMC_NVML_TOPOLOGY_LINK, index: the link). */
nvmlReturn_t vmc_nvml_topology(int ordinal, int kind, unsigned int index, struct vmc_nvml_topology *topology);
/* nvmlDeviceGetFieldValues of a GPU of the session, at most VMC_MAX_NVML_FIELD_VALUES values at once. */
nvmlReturn_t vmc_nvml_field_values(int ordinal, unsigned int n, nvmlFieldValue_t *values);

/* The unsupported functions' reporter (the generated vmc_nvml_unsupported.c). */
int vmc_nvml_unsupported(const char *name, int *told);
/* nvmlErrorString's table (generated from nvml.spec). */
const char *vmc_nvml_error_text(int code);
/* Copies a NUL-terminated string into a caller's buffer of `length` bytes, as NVML does: all of it or
 * NVML_ERROR_INSUFFICIENT_SIZE. */
nvmlReturn_t vmc_nvml_copy_text(char *out, unsigned int length, const char *text);

#endif

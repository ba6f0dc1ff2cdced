/* The part of NVML's C ABI (NVIDIA's nvml.h, NVML API version 13) that vmcuda's NVML front end serves and
 * its worker asks of the appliance's libnvidia-ml.so.1: opaque handles, the structures those functions fill
 * and the enumerations they take. Written from NVIDIA's public documentation of nvml.h (the toolkits that
 * build vmcuda do not all ship the header); the layouts must stay byte-identical to NVIDIA's, and
 * tests/driver/nvml_probe.c, built with this header, is run against NVIDIA's own library on the GPU
 * machine. The return codes are generated from protocol/nvml.spec (vmc_nvml_codes.h). */
#ifndef VMC_NVML_ABI_H
#define VMC_NVML_ABI_H

#include "vmc_nvml_codes.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_INIT_FLAG_NO_GPUS 1u
#define NVML_VALUE_NOT_AVAILABLE (-1)

typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0" */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;    /* device id << 16 | vendor id */
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "%08X:%02X:%02X.0" */
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version; /* nvmlMemory_v2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2): the size of the structure with the version in the top byte. */
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;     /* 0xFFFFFFFF without MIG */
    unsigned int computeInstanceId; /* 0xFFFFFFFF without MIG */
} nvmlProcessInfo_v2_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef int nvmlBrandType_t;  /* nvmlBrandType_enum: NVML_BRAND_UNKNOWN = 0 ... */
typedef int nvmlPstates_t;    /* nvmlPstates_enum: NVML_PSTATE_0 = 0 ... NVML_PSTATE_UNKNOWN = 32 */

/* Events (nvmlDeviceRegisterEvents, nvmlEventSetWait_v2): the appliance's XID watcher (xid_watch.c) */
typedef struct nvmlEventSet_st *nvmlEventSet_t;
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the XID of an nvmlEventTypeXidCriticalError (999: unknown) */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* nvmlDeviceGetFieldValues' item: the caller names fieldId and scopeId (an NVLink, say), NVML fills the rest */
typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType; /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
#define NVML_FI_DEV_NVLINK_GET_STATE 165 /* NVLink scopeId: active (1) or not */

_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t as in nvml.h");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t as in nvml.h");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t as in nvml.h");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t as in nvml.h");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t as in nvml.h");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t as in nvml.h");

#endif

/* Answers that cannot change during a session, given by the client after the worker's first successful
 * answer: device attributes and properties, the number of devices, the driver version (a round trip was
 * 188 times a native cudaDeviceGetAttribute; programs ask these in loops). A failed answer is not kept:
 * a GPU-less appliance, or a bad device number, gets the worker's answer each time, as natively. What describes the
 * appliance's host memory rather than this process's is answered as this process sees it (device_view.h). */
#include <pthread.h>
#include <string.h>
#include <cuda_runtime_api.h>

#include "device_view.h"

cudaError_t vmc_forward_cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t vmc_forward_cudaDriverGetVersion(int *driverVersion);
cudaError_t vmc_forward_cudaGetDeviceCount(int *count);
cudaError_t vmc_forward_cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);

#define DEVICES 64
#define ATTRIBUTES 512

static int attribute_value[DEVICES][ATTRIBUTES];
static unsigned char attribute_known[DEVICES][ATTRIBUTES];

/* A value is written before its flag (release), and read after it (acquire). */
__attribute__((visibility("default"))) cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    int cacheable = value && device >= 0 && device < DEVICES && (int)attr >= 0 && (int)attr < ATTRIBUTES;
    if (cacheable && __atomic_load_n(&attribute_known[device][attr], __ATOMIC_ACQUIRE)) {
        *value = attribute_value[device][attr];
        return cudaSuccess;
    }
    cudaError_t st = vmc_forward_cudaDeviceGetAttribute(value, attr, device);
    if (st == cudaSuccess && value)
        *value = vmc_device_view_attribute((int)attr, *value);
    if (st == cudaSuccess && cacheable) {
        attribute_value[device][attr] = *value;
        __atomic_store_n(&attribute_known[device][attr], 1, __ATOMIC_RELEASE);
    }
    return st;
}

/* One number per session: the worker's first successful answer, then the same. */
struct kept_number {
    int value, known;
};

static cudaError_t answer_number(int *out, struct kept_number *k, cudaError_t (*ask)(int *)) {
    if (out && __atomic_load_n(&k->known, __ATOMIC_ACQUIRE)) {
        *out = k->value;
        return cudaSuccess;
    }
    cudaError_t st = ask(out);
    if (st == cudaSuccess && out) {
        k->value = *out;
        __atomic_store_n(&k->known, 1, __ATOMIC_RELEASE);
    }
    return st;
}

static struct kept_number driver_version, device_count;

__attribute__((visibility("default"))) cudaError_t cudaDriverGetVersion(int *driverVersion) {
    return answer_number(driverVersion, &driver_version, vmc_forward_cudaDriverGetVersion);
}

__attribute__((visibility("default"))) cudaError_t cudaGetDeviceCount(int *count) {
    return answer_number(count, &device_count, vmc_forward_cudaGetDeviceCount);
}

static struct cudaDeviceProp properties[DEVICES];
static int properties_known[DEVICES];
static pthread_mutex_t properties_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((visibility("default"))) cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    int cacheable = prop && device >= 0 && device < DEVICES;
    if (cacheable && __atomic_load_n(&properties_known[device], __ATOMIC_ACQUIRE)) {
        *prop = properties[device];
        return cudaSuccess;
    }
    cudaError_t st = vmc_forward_cudaGetDeviceProperties(prop, device);
    if (st == cudaSuccess && prop) {
        prop->pageableMemoryAccess = vmc_device_view_attribute(cudaDevAttrPageableMemoryAccess, prop->pageableMemoryAccess);
        prop->pageableMemoryAccessUsesHostPageTables = vmc_device_view_attribute(
            cudaDevAttrPageableMemoryAccessUsesHostPageTables, prop->pageableMemoryAccessUsesHostPageTables);
        prop->memoryPoolSupportedHandleTypes = (unsigned int)vmc_device_view_attribute(
            cudaDevAttrMemoryPoolSupportedHandleTypes, (int)prop->memoryPoolSupportedHandleTypes);
    }
    if (st == cudaSuccess && cacheable) {
        pthread_mutex_lock(&properties_lock); /* two first askers write the same bytes, one at a time */
        if (!properties_known[device]) {
            properties[device] = *prop;
            __atomic_store_n(&properties_known[device], 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&properties_lock);
    }
    return st;
}

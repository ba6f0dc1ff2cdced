#include "device_view.h"

#include <cuda.h>

/* Pageable memory access: on a host with HMM (the appliance's, natively an H100/H200 with the open kernel modules)
 * kernels may dereference any malloc'ed pointer of their own process. The worker's process is not this one, and
 * this process's pageable memory lies in a VM or on another machine: a kernel given a malloc'ed pointer of this
 * process would fault. Programs that ask then take the path of a machine without HMM, managed memory (NVIDIA's
 * systemWideAtomics does, and still fails through vmcuda: its CPU and GPU atomics on one managed page at once are
 * not atomic with each other on mapped memory, tests/bench/results/h200-run139-149-cuda-ipc). */
/* Shareable handles: vmcuda shares memory between processes as POSIX file descriptors only (drv_shareable.c), so a
 * program that looks for another type (NCCL looks for fabric handles first) takes the one served. */
int vmc_device_view_attribute(int attribute, int value) {
    switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return value & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    default: return value;
    }
}

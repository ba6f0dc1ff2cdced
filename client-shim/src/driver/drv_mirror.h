/* Mapped host memory across machines, mirrored between the program and its worker (drv_mirror.c). */
#ifndef DRV_MIRROR_H
#define DRV_MIRROR_H

#include <stddef.h>
#include <stdint.h>
#include "drv.h"

/* cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP) without shared memory: the worker's mapped memory, mirrored. */
CUresult vmc_drv_mirror_alloc(void **pp, size_t size, unsigned flags);
/* 1 with the device address of p when p is inside a mirror. */
int vmc_drv_mirror_device_pointer(const void *p, uint64_t *device);
/* 1 when p started a mirror, which is now freed here and on the worker. */
int vmc_drv_mirror_free(void *p);
/* Before a driver call: what the program wrote to its mirrors goes to the worker (vmc_drv_call_begin). */
void vmc_drv_mirror_push(void);

#endif

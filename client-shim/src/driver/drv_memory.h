/* What drv_memory.c offers the rest of the driver front end. */
#ifndef DRV_MEMORY_H
#define DRV_MEMORY_H

#include "drv.h"

/* Records device memory another process shared with this one (CUDA IPC, a pool's exported pointer), from `p` to
 * the end of its allocation, so that unified copies and pointer queries treat it as device memory. */
void vmc_drv_record_shared(CUdeviceptr p);

#endif

/* What other parts of the driver front end tell the launch code (drv_launch.c). */
#ifndef DRV_LAUNCH_H
#define DRV_LAUNCH_H

#include <stddef.h>
#include "drv.h"

/* A module, library or context is gone: its handles may be handed out again, so everything remembered by
 * handle (parameter layouts, launch limits, names, attributes, functions per context) is dropped. */
void vmc_drv_forget_handles(void);

/* A kernel's argument bytes as a launch sends them (from kernelParams at the kernel's offsets, or the
 * caller's own buffer from `extra`), for the graph's kernel nodes (drv_graph_nodes.c); `kind` says whether
 * f is a CUfunction or a CUkernel. Free *buf when *owned. */
CUresult vmc_drv_kernel_arguments(const void *f, void **kernelParams, void **extra, unsigned char **buf, size_t *size,
                                  int *owned, unsigned *kind);

#endif

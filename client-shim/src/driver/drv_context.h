/* What the context code (drv_context.c) and the private tables (drv_tables.c) tell each other. */
#ifndef DRV_CONTEXT_H
#define DRV_CONTEXT_H

#include "drv.h"

/* The context is being destroyed: the values the runtime stored for it go, through their destructors. */
void vmc_drv_context_storage_drop(CUcontext ctx);
/* Contexts went or were reset: the limits remembered for them (drv_limits.c) go too. */
void vmc_drv_forget_context_limits(void);

#endif

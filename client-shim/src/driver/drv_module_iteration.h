/* cuFFT's private driver table (drv_module_iteration.c), served by cuGetExportTable (drv_tables.c). */
#ifndef DRV_MODULE_ITERATION_H
#define DRV_MODULE_ITERATION_H

#include "drv.h"

extern const void *const vmc_drv_module_iteration_table[];

/* A slot of a private table that is not served (drv_tables.c): says so once per slot (*told), and fails. */
CUresult vmc_drv_slot_not_served(const char *table, int slot, int *told);

#endif

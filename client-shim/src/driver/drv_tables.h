/* The driver's private tables that are served outside drv_tables.c, which hands them out through
 * cuGetExportTable: cuFFT's module iteration (drv_module_iteration.c) and the cluster table
 * (drv_table_cluster.c). */
#ifndef DRV_TABLES_H
#define DRV_TABLES_H

#include "drv.h"

extern const void *const vmc_drv_module_iteration_table[];
extern const void *const vmc_drv_cluster_table[];

/* A slot of a private table that is not served: says so once per slot (*told), and fails. */
CUresult vmc_drv_slot_not_served(const char *table, int slot, int *told);

#endif

/* VMCUDA_TRACE: which driver calls a program makes through vmcuda and what each returned, for finding
 * out why a library or framework gives up ("errors": failed calls only; "all": every call). Callers
 * that find the driver through cuGetProcAddress (the CUDA runtime, the math libraries, the frameworks)
 * are given wrappers (generated: vmc_drv_trace.c) that report here; programs linked to libcuda directly
 * are not traced. Off by default, and then costs nothing: the plain functions are handed out. */
#ifndef DRV_TRACE_H
#define DRV_TRACE_H

enum vmc_drv_trace_level { VMC_TRACE_OFF, VMC_TRACE_ERRORS, VMC_TRACE_ALL };

enum vmc_drv_trace_level vmc_drv_trace_level(void);
void vmc_drv_trace_result(const char *symbol, int result);

/* vmc_drv_procs_traced[i] wraps vmc_drv_procs[i].fn */
extern void *const vmc_drv_procs_traced[];

#endif

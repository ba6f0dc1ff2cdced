/* The driver front end's side of a forwarded call: the generated stubs (vmc_drv_client_stubs.c) and the
 * hand-written functions use the client core's call API (shim_call.h) with CUresult statuses. The core's
 * own errors (no session, session lost) have the same numbers in both APIs' enums. */
#ifndef DRV_CALL_H
#define DRV_CALL_H

#include "drv.h"
#include "shim_call.h"

/* Starts a CALL on the calling thread's connection (opening the session if needed). */
CUresult vmc_drv_call_begin(struct vmc_call *c, uint32_t id, int async);
/* A parameter the spec marks @null was not NULL: says so once per function and refuses the call. */
CUresult vmc_drv_refuse_non_null(const char *function, const char *parameter, int *told);
/* The call could not be served as asked: one line naming the function and why, once; returns
 * CUDA_ERROR_NOT_SUPPORTED. */
CUresult vmc_drv_not_supported(const char *what, const char *why, int *told);
/* One line naming the function and why its call failed as it did, once. */
void vmc_drv_explain(const char *what, const char *why, int *told);

#endif

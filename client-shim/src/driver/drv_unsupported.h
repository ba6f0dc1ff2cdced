/* Driver functions vmcuda does not serve say so once per process and return CUDA_ERROR_NOT_SUPPORTED.
 * Included by the generated, header-less unsupported stubs: no CUDA types here. */
#ifndef DRV_UNSUPPORTED_H
#define DRV_UNSUPPORTED_H

/* Prints "vmcuda: NAME is not supported yet; it returns CUDA_ERROR_NOT_SUPPORTED" once; returns 801. */
int vmc_drv_unsupported(const char *name, int *told);

#endif

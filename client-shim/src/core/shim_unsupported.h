/* Functions the shim does not support yet say so once per process and return cudaErrorNotSupported. */
#ifndef SHIM_UNSUPPORTED_H
#define SHIM_UNSUPPORTED_H

/* Prints "vmcuda: NAME is not supported yet; it returns cudaErrorNotSupported" once; returns 801. */
int vmc_unsupported(const char *name, int *told);
/* The same, with the reason it cannot be supported. */
void vmc_not_supported_because(const char *what, const char *why, int *told);

#endif

/* For the generated stubs of the NVML functions the front end does not serve (vmc_nvml_unsupported.c). */
#ifndef NVML_UNSUPPORTED_H
#define NVML_UNSUPPORTED_H

int vmc_nvml_unsupported(const char *name, int *told);

#endif

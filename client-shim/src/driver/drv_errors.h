/* CUresult names, generated from cuda.h's enum (vmc_drv_errnames.c); no CUDA types here. */
#ifndef DRV_ERRORS_H
#define DRV_ERRORS_H

struct vmc_drv_error_name {
    int code;
    const char *name;
};

extern const struct vmc_drv_error_name vmc_drv_error_names[];
extern const unsigned vmc_drv_error_name_count;

#endif

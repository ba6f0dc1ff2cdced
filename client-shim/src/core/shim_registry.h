/* What the application's static constructors registered: fat binaries, kernels, device variables.
 * Recorded locally (no network); indices in registration order name them on the wire. */
#ifndef SHIM_REGISTRY_H
#define SHIM_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

struct vmc_kernel {
    const void *host_fun;
    const char *device_name;
    uint32_t index;
    /* Parameter layout, fetched from the worker on first launch (see shim_launch.c). */
    int layout_known;
    uint32_t n_params;
    uint32_t *param_sizes;
    uint32_t args_bytes;
};

struct vmc_var {
    const void *host_var;
    const char *device_name;
    size_t size;
    uint32_t index;
};

const struct vmc_kernel *vmc_kernel_by_host_fun(const void *host_fun);
struct vmc_kernel *vmc_kernel_mut(const void *host_fun);
const struct vmc_var *vmc_var_by_host_var(const void *host_var);
uint32_t vmc_kernel_count(void);
uint32_t vmc_var_count(void);
const struct vmc_kernel *vmc_kernel_at(uint32_t index);
const struct vmc_var *vmc_var_at(uint32_t index);

/* Recording, from the runtime front end's registration entry points (rt_register.c). */
void vmc_registry_add_kernel(const void *host_fun, const char *device_name);
void vmc_registry_add_var(const void *host_var, const char *device_name, size_t size);

#endif

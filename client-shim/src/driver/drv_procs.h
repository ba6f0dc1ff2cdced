/* The table cuGetProcAddress answers from (generated from cuda-driver.spec: vmc_drv_procs.c), without
 * CUDA types so that the generated file needs no headers. */
#ifndef DRV_PROCS_H
#define DRV_PROCS_H

struct vmc_drv_proc {
    const char *name;   /* the base name a caller asks for, e.g. "cuMemAlloc" */
    int version;        /* the CUDA version of this ABI (its PFN_name_vVERSION typedef) */
    int per_thread;     /* the _ptsz/_ptds variant */
    void *fn;           /* our function for it */
};

/* Sorted by name, then version, then per_thread. */
extern const struct vmc_drv_proc vmc_drv_procs[];
extern const unsigned vmc_drv_proc_count;

#endif

/* The worker's side of the driver front end: NVIDIA's libcuda.so.1, loaded on first use, serves the
 * driver calls in this process, in the same primary context as the runtime calls. */
#ifndef WORKER_DRIVER_H
#define WORKER_DRIVER_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdint.h>
#include "worker_call.h"

/* NVIDIA's implementation of one ABI (a cuda-driver.spec key), resolved with NVIDIA's cuGetProcAddress
 * and remembered under the call's wire id; NULL when the appliance has no driver or its driver lacks it. */
void *vmc_w_drv_proc(uint32_t id, const char *name, int version, int per_thread);
/* The same without the id (the hand-written operations keep their own). */
void *vmc_w_drv_resolve(const char *name, int version, int per_thread);
/* The hand-written operations' own functions, resolved once each. */
#define DRV(type, var, name, version, per_thread)                                                  \
    static type var;                                                                               \
    if (!var)                                                                                      \
        var = (type)vmc_w_drv_resolve(name, version, per_thread)

/* What a call returns when its function could not be resolved. */
CUresult vmc_w_drv_missing(const char *function);
/* 1 when NVIDIA's driver could be loaded in this process. */
int vmc_w_drv_present(void);

/* Serves a driver call (id >= VMC_DRV_FIRST_ID): the hand-written operations, else the generated ones. */
enum vmc_w_result vmc_w_drv_dispatch(struct vmc_wcall *wc);
enum vmc_w_result vmc_worker_drv_dispatch_generated(struct vmc_wcall *wc);

/* vmc_drv_TpcMapping: slot 4 of the driver's private cluster table (worker_tables.c). */
enum vmc_w_result vmc_w_tpc_mapping(struct vmc_wcall *wc);

/* vmc_drv_HostMapAttach / vmc_drv_HostMapDetach: a co-located client's mapped host memory (worker_hostmap.c). */
enum vmc_w_result vmc_w_hostmap_attach(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_hostmap_detach(struct vmc_wcall *wc);
/* This worker's address of [client, client + n) inside a client's mapped host memory, or NULL. */
void *vmc_w_hostmap_translate(uint64_t client, uint64_t n);
/* vmc_drv_MappedCopy: a copy between device memory and such memory, by the GPU, no bytes on the wire. */
enum vmc_w_result vmc_w_hostmap_copy(struct vmc_wcall *wc);

/* The tensor-map encoders (worker_tensormap.c): 1 when wc is one of them (*r then says how it went). */
int vmc_w_tensormap_dispatch(struct vmc_wcall *wc, enum vmc_w_result *r);

/* Graph nodes made node by node (worker_graph_nodes.c): 1 when wc is such a call (*r then says how it went). */
int vmc_w_graph_nodes_dispatch(struct vmc_wcall *wc, enum vmc_w_result *r);

/* vmc_drv_MirrorAlloc / vmc_drv_MirrorFree: mapped host memory of a client across machines (worker_mirror.c). */
enum vmc_w_result vmc_w_mirror_alloc(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_mirror_free(struct vmc_wcall *wc);

/* JIT linking (worker_link.c): vmc_drv_LinkCreate, LinkAdd, LinkComplete, LinkRead, LinkDestroy. */
enum vmc_w_result vmc_w_link_create(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_link_add(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_link_complete(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_link_read(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_link_destroy(struct vmc_wcall *wc);

/* vmc_drv_NvmlQuery: the appliance's NVML answers about one GPU of the session (worker_nvml.c). */
enum vmc_w_result vmc_w_nvml_query(struct vmc_wcall *wc);
/* vmc_drv_NvmlTopology: peer-to-peer status between two GPUs of the session, or one NVLink of a GPU (worker_nvml.c). */
enum vmc_w_result vmc_w_nvml_topology(struct vmc_wcall *wc);
/* vmc_drv_NvmlFieldValues: nvmlDeviceGetFieldValues of a GPU of the session (worker_nvml.c). */
enum vmc_w_result vmc_w_nvml_field_values(struct vmc_wcall *wc);

/* cuMemPoolGetAttribute (set 0) / cuMemPoolSetAttribute (set 1): the value as 8 bytes (worker_pools.c). */
enum vmc_w_result vmc_w_pool_attribute(struct vmc_wcall *wc, int set);

/* Shareable handles (worker_shareable.c): cuMemExportToShareableHandle / cuMemPoolExportToShareableHandle (kind
 * VMC_SHAREABLE_ALLOCATION / VMC_SHAREABLE_POOL) and their imports; an allocation handle's exports go when the
 * exporter releases it. */
enum vmc_w_result vmc_w_shareable_export(struct vmc_wcall *wc, uint32_t kind);
enum vmc_w_result vmc_w_shareable_import(struct vmc_wcall *wc, uint32_t kind);
void vmc_w_shareable_forget_allocation(CUmemGenericAllocationHandle handle);
/* An allocation handle imported from another process (worker_vmm.c): one reference of the program's, followed as
 * cuMemCreate's are, so that its own exports go when it is freed here. */
void vmc_w_vmm_imported(CUmemGenericAllocationHandle handle);

/* Driver-mode bulk copies (COPY_DRIVER): one block, and waiting for a stream. A block on a thread without a current
 * context makes the context that owns its memory current until the end of the call, when end_call (called after
 * every call) makes the thread context-less again (worker_driver.c, adopt_context_of). */
void vmc_w_drv_end_call(void);
CUresult vmc_w_drv_copy_block(CUdeviceptr device, void *host, size_t n, int to_device, int pinned, CUstream stream,
                              int per_thread);
CUresult vmc_w_drv_stream_sync(CUstream stream);
/* 1 when [device, device + n) lies within the one allocation that holds `device` (cuMemGetAddressRange); 0 when
 * it does not or the driver cannot say (no context, memory it does not know). */
int vmc_w_drv_range_in_one_allocation(CUdeviceptr device, size_t n);

#endif

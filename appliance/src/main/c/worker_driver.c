/* Driver calls on the worker (PROTOCOL.md "Driver front end"). NVIDIA's libcuda.so.1 is loaded on first
 * use; each ABI the client calls is resolved with NVIDIA's own cuGetProcAddress by the same key the
 * client answered cuGetProcAddress with (cuda-driver.spec), so both ends agree on every signature. The
 * generated dispatch serves the plain calls; this file the hand-written operations: the snapshot of the
 * driver and GPUs, module images by content, parameter layouts, launches, names, copies with both sides
 * here, pointer attributes. Everything the client sends is checked before the driver sees it; no client
 * address is ever dereferenced. */
#define _GNU_SOURCE
#include "worker_driver.h"
#include "worker_images.h"
#include "worker_jit.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
#include "vmc_wire.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"
#include "vmc_sha256.h"
#include "worker.h"

/* ---- NVIDIA's driver ---- */

static void *driver;
static PFN_cuGetProcAddress_v12000 get_proc;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void load_driver(void) {
    /* VMCUDA_WORKER_LIBCUDA: tests on machines without a GPU point it at a stand-in (tests/driver). */
    const char *path = getenv("VMCUDA_WORKER_LIBCUDA");
    driver = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!driver) {
        vmc_w_log("no CUDA driver: %s; driver calls answer that there is no device", dlerror());
        return;
    }
    get_proc = (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2");
    if (!get_proc)
        vmc_w_log("the CUDA driver has no cuGetProcAddress_v2; driver calls are not served");
}

int vmc_w_drv_present(void) {
    pthread_once(&driver_once, load_driver);
    return get_proc != NULL;
}

void *vmc_w_drv_resolve(const char *name, int version, int per_thread) {
    if (!vmc_w_drv_present())
        return NULL;
    void *fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult st = get_proc(name, &fn, version,
                           per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                           &found);
    return st == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS ? fn : NULL;
}

#define MAX_IDS 4096
static void *resolved[MAX_IDS];

void *vmc_w_drv_proc(uint32_t id, const char *name, int version, int per_thread) {
    uint32_t slot = id - VMC_DRV_FIRST_ID;
    void *fn = slot < MAX_IDS ? __atomic_load_n(&resolved[slot], __ATOMIC_ACQUIRE) : NULL;
    if (fn)
        return fn;
    fn = vmc_w_drv_resolve(name, version, per_thread);
    if (fn && slot < MAX_IDS)
        __atomic_store_n(&resolved[slot], fn, __ATOMIC_RELEASE);
    return fn;
}

CUresult vmc_w_drv_missing(const char *function) {
    if (!vmc_w_drv_present())
        return CUDA_ERROR_NO_DEVICE;
    vmc_w_log("the appliance's CUDA driver has no %s", function);
    return CUDA_ERROR_NOT_SUPPORTED;
}


/* ---- the snapshot: the driver and the session's GPUs, once per client process ---- */

static enum vmc_w_result snapshot(struct vmc_wcall *wc) {
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuDriverGetVersion_v2020, version_of, "cuDriverGetVersion", 2020, 0);
    DRV(PFN_cuInit_v2000, init, "cuInit", 2000, 0);
    DRV(PFN_cuDeviceGetCount_v2000, count_of, "cuDeviceGetCount", 2000, 0);
    DRV(PFN_cuDeviceGetName_v2000, name_of, "cuDeviceGetName", 2000, 0);
    DRV(PFN_cuDeviceGetUuid_v11040, uuid_of, "cuDeviceGetUuid", 11040, 0);
    DRV(PFN_cuDeviceGetLuid_v10000, luid_of, "cuDeviceGetLuid", 10000, 0);
    DRV(PFN_cuDeviceTotalMem_v3020, total_of, "cuDeviceTotalMem", 3020, 0);
    DRV(PFN_cuDeviceGetPCIBusId_v4010, bus_of, "cuDeviceGetPCIBusId", 4010, 0);
    DRV(PFN_cuDeviceGetAttribute_v2000, attr_of, "cuDeviceGetAttribute", 2000, 0);
    int version = 0, n = 0;
    CUresult init_status = CUDA_ERROR_NO_DEVICE;
    if (version_of && init && count_of && name_of && uuid_of && luid_of && total_of && bus_of && attr_of) {
        version_of(&version);
        init_status = init(0);
        if (init_status == CUDA_SUCCESS && count_of(&n) != CUDA_SUCCESS)
            n = 0;
    }
    if (n > 64)
        n = 64; /* as many as a client takes (VMC_DRV_MAX_DEVICES) */
    struct vmc_snapshot_device devices[n > 0 ? n : 1];
    uint32_t attr_status[n > 0 ? n : 1][CU_DEVICE_ATTRIBUTE_MAX], attr_value[n > 0 ? n : 1][CU_DEVICE_ATTRIBUTE_MAX];
    for (int d = 0; d < n; d++) {
        struct vmc_snapshot_device *dev = &devices[d];
        memset(dev, 0, sizeof *dev);
        CUuuid uuid;
        unsigned mask = 0;
        size_t total = 0;
        memset(&uuid, 0, sizeof uuid);
        name_of(dev->name, sizeof dev->name, d);
        uuid_of(&uuid, d);
        memcpy(dev->uuid, &uuid, sizeof dev->uuid);
        dev->luid_status = (uint32_t)luid_of(dev->luid, &mask, d);
        dev->luid_mask = mask;
        total_of(&total, d);
        dev->total_memory = total;
        bus_of(dev->pci_bus_id, sizeof dev->pci_bus_id, d);
        for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
            int value = 0;
            CUresult as = a == 0 ? CUDA_ERROR_INVALID_VALUE : attr_of(&value, (CUdevice_attribute)a, d);
            attr_status[d][a] = (uint32_t)as;
            attr_value[d][a] = (uint32_t)value;
        }
        dev->n_attributes = CU_DEVICE_ATTRIBUTE_MAX;
        dev->attribute_status = attr_status[d];
        dev->attribute_value = attr_value[d];
    }
    vmc_w_reply_status(wc, cudaSuccess);
    vmc_put_snapshot_reply(vmc_w_reply_out(wc), &(struct vmc_snapshot_reply){
        .driver_version = (uint32_t)version, .init_status = (uint32_t)init_status, .n_devices = (uint32_t)n,
        .devices = devices});
    return VMC_W_DONE;
}

/* ---- loading a module or library from a stored image ---- */

static enum vmc_w_result module_load(struct vmc_wcall *wc) {
    struct vmc_module_load_args a;
    vmc_get_module_load_args(&wc->in, &a);
    unsigned how = a.how, wrapper_version = a.wrapper_version;
    if (!vmc_w_args_ok(wc) || wc->async || a.n_options > VMC_MAX_JIT_OPTIONS || how > VMC_LOAD_LIBRARY || wrapper_version > 2)
        return VMC_W_BAD_ARGS;
    struct vmc_w_jit j;
    CUresult st = vmc_w_jit_read(&a, &j);
    const struct vmc_w_image *img = vmc_w_image_find(a.sha256);
    if (st == CUDA_SUCCESS && !img)
        st = CUDA_ERROR_INVALID_VALUE; /* the client loads only what it made sure is here */
    uint64_t handle = 0;
    if (st == CUDA_SUCCESS) {
        vmc_w_completion_image_loaded(img->bytes, img->size);
        DRV(PFN_cuModuleLoadData_v2000, load_data, "cuModuleLoadData", 2000, 0);
        DRV(PFN_cuModuleLoadDataEx_v2010, load_data_ex, "cuModuleLoadDataEx", 2010, 0);
        DRV(PFN_cuModuleLoadFatBinary_v2000, load_fatbinary, "cuModuleLoadFatBinary", 2000, 0);
        DRV(PFN_cuLibraryLoadData_v12000, load_library, "cuLibraryLoadData", 12000, 0);
        struct vmc_fatbin_wrapper w = {VMC_FATBIN_WRAPPER_MAGIC, wrapper_version, img->bytes, NULL};
        const void *image = how == VMC_LOAD_LIBRARY && wrapper_version ? (const void *)&w : (const void *)img->bytes;
        unsigned n = j.n;
        CUmodule m = NULL;
        CUlibrary l = NULL;
        switch (how) {
        case VMC_LOAD_MODULE_DATA: st = load_data ? load_data(&m, image) : vmc_w_drv_missing("cuModuleLoadData"); break;
        case VMC_LOAD_MODULE_DATA_EX:
            st = load_data_ex ? load_data_ex(&m, image, n, j.options, j.values) : vmc_w_drv_missing("cuModuleLoadDataEx");
            break;
        case VMC_LOAD_MODULE_FATBINARY:
            st = load_fatbinary ? load_fatbinary(&m, image) : vmc_w_drv_missing("cuModuleLoadFatBinary");
            break;
        default:
            st = load_library ? load_library(&l, image, n ? j.options : NULL, n ? j.values : NULL, n, NULL, NULL, 0)
                              : vmc_w_drv_missing("cuLibraryLoadData");
        }
        handle = how == VMC_LOAD_LIBRARY ? (uint64_t)(uintptr_t)l : (uint64_t)(uintptr_t)m;
    }
    vmc_w_jit_reply(wc, st, handle, &j);
    vmc_w_jit_free(&j);
    return VMC_W_DONE;
}

/* ---- kernels: parameter layouts and names ---- */

/* One of the function's limits that the client checks a launch against before sending it, as the
 * driver refuses such a launch at once (UINT32_MAX: unknown, not checked). A CUkernel's is its
 * function's in the current context. */
static uint32_t launch_limit(uint64_t handle, unsigned kind, CUfunction_attribute attribute) {
    DRV(PFN_cuFuncGetAttribute_v2020, func_attribute, "cuFuncGetAttribute", 2020, 0);
    DRV(PFN_cuKernelGetAttribute_v12000, kernel_attribute, "cuKernelGetAttribute", 12000, 0);
    DRV(PFN_cuCtxGetDevice_v2000, ctx_device, "cuCtxGetDevice", 2000, 0);
    int value = -1;
    CUdevice dev = 0;
    CUresult st = CUDA_ERROR_NOT_FOUND;
    if (kind == VMC_KIND_KERNEL && kernel_attribute && ctx_device && ctx_device(&dev) == CUDA_SUCCESS)
        st = kernel_attribute(&value, attribute, (CUkernel)(uintptr_t)handle, dev);
    else if (kind == VMC_KIND_FUNCTION && func_attribute)
        st = func_attribute(&value, attribute, (CUfunction)(uintptr_t)handle);
    return st == CUDA_SUCCESS && value >= 0 ? (uint32_t)value : UINT32_MAX;
}

static enum vmc_w_result param_layout(struct vmc_wcall *wc) {
    struct vmc_function_args a;
    vmc_get_function_args(&wc->in, &a);
    uint64_t handle = a.handle;
    unsigned kind = a.kind;
    if (!vmc_w_args_ok(wc) || wc->async || kind > VMC_KIND_KERNEL)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuFuncGetParamInfo_v12040, func_info, "cuFuncGetParamInfo", 12040, 0);
    DRV(PFN_cuKernelGetParamInfo_v12040, kernel_info, "cuKernelGetParamInfo", 12040, 0);
    static size_t offsets[VMC_MAX_PARAMS], sizes[VMC_MAX_PARAMS];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    uint32_t n = 0;
    CUresult st = CUDA_SUCCESS;
    if (!(kind == VMC_KIND_KERNEL ? (void *)kernel_info : (void *)func_info))
        st = vmc_w_drv_missing(kind == VMC_KIND_KERNEL ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo");
    while (st == CUDA_SUCCESS && n < VMC_MAX_PARAMS) {
        CUresult r = kind == VMC_KIND_KERNEL ? kernel_info((CUkernel)(uintptr_t)handle, n, &offsets[n], &sizes[n])
                                         : func_info((CUfunction)(uintptr_t)handle, n, &offsets[n], &sizes[n]);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break; /* one past the last parameter (or none at all) */
        if (r != CUDA_SUCCESS)
            st = r;
        else if (offsets[n] >= VMC_MAX_PARAM_BYTES || sizes[n] > VMC_MAX_PARAM_BYTES)
            st = CUDA_ERROR_INVALID_VALUE;
        else
            n++;
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS) {
        static uint32_t offsets32[VMC_MAX_PARAMS], sizes32[VMC_MAX_PARAMS]; /* under the lock, as the driver's answers */
        for (uint32_t i = 0; i < n; i++) {
            offsets32[i] = (uint32_t)offsets[i];
            sizes32[i] = (uint32_t)sizes[i];
        }
        vmc_put_param_layout_reply(vmc_w_reply_out(wc), &(struct vmc_param_layout_reply){
            .n = n, .offsets = offsets32, .sizes = sizes32,
            .max_threads_per_block = launch_limit(handle, kind, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            .max_dynamic_shared = launch_limit(handle, kind, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)});
    }
    pthread_mutex_unlock(&lock);
    return VMC_W_DONE;
}

/* cuModuleEnumerateFunctions (enumerate_functions_args -> enumerate_functions_reply) */
static enum vmc_w_result enumerate_functions(struct vmc_wcall *wc) {
    struct vmc_enumerate_functions_args a;
    vmc_get_enumerate_functions_args(&wc->in, &a);
    uint32_t n = a.n;
    CUmodule module = (CUmodule)(uintptr_t)a.module;
    if (!vmc_w_args_ok(wc) || wc->async || n > VMC_MAX_MODULE_FUNCTIONS)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuModuleEnumerateFunctions_v12040, enumerate, "cuModuleEnumerateFunctions", 12040, 0);
    CUfunction *functions = n ? calloc(n, sizeof *functions) : NULL;
    CUresult st = n && !functions ? CUDA_ERROR_OUT_OF_MEMORY
                  : enumerate     ? enumerate(functions, n, module)
                                  : vmc_w_drv_missing("cuModuleEnumerateFunctions");
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS) {
        _Static_assert(sizeof(CUfunction) == sizeof(uint64_t), "handles travel as 64-bit numbers");
        vmc_put_enumerate_functions_reply(vmc_w_reply_out(wc), &(struct vmc_enumerate_functions_reply){.n = n, .functions = functions});
    }
    free(functions);
    return VMC_W_DONE;
}

static enum vmc_w_result function_name(struct vmc_wcall *wc) {
    struct vmc_function_args a;
    vmc_get_function_args(&wc->in, &a);
    uint64_t handle = a.handle;
    unsigned kind = a.kind;
    if (!vmc_w_args_ok(wc) || wc->async || kind > VMC_KIND_KERNEL)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuFuncGetName_v12030, func_name, "cuFuncGetName", 12030, 0);
    DRV(PFN_cuKernelGetName_v12030, kernel_name, "cuKernelGetName", 12030, 0);
    const char *name = NULL;
    CUresult st = kind == VMC_KIND_KERNEL ? (kernel_name ? kernel_name(&name, (CUkernel)(uintptr_t)handle)
                                                     : vmc_w_drv_missing("cuKernelGetName"))
                                      : (func_name ? func_name(&name, (CUfunction)(uintptr_t)handle)
                                                   : vmc_w_drv_missing("cuFuncGetName"));
    size_t len = st == CUDA_SUCCESS && name ? strnlen(name, 65535) : 0;
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_function_name_reply(vmc_w_reply_out(wc), &(struct vmc_function_name_reply){.name_bytes = (uint32_t)len, .name = name});
    return VMC_W_DONE;
}

/* ---- launches ---- */

/* A launch configuration's grid, block, shared memory and stream (launch_grid), as vmc_drv_Launch and the
 * cluster occupancy queries send them. */
static void config_of(const struct vmc_launch_grid *g, CUlaunchConfig *config) {
    memset(config, 0, sizeof *config);
    config->gridDimX = g->grid[0];
    config->gridDimY = g->grid[1];
    config->gridDimZ = g->grid[2];
    config->blockDimX = g->block[0];
    config->blockDimY = g->block[1];
    config->blockDimZ = g->block[2];
    config->sharedMemBytes = g->shared_mem;
    config->hStream = (CUstream)(uintptr_t)g->stream;
}

/* cuOccupancyMaxActiveClusters, cuOccupancyMaxPotentialClusterSize (cluster_occupancy_args -> int_value). */
static enum vmc_w_result cluster_occupancy(struct vmc_wcall *wc) {
    struct vmc_cluster_occupancy_args a;
    vmc_get_cluster_occupancy_args(&wc->in, &a);
    uint64_t f = a.function;
    uint32_t n_attrs = a.n_attrs;
    if (!vmc_w_args_ok(wc) || wc->async || n_attrs > VMC_MAX_LAUNCH_ATTRS)
        return VMC_W_BAD_ARGS;
    CUlaunchConfig config;
    config_of(&a.grid, &config);
    CUlaunchAttribute attrs[VMC_MAX_LAUNCH_ATTRS];
    memcpy(attrs, a.attrs, n_attrs * sizeof attrs[0]);
    config.attrs = n_attrs ? attrs : NULL;
    config.numAttrs = n_attrs;
    DRV(PFN_cuOccupancyMaxActiveClusters_v11070, active, "cuOccupancyMaxActiveClusters", 11070, 0);
    DRV(PFN_cuOccupancyMaxPotentialClusterSize_v11070, potential, "cuOccupancyMaxPotentialClusterSize", 11070, 0);
    int value = 0;
    CUresult st;
    if (wc->id == VMC_DRV_cuOccupancyMaxActiveClusters)
        st = active ? active(&value, (CUfunction)(uintptr_t)f, &config) : vmc_w_drv_missing("cuOccupancyMaxActiveClusters");
    else
        st = potential ? potential(&value, (CUfunction)(uintptr_t)f, &config)
                       : vmc_w_drv_missing("cuOccupancyMaxPotentialClusterSize");
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_int_value(vmc_w_reply_out(wc), &(struct vmc_int_value){.value = (uint32_t)value});
    return VMC_W_DONE;
}

static enum vmc_w_result launch(struct vmc_wcall *wc) {
    struct vmc_drv_launch_args a;
    vmc_get_drv_launch_args(&wc->in, &a);
    uint64_t f = a.function;
    unsigned kind = a.kind, flags = a.flags;
    uint32_t n_attrs = a.n_attrs, bytes = a.params_bytes;
    const void *args = a.params;
    if (!vmc_w_args_ok(wc) || n_attrs > VMC_MAX_LAUNCH_ATTRS || kind > VMC_KIND_KERNEL || flags > 3 ||
        bytes > VMC_MAX_LAUNCH_ARG_BYTES)
        return VMC_W_BAD_ARGS;
    CUlaunchConfig config;
    config_of(&a.grid, &config);
    CUlaunchAttribute attrs[VMC_MAX_LAUNCH_ATTRS + 1];
    memcpy(attrs, a.attrs, n_attrs * sizeof attrs[0]);
    size_t size = bytes;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    void **extra_or_null = bytes ? extra : NULL;
    int per_thread = (flags & VMC_LAUNCH_PER_THREAD) != 0;
    CUresult st;
    if (n_attrs || (flags & VMC_LAUNCH_COOPERATIVE)) {
        if (flags & VMC_LAUNCH_COOPERATIVE) {
            memset(&attrs[n_attrs], 0, sizeof attrs[n_attrs]);
            attrs[n_attrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            attrs[n_attrs].value.cooperative = 1;
            n_attrs++;
        }
        config.attrs = attrs;
        config.numAttrs = n_attrs;
        DRV(PFN_cuLaunchKernelEx_v11060, ex, "cuLaunchKernelEx", 11060, 0);
        DRV(PFN_cuLaunchKernelEx_v11060_ptsz, ex_ptsz, "cuLaunchKernelEx", 11060, 1);
        PFN_cuLaunchKernelEx_v11060 fn = per_thread ? ex_ptsz : ex;
        st = fn ? fn(&config, (CUfunction)(uintptr_t)f, NULL, extra_or_null) : vmc_w_drv_missing("cuLaunchKernelEx");
    } else {
        DRV(PFN_cuLaunchKernel_v4000, plain, "cuLaunchKernel", 4000, 0);
        DRV(PFN_cuLaunchKernel_v7000_ptsz, plain_ptsz, "cuLaunchKernel", 7000, 1);
        PFN_cuLaunchKernel_v4000 fn = per_thread ? plain_ptsz : plain;
        st = fn ? fn((CUfunction)(uintptr_t)f, config.gridDimX, config.gridDimY, config.gridDimZ, config.blockDimX,
                     config.blockDimY, config.blockDimZ, config.sharedMemBytes, config.hStream, NULL, extra_or_null)
                : vmc_w_drv_missing("cuLaunchKernel");
    }
    if (wc->async)
        vmc_w_async_done(wc, (cudaError_t)st);
    else
        vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

/* ---- copies with both sides on the appliance (cuMemcpy2D/3D between device memory and arrays) ---- */

static int on_appliance(CUmemorytype t) { return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY; }

static enum vmc_w_result memcpy_on_appliance(struct vmc_wcall *wc) {
    struct vmc_on_appliance_copy_args a;
    vmc_get_on_appliance_copy_args(&wc->in, &a);
    unsigned dims = a.dims, mode = a.mode;
    CUstream stream = (CUstream)(uintptr_t)a.stream;
    int two_d = dims == 2 || dims == VMC_DIMS_2D_UNALIGNED;
    if (!vmc_w_args_ok(wc) || dims < 2 || dims > VMC_DIMS_2D_UNALIGNED || (mode & ~COPY_MODE_BITS) ||
        (dims == VMC_DIMS_2D_UNALIGNED && (mode & COPY_ASYNC)) || a.n_2d != (two_d ? 1 : 0) || a.n_3d != (two_d ? 0 : 1))
        return VMC_W_BAD_ARGS;
    CUDA_MEMCPY2D d2;
    CUDA_MEMCPY3D d3;
    if (two_d)
        memcpy(&d2, a.copy_2d, sizeof d2);
    else
        memcpy(&d3, a.copy_3d, sizeof d3);
    int async = (mode & COPY_ASYNC) != 0, per_thread = (mode & COPY_PER_THREAD) != 0;
    CUresult st;
    /* Host memory never takes part here: a client that says so is refused, and host pointers are cleared. */
    if (dims == 2 || dims == VMC_DIMS_2D_UNALIGNED) {
        if (!on_appliance(d2.srcMemoryType) || !on_appliance(d2.dstMemoryType)) {
            st = CUDA_ERROR_INVALID_VALUE;
        } else if (dims == VMC_DIMS_2D_UNALIGNED) {
            d2.srcHost = NULL;
            d2.dstHost = NULL;
            DRV(PFN_cuMemcpy2DUnaligned_v3020, u, "cuMemcpy2DUnaligned", 3020, 0);
            DRV(PFN_cuMemcpy2DUnaligned_v7000_ptds, u_pt, "cuMemcpy2DUnaligned", 7000, 1);
            PFN_cuMemcpy2DUnaligned_v3020 fn = per_thread ? u_pt : u;
            st = fn ? fn(&d2) : vmc_w_drv_missing("cuMemcpy2DUnaligned");
        } else {
            d2.srcHost = NULL;
            d2.dstHost = NULL;
            DRV(PFN_cuMemcpy2D_v3020, c, "cuMemcpy2D", 3020, 0);
            DRV(PFN_cuMemcpy2D_v7000_ptds, c_pt, "cuMemcpy2D", 7000, 1);
            DRV(PFN_cuMemcpy2DAsync_v3020, ca, "cuMemcpy2DAsync", 3020, 0);
            DRV(PFN_cuMemcpy2DAsync_v7000_ptsz, ca_pt, "cuMemcpy2DAsync", 7000, 1);
            st = async ? ((per_thread ? ca_pt : ca) ? (per_thread ? ca_pt : ca)(&d2, stream) : vmc_w_drv_missing("cuMemcpy2DAsync"))
                       : ((per_thread ? c_pt : c) ? (per_thread ? c_pt : c)(&d2) : vmc_w_drv_missing("cuMemcpy2D"));
        }
    } else {
        if (!on_appliance(d3.srcMemoryType) || !on_appliance(d3.dstMemoryType)) {
            st = CUDA_ERROR_INVALID_VALUE;
        } else {
            d3.srcHost = NULL;
            d3.dstHost = NULL;
            d3.reserved0 = NULL;
            d3.reserved1 = NULL;
            DRV(PFN_cuMemcpy3D_v3020, c, "cuMemcpy3D", 3020, 0);
            DRV(PFN_cuMemcpy3D_v7000_ptds, c_pt, "cuMemcpy3D", 7000, 1);
            DRV(PFN_cuMemcpy3DAsync_v3020, ca, "cuMemcpy3DAsync", 3020, 0);
            DRV(PFN_cuMemcpy3DAsync_v7000_ptsz, ca_pt, "cuMemcpy3DAsync", 7000, 1);
            st = async ? ((per_thread ? ca_pt : ca) ? (per_thread ? ca_pt : ca)(&d3, stream) : vmc_w_drv_missing("cuMemcpy3DAsync"))
                       : ((per_thread ? c_pt : c) ? (per_thread ? c_pt : c)(&d3) : vmc_w_drv_missing("cuMemcpy3D"));
        }
    }
    if (wc->async)
        vmc_w_async_done(wc, (cudaError_t)st);
    else
        vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

/* ---- stream capture state (every cuStreamGetCaptureInfo ABI): u64 stream, u8 per-thread ----
 * Answer: u32 status, u64 id, u64 graph, u32 n, n node handles (u64), n edge data (CUgraphEdgeData). The
 * driver's arrays live in this process; the client keeps copies. cuBLAS asks before each call. */
static enum vmc_w_result capture_info(struct vmc_wcall *wc) {
    struct vmc_capture_info_args a;
    vmc_get_capture_info_args(&wc->in, &a);
    CUstream stream = (CUstream)(uintptr_t)a.stream;
    unsigned per_thread = a.per_thread;
    if (!vmc_w_args_ok(wc) || wc->async || per_thread > 1)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuStreamGetCaptureInfo_v12030, info, "cuStreamGetCaptureInfo", 12030, 0);
    DRV(PFN_cuStreamGetCaptureInfo_v12030_ptsz, info_pt, "cuStreamGetCaptureInfo", 12030, 1);
    PFN_cuStreamGetCaptureInfo_v12030 fn = per_thread ? info_pt : info;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = NULL;
    const CUgraphNode *nodes = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 0;
    CUresult st = fn ? fn(stream, &status, &id, &graph, &nodes, &edges, &n) : vmc_w_drv_missing("cuStreamGetCaptureInfo");
    if (st == CUDA_SUCCESS && n > VMC_MAX_CAPTURE_DEPENDENCIES)
        st = CUDA_ERROR_NOT_SUPPORTED;
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st != CUDA_SUCCESS)
        return VMC_W_DONE;
    uint64_t node_handles[n > 0 ? n : 1];
    CUgraphEdgeData edge_data[n > 0 ? n : 1];
    memset(edge_data, 0, sizeof edge_data); /* an old driver gives none: plain edges */
    for (size_t i = 0; i < n; i++) {
        node_handles[i] = (uint64_t)(uintptr_t)(nodes ? nodes[i] : NULL);
        if (edges)
            edge_data[i] = edges[i];
    }
    vmc_put_capture_info_reply(vmc_w_reply_out(wc), &(struct vmc_capture_info_reply){
        .status = (uint32_t)status, .id = id, .graph = (uint64_t)(uintptr_t)graph, .n = (uint32_t)n, .nodes = node_handles,
        .edges = edge_data});
    return VMC_W_DONE;
}

/* ---- pointer attributes of device memory ---- */

static enum vmc_w_result pointer_attributes(struct vmc_wcall *wc) {
    struct vmc_pointer_attributes_args a;
    vmc_get_pointer_attributes_args(&wc->in, &a);
    uint32_t n = a.n;
    if (!vmc_w_args_ok(wc) || wc->async || n == 0 || n > VMC_MAX_POINTER_ATTRS)
        return VMC_W_BAD_ARGS;
    CUpointer_attribute attrs[VMC_MAX_POINTER_ATTRS];
    for (uint32_t i = 0; i < n; i++)
        attrs[i] = (CUpointer_attribute)vmc_pointer_attributes_args_attributes_at(&a, i);
    CUdeviceptr ptr = a.pointer;
    /* every value fits in VMC_POINTER_ATTR_BYTES (the largest, P2P tokens, is 16) */
    static _Thread_local unsigned char values[VMC_MAX_POINTER_ATTRS][VMC_POINTER_ATTR_BYTES];
    void *data[VMC_MAX_POINTER_ATTRS];
    memset(values, 0, sizeof values);
    for (uint32_t i = 0; i < n; i++)
        data[i] = values[i];
    DRV(PFN_cuPointerGetAttributes_v7000, get, "cuPointerGetAttributes", 7000, 0);
    CUresult st = get ? get(n, attrs, data, ptr) : vmc_w_drv_missing("cuPointerGetAttributes");
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS)
        vmc_put_pointer_attributes_reply(vmc_w_reply_out(wc), &(struct vmc_pointer_attributes_reply){
            .values_bytes = n * VMC_POINTER_ATTR_BYTES, .values = values});
    return VMC_W_DONE;
}

/* ---- bulk copies in driver mode (worker_memcpy.c, worker_shm.c) ---- */

/* A big copy may arrive in stripes on the session's other connections (PROTOCOL.md "Bulk data"), whose
 * threads never saw the client thread's cuCtxSetCurrent: a thread without a current context adopts the
 * context that owns the device memory, as the client thread's must have been able to address it. Memory of
 * the virtual memory API and of memory pools (imported ones included) belongs to no context but to a device,
 * whose primary context then serves, if the program has it: it is made current and its reference given back
 * at once, so the program's own retains and releases still decide when it goes (H200 run 163: a striped
 * copy of 4 MiB from a pool's buffer over TCP failed with CUDA_ERROR_INVALID_CONTEXT). The adopted context is
 * the thread's for the rest of the call only (vmc_w_drv_end_call): the next call may copy another context's or
 * another GPU's memory, and a thread of the program's must not keep a context it never set. */
static _Thread_local int adopted;

void vmc_w_drv_end_call(void) {
    if (!adopted)
        return;
    adopted = 0;
    DRV(PFN_cuCtxSetCurrent_v4000, set_current, "cuCtxSetCurrent", 4000, 0);
    if (set_current)
        set_current(NULL); /* as it was: a context is adopted only where none is current */
}

static void adopt_context_of(CUdeviceptr device) {
    DRV(PFN_cuCtxGetCurrent_v4000, get_current, "cuCtxGetCurrent", 4000, 0);
    DRV(PFN_cuCtxSetCurrent_v4000, set_current, "cuCtxSetCurrent", 4000, 0);
    DRV(PFN_cuPointerGetAttribute_v4000, attribute, "cuPointerGetAttribute", 4000, 0);
    DRV(PFN_cuDeviceGet_v2000, device_get, "cuDeviceGet", 2000, 0);
    DRV(PFN_cuDevicePrimaryCtxGetState_v7000, primary_state, "cuDevicePrimaryCtxGetState", 7000, 0);
    DRV(PFN_cuDevicePrimaryCtxRetain_v7000, primary_retain, "cuDevicePrimaryCtxRetain", 7000, 0);
    DRV(PFN_cuDevicePrimaryCtxRelease_v11000, primary_release, "cuDevicePrimaryCtxRelease", 11000, 0);
    CUcontext current = NULL, owner = NULL;
    if (!get_current || !set_current || !attribute || get_current(&current) != CUDA_SUCCESS || current)
        return;
    if (attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, device) == CUDA_SUCCESS && owner) {
        adopted = set_current(owner) == CUDA_SUCCESS;
        return;
    }
    int ordinal = -1;
    unsigned int flags = 0;
    int active = 0;
    CUdevice dev;
    if (!device_get || !primary_state || !primary_retain || !primary_release ||
        attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, device) != CUDA_SUCCESS || ordinal < 0 ||
        device_get(&dev, ordinal) != CUDA_SUCCESS || primary_state(dev, &flags, &active) != CUDA_SUCCESS || !active)
        return;
    if (primary_retain(&owner, dev) == CUDA_SUCCESS) {
        adopted = set_current(owner) == CUDA_SUCCESS;
        primary_release(dev);
    }
}

CUresult vmc_w_drv_copy_block(CUdeviceptr device, void *host, size_t n, int to_device, int pinned, CUstream stream,
                              int per_thread) {
    adopt_context_of(device);
    DRV(PFN_cuMemcpyHtoDAsync_v3020, htod_async, "cuMemcpyHtoDAsync", 3020, 0);
    DRV(PFN_cuMemcpyDtoHAsync_v3020, dtoh_async, "cuMemcpyDtoHAsync", 3020, 0);
    DRV(PFN_cuMemcpyHtoD_v3020, htod, "cuMemcpyHtoD", 3020, 0);
    DRV(PFN_cuMemcpyDtoH_v3020, dtoh, "cuMemcpyDtoH", 3020, 0);
    DRV(PFN_cuMemcpyHtoD_v7000_ptds, htod_pt, "cuMemcpyHtoD", 7000, 1);
    DRV(PFN_cuMemcpyDtoH_v7000_ptds, dtoh_pt, "cuMemcpyDtoH", 7000, 1);
    if (pinned) /* the stream handle already says which default stream (2 = per-thread) */
        return to_device ? (htod_async ? htod_async(device, host, n, stream) : vmc_w_drv_missing("cuMemcpyHtoDAsync"))
                         : (dtoh_async ? dtoh_async(host, device, n, stream) : vmc_w_drv_missing("cuMemcpyDtoHAsync"));
    PFN_cuMemcpyHtoD_v3020 h = per_thread ? htod_pt : htod;
    PFN_cuMemcpyDtoH_v3020 d = per_thread ? dtoh_pt : dtoh;
    return to_device ? (h ? h(device, host, n) : vmc_w_drv_missing("cuMemcpyHtoD"))
                     : (d ? d(host, device, n) : vmc_w_drv_missing("cuMemcpyDtoH"));
}

int vmc_w_drv_range_in_one_allocation(CUdeviceptr device, size_t n) {
    adopt_context_of(device);
    DRV(PFN_cuMemGetAddressRange_v3020, range, "cuMemGetAddressRange", 3020, 0);
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!range || range(&base, &size, device) != CUDA_SUCCESS || device < base)
        return 0;
    return n <= size - (size_t)(device - base);
}

CUresult vmc_w_drv_stream_sync(CUstream stream) {
    DRV(PFN_cuStreamSynchronize_v2000, sync, "cuStreamSynchronize", 2000, 0);
    return sync ? sync(stream) : vmc_w_drv_missing("cuStreamSynchronize");
}

/* For the quota after a context went: does this allocation still exist? */
static int still_allocated(uintptr_t ptr) {
    DRV(PFN_cuPointerGetAttribute_v4000, attribute, "cuPointerGetAttribute", 4000, 0);
    CUcontext owner = NULL;
    /* unified addressing answers without a current context; anything but "not an allocation" keeps it counted */
    return !attribute || attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)ptr) != CUDA_ERROR_INVALID_VALUE;
}

/* ---- dispatch ---- */

enum vmc_w_result vmc_w_drv_dispatch(struct vmc_wcall *wc) {
    enum vmc_w_result served;
    if (vmc_w_tensormap_dispatch(wc, &served) || vmc_w_graph_nodes_dispatch(wc, &served))
        return served;
    switch (wc->id) {
    case VMC_DRV_vmc_drv_Snapshot: return snapshot(wc);
    case VMC_DRV_vmc_drv_ImageQuery: return vmc_w_image_query(wc);
    case VMC_DRV_vmc_drv_ImageUpload: return vmc_w_image_upload(wc);
    case VMC_DRV_vmc_drv_ModuleLoad: return module_load(wc);
    case VMC_DRV_vmc_drv_LinkCreate: return vmc_w_link_create(wc);
    case VMC_DRV_vmc_drv_LinkAdd: return vmc_w_link_add(wc);
    case VMC_DRV_vmc_drv_LinkComplete: return vmc_w_link_complete(wc);
    case VMC_DRV_vmc_drv_LinkRead: return vmc_w_link_read(wc);
    case VMC_DRV_vmc_drv_LinkDestroy: return vmc_w_link_destroy(wc);
    case VMC_DRV_vmc_drv_ParamLayout: return param_layout(wc);
    case VMC_DRV_vmc_drv_FunctionName: return function_name(wc);
    case VMC_DRV_vmc_drv_Launch: return launch(wc);
    case VMC_DRV_vmc_drv_MemcpyOnAppliance: return memcpy_on_appliance(wc);
    case VMC_DRV_vmc_drv_TpcMapping: return vmc_w_tpc_mapping(wc);
    case VMC_DRV_vmc_drv_HostMapAttach: return vmc_w_hostmap_attach(wc);
    case VMC_DRV_vmc_drv_HostMapDetach: return vmc_w_hostmap_detach(wc);
    case VMC_DRV_vmc_drv_MappedCopy: return vmc_w_hostmap_copy(wc);
    case VMC_DRV_vmc_drv_NvmlQuery: return vmc_w_nvml_query(wc);
    case VMC_DRV_vmc_drv_NvmlTopology: return vmc_w_nvml_topology(wc);
    case VMC_DRV_vmc_drv_NvmlFieldValues: return vmc_w_nvml_field_values(wc);
    case VMC_DRV_vmc_drv_MirrorAlloc: return vmc_w_mirror_alloc(wc);
    case VMC_DRV_vmc_drv_MirrorFree: return vmc_w_mirror_free(wc);
    case VMC_DRV_cuMemExportToShareableHandle: return vmc_w_shareable_export(wc, VMC_SHAREABLE_ALLOCATION);
    case VMC_DRV_cuMemPoolExportToShareableHandle: return vmc_w_shareable_export(wc, VMC_SHAREABLE_POOL);
    case VMC_DRV_cuMemImportFromShareableHandle: return vmc_w_shareable_import(wc, VMC_SHAREABLE_ALLOCATION);
    case VMC_DRV_cuMemPoolImportFromShareableHandle: return vmc_w_shareable_import(wc, VMC_SHAREABLE_POOL);
    case VMC_DRV_cuMemPoolGetAttribute: return vmc_w_pool_attribute(wc, 0);
    case VMC_DRV_cuMemPoolSetAttribute: return vmc_w_pool_attribute(wc, 1);
    case VMC_DRV_cuPointerGetAttributes: return pointer_attributes(wc);
    case VMC_DRV_cuStreamGetCaptureInfo:
    case VMC_DRV_cuStreamGetCaptureInfo_ptsz:
    case VMC_DRV_cuStreamGetCaptureInfo_v2:
    case VMC_DRV_cuStreamGetCaptureInfo_v2_ptsz:
    case VMC_DRV_cuStreamGetCaptureInfo_v3:
    case VMC_DRV_cuStreamGetCaptureInfo_v3_ptsz: return capture_info(wc);
    case VMC_DRV_cuModuleEnumerateFunctions: return enumerate_functions(wc);
    case VMC_DRV_cuOccupancyMaxActiveClusters:
    case VMC_DRV_cuOccupancyMaxPotentialClusterSize: return cluster_occupancy(wc);
    case VMC_DRV_cuDevicePrimaryCtxReset_v2: {
        /* the bulk copies' pinned staging buffers belonged to the primary context that is gone now */
        enum vmc_w_result r = vmc_worker_drv_dispatch_generated(wc);
        vmc_w_staging_invalidate();
        vmc_w_quota_forget_freed(still_allocated);
        return r;
    }
    case VMC_DRV_cuDevicePrimaryCtxRelease_v2: /* the last release destroys the primary context */
    case VMC_DRV_cuCtxDestroy_v2: {
        enum vmc_w_result r = vmc_worker_drv_dispatch_generated(wc);
        vmc_w_quota_forget_freed(still_allocated);
        return r;
    }
    default: return vmc_worker_drv_dispatch_generated(wc);
    }
}

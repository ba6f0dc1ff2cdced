/* The driver's private table of thread-block-cluster functions (UUID bytes 1734dc26 800d 4745 8726
 * c0f1e7dd8bca; a size word and 16 slots). cuBLASLt asks for it when it picks Hopper kernels (PyTorch's
 * bf16 matmuls, for one) and calls it without checking that it got it. What each slot is comes from a
 * public header of the table ("cluster prototype"); which slots are used was read off NVIDIA's driver with
 * the discovery tracer (tests/driver/discovery, 2026-11-23, driver 580, PyTorch 2.11's cuBLASLt): slot 4
 * (the GPU's map from TPC to virtual GPC and to TPC within its GPC, two arrays the driver allocates) and
 * slot 13 (frees them). Slot 4 asks the worker for NVIDIA's answer; the getters that have a public
 * equivalent (function and device attributes, cluster occupancy) are answered through it; the rest say
 * once that they are not served and fail. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "drv_tables.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

#define SLOTS 17
static int told[SLOTS];

static CUresult not_served(int slot) {
    return vmc_drv_slot_not_served("the driver's cluster table", slot, &told[slot]);
}

static CUresult set_cluster_dim(CUfunction f, int x, int y, int z) {
    (void)f; (void)x; (void)y; (void)z;
    return not_served(1);
}

static CUresult set_scheduling_policy(CUfunction f, int policy) {
    return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, policy);
}

static CUresult set_non_portable_size(CUfunction f, int enable) {
    return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, enable);
}

/* A byte array of NVIDIA's answer, in memory of this process that slot 13 (or free) releases. */
static unsigned char *take_array(const void *bytes, uint32_t n) {
    unsigned char *a = malloc(n ? n : 1);
    if (a)
        memcpy(a, bytes, n);
    return a;
}

static CUresult tpc_mapping(unsigned char **vgpc, unsigned char **mtpc) {
    if (!vgpc || !mtpc)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_TpcMapping, 0);
    if (st != CUDA_SUCCESS)
        return st;
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_tpc_mapping_reply r;
    vmc_get_tpc_mapping_reply(&c.reply, &r);
    if (!vmc_call_reply_ok(&c))
        return CUDA_ERROR_UNKNOWN;
    unsigned char *v = take_array(r.vgpc, r.n_vgpc), *m = take_array(r.mtpc, r.n_mtpc);
    if (!v || !m) {
        free(v);
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *vgpc = v;
    *mtpc = m;
    return CUDA_SUCCESS;
}

static CUresult function_attribute(int *out, CUfunction_attribute a, CUfunction f) {
    return out ? cuFuncGetAttribute(out, a, f) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult get_cluster_dim(CUfunction f, int *x, int *y, int *z) {
    CUresult st = function_attribute(x, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f);
    if (st == CUDA_SUCCESS)
        st = function_attribute(y, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f);
    if (st == CUDA_SUCCESS)
        st = function_attribute(z, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f);
    return st;
}

static CUresult get_scheduling_policy(CUfunction f, int *policy) {
    return function_attribute(policy, CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, f);
}

static CUresult get_non_portable_size(CUfunction f, int *enable) {
    return function_attribute(enable, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f);
}

static CUresult cluster_launch_supported(CUdevice dev, int *supported) {
    return supported ? cuDeviceGetAttribute(supported, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev) : CUDA_ERROR_INVALID_VALUE;
}

/* One block-sized launch of f, as the occupancy calculator's questions are put. */
static CUlaunchConfig one_block(int block_size, size_t shared, CUlaunchAttribute *cluster, int cluster_size) {
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = (unsigned)block_size;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = (unsigned)shared;
    if (cluster_size > 0) {
        memset(cluster, 0, sizeof *cluster);
        cluster->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        cluster->value.clusterDim.x = (unsigned)cluster_size;
        cluster->value.clusterDim.y = cluster->value.clusterDim.z = 1;
        cfg.gridDimX = (unsigned)cluster_size;
        cfg.attrs = cluster;
        cfg.numAttrs = 1;
    }
    return cfg;
}

static CUresult max_potential_cluster_size(CUfunction f, int block_size, size_t shared, int *size) {
    CUlaunchConfig cfg = one_block(block_size, shared, NULL, 0);
    return cuOccupancyMaxPotentialClusterSize(size, f, &cfg);
}

static CUresult max_active_clusters(CUfunction f, int block_size, size_t shared, int cluster_size, int *clusters) {
    CUlaunchAttribute cluster;
    CUlaunchConfig cfg = one_block(block_size, shared, &cluster, cluster_size);
    return cuOccupancyMaxActiveClusters(clusters, f, &cfg);
}

static uint32_t override_max_cluster_size(int device, uint32_t size) {
    (void)device; (void)size;
    not_served(11);
    return 0;
}

static CUresult cluster_dim_must_be_set(CUfunction f, int *must) {
    return function_attribute(must, CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, f);
}

static CUresult free_tpc_mapping(unsigned char *vgpc, unsigned char *mtpc) {
    free(vgpc);
    free(mtpc);
    return CUDA_SUCCESS;
}

static CUresult cnp_cluster_attributes(int *supported) {
    (void)supported;
    return not_served(14);
}

static CUresult singleton_vgpc_base(CUdevice dev, unsigned char *base) {
    (void)dev; (void)base;
    return not_served(15);
}

static CUresult preferred_cluster_supported(CUdevice dev, int *supported) {
    (void)dev; (void)supported;
    return not_served(16);
}

const void *const vmc_drv_cluster_table[SLOTS] = {
    (const void *)(SLOTS * sizeof(void *)),
    (const void *)set_cluster_dim,
    (const void *)set_scheduling_policy,
    (const void *)set_non_portable_size,
    (const void *)tpc_mapping,
    (const void *)get_cluster_dim,
    (const void *)get_scheduling_policy,
    (const void *)get_non_portable_size,
    (const void *)cluster_launch_supported,
    (const void *)max_potential_cluster_size,
    (const void *)max_active_clusters,
    (const void *)override_max_cluster_size,
    (const void *)cluster_dim_must_be_set,
    (const void *)free_tpc_mapping,
    (const void *)cnp_cluster_attributes,
    (const void *)singleton_vgpc_base,
    (const void *)preferred_cluster_supported,
};

/* Memory pool attributes (cuMemPoolGetAttribute / cuMemPoolSetAttribute): the value is an int for the
 * reuse policies and a cuuint64_t for the thresholds and counters, behind a void pointer, so these two are
 * written by hand: 8 bytes travel, and as many as the attribute has are read or written here. The rest of
 * the pool API is forwarded by generated code (cuda-driver.spec). */
#include <stdint.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"

/* The size of an attribute's value: 0 for one this build does not know. */
static size_t value_size(CUmemPool_attribute attr) {
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: return sizeof(int);
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: return sizeof(cuuint64_t);
    default: return 0;
    }
}

static CUresult pool_attribute(uint32_t id, CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set) {
    size_t n = value_size(attr);
    if (!value || !n)
        return CUDA_ERROR_INVALID_VALUE; /* an attribute this build does not know: its size is unknown too */
    uint64_t v = 0;
    if (set)
        memcpy(&v, value, n);
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_pool_attribute_args(vmc_call_args(&c), &(struct vmc_pool_attribute_args){
        .pool = (uint64_t)(uintptr_t)pool, .attribute = (uint32_t)attr, .value = v});
    st = (CUresult)vmc_call_finish(&c);
    struct vmc_pool_attribute_value r;
    vmc_get_pool_attribute_value(&c.reply, &r);
    v = r.value;
    if (st == CUDA_SUCCESS && !set)
        memcpy(value, &v, n);
    return st;
}

__attribute__((visibility("default"))) CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    return pool_attribute(VMC_DRV_cuMemPoolGetAttribute, pool, attr, value, 0);
}

__attribute__((visibility("default"))) CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    return pool_attribute(VMC_DRV_cuMemPoolSetAttribute, pool, attr, value, 1);
}

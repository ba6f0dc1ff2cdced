/* The worker's half of cuMemPoolGetAttribute / cuMemPoolSetAttribute (client: drv_pools.c): the value
 * travels as 8 bytes; NVIDIA's driver reads or writes as many as the attribute has (4 or 8, little-endian
 * here, so the low bytes are the int). */
#include <cudaTypedefs.h>
#include "worker_driver.h"
#include "vmc_drv_internal.h"

enum vmc_w_result vmc_w_pool_attribute(struct vmc_wcall *wc, int set) {
    struct vmc_pool_attribute_args a;
    vmc_get_pool_attribute_args(&wc->in, &a);
    uint64_t pool = a.pool, value = a.value;
    uint32_t attr = a.attribute;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    CUresult st;
    if (set) {
        PFN_cuMemPoolSetAttribute_v11020 fn =
            (PFN_cuMemPoolSetAttribute_v11020)vmc_w_drv_proc(wc->id, "cuMemPoolSetAttribute", 11020, 0);
        st = fn ? fn((CUmemoryPool)(uintptr_t)pool, (CUmemPool_attribute)attr, &value) : vmc_w_drv_missing("cuMemPoolSetAttribute");
    } else {
        value = 0;
        PFN_cuMemPoolGetAttribute_v11020 fn =
            (PFN_cuMemPoolGetAttribute_v11020)vmc_w_drv_proc(wc->id, "cuMemPoolGetAttribute", 11020, 0);
        st = fn ? fn((CUmemoryPool)(uintptr_t)pool, (CUmemPool_attribute)attr, &value) : vmc_w_drv_missing("cuMemPoolGetAttribute");
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_pool_attribute_value(vmc_w_reply_out(wc), &(struct vmc_pool_attribute_value){.value = value});
    return VMC_W_DONE;
}

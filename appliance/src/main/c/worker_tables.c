/* The worker's half of the driver's private tables that the client cannot answer alone (the client's
 * half: client-shim/src/driver/drv_table_cluster.c). */
#include <malloc.h>
#include <string.h>

#include "vmc_wire.h"
#include "worker_driver.h"
#include "vmc_drv_internal.h"
#include <cudaTypedefs.h>

/* The cluster table's UUID and the two slots used: 4 maps each TPC to its virtual GPC and to its index in
 * that GPC (two arrays the driver allocates with malloc), 13 frees them. */
static const CUuuid CLUSTER_TABLE = {{0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
                                      (char)0x87, 0x26, (char)0xc0, (char)0xf1, (char)0xe7, (char)0xdd, (char)0x8b, (char)0xca}};
typedef CUresult (*tpc_mapping_fn)(unsigned char **vgpc, unsigned char **mtpc);
typedef CUresult (*tpc_mapping_free_fn)(unsigned char *vgpc, unsigned char *mtpc);

/* The driver does not say how long the arrays are (one byte per TPC of the GPU); the allocation's usable
 * size covers them, and bytes past the last TPC are never read. */
static uint32_t array_bytes(const unsigned char *a) {
    size_t n = a ? malloc_usable_size((void *)a) : 0;
    return (uint32_t)(n < VMC_MAX_CALL_PAYLOAD / 4 ? n : VMC_MAX_CALL_PAYLOAD / 4);
}

enum vmc_w_result vmc_w_tpc_mapping(struct vmc_wcall *wc) {
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    PFN_cuGetExportTable_v3000 export_table =
        (PFN_cuGetExportTable_v3000)vmc_w_drv_resolve("cuGetExportTable", 3000, 0);
    const void *const *table = NULL;
    CUresult st = export_table ? export_table((const void **)&table, &CLUSTER_TABLE) : vmc_w_drv_missing("cuGetExportTable");
    if (st == CUDA_SUCCESS && (!table || (size_t)table[0] < 14 * sizeof(void *)))
        st = CUDA_ERROR_NOT_SUPPORTED; /* a driver whose table is too short for the two slots */
    unsigned char *vgpc = NULL, *mtpc = NULL;
    if (st == CUDA_SUCCESS)
        st = ((tpc_mapping_fn)table[4])(&vgpc, &mtpc);
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS) {
        vmc_put_tpc_mapping_reply(vmc_w_reply_out(wc), &(struct vmc_tpc_mapping_reply){
            .n_vgpc = array_bytes(vgpc), .vgpc = vgpc, .n_mtpc = array_bytes(mtpc), .mtpc = mtpc});
        ((tpc_mapping_free_fn)table[13])(vgpc, mtpc);
    }
    return VMC_W_DONE;
}

/* Shareable handles as POSIX file descriptors (cuMemExportToShareableHandle, cuMemPoolExportToShareableHandle and
 * their imports; the runtime's cudaMemPool* twins are in rt_pools.c). Natively the driver hands the program a
 * descriptor, which the program passes to other processes over a Unix socket (SCM_RIGHTS), and whoever receives it
 * imports the memory. Through vmcuda the driver's descriptor stays with the exporting process's worker on the
 * appliance, which answers with a ticket (appliance/src/main/c/worker_shareable.c, PROTOCOL.md "Shareable handles");
 * the program gets a descriptor of this process instead: a sealed memfd holding the ticket, which travels between
 * the program's processes as the driver's would. An import reads the ticket back from whatever descriptor it is
 * given and the importing process's worker fetches the driver's descriptor from the exporter's.
 *
 * What differs from a native program: the memory stays importable while the exporting process runs and has not
 * released the allocation (or destroyed the pool); closing the descriptor does not release anything by itself.
 * Other handle types (fabric, Win32) are refused with a line. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "drv.h"
#include "drv_call.h"
#include "drv_memory.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_wire.h"

#define API __attribute__((visibility("default")))

/* The memfd's contents: MAGIC, the kind (4 bytes, little-endian) and the ticket's fields as they are. */
static const char MAGIC[16] = {'v', 'm', 'c', 'u', 'd', 'a', ' ', 's', 'h', 'a', 'r', 'e', 'a', 'b', 'l', 'e'};
#define TICKET_BYTES (sizeof(((struct vmc_shareable_ticket *)0)->host) + sizeof(((struct vmc_shareable_ticket *)0)->socket_id) + \
                      sizeof(((struct vmc_shareable_ticket *)0)->secret))
#define RECORD_BYTES (sizeof MAGIC + 4 + TICKET_BYTES)

static void pack(uint32_t kind, const struct vmc_shareable_ticket *t, unsigned char *r) {
    memcpy(r, MAGIC, sizeof MAGIC);
    r += sizeof MAGIC;
    for (int i = 0; i < 4; i++)
        *r++ = (unsigned char)(kind >> (8 * i));
    memcpy(r, t->host, sizeof t->host);
    memcpy(r + sizeof t->host, t->socket_id, sizeof t->socket_id);
    memcpy(r + sizeof t->host + sizeof t->socket_id, t->secret, sizeof t->secret);
}

/* 1 when r is a record of kind `kind` (its ticket then in *t). */
static int unpack(const unsigned char *r, uint32_t kind, struct vmc_shareable_ticket *t) {
    if (memcmp(r, MAGIC, sizeof MAGIC) != 0)
        return 0;
    r += sizeof MAGIC;
    uint32_t k = (uint32_t)r[0] | (uint32_t)r[1] << 8 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 24;
    r += 4;
    memcpy(t->host, r, sizeof t->host);
    memcpy(t->socket_id, r + sizeof t->host, sizeof t->socket_id);
    memcpy(t->secret, r + sizeof t->host + sizeof t->socket_id, sizeof t->secret);
    return k == kind;
}

/* A new descriptor holding the ticket, sealed so that no holder can change it; -1 on failure. */
static int ticket_descriptor(uint32_t kind, const struct vmc_shareable_ticket *t) {
    unsigned char record[RECORD_BYTES];
    pack(kind, t, record);
    int fd = memfd_create("vmcuda-shareable-handle", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (pwrite(fd, record, sizeof record, 0) != (ssize_t)sizeof record ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static CUresult other_type(const char *function) {
    static int told;
    return vmc_drv_not_supported(function,
                                 "vmcuda shares memory between processes as POSIX file descriptors only "
                                 "(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)",
                                 &told);
}

static CUresult export_handle(uint32_t id, const char *function, uint32_t kind, uint64_t object, void *out,
                              CUmemAllocationHandleType type, unsigned long long flags) {
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return other_type(function);
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_shareable_export_args(vmc_call_args(&c), &(struct vmc_shareable_export_args){
        .object = object, .handle_type = (uint32_t)type, .flags = flags});
    st = (CUresult)vmc_call_finish(&c);
    struct vmc_shareable_ticket t;
    vmc_get_shareable_ticket(&c.reply, &t);
    if (st != CUDA_SUCCESS)
        return st;
    /* the worker keeps its export until the allocation is released (or the pool destroyed) */
    int fd = ticket_descriptor(kind, &t);
    if (fd < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(out, &fd, sizeof fd);
    return CUDA_SUCCESS;
}

/* The worker's reasons an import cannot be served, as the program sees them: one line, then the error a native
 * import of a descriptor that names nothing gives. */
static CUresult import_refused(CUresult st, const char *function) {
    static int told_gone, told_elsewhere;
    if (st == CUDA_ERROR_NOT_FOUND) {
        vmc_drv_explain(function,
                        "the exporting process holds nothing under that handle: it has released that memory or ended "
                        "(through vmcuda, exported memory stays importable only while its exporter runs and holds it), "
                        "or the handle is not one it gave; it returns CUDA_ERROR_INVALID_VALUE",
                        &told_gone);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (st == CUDA_ERROR_NOT_SUPPORTED)
        return vmc_drv_not_supported(function,
                                     "the memory was exported on another appliance, whose GPUs this process's "
                                     "session cannot reach",
                                     &told_elsewhere);
    return st;
}

static CUresult import_handle(uint32_t id, const char *function, uint32_t kind, uint64_t *object, void *os_handle,
                              CUmemAllocationHandleType type, unsigned long long flags) {
    if (!object)
        return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return other_type(function);
    /* a descriptor of anything else (or none) is what a native import of it would call an invalid value */
    unsigned char record[RECORD_BYTES];
    struct vmc_shareable_import_args a = {.handle_type = (uint32_t)type, .flags = flags};
    int fd = (int)(intptr_t)os_handle;
    if (fd < 0 || pread(fd, record, sizeof record, 0) != (ssize_t)sizeof record || !unpack(record, kind, &a.ticket))
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_shareable_import_args(vmc_call_args(&c), &a);
    st = (CUresult)vmc_call_finish(&c);
    struct vmc_shareable_object r;
    vmc_get_shareable_object(&c.reply, &r);
    if (st == CUDA_SUCCESS)
        *object = r.object;
    return import_refused(st, function);
}

API CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                          CUmemAllocationHandleType handleType, unsigned long long flags) {
    return export_handle(VMC_DRV_cuMemExportToShareableHandle, "cuMemExportToShareableHandle", VMC_SHAREABLE_ALLOCATION,
                         (uint64_t)handle, shareableHandle, handleType, flags);
}

API CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType,
                                              unsigned long long flags) {
    return export_handle(VMC_DRV_cuMemPoolExportToShareableHandle, "cuMemPoolExportToShareableHandle", VMC_SHAREABLE_POOL,
                         (uint64_t)(uintptr_t)pool, handle_out, handleType, flags);
}

API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                            CUmemAllocationHandleType shHandleType) {
    uint64_t object = 0;
    CUresult st = import_handle(VMC_DRV_cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle",
                                VMC_SHAREABLE_ALLOCATION, handle ? &object : NULL, osHandle, shHandleType, 0);
    if (st == CUDA_SUCCESS)
        *handle = (CUmemGenericAllocationHandle)object;
    return st;
}

API CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType handleType,
                                                unsigned long long flags) {
    uint64_t object = 0;
    CUresult st = import_handle(VMC_DRV_cuMemPoolImportFromShareableHandle, "cuMemPoolImportFromShareableHandle",
                                VMC_SHAREABLE_POOL, pool_out ? &object : NULL, handle, handleType, flags);
    if (st == CUDA_SUCCESS)
        *pool_out = (CUmemoryPool)(uintptr_t)object;
    return st;
}

CUresult vmc_forward_cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData);

/* An imported pool allocation is device memory here, as an allocation of this process is (a unified copy must see
 * it so); cuMemFree/cuMemFreeAsync forget it. */
API CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData) {
    CUresult st = vmc_forward_cuMemPoolImportPointer(ptr_out, pool, shareData);
    if (st == CUDA_SUCCESS && ptr_out)
        vmc_drv_record_shared(*ptr_out);
    return st;
}

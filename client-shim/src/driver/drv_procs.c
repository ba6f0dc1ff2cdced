/* cuGetProcAddress: how every CUDA 12 and 13 runtime (static or inside the CUDA libraries) and the
 * frameworks find the driver's functions. They ask by base name, the CUDA version they were built for
 * and a flag for the per-thread default stream; the answer is the ABI of the highest version not above
 * the one asked (cudaTypedefs.h names each ABI), its per-thread variant when the flag asks for one and
 * there is one. Not found and "too old" both succeed with a NULL function and a status, as NVIDIA
 * documents: that is how a runtime probes for optional functions. */
#include <string.h>
#include "drv.h"

#include "drv_procs.h"
#include "drv_trace.h"

/* The range of entries named `symbol` (the table is sorted by name). */
static int find_name(const char *symbol, unsigned *first, unsigned *end) {
    unsigned lo = 0, hi = vmc_drv_proc_count;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (strcmp(vmc_drv_procs[mid].name, symbol) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    unsigned e = lo;
    while (e < vmc_drv_proc_count && strcmp(vmc_drv_procs[e].name, symbol) == 0)
        e++;
    *first = lo;
    *end = e;
    return e > lo;
}

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status) {
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    unsigned first, end;
    if (!find_name(symbol, &first, &end)) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct vmc_drv_proc *best = NULL;
    for (unsigned i = first; i < end; i++) {
        const struct vmc_drv_proc *p = &vmc_drv_procs[i];
        if (p->version > cudaVersion || (p->per_thread && !per_thread))
            continue;
        /* a higher version wins; at the same version the per-thread variant wins when asked for */
        if (!best || p->version > best->version || (p->version == best->version && p->per_thread))
            best = p;
    }
    if (!best) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_SUCCESS;
    }
    *pfn = vmc_drv_trace_level() == VMC_TRACE_OFF ? best->fn : vmc_drv_procs_traced[best - vmc_drv_procs];
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                                                    cuuint64_t flags,
                                                                    CUdriverProcAddressQueryResult *symbolStatus) {
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3 signature, still exported for the runtimes built then. */
__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                                                 cuuint64_t flags) {
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

/* Stream capture state: cuStreamGetCaptureInfo in each of its ABIs, and cuStreamIsCapturing. cuBLAS (and so cuSOLVER, cuSPARSE's
 * users, PyTorch) asks before its calls whether the stream is being captured into a graph. The worker
 * answers with the driver's own arrays of dependency nodes and edge data copied; as the driver's arrays,
 * ours stay valid until the calling thread asks again. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "shim_call.h"
#include "shim_session.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

struct capture_arrays {
    CUgraphNode *nodes;
    CUgraphEdgeData *edges;
    size_t cap;
};
static __thread struct capture_arrays arrays;

static CUresult capture_info(uint32_t id, CUstream stream, int per_thread, CUstreamCaptureStatus *status_out,
                             cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **nodes_out,
                             const CUgraphEdgeData **edges_out, size_t *n_out) {
    if (!status_out)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, id, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_capture_info_args(vmc_call_args(&c), &(struct vmc_capture_info_args){
        .stream = (uint64_t)(uintptr_t)stream, .per_thread = (uint8_t)per_thread});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_capture_info_reply r;
    vmc_get_capture_info_reply(&c.reply, &r);
    CUstreamCaptureStatus status = (CUstreamCaptureStatus)r.status;
    uint64_t capture_id = r.id, graph = r.graph;
    uint32_t n = r.n;
    if (n > VMC_MAX_CAPTURE_DEPENDENCIES || !vmc_call_reply_ok(&c))
        return CUDA_ERROR_UNKNOWN;
    if (n > arrays.cap) {
        CUgraphNode *nodes = realloc(arrays.nodes, n * sizeof *nodes);
        if (nodes)
            arrays.nodes = nodes;
        CUgraphEdgeData *edges = realloc(arrays.edges, n * sizeof *edges);
        if (edges)
            arrays.edges = edges;
        if (!nodes || !edges)
            return CUDA_ERROR_OUT_OF_MEMORY;
        arrays.cap = n;
    }
    for (uint32_t i = 0; i < n; i++)
        arrays.nodes[i] = (CUgraphNode)(uintptr_t)vmc_capture_info_reply_nodes_at(&r, i);
    if (n) /* (before the first capture the arrays are not there yet) */
        memcpy(arrays.edges, r.edges, n * sizeof arrays.edges[0]);
    /* as the driver: a caller that cannot take edge data (the older ABIs, or no edgeData_out) while some
     * edge is not a plain one gets CUDA_ERROR_LOSSY_QUERY */
    static const CUgraphEdgeData plain;
    for (uint32_t i = 0; !edges_out && i < n; i++)
        if (memcmp(&arrays.edges[i], &plain, sizeof plain) != 0)
            return CUDA_ERROR_LOSSY_QUERY;
    *status_out = status;
    if (id_out)
        *id_out = capture_id;
    if (graph_out)
        *graph_out = (CUgraph)(uintptr_t)graph;
    if (nodes_out)
        *nodes_out = n ? arrays.nodes : NULL;
    if (edges_out)
        *edges_out = n ? arrays.edges : NULL;
    if (n_out)
        *n_out = n;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                                       cuuint64_t *id_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo, hStream, 0, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                                                            CUstreamCaptureStatus *captureStatus_out,
                                                                            cuuint64_t *id_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo_ptsz, hStream, 1, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                                          CUstreamCaptureStatus *captureStatus_out,
                                                                          cuuint64_t *id_out, CUgraph *graph_out,
                                                                          const CUgraphNode **dependencies_out,
                                                                          size_t *numDependencies_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo_v2, hStream, 0, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                                               CUstreamCaptureStatus *captureStatus_out,
                                                                               cuuint64_t *id_out, CUgraph *graph_out,
                                                                               const CUgraphNode **dependencies_out,
                                                                               size_t *numDependencies_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo_v2_ptsz, hStream, 1, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
                                                                          CUstreamCaptureStatus *captureStatus_out,
                                                                          cuuint64_t *id_out, CUgraph *graph_out,
                                                                          const CUgraphNode **dependencies_out,
                                                                          const CUgraphEdgeData **edgeData_out,
                                                                          size_t *numDependencies_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo_v3, hStream, 0, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}

__attribute__((visibility("default"))) CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                                               CUstreamCaptureStatus *captureStatus_out,
                                                                               cuuint64_t *id_out, CUgraph *graph_out,
                                                                               const CUgraphNode **dependencies_out,
                                                                               const CUgraphEdgeData **edgeData_out,
                                                                               size_t *numDependencies_out) {
    return capture_info(VMC_DRV_cuStreamGetCaptureInfo_v3_ptsz, hStream, 1, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}

/* ---- cuStreamIsCapturing: asked before nearly every PyTorch operation (811 of the 1,746 round trips of 20 GPT
 * training steps) ----
 * Answered here while the answer cannot be anything but "not capturing": no thread of this process has begun a
 * capture (through either front end: a stream only captures after a begin, or after waiting on an event recorded
 * by a capturing stream, which needs a begin too), the stream is a default stream (a handle the driver cannot
 * reject), the thread has a current context and a working session, and no call has reported an error that leaves
 * the context unusable (the driver would then return that error). Anything else goes to the worker. */
CUresult vmc_forward_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult vmc_forward_cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);

static int surely_not_capturing(CUstream stream) {
    if (vmc_capture_ever_begun() || vmc_context_fault_seen() || !vmc_thread_has_conn())
        return 0;
    if (stream != NULL && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD)
        return 0;
    CUcontext ctx = NULL;
    return cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != NULL;
}

__attribute__((visibility("default"))) CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    if (captureStatus && surely_not_capturing(hStream)) {
        *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    return vmc_forward_cuStreamIsCapturing(hStream, captureStatus);
}

__attribute__((visibility("default"))) CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                                                         CUstreamCaptureStatus *captureStatus) {
    if (captureStatus && surely_not_capturing(hStream)) {
        *captureStatus = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    return vmc_forward_cuStreamIsCapturing_ptsz(hStream, captureStatus);
}

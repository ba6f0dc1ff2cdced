/* A graph's topology and its nodes' handles through the runtime (listing nodes and edges, adding and removing
 * edges, a node's events, child graph, enabled state and kernel attributes, instantiation with parameters,
 * conditional handles): each is its driver twin on the same handles (rt_driver.h). */
#include "rt_driver.h"

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(cudaGraphInstantiateParams) == sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS),
               "cudaGraphInstantiateParams is CUDA_GRAPH_INSTANTIATE_PARAMS");

API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes) {
    VMC_RT_VIA_DRIVER(cuGraphGetNodes((CUgraph)graph, (CUgraphNode *)nodes, numNodes));
}

API cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes) {
    VMC_RT_VIA_DRIVER(cuGraphGetRootNodes((CUgraph)graph, (CUgraphNode *)pRootNodes, pNumRootNodes));
}

API cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to, cudaGraphEdgeData *edgeData,
                                  size_t *numEdges) {
    VMC_RT_VIA_DRIVER(cuGraphGetEdges((CUgraph)graph, (CUgraphNode *)from, (CUgraphNode *)to, (CUgraphEdgeData *)edgeData, numEdges));
}

API cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies, cudaGraphEdgeData *edgeData,
                                             size_t *pNumDependencies) {
    VMC_RT_VIA_DRIVER(cuGraphNodeGetDependencies((CUgraphNode)node, (CUgraphNode *)pDependencies, (CUgraphEdgeData *)edgeData,
                                                 pNumDependencies));
}

API cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes, cudaGraphEdgeData *edgeData,
                                               size_t *pNumDependentNodes) {
    VMC_RT_VIA_DRIVER(cuGraphNodeGetDependentNodes((CUgraphNode)node, (CUgraphNode *)pDependentNodes, (CUgraphEdgeData *)edgeData,
                                                   pNumDependentNodes));
}

API cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                         const cudaGraphEdgeData *edgeData, size_t numDependencies) {
    VMC_RT_VIA_DRIVER(cuGraphAddDependencies((CUgraph)graph, (const CUgraphNode *)from, (const CUgraphNode *)to,
                                             (const CUgraphEdgeData *)edgeData, numDependencies));
}

API cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                            const cudaGraphEdgeData *edgeData, size_t numDependencies) {
    VMC_RT_VIA_DRIVER(cuGraphRemoveDependencies((CUgraph)graph, (const CUgraphNode *)from, (const CUgraphNode *)to,
                                                (const CUgraphEdgeData *)edgeData, numDependencies));
}

API cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *pNode, cudaGraphNode_t originalNode, cudaGraph_t clonedGraph) {
    VMC_RT_VIA_DRIVER(cuGraphNodeFindInClone((CUgraphNode *)pNode, (CUgraphNode)originalNode, (CUgraph)clonedGraph));
}

API cudaError_t cudaGraphChildGraphNodeGetGraph(cudaGraphNode_t node, cudaGraph_t *pGraph) {
    VMC_RT_VIA_DRIVER(cuGraphChildGraphNodeGetGraph((CUgraphNode)node, (CUgraph *)pGraph));
}

API cudaError_t cudaGraphEventRecordNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out) {
    VMC_RT_VIA_DRIVER(cuGraphEventRecordNodeGetEvent((CUgraphNode)node, (CUevent *)event_out));
}

API cudaError_t cudaGraphEventRecordNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
    VMC_RT_VIA_DRIVER(cuGraphEventRecordNodeSetEvent((CUgraphNode)node, (CUevent)event));
}

API cudaError_t cudaGraphEventWaitNodeGetEvent(cudaGraphNode_t node, cudaEvent_t *event_out) {
    VMC_RT_VIA_DRIVER(cuGraphEventWaitNodeGetEvent((CUgraphNode)node, (CUevent *)event_out));
}

API cudaError_t cudaGraphEventWaitNodeSetEvent(cudaGraphNode_t node, cudaEvent_t event) {
    VMC_RT_VIA_DRIVER(cuGraphEventWaitNodeSetEvent((CUgraphNode)node, (CUevent)event));
}

API cudaError_t cudaGraphExecEventRecordNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, cudaEvent_t event) {
    VMC_RT_VIA_DRIVER(cuGraphExecEventRecordNodeSetEvent((CUgraphExec)hGraphExec, (CUgraphNode)hNode, (CUevent)event));
}

API cudaError_t cudaGraphExecEventWaitNodeSetEvent(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, cudaEvent_t event) {
    VMC_RT_VIA_DRIVER(cuGraphExecEventWaitNodeSetEvent((CUgraphExec)hGraphExec, (CUgraphNode)hNode, (CUevent)event));
}

API cudaError_t cudaGraphMemFreeNodeGetParams(cudaGraphNode_t node, void *dptr_out) {
    VMC_RT_VIA_DRIVER(cuGraphMemFreeNodeGetParams((CUgraphNode)node, (CUdeviceptr *)dptr_out));
}

API cudaError_t cudaGraphMemsetNodeGetParams(cudaGraphNode_t node, struct cudaMemsetParams *pNodeParams) {
    if (!pNodeParams)
        return vmc_rt_error(cudaErrorInvalidValue);
    CUDA_MEMSET_NODE_PARAMS m;
    cudaError_t st = vmc_rt_driver_ready(NULL);
    if (st == cudaSuccess)
        st = vmc_rt_status(cuGraphMemsetNodeGetParams((CUgraphNode)node, &m));
    if (st == cudaSuccess)
        *pNodeParams = (struct cudaMemsetParams){(void *)(uintptr_t)m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
    return vmc_rt_error(st);
}

API cudaError_t cudaGraphNodeSetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int isEnabled) {
    VMC_RT_VIA_DRIVER(cuGraphNodeSetEnabled((CUgraphExec)hGraphExec, (CUgraphNode)hNode, isEnabled));
}

API cudaError_t cudaGraphNodeGetEnabled(cudaGraphExec_t hGraphExec, cudaGraphNode_t hNode, unsigned int *isEnabled) {
    VMC_RT_VIA_DRIVER(cuGraphNodeGetEnabled((CUgraphExec)hGraphExec, (CUgraphNode)hNode, isEnabled));
}

API cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr, cudaKernelNodeAttrValue *value_out) {
    VMC_RT_VIA_DRIVER(cuGraphKernelNodeGetAttribute((CUgraphNode)hNode, (CUkernelNodeAttrID)attr, (CUkernelNodeAttrValue *)value_out));
}

API cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t hNode, cudaKernelNodeAttrID attr,
                                                const cudaKernelNodeAttrValue *value) {
    VMC_RT_VIA_DRIVER(cuGraphKernelNodeSetAttribute((CUgraphNode)hNode, (CUkernelNodeAttrID)attr, (const CUkernelNodeAttrValue *)value));
}

API cudaError_t cudaGraphKernelNodeCopyAttributes(cudaGraphNode_t hDst, cudaGraphNode_t hSrc) {
    VMC_RT_VIA_DRIVER(cuGraphKernelNodeCopyAttributes((CUgraphNode)hDst, (CUgraphNode)hSrc));
}

API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                               cudaGraphInstantiateParams *instantiateParams) {
    VMC_RT_VIA_DRIVER(cuGraphInstantiateWithParams((CUgraphExec *)pGraphExec, (CUgraph)graph,
                                                   (CUDA_GRAPH_INSTANTIATE_PARAMS *)instantiateParams));
}

extern cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                       cudaGraphInstantiateParams *instantiateParams);
/* the upload stream is the only stream here, and it is named in the parameters */
API cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    cudaGraphInstantiateParams *instantiateParams) {
    if (instantiateParams && !instantiateParams->uploadStream &&
        (instantiateParams->flags & cudaGraphInstantiateFlagUpload)) {
        cudaGraphInstantiateParams p = *instantiateParams;
        p.uploadStream = cudaStreamPerThread;
        cudaError_t st = cudaGraphInstantiateWithParams(pGraphExec, graph, &p);
        instantiateParams->errNode_out = p.errNode_out;
        instantiateParams->result_out = p.result_out;
        return vmc_rt_error(st);
    }
    return vmc_rt_error(cudaGraphInstantiateWithParams(pGraphExec, graph, instantiateParams));
}

/* The node's context is the thread's current one, as the runtime's has no context argument. */
API cudaError_t cudaGraphConditionalHandleCreate(cudaGraphConditionalHandle *pHandle_out, cudaGraph_t graph,
                                                 unsigned int defaultLaunchValue, unsigned int flags) {
    CUcontext ctx;
    cudaError_t st = vmc_rt_driver_ready(&ctx);
    return vmc_rt_error(st != cudaSuccess ? st
                             : vmc_rt_status(cuGraphConditionalHandleCreate((CUgraphConditionalHandle *)pHandle_out,
                                                                            (CUgraph)graph, ctx, defaultLaunchValue, flags)));
}

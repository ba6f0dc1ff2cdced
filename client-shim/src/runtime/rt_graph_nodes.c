/* Graphs built node by node through the runtime (cudaGraphAdd*Node, cudaGraphAddNode, setting a node's parameters
 * on a graph or an instance, the graph's topology): every node's parameters become the driver's CUgraphNodeParams
 * and go through the driver front end's cuGraphAddNode_v2, cuGraphNodeSetParams and cuGraphExecNodeSetParams
 * (drv_graph_nodes.c), which serve kernels laid out by their parameter layout, host functions run in this process,
 * copies of this process's memory staged through mapped memory on the co-located path, allocation and conditional
 * nodes. What the runtime's parameters lack the driver's are given as NVIDIA's runtime gives them: a kernel's
 * CUfunction in the current context (cudaGetFuncBySymbol on the worker), the current context for copies, memsets
 * and conditional nodes. Copies from or to CUDA arrays in a node are refused with a line saying so. */
#include <stdint.h>
#include <string.h>

#include "rt_copy_params.h"
#include "rt_driver.h"
#include "shim_registry.h"
#include "shim_unsupported.h"

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(cudaGraphEdgeData) == sizeof(CUgraphEdgeData), "cudaGraphEdgeData is CUgraphEdgeData");
_Static_assert(sizeof(struct cudaGraphNodeParams) == sizeof(CUgraphNodeParams), "the node unions have one size");
_Static_assert(cudaGraphNodeTypeConditional == (int)CU_GRAPH_NODE_TYPE_CONDITIONAL &&
                   cudaGraphNodeTypeMemFree == (int)CU_GRAPH_NODE_TYPE_MEM_FREE && cudaGraphNodeTypeEmpty == (int)CU_GRAPH_NODE_TYPE_EMPTY,
               "node types carry the driver's numbers");
_Static_assert(sizeof(struct cudaMemAllocNodeParamsV2) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2),
               "cudaMemAllocNodeParams is CUDA_MEM_ALLOC_NODE_PARAMS");
_Static_assert(sizeof(cudaKernelNodeAttrValue) == sizeof(CUkernelNodeAttrValue),
               "kernel node attribute values are the driver's");

static int told_array, told_type;

/* The runtime's node parameters as the driver's; ctx: the calling thread's current context. */
static cudaError_t to_driver(const struct cudaGraphNodeParams *in, CUgraphNodeParams *out, CUcontext ctx) {
    memset(out, 0, sizeof *out);
    out->type = (CUgraphNodeType)in->type;
    switch (in->type) {
    case cudaGraphNodeTypeKernel: {
        const struct cudaKernelNodeParamsV2 *k = &in->kernel;
        CUfunction f;
        cudaError_t st = vmc_rt_function(k->func, &f);
        if (st != cudaSuccess)
            return st;
        out->kernel = (CUDA_KERNEL_NODE_PARAMS_v3){f, k->gridDim.x, k->gridDim.y, k->gridDim.z, k->blockDim.x, k->blockDim.y,
                                                   k->blockDim.z, k->sharedMemBytes, k->kernelParams, k->extra, NULL, ctx};
        return cudaSuccess;
    }
    case cudaGraphNodeTypeMemcpy:
        out->memcpy.flags = in->memcpy.flags;
        out->memcpy.copyCtx = ctx;
        if (in->memcpy.copyParams.srcArray || in->memcpy.copyParams.dstArray) {
            vmc_not_supported_because("a graph copy node from or to a CUDA array (runtime front end)",
                                      "copy with cudaMemcpy3DAsync on a stream instead, or build the node with the "
                                      "driver API", &told_array);
            return cudaErrorNotSupported;
        }
        return vmc_rt_copy_to_driver(&in->memcpy.copyParams, &out->memcpy.copyParams);
    case cudaGraphNodeTypeMemset: {
        const struct cudaMemsetParamsV2 *m = &in->memset;
        out->memset = (CUDA_MEMSET_NODE_PARAMS_v2){(CUdeviceptr)(uintptr_t)m->dst, m->pitch, m->value, m->elementSize,
                                                   m->width, m->height, ctx};
        return cudaSuccess;
    }
    case cudaGraphNodeTypeHost:
        out->host.fn = in->host.fn, out->host.userData = in->host.userData;
        return cudaSuccess;
    case cudaGraphNodeTypeGraph:
        out->graph.graph = (CUgraph)in->graph.graph;
        out->graph.ownership = (CUgraphChildGraphNodeOwnership)in->graph.ownership;
        return cudaSuccess;
    case cudaGraphNodeTypeEmpty: return cudaSuccess;
    case cudaGraphNodeTypeWaitEvent: out->eventWait.event = (CUevent)in->eventWait.event; return cudaSuccess;
    case cudaGraphNodeTypeEventRecord: out->eventRecord.event = (CUevent)in->eventRecord.event; return cudaSuccess;
    case cudaGraphNodeTypeMemAlloc: memcpy(&out->alloc, &in->alloc, sizeof out->alloc); return cudaSuccess;
    case cudaGraphNodeTypeMemFree: out->free.dptr = (CUdeviceptr)(uintptr_t)in->free.dptr; return cudaSuccess;
    case cudaGraphNodeTypeConditional:
        out->conditional = (CUDA_CONDITIONAL_NODE_PARAMS){(CUgraphConditionalHandle)in->conditional.handle,
                                                          (CUgraphConditionalNodeType)in->conditional.type,
                                                          in->conditional.size, NULL, ctx};
        return cudaSuccess;
    default:
        vmc_not_supported_because("a graph node of this type (external semaphores) through the runtime front end",
                                  "vmcuda serves kernel, copy, memset, host, child-graph, empty, event, allocation, free "
                                  "and conditional nodes", &told_type);
        return cudaErrorNotSupported;
    }
}

/* The node's parameters as the driver's, in the calling thread's current context (made ready first). */
static cudaError_t driver_params(const struct cudaGraphNodeParams *params, CUgraphNodeParams *p) {
    if (!params)
        return cudaErrorInvalidValue;
    CUcontext ctx;
    cudaError_t st = vmc_rt_driver_ready(&ctx);
    return st != cudaSuccess ? st : to_driver(params, p, ctx);
}

static cudaError_t add(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *deps, const cudaGraphEdgeData *edges,
                       size_t n, struct cudaGraphNodeParams *params) {
    CUgraphNodeParams p;
    cudaError_t st = driver_params(params, &p);
    if (st != cudaSuccess)
        return st;
    st = vmc_rt_status(cuGraphAddNode_v2((CUgraphNode *)node, (CUgraph)graph, (const CUgraphNode *)deps,
                                         (const CUgraphEdgeData *)edges, n, &p));
    if (st == cudaSuccess && params->type == cudaGraphNodeTypeMemAlloc)
        params->alloc.dptr = (void *)(uintptr_t)p.alloc.dptr; /* out fields, as natively */
    if (st == cudaSuccess && params->type == cudaGraphNodeTypeConditional)
        params->conditional.phGraph_out = (cudaGraph_t *)p.conditional.phGraph_out;
    return st;
}

/* exec NULL: the graph's node; else the node in that instance. */
static cudaError_t set(cudaGraphExec_t exec, cudaGraphNode_t node, const struct cudaGraphNodeParams *params) {
    CUgraphNodeParams p;
    cudaError_t st = driver_params(params, &p);
    if (st != cudaSuccess)
        return st;
    return vmc_rt_status(exec ? cuGraphExecNodeSetParams((CUgraphExec)exec, (CUgraphNode)node, &p)
                              : cuGraphNodeSetParams((CUgraphNode)node, &p));
}

/* ---- the typed forms, each as a cudaGraphNodeParams ---- */

static struct cudaGraphNodeParams typed(enum cudaGraphNodeType type) {
    struct cudaGraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = type;
    return p;
}

static struct cudaGraphNodeParams kernel(const struct cudaKernelNodeParams *k) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeKernel);
    p.kernel = (struct cudaKernelNodeParamsV2){k->func, k->gridDim, k->blockDim, k->sharedMemBytes, k->kernelParams, k->extra};
    return p;
}

static struct cudaGraphNodeParams copy3d(const struct cudaMemcpy3DParms *c) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeMemcpy);
    p.memcpy.copyParams = *c;
    return p;
}

static struct cudaGraphNodeParams copy1d(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
    struct cudaMemcpy3DParms c;
    memset(&c, 0, sizeof c);
    c.srcPtr = (struct cudaPitchedPtr){(void *)src, count, count, 1};
    c.dstPtr = (struct cudaPitchedPtr){dst, count, count, 1};
    c.extent = (struct cudaExtent){count, 1, 1};
    c.kind = kind;
    return copy3d(&c);
}

static struct cudaGraphNodeParams memset_node(const struct cudaMemsetParams *m) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeMemset);
    p.memset = (struct cudaMemsetParamsV2){m->dst, m->pitch, m->value, m->elementSize, m->width, m->height};
    return p;
}

static struct cudaGraphNodeParams host_node(const struct cudaHostNodeParams *h) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeHost);
    p.host = (struct cudaHostNodeParamsV2){h->fn, h->userData};
    return p;
}

/* A 1-D copy's node parameters; with a symbol, the device side is that symbol's address plus offset (the runtime
 * front end knows the program's symbols): the destination when to_symbol, else the source. As natively, the copy
 * must lie within the symbol and its kind must allow the symbol's side to be the device's. */
static cudaError_t copy1d_at(const void *symbol, int to_symbol, size_t offset, void *dst, const void *src, size_t count,
                             enum cudaMemcpyKind kind, struct cudaGraphNodeParams *out) {
    void *at = NULL;
    if (symbol) {
        enum cudaMemcpyKind other_side_host = to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        if (kind != other_side_host && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
            return cudaErrorInvalidMemcpyDirection;
        const struct vmc_var *v = vmc_var_by_host_var(symbol);
        if (!v)
            return cudaErrorInvalidSymbol;
        if (offset > v->size || count > v->size - offset)
            return cudaErrorInvalidValue;
        cudaError_t st = cudaGetSymbolAddress(&at, symbol);
        if (st != cudaSuccess)
            return st;
        at = (char *)at + offset;
    }
    *out = copy1d(symbol && to_symbol ? at : dst, symbol && !to_symbol ? at : src, count, kind);
    return cudaSuccess;
}

API cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                 const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                 struct cudaGraphNodeParams *nodeParams) {
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, dependencyData, numDependencies, nodeParams));
}

/* cudaGraphAdd<T>Node: the typed parameters as a node's, added after the dependencies given. */
#define TYPED_ADD(T, PARAMS, AS_NODE)                                                                                  \
    API cudaError_t cudaGraphAdd##T##Node(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *dependencies, \
                                          size_t n, const PARAMS *params) {                                            \
        if (!params)                                                                                                   \
            return vmc_rt_error(cudaErrorInvalidValue);                                                                \
        struct cudaGraphNodeParams p = AS_NODE(params);                                                                \
        return vmc_rt_error(add(node, graph, dependencies, NULL, n, &p));                                              \
    }
TYPED_ADD(Kernel, struct cudaKernelNodeParams, kernel)
TYPED_ADD(Memcpy, struct cudaMemcpy3DParms, copy3d)
TYPED_ADD(Memset, struct cudaMemsetParams, memset_node)
TYPED_ADD(Host, struct cudaHostNodeParams, host_node)

API cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                         size_t numDependencies, void *dst, const void *src, size_t count,
                                         enum cudaMemcpyKind kind) {
    struct cudaGraphNodeParams p = copy1d(dst, src, count, kind);
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddMemcpyNodeToSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                               const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                               const void *symbol, const void *src, size_t count, size_t offset,
                                               enum cudaMemcpyKind kind) {
    struct cudaGraphNodeParams p;
    cudaError_t st = copy1d_at(symbol, 1, offset, NULL, src, count, kind, &p);
    return vmc_rt_error(st != cudaSuccess ? st : add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddMemcpyNodeFromSymbol(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                                 const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst,
                                                 const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind) {
    struct cudaGraphNodeParams p;
    cudaError_t st = copy1d_at(symbol, 0, offset, dst, NULL, count, kind, &p);
    return vmc_rt_error(st != cudaSuccess ? st : add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                           size_t numDependencies, cudaGraph_t childGraph) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeGraph);
    p.graph.graph = childGraph;
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                      size_t numDependencies) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeEmpty);
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                            const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeEventRecord);
    p.eventRecord.event = event;
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                          size_t numDependencies, cudaEvent_t event) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeWaitEvent);
    p.eventWait.event = event;
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                         size_t numDependencies, struct cudaMemAllocNodeParams *nodeParams) {
    if (!nodeParams)
        return vmc_rt_error(cudaErrorInvalidValue);
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeMemAlloc);
    _Static_assert(sizeof p.alloc == sizeof *nodeParams, "cudaMemAllocNodeParams and its V2 are alike");
    memcpy(&p.alloc, nodeParams, sizeof *nodeParams);
    cudaError_t st = add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p);
    if (st == cudaSuccess)
        nodeParams->dptr = p.alloc.dptr;
    return vmc_rt_error(st);
}

API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies,
                                        size_t numDependencies, void *dptr) {
    struct cudaGraphNodeParams p = typed(cudaGraphNodeTypeMemFree);
    p.free.dptr = dptr;
    return vmc_rt_error(add(pGraphNode, graph, pDependencies, NULL, numDependencies, &p));
}

/* ---- setting parameters ---- */

API cudaError_t cudaGraphNodeSetParams(cudaGraphNode_t node, struct cudaGraphNodeParams *nodeParams) {
    return vmc_rt_error(set(NULL, node, nodeParams));
}

API cudaError_t cudaGraphExecNodeSetParams(cudaGraphExec_t graphExec, cudaGraphNode_t node,
                                           struct cudaGraphNodeParams *nodeParams) {
    return vmc_rt_error(graphExec ? set(graphExec, node, nodeParams) : cudaErrorInvalidValue);
}

/* cudaGraph<T>NodeSetParams and cudaGraphExec<T>NodeSetParams: the typed parameters as a node's, set on the
 * graph's node or on the node in an instance. */
#define TYPED_SETTERS(T, PARAMS, AS_NODE)                                                                              \
    API cudaError_t cudaGraph##T##NodeSetParams(cudaGraphNode_t node, const PARAMS *params) {                          \
        if (!params)                                                                                                   \
            return vmc_rt_error(cudaErrorInvalidValue);                                                                \
        struct cudaGraphNodeParams p = AS_NODE(params);                                                                \
        return vmc_rt_error(set(NULL, node, &p));                                                                      \
    }                                                                                                                  \
    API cudaError_t cudaGraphExec##T##NodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node, const PARAMS *params) { \
        if (!params || !exec)                                                                                          \
            return vmc_rt_error(cudaErrorInvalidValue);                                                                \
        struct cudaGraphNodeParams p = AS_NODE(params);                                                                \
        return vmc_rt_error(set(exec, node, &p));                                                                      \
    }
TYPED_SETTERS(Kernel, struct cudaKernelNodeParams, kernel)
TYPED_SETTERS(Memcpy, struct cudaMemcpy3DParms, copy3d)
TYPED_SETTERS(Memset, struct cudaMemsetParams, memset_node)
TYPED_SETTERS(Host, struct cudaHostNodeParams, host_node)

/* A 1-D copy's parameters (copy1d_at) set on a graph's node, or on an instance's when on_exec. */
static cudaError_t set_copy1d(cudaGraphExec_t exec, int on_exec, cudaGraphNode_t node, void *dst, const void *src,
                              const void *symbol, int to_symbol, size_t count, size_t offset, enum cudaMemcpyKind kind) {
    if (on_exec && !exec)
        return cudaErrorInvalidValue;
    struct cudaGraphNodeParams p;
    cudaError_t st = copy1d_at(symbol, to_symbol, offset, dst, src, count, kind, &p);
    return st != cudaSuccess ? st : set(exec, node, &p);
}

API cudaError_t cudaGraphMemcpyNodeSetParams1D(cudaGraphNode_t node, void *dst, const void *src, size_t count,
                                               enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(NULL, 0, node, dst, src, NULL, 0, count, 0, kind));
}

API cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void *dst,
                                                   const void *src, size_t count, enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(hGraphExec, 1, node, dst, src, NULL, 0, count, 0, kind));
}

API cudaError_t cudaGraphMemcpyNodeSetParamsToSymbol(cudaGraphNode_t node, const void *symbol, const void *src, size_t count,
                                                     size_t offset, enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(NULL, 0, node, NULL, src, symbol, 1, count, offset, kind));
}

API cudaError_t cudaGraphMemcpyNodeSetParamsFromSymbol(cudaGraphNode_t node, void *dst, const void *symbol, size_t count,
                                                       size_t offset, enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(NULL, 0, node, dst, NULL, symbol, 0, count, offset, kind));
}

API cudaError_t cudaGraphExecMemcpyNodeSetParamsToSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const void *symbol,
                                                         const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(hGraphExec, 1, node, NULL, src, symbol, 1, count, offset, kind));
}

API cudaError_t cudaGraphExecMemcpyNodeSetParamsFromSymbol(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, void *dst,
                                                           const void *symbol, size_t count, size_t offset,
                                                           enum cudaMemcpyKind kind) {
    return vmc_rt_error(set_copy1d(hGraphExec, 1, node, dst, NULL, symbol, 0, count, offset, kind));
}

API cudaError_t cudaGraphExecChildGraphNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, cudaGraph_t childGraph) {
    VMC_RT_VIA_DRIVER(cuGraphExecChildGraphNodeSetParams((CUgraphExec)hGraphExec, (CUgraphNode)node, (CUgraph)childGraph));
}

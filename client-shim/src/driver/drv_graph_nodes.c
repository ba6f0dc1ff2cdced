/* Graph nodes built node by node (cuGraphAddNode, cuGraphAddKernelNode, cuGraphAddMemcpyNode, cuGraphAddHostNode
 * and setting their parameters on a graph or an instantiated graph): XLA's command buffers, CUTLASS and
 * hand-built graphs make them instead of capturing a stream. The graph lives on the worker, so each node's
 * parameters travel there (vmc_drv_GraphAddNode / vmc_drv_GraphSetNodeParams, PROTOCOL.md "Graph nodes"): a
 * kernel's arguments as a launch sends them (laid out by the kernel's parameter layout, which the driver copies
 * when the node is made, as natively), the other supported types as their parameter union, which holds only
 * numbers and handles once host memory is dealt with:
 *   - a host node's function and user data stay here: the worker gets an id of the callback channel's
 *     (shim_callback.h), and its node asks this process to run the function at every execution;
 *   - a copy from or to this process's memory, on the co-located path, becomes a child graph of two nodes:
 *     the copy between the device and a staging buffer of mapped memory (which the worker's GPU reaches at the
 *     same address), and a host node that copies between the staging buffer and the program's memory, before
 *     the copy to the device or after the copy from it (drv_graph_staging.c). Memory that is already mapped is
 *     copied from directly. Between machines such copies are refused with a line saying so, as are the node
 *     types not served yet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bulk.h"
#include "drv_call.h"
#include "drv_graph_staging.h"
#include "drv_launch.h"
#include "shim_callback.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

static int told_type, told_host_copy;

static CUresult not_served(const char *what, const char *why, int *told) { return vmc_drv_not_supported(what, why, told); }

/* A node's parameters, checked and ready to send: for a kernel, its argument bytes laid out; for a host node,
 * the callback's id in place of its function and user data. */
struct prepared {
    CUgraphNodeParams copy;
    const CUgraphNodeParams *p;
    const void *f;    /* kernel: the CUfunction or CUkernel */
    unsigned kind;
    unsigned char *args;
    size_t size;
    int owned;        /* args allocated here */
};

static CUresult prepare(const CUgraphNodeParams *p, struct prepared *out) {
    memset(out, 0, sizeof *out);
    out->p = p;
    if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
        out->f = k->func ? (const void *)k->func : (const void *)k->kern;
        if (!out->f)
            return CUDA_ERROR_INVALID_VALUE;
        return vmc_drv_kernel_arguments(out->f, k->kernelParams, k->extra, &out->args, &out->size, &out->owned, &out->kind);
    }
    if (p->type == CU_GRAPH_NODE_TYPE_HOST) {
        uint64_t id = 0;
        if (!p->host.fn)
            return CUDA_ERROR_INVALID_VALUE;
        CUresult st = (CUresult)vmc_host_callback_keep(p->host.fn, p->host.userData, &id);
        if (st != CUDA_SUCCESS)
            return st;
        out->copy = *p;
        out->copy.host.fn = NULL;
        out->copy.host.userData = (void *)(uintptr_t)id;
        out->p = &out->copy;
        return CUDA_SUCCESS;
    }
    if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        /* the access descriptors travel after the union (the driver reads them when the node is made) */
        if (p->alloc.accessDescCount > VMC_MAX_ALLOC_ACCESS_DESCS || (p->alloc.accessDescCount && !p->alloc.accessDescs))
            return CUDA_ERROR_INVALID_VALUE;
        out->args = (unsigned char *)(uintptr_t)p->alloc.accessDescs;
        out->size = p->alloc.accessDescCount * sizeof(CUmemAccessDesc);
        return CUDA_SUCCESS;
    }
    if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return p->conditional.size == 0 || p->conditional.size > VMC_MAX_CONDITIONAL_BODIES ? CUDA_ERROR_INVALID_VALUE
                                                                                          : CUDA_SUCCESS;
    if (vmc_graph_node_raw_type(p->type)) {
        if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY && !vmc_drv_staging_sendable(&p->memcpy.copyParams))
            return not_served("a graph copy node from or to host memory",
                              "the graph runs on the appliance, which reaches this process's memory only on the "
                              "co-located path; copy with cuMemcpy*Async on a stream instead",
                              &told_host_copy);
        return CUDA_SUCCESS; /* numbers and handles only */
    }
    char what[112];
    snprintf(what, sizeof what, "a graph node of type %d (semaphore or batch)", (int)p->type);
    return not_served(what, "vmcuda serves kernel, copy, memset, host, empty, child-graph, event, allocation, free and conditional nodes", &told_type);
}

/* The node's type, then a kernel's handle, context, dimensions and argument bytes, or any other type's
 * parameter union as it is (graph_node in cuda-driver.spec). */
static struct vmc_graph_node wire_node(const struct prepared *n) {
    const CUgraphNodeParams *p = n->p;
    struct vmc_graph_node w = {.type = (uint32_t)p->type};
    if (p->type != CU_GRAPH_NODE_TYPE_KERNEL) {
        _Static_assert(sizeof w.raw == sizeof p->reserved1, "graph_node.raw is CUgraphNodeParams.reserved1");
        memcpy(w.raw, p->reserved1, sizeof w.raw);
        w.params_bytes = (uint32_t)n->size; /* a memory allocation node's access descriptors */
        w.params = n->args;
        return w;
    }
    const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
    w.function = (uint64_t)(uintptr_t)n->f;
    w.kind = (uint8_t)n->kind;
    w.context = (uint64_t)(uintptr_t)k->ctx;
    uint32_t dims[7] = {k->gridDimX, k->gridDimY, k->gridDimZ, k->blockDimX, k->blockDimY, k->blockDimZ, k->sharedMemBytes};
    memcpy(w.dims, dims, sizeof dims);
    w.params_bytes = (uint32_t)n->size;
    w.params = n->args;
    return w;
}

/* Parameters are checked and laid out before the call starts, so a refusal sends nothing. */
CUresult vmc_drv_graph_add_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         const CUgraphEdgeData *edges, size_t n, const CUgraphNodeParams *params) {
    if (!phGraphNode || !params || (n && !dependencies) || n > VMC_GRAPH_MAX_DEPENDENCIES)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams resolved;
    if (params->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        resolved = *params;
        vmc_drv_staging_resolve_unified(&resolved.memcpy.copyParams);
        if (vmc_drv_staging_needed(&resolved.memcpy.copyParams))
            return vmc_drv_staged_copy_node(phGraphNode, hGraph, dependencies, edges, n, &resolved.memcpy);
        params = &resolved;
    }
    struct prepared node_params;
    CUresult st = prepare(params, &node_params);
    struct vmc_call c;
    if (st == CUDA_SUCCESS)
        st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_GraphAddNode, 0);
    if (st != CUDA_SUCCESS) {
        if (node_params.owned)
            free(node_params.args);
        return st;
    }
    _Static_assert(sizeof(CUgraphNode) == sizeof(uint64_t), "handles travel as 64-bit numbers");
    vmc_put_graph_add_node_args(vmc_call_args(&c), &(struct vmc_graph_add_node_args){
        .graph = (uint64_t)(uintptr_t)hGraph, .n_dependencies = (uint32_t)n, .dependencies = dependencies,
        .n_edges = edges ? (uint32_t)n : 0, .edges = edges, .node = wire_node(&node_params)});
    st = (CUresult)vmc_call_finish(&c);
    if (node_params.owned)
        free(node_params.args);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_graph_node_handle r;
    vmc_get_graph_node_handle(&c.reply, &r);
    if (!vmc_call_reply_ok(&c))
        return CUDA_ERROR_UNKNOWN;
    *phGraphNode = (CUgraphNode)(uintptr_t)r.node;
    if (params->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        ((CUgraphNodeParams *)params)->alloc.dptr = (CUdeviceptr)r.alloc_address; /* an out field, as natively */
        /* device memory for cudaMemcpyDefault and unified copy sides (the graph reserves the range for its life) */
        vmc_device_range_add(r.alloc_address, params->alloc.bytesize);
    }
    if (params->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        /* the body graphs, in an array that lives as long as the node may (the driver owns its own natively) */
        CUgraph *bodies = r.n_bodies == params->conditional.size ? calloc(r.n_bodies, sizeof *bodies) : NULL;
        if (!bodies)
            return CUDA_ERROR_UNKNOWN;
        for (uint32_t i = 0; i < r.n_bodies; i++)
            bodies[i] = (CUgraph)(uintptr_t)vmc_graph_node_handle_bodies_at(&r, i);
        ((CUgraphNodeParams *)params)->conditional.phGraph_out = bodies;
    }
    return CUDA_SUCCESS;
}

/* exec NULL: cuGraphNodeSetParams on the graph's node; else cuGraphExecNodeSetParams on the instance. */
static CUresult set_params(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams *params, int on_exec) {
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams resolved;
    if (params->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        resolved = *params;
        vmc_drv_staging_resolve_unified(&resolved.memcpy.copyParams);
        params = &resolved;
    }
    struct prepared n;
    CUresult st = prepare(params, &n);
    struct vmc_call c;
    if (st == CUDA_SUCCESS)
        st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_GraphSetNodeParams, 0);
    if (st == CUDA_SUCCESS) {
        vmc_put_graph_set_node_params_args(vmc_call_args(&c), &(struct vmc_graph_set_node_params_args){
            .on_exec = on_exec != 0, .exec = (uint64_t)(uintptr_t)exec, .node_handle = (uint64_t)(uintptr_t)node,
            .node = wire_node(&n)});
        st = (CUresult)vmc_call_finish(&c);
    }
    if (n.owned)
        free(n.args);
    return st;
}

static CUgraphNodeParams kernel_params(CUfunction f, CUkernel kern, CUcontext ctx, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shared, void **kernelParams,
                                       void **extra) {
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    p.kernel = (CUDA_KERNEL_NODE_PARAMS_v3){f, gx, gy, gz, bx, by, bz, shared, kernelParams, extra, kern, ctx};
    return p;
}

static CUgraphNodeParams from_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *k) {
    return kernel_params(k->func, NULL, NULL, k->gridDimX, k->gridDimY, k->gridDimZ, k->blockDimX, k->blockDimY,
                         k->blockDimZ, k->sharedMemBytes, k->kernelParams, k->extra);
}

static CUgraphNodeParams from_v2(const CUDA_KERNEL_NODE_PARAMS_v2 *k) {
    return kernel_params(k->func, k->kern, k->ctx, k->gridDimX, k->gridDimY, k->gridDimZ, k->blockDimX, k->blockDimY,
                         k->blockDimZ, k->sharedMemBytes, k->kernelParams, k->extra);
}

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUgraphNodeParams *nodeParams) {
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                  CUgraphNodeParams *nodeParams) {
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v1(nodeParams);
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &p);
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                        size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v2(nodeParams);
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &p);
}

EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                     size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
    if (!copyParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    p.memcpy.copyCtx = ctx;
    p.memcpy.copyParams = *copyParams;
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &p);
}

EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_HOST;
    p.host.fn = nodeParams->fn;
    p.host.userData = nodeParams->userData;
    return vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &p);
}

static CUgraphNodeParams host_params(const CUDA_HOST_NODE_PARAMS *h) {
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_HOST;
    p.host.fn = h->fn;
    p.host.userData = h->userData;
    return p;
}

EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = host_params(nodeParams);
    return set_params(NULL, hNode, &p, 0);
}

EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                             const CUDA_HOST_NODE_PARAMS *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = host_params(nodeParams);
    return set_params(hGraphExec, hNode, &p, 1);
}

EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                       size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    _Static_assert(sizeof p.alloc == sizeof *nodeParams, "CUDA_MEM_ALLOC_NODE_PARAMS v1 and v2 are alike");
    memcpy(&p.alloc, nodeParams, sizeof *nodeParams);
    CUresult st = vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, &p);
    if (st == CUDA_SUCCESS)
        nodeParams->dptr = p.alloc.dptr;
    return st;
}

static CUresult graph_mem_attribute(CUdevice device, CUgraphMem_attribute attr, void *value, int set) {
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_GraphMemAttribute, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_graph_mem_attribute_args(vmc_call_args(&c), &(struct vmc_graph_mem_attribute_args){
        .device = (uint32_t)device, .attribute = (uint32_t)attr, .set = (uint8_t)set,
        .value = set ? *(const cuuint64_t *)value : 0});
    st = (CUresult)vmc_call_finish(&c);
    struct vmc_pool_attribute_value v;
    vmc_get_pool_attribute_value(&c.reply, &v);
    if (st == CUDA_SUCCESS && !set)
        *(cuuint64_t *)value = v.value;
    return st;
}

EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
    return graph_mem_attribute(device, attr, value, 0);
}

EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
    return graph_mem_attribute(device, attr, value, 1);
}

EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
    return set_params(NULL, hNode, nodeParams, 0);
}

EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams) {
    return set_params(hGraphExec, hNode, nodeParams, 1);
}

EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v1(nodeParams);
    return set_params(NULL, hNode, &p, 0);
}

EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v2(nodeParams);
    return set_params(NULL, hNode, &p, 0);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                               const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v1(nodeParams);
    return set_params(hGraphExec, hNode, &p, 1);
}

EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphNodeParams p = from_v2(nodeParams);
    return set_params(hGraphExec, hNode, &p, 1);
}

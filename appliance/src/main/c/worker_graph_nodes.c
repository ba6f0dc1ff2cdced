/* vmc_drv_GraphAddNode / vmc_drv_GraphSetNodeParams (PROTOCOL.md "Graph nodes"): graph nodes made node by
 * node on the client (drv_graph_nodes.c), made here with NVIDIA's generic cuGraphAddNode_v2 and
 * cuGraph(Exec)NodeSetParams. A kernel node's arguments arrive laid out as a launch's do and are given to
 * the driver as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER), which it copies into the node. Other types
 * arrive as their parameter union: only numbers and handles are accepted (a copy node must have device
 * memory or arrays on both sides, or one side in the client's mapped host memory; other host pointers are
 * cleared); a host node's user data is the client's callback id, and its function one of ours that asks the
 * client to run it (worker_callback.c); a memory allocation node's access descriptors follow the union; a
 * conditional node's body graphs go back in the reply; every other type is refused. */
#include "worker_driver.h"
#include <cudaTypedefs.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"
#include "worker.h"

/* Parameters read from the call, and what a kernel node's `extra` points to while the driver reads it. */
struct node_params {
    CUgraphNodeParams p;
    void *extra[5];
    size_t args_size;
};

/* A copy node's host side must lie in the client's mapped host memory (a staging buffer the client made for a
 * copy from or to its own memory, PROTOCOL.md "Graph nodes"), at the same address here: 0 when it does not.
 * Every product is checked for overflow, and the side is rewritten to start at the first byte checked, with an
 * explicit height, so that the driver addresses exactly the extent that was checked. */
static int host_side_mapped(CUDA_MEMCPY3D *m, int src) {
    const void *host = src ? m->srcHost : m->dstHost;
    size_t *x = src ? &m->srcXInBytes : &m->dstXInBytes, *y = src ? &m->srcY : &m->dstY, *z = src ? &m->srcZ : &m->dstZ;
    size_t *pitch = src ? &m->srcPitch : &m->dstPitch, *height = src ? &m->srcHeight : &m->dstHeight;
    uint64_t w = m->WidthInBytes, h = m->Height ? m->Height : 1, d = m->Depth ? m->Depth : 1;
    uint64_t p = *pitch ? *pitch : w, rows = *height ? *height : h;
    uint64_t slice, at_y, at_z, first, last_slice, last_row, extent, at;
    if (!host || w == 0 || (h > 1 && p < w) || (d > 1 && rows < h) ||
        __builtin_mul_overflow(p, rows, &slice) || __builtin_mul_overflow((uint64_t)*y, p, &at_y) ||
        __builtin_mul_overflow((uint64_t)*z, slice, &at_z) || __builtin_add_overflow((uint64_t)*x, at_y, &first) ||
        __builtin_add_overflow(first, at_z, &first) || __builtin_mul_overflow(d - 1, slice, &last_slice) ||
        __builtin_mul_overflow(h - 1, p, &last_row) || __builtin_add_overflow(last_slice, last_row, &extent) ||
        __builtin_add_overflow(extent, w, &extent) || __builtin_add_overflow((uint64_t)(uintptr_t)host, first, &at))
        return 0;
    if (vmc_w_hostmap_translate(at, extent) != (void *)(uintptr_t)at)
        return 0;
    if (src)
        m->srcHost = (const void *)(uintptr_t)at;
    else
        m->dstHost = (void *)(uintptr_t)at;
    *x = *y = *z = 0;
    *pitch = (size_t)p;
    *height = (size_t)rows;
    return 1;
}

/* 1: the parameters as the driver takes them; 0: not what the client may send; -1: no room for a host node. */
static int node_params_of(const struct vmc_graph_node *w, struct node_params *n) {
    memset(n, 0, sizeof *n);
    CUgraphNodeParams *p = &n->p;
    p->type = (CUgraphNodeType)w->type;
    if (p->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        if (w->kind > VMC_KIND_KERNEL || w->params_bytes > VMC_MAX_LAUNCH_ARG_BYTES)
            return 0;
        if (w->kind == VMC_KIND_KERNEL)
            p->kernel.kern = (CUkernel)(uintptr_t)w->function;
        else
            p->kernel.func = (CUfunction)(uintptr_t)w->function;
        p->kernel.ctx = (CUcontext)(uintptr_t)w->context;
        p->kernel.gridDimX = w->dims[0], p->kernel.gridDimY = w->dims[1], p->kernel.gridDimZ = w->dims[2];
        p->kernel.blockDimX = w->dims[3], p->kernel.blockDimY = w->dims[4], p->kernel.blockDimZ = w->dims[5];
        p->kernel.sharedMemBytes = w->dims[6];
        if (w->params_bytes) {
            n->args_size = w->params_bytes;
            n->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, n->extra[1] = (void *)w->params;
            n->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, n->extra[3] = &n->args_size;
            n->extra[4] = CU_LAUNCH_PARAM_END;
            p->kernel.extra = n->extra;
        }
        return 1;
    }
    if (!vmc_graph_node_raw_type(p->type) && p->type != CU_GRAPH_NODE_TYPE_HOST && p->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
        p->type != CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return 0;
    if (p->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC && w->params_bytes != 0)
        return 0; /* only kernels and allocations carry bytes after the union */
    _Static_assert(sizeof w->raw == sizeof p->reserved1, "graph_node.raw is CUgraphNodeParams.reserved1");
    memcpy(p->reserved1, w->raw, sizeof p->reserved1);
    if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
        /* the driver gives back its own array of body graphs, which the reply carries */
        if (p->conditional.size == 0 || p->conditional.size > VMC_MAX_CONDITIONAL_BODIES)
            return 0;
        p->conditional.phGraph_out = NULL;
        return 1;
    }
    if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        /* the access descriptors arrive after the union; no pointer of the client's is kept */
        CUDA_MEM_ALLOC_NODE_PARAMS_v2 *a = &p->alloc;
        if (a->accessDescCount > VMC_MAX_ALLOC_ACCESS_DESCS || w->params_bytes != a->accessDescCount * sizeof(CUmemAccessDesc))
            return 0;
        a->accessDescs = a->accessDescCount ? (const CUmemAccessDesc *)(const void *)w->params : NULL;
        a->poolProps.win32SecurityAttributes = NULL;
        a->dptr = 0;
        return 1;
    }
    if (p->type == CU_GRAPH_NODE_TYPE_HOST) {
        /* userData is the client's callback id; the function is ours, which asks the client to run it */
        void (*fn)(void *);
        void *kept = vmc_w_kept_callback((uint64_t)(uintptr_t)p->host.userData, &fn);
        if (!kept)
            return -1;
        p->host.fn = fn;
        p->host.userData = kept;
        return 1;
    }
    if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        CUDA_MEMCPY3D *m = &p->memcpy.copyParams;
        int src_ok = vmc_graph_copy_on_device(m->srcMemoryType) ||
                     (m->srcMemoryType == CU_MEMORYTYPE_HOST && vmc_graph_copy_on_device(m->dstMemoryType) && host_side_mapped(m, 1));
        int dst_ok = vmc_graph_copy_on_device(m->dstMemoryType) ||
                     (m->dstMemoryType == CU_MEMORYTYPE_HOST && vmc_graph_copy_on_device(m->srcMemoryType) && host_side_mapped(m, 0));
        if (!src_ok || !dst_ok)
            return 0;
        if (m->srcMemoryType != CU_MEMORYTYPE_HOST)
            m->srcHost = NULL;
        if (m->dstMemoryType != CU_MEMORYTYPE_HOST)
            m->dstHost = NULL;
    }
    return 1;
}

static enum vmc_w_result add_node(struct vmc_wcall *wc) {
    struct vmc_graph_add_node_args a;
    vmc_get_graph_add_node_args(&wc->in, &a);
    uint32_t n = a.n_dependencies;
    struct node_params params;
    int ok = vmc_w_args_ok(wc) ? node_params_of(&a.node, &params) : 0;
    if (!ok || wc->async || n > VMC_GRAPH_MAX_DEPENDENCIES || (a.n_edges != 0 && a.n_edges != n))
        return VMC_W_BAD_ARGS;
    if (ok < 0) {
        vmc_w_reply_status(wc, (cudaError_t)CUDA_ERROR_OUT_OF_MEMORY);
        return VMC_W_DONE;
    }
    CUgraphNode deps[n ? n : 1];
    for (uint32_t i = 0; i < n; i++)
        deps[i] = (CUgraphNode)(uintptr_t)vmc_graph_add_node_args_dependencies_at(&a, i);
    CUgraphEdgeData edges[n ? n : 1];
    memcpy(edges, a.edges, a.n_edges * sizeof edges[0]);
    DRV(PFN_cuGraphAddNode_v12030, add, "cuGraphAddNode", 12030, 0);
    CUgraphNode node = NULL;
    CUresult st = add ? add(&node, (CUgraph)(uintptr_t)a.graph, n ? deps : NULL, a.n_edges ? edges : NULL, n, &params.p)
                      : vmc_w_drv_missing("cuGraphAddNode_v2");
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS) {
        int conditional = params.p.type == CU_GRAPH_NODE_TYPE_CONDITIONAL && params.p.conditional.phGraph_out;
        uint32_t n_bodies = conditional ? params.p.conditional.size : 0;
        uint64_t bodies[n_bodies ? n_bodies : 1];
        for (uint32_t i = 0; i < n_bodies; i++)
            bodies[i] = (uint64_t)(uintptr_t)params.p.conditional.phGraph_out[i];
        vmc_put_graph_node_handle(vmc_w_reply_out(wc), &(struct vmc_graph_node_handle){
            .node = (uint64_t)(uintptr_t)node,
            .alloc_address = params.p.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ? (uint64_t)params.p.alloc.dptr : 0,
            .n_bodies = n_bodies, .bodies = bodies});
    }
    return VMC_W_DONE;
}

static enum vmc_w_result set_node_params(struct vmc_wcall *wc) {
    struct vmc_graph_set_node_params_args a;
    vmc_get_graph_set_node_params_args(&wc->in, &a);
    unsigned on_exec = a.on_exec;
    CUgraphExec exec = (CUgraphExec)(uintptr_t)a.exec;
    CUgraphNode node = (CUgraphNode)(uintptr_t)a.node_handle;
    struct node_params params;
    int ok = vmc_w_args_ok(wc) ? node_params_of(&a.node, &params) : 0;
    if (!ok || on_exec > 1 || wc->async)
        return VMC_W_BAD_ARGS;
    if (ok < 0) {
        vmc_w_reply_status(wc, (cudaError_t)CUDA_ERROR_OUT_OF_MEMORY);
        return VMC_W_DONE;
    }
    CUresult st;
    if (on_exec) {
        DRV(PFN_cuGraphExecNodeSetParams_v12020, set_exec, "cuGraphExecNodeSetParams", 12020, 0);
        st = set_exec ? set_exec(exec, node, &params.p) : vmc_w_drv_missing("cuGraphExecNodeSetParams");
    } else {
        DRV(PFN_cuGraphNodeSetParams_v12020, set, "cuGraphNodeSetParams", 12020, 0);
        st = set ? set(node, &params.p) : vmc_w_drv_missing("cuGraphNodeSetParams");
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

/* cuDeviceGetGraphMemAttribute / cuDeviceSetGraphMemAttribute: every value is a cuuint64_t. */
static enum vmc_w_result graph_mem_attribute(struct vmc_wcall *wc) {
    struct vmc_graph_mem_attribute_args a;
    vmc_get_graph_mem_attribute_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async || a.set > 1)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuDeviceGetGraphMemAttribute_v11040, get, "cuDeviceGetGraphMemAttribute", 11040, 0);
    DRV(PFN_cuDeviceSetGraphMemAttribute_v11040, set, "cuDeviceSetGraphMemAttribute", 11040, 0);
    cuuint64_t value = a.value;
    CUresult st = a.set ? (set ? set((CUdevice)a.device, (CUgraphMem_attribute)a.attribute, &value)
                               : vmc_w_drv_missing("cuDeviceSetGraphMemAttribute"))
                        : (get ? get((CUdevice)a.device, (CUgraphMem_attribute)a.attribute, &value)
                               : vmc_w_drv_missing("cuDeviceGetGraphMemAttribute"));
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_pool_attribute_value(vmc_w_reply_out(wc), &(struct vmc_pool_attribute_value){.value = value});
    return VMC_W_DONE;
}

int vmc_w_graph_nodes_dispatch(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_DRV_vmc_drv_GraphMemAttribute: *r = graph_mem_attribute(wc); return 1;
    case VMC_DRV_vmc_drv_GraphAddNode: *r = add_node(wc); return 1;
    case VMC_DRV_vmc_drv_GraphSetNodeParams: *r = set_node_params(wc); return 1;
    default: return 0;
    }
}

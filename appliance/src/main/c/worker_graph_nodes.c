/* vmc_drv_GraphAddNode / vmc_drv_GraphSetNodeParams (PROTOCOL.md "Graph nodes"): graph nodes made node by
 * node on the client (drv_graph_nodes.c), made here with NVIDIA's generic cuGraphAddNode_v2 and
 * cuGraph(Exec)NodeSetParams. A kernel node's arguments arrive laid out as a launch's do and are given to
 * the driver as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER), which it copies into the node. Other types
 * arrive as their parameter union: only numbers and handles are accepted (a copy node must have device
 * memory or arrays on both sides; host pointers are cleared), every other type is refused. */
#include "worker_driver.h"
#include <cudaTypedefs.h>
#include <string.h>

#include "vmc_drv_api.h"
#include "vmc_drv_wire.h"

/* Parameters read from the call, and what a kernel node's `extra` points to while the driver reads it. */
struct node_params {
    CUgraphNodeParams p;
    void *extra[5];
    size_t args_size;
};

/* 0 when the parameters are not what the client may send. */
static int read_params(struct vmc_wcall *wc, struct node_params *n) {
    memset(n, 0, sizeof *n);
    CUgraphNodeParams *p = &n->p;
    p->type = (CUgraphNodeType)vmc_in_u32(&wc->in);
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        uint64_t f = vmc_in_u64(&wc->in);
        unsigned kind = vmc_in_u8(&wc->in);
        p->kernel.ctx = (CUcontext)(uintptr_t)vmc_in_u64(&wc->in);
        uint32_t dims[7];
        vmc_in_bytes(&wc->in, dims, sizeof dims);
        uint32_t bytes = vmc_in_u32(&wc->in);
        if (kind > VMC_KIND_KERNEL || bytes > VMC_MAX_LAUNCH_ARG_BYTES)
            return 0;
        const void *args = vmc_in_view(&wc->in, bytes);
        if (kind == VMC_KIND_KERNEL)
            p->kernel.kern = (CUkernel)(uintptr_t)f;
        else
            p->kernel.func = (CUfunction)(uintptr_t)f;
        p->kernel.gridDimX = dims[0], p->kernel.gridDimY = dims[1], p->kernel.gridDimZ = dims[2];
        p->kernel.blockDimX = dims[3], p->kernel.blockDimY = dims[4], p->kernel.blockDimZ = dims[5];
        p->kernel.sharedMemBytes = dims[6];
        if (bytes) {
            n->args_size = bytes;
            n->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, n->extra[1] = (void *)args;
            n->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, n->extra[3] = &n->args_size;
            n->extra[4] = CU_LAUNCH_PARAM_END;
            p->kernel.extra = n->extra;
        }
        return 1;
    }
    default:
        break;
    }
    if (!vmc_graph_node_raw_type(p->type))
        return 0;
    vmc_in_bytes(&wc->in, p->reserved1, sizeof p->reserved1);
    if (p->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
        CUDA_MEMCPY3D *m = &p->memcpy.copyParams;
        if (!vmc_graph_copy_on_device(m->srcMemoryType) || !vmc_graph_copy_on_device(m->dstMemoryType))
            return 0;
        m->srcHost = NULL, m->dstHost = NULL;
    }
    return 1;
}

static enum vmc_w_result add_node(struct vmc_wcall *wc) {
    CUgraph graph = (CUgraph)(uintptr_t)vmc_in_u64(&wc->in);
    uint32_t n = vmc_in_u32(&wc->in);
    if (n > VMC_GRAPH_MAX_DEPENDENCIES)
        return VMC_W_BAD_ARGS;
    CUgraphNode deps[n ? n : 1];
    for (uint32_t i = 0; i < n; i++)
        deps[i] = (CUgraphNode)(uintptr_t)vmc_in_u64(&wc->in);
    unsigned with_edges = vmc_in_u8(&wc->in);
    CUgraphEdgeData edges[n ? n : 1];
    if (with_edges)
        vmc_in_bytes(&wc->in, edges, n * sizeof edges[0]);
    struct node_params params;
    if (with_edges > 1 || !read_params(wc, &params) || !vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    DRV(PFN_cuGraphAddNode_v12030, add, "cuGraphAddNode", 12030, 0);
    CUgraphNode node = NULL;
    CUresult st = add ? add(&node, graph, n ? deps : NULL, with_edges ? edges : NULL, n, &params.p)
                      : vmc_w_drv_missing("cuGraphAddNode_v2");
    vmc_w_reply_status(wc, (cudaError_t)st);
    if (st == CUDA_SUCCESS) {
        uint64_t h = (uint64_t)(uintptr_t)node;
        vmc_w_reply_pointee(wc, &h, sizeof h);
    }
    return VMC_W_DONE;
}

static enum vmc_w_result set_node_params(struct vmc_wcall *wc) {
    unsigned on_exec = vmc_in_u8(&wc->in);
    CUgraphExec exec = (CUgraphExec)(uintptr_t)vmc_in_u64(&wc->in);
    CUgraphNode node = (CUgraphNode)(uintptr_t)vmc_in_u64(&wc->in);
    struct node_params params;
    if (on_exec > 1 || !read_params(wc, &params) || !vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
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

int vmc_w_graph_nodes_dispatch(struct vmc_wcall *wc, enum vmc_w_result *r) {
    switch (wc->id) {
    case VMC_DRV_vmc_drv_GraphAddNode: *r = add_node(wc); return 1;
    case VMC_DRV_vmc_drv_GraphSetNodeParams: *r = set_node_params(wc); return 1;
    default: return 0;
    }
}

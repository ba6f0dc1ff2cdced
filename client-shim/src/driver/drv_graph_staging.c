/* Graph copy nodes with one side in this process's memory, on the co-located path (PROTOCOL.md "Graph nodes").
 * The graph runs on the worker, whose GPU reaches only mapped memory of this process (hostmap.h), at the same
 * address. A copy from or to mapped memory goes as it is. Any other memory is staged: the copy becomes a child
 * graph of a device copy between the device side and a packed buffer of mapped memory, and a host node that
 * runs here (the callback channel) and copies between that buffer and the program's memory, before the copy
 * to the device or after the copy from it, at every execution of the graph, as a native graph reads and writes
 * the program's memory when it runs. The buffer and the host node's record stay for the process: a graph and
 * the instances made from it may outlive each other, and no one call says when none is left. */
#include "drv_graph_staging.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"
#include "drv_call.h"
#include "bulk.h"
#include "hostmap.h"
#include "shim_shm.h"

/* The host side of a copy: where its region starts here and how far it reaches. */
struct host_side {
    unsigned char *first;
    size_t pitch, slice; /* bytes from one row, one slice, to the next */
    size_t extent;       /* from the first byte to one past the last */
};

static size_t rows_of(const CUDA_MEMCPY3D *m) { return m->Height ? m->Height : 1; }
static size_t depth_of(const CUDA_MEMCPY3D *m) { return m->Depth ? m->Depth : 1; }

/* Whether p is this process's host memory (not device memory): a HOST side, or a UNIFIED one whose pointer
 * the driver does not know as device memory. */
static int is_host(CUmemorytype type, const void *host, CUdeviceptr device) {
    if (type == CU_MEMORYTYPE_HOST)
        return 1;
    if (type != CU_MEMORYTYPE_UNIFIED)
        return 0;
    unsigned int kind = 0;
    CUresult st = cuPointerGetAttribute(&kind, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, device ? device : (CUdeviceptr)(uintptr_t)host);
    return st != CUDA_SUCCESS || kind == CU_MEMORYTYPE_HOST;
}

void vmc_drv_staging_resolve_unified(CUDA_MEMCPY3D *m) {
    if (m->srcMemoryType == CU_MEMORYTYPE_UNIFIED) {
        int host = is_host(m->srcMemoryType, m->srcHost, m->srcDevice);
        CUdeviceptr at = m->srcDevice ? m->srcDevice : (CUdeviceptr)(uintptr_t)m->srcHost;
        m->srcMemoryType = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        m->srcHost = host ? (const void *)(uintptr_t)at : NULL;
        m->srcDevice = host ? 0 : at;
    }
    if (m->dstMemoryType == CU_MEMORYTYPE_UNIFIED) {
        int host = is_host(m->dstMemoryType, m->dstHost, m->dstDevice);
        CUdeviceptr at = m->dstDevice ? m->dstDevice : (CUdeviceptr)(uintptr_t)m->dstHost;
        m->dstMemoryType = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        m->dstHost = host ? (void *)(uintptr_t)at : NULL;
        m->dstDevice = host ? 0 : at;
    }
}

/* -1: neither side is host memory; 1: the source is; 0: the destination is (never both: a host-to-host copy is
 * no GPU work, refused as natively by the worker's driver). */
static int host_is_source(const CUDA_MEMCPY3D *m) {
    if (is_host(m->srcMemoryType, m->srcHost, m->srcDevice))
        return 1;
    if (is_host(m->dstMemoryType, m->dstHost, m->dstDevice))
        return 0;
    return -1;
}

/* -1 when the region's arithmetic overflows or its geometry is impossible (the driver refuses it natively). */
static int host_side(const CUDA_MEMCPY3D *m, int src, struct host_side *h) {
    const unsigned char *base = src ? (m->srcHost ? m->srcHost : (const void *)(uintptr_t)m->srcDevice)
                                    : (m->dstHost ? m->dstHost : (const void *)(uintptr_t)m->dstDevice);
    size_t x = src ? m->srcXInBytes : m->dstXInBytes, y = src ? m->srcY : m->dstY, z = src ? m->srcZ : m->dstZ;
    size_t pitch = src ? m->srcPitch : m->dstPitch, height = src ? m->srcHeight : m->dstHeight;
    size_t w = m->WidthInBytes, rows = rows_of(m), depth = depth_of(m);
    if (!base || w == 0)
        return -1;
    if (pitch == 0)
        pitch = w;
    if (height == 0)
        height = rows;
    size_t slice, at_y, at_z, first, last_slice, last_row, extent, packed;
    if ((rows > 1 && pitch < w) || (depth > 1 && height < rows) || __builtin_mul_overflow(pitch, height, &slice) ||
        __builtin_mul_overflow(y, pitch, &at_y) || __builtin_mul_overflow(z, slice, &at_z) ||
        __builtin_add_overflow(x, at_y, &first) || __builtin_add_overflow(first, at_z, &first) ||
        __builtin_mul_overflow(depth - 1, slice, &last_slice) || __builtin_mul_overflow(rows - 1, pitch, &last_row) ||
        __builtin_add_overflow(last_slice, last_row, &extent) || __builtin_add_overflow(extent, w, &extent) ||
        __builtin_mul_overflow(w, rows, &packed) || __builtin_mul_overflow(packed, depth, &packed) ||
        (uintptr_t)base + first < (uintptr_t)base)
        return -1;
    h->pitch = pitch;
    h->slice = slice;
    h->first = (unsigned char *)base + first;
    h->extent = extent;
    return 0;
}

/* Mapped memory the worker's GPU reaches at this very address. */
static int mapped_here(const struct host_side *h) {
    uint64_t device = 0;
    return vmc_hostmap_contains(h->first, h->extent) && vmc_hostmap_device_pointer(h->first, &device) &&
           device == (uint64_t)(uintptr_t)h->first;
}

int vmc_drv_staging_sendable(const CUDA_MEMCPY3D *m) {
    int src = host_is_source(m);
    struct host_side h;
    return src < 0 || (host_side(m, src, &h) == 0 && mapped_here(&h));
}

int vmc_drv_staging_needed(const CUDA_MEMCPY3D *m) {
    int src = host_is_source(m);
    struct host_side h;
    return src >= 0 && vmc_shm_colocated() && host_side(m, src, &h) == 0 && !mapped_here(&h);
}

/* What a staging host node does at each execution. */
struct staged {
    unsigned char *program; /* the program's region: rows of `width` bytes, `pitch` apart, slices `slice` apart */
    size_t pitch, slice;
    unsigned char *buffer; /* packed: rows of `width` bytes, one after the other */
    size_t width, rows, depth;
};

static void copy_rows(const struct staged *s, int to_buffer) {
    unsigned char *packed = s->buffer;
    for (size_t z = 0; z < s->depth; z++)
        for (size_t y = 0; y < s->rows; y++, packed += s->width) {
            unsigned char *there = s->program + z * s->slice + y * s->pitch;
            if (to_buffer)
                memcpy(packed, there, s->width);
            else
                memcpy(there, packed, s->width);
        }
}

static void CUDA_CB pack(void *arg) { copy_rows(arg, 1); }
static void CUDA_CB unpack(void *arg) { copy_rows(arg, 0); }

static CUresult add_host_node(CUgraphNode *node, CUgraph g, const CUgraphNode *dep, size_t n, CUhostFn fn, void *arg) {
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_HOST;
    p.host.fn = fn;
    p.host.userData = arg;
    return vmc_drv_graph_add_node(node, g, dep, NULL, n, &p);
}

CUresult vmc_drv_staged_copy_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const CUgraphEdgeData *edges, size_t n, const CUDA_MEMCPY_NODE_PARAMS *params) {
    const CUDA_MEMCPY3D *m = &params->copyParams;
    int to_device = host_is_source(m);
    struct host_side h;
    if (to_device < 0 || host_side(m, to_device, &h) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct staged *s = calloc(1, sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *s = (struct staged){.program = h.first, .pitch = h.pitch, .slice = h.slice, .width = m->WidthInBytes,
                         .rows = rows_of(m), .depth = depth_of(m)};
    void *buffer = NULL;
    CUresult st = (CUresult)vmc_hostmap_map(&buffer, s->width * s->rows * s->depth);
    if (st != CUDA_SUCCESS) {
        free(s);
        return st;
    }
    s->buffer = buffer;
    /* the device copy: the host side becomes the packed buffer */
    CUgraphNodeParams copy;
    memset(&copy, 0, sizeof copy);
    copy.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    copy.memcpy = *params;
    CUDA_MEMCPY3D *c = &copy.memcpy.copyParams;
    if (to_device) {
        c->srcMemoryType = CU_MEMORYTYPE_HOST, c->srcHost = buffer, c->srcDevice = 0;
        c->srcXInBytes = c->srcY = c->srcZ = 0, c->srcPitch = s->width, c->srcHeight = s->rows;
    } else {
        c->dstMemoryType = CU_MEMORYTYPE_HOST, c->dstHost = buffer, c->dstDevice = 0;
        c->dstXInBytes = c->dstY = c->dstZ = 0, c->dstPitch = s->width, c->dstHeight = s->rows;
    }
    CUgraph child = NULL;
    CUgraphNode first = NULL, second = NULL;
    st = cuGraphCreate(&child, 0);
    if (st == CUDA_SUCCESS)
        st = to_device ? add_host_node(&first, child, NULL, 0, pack, s) : vmc_drv_graph_add_node(&first, child, NULL, NULL, 0, &copy);
    if (st == CUDA_SUCCESS)
        st = to_device ? vmc_drv_graph_add_node(&second, child, &first, NULL, 1, &copy)
                       : add_host_node(&second, child, &first, 1, unpack, s);
    if (st == CUDA_SUCCESS) {
        CUgraphNodeParams node;
        memset(&node, 0, sizeof node);
        node.type = CU_GRAPH_NODE_TYPE_GRAPH;
        node.graph.graph = child; /* the driver clones it into the node */
        st = vmc_drv_graph_add_node(phGraphNode, hGraph, dependencies, edges, n, &node);
    }
    if (child)
        cuGraphDestroy(child);
    /* on failure the buffer and record are left (a host node may already refer to them): a failed node is rare */
    return st;
}

CUresult vmc_drv_capture_staged_copy(CUstream stream, int per_thread, const CUDA_MEMCPY3D *m) {
    if (!vmc_drv_staging_needed(m)) {
        vmc_capture_refused_note();
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 0;
    CUresult st = per_thread ? cuStreamGetCaptureInfo_v3_ptsz(stream, &status, &id, &graph, &deps, &edges, &n)
                             : cuStreamGetCaptureInfo_v3(stream, &status, &id, &graph, &deps, &edges, &n);
    if (st != CUDA_SUCCESS)
        return st;
    if (status == CU_STREAM_CAPTURE_STATUS_NONE)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* refused for another stream's capture: as the worker said */
    if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    /* the capture info's arrays are this thread's until its next such call: keep copies */
    CUgraphNode *dep_copy = malloc((n ? n : 1) * sizeof *dep_copy);
    CUgraphEdgeData *edge_copy = edges ? malloc((n ? n : 1) * sizeof *edge_copy) : NULL;
    if (!dep_copy || (edges && !edge_copy)) {
        free(dep_copy);
        free(edge_copy);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(dep_copy, deps, n * sizeof *dep_copy);
    if (edges)
        memcpy(edge_copy, edges, n * sizeof *edge_copy);
    CUcontext ctx = NULL;
    st = cuCtxGetCurrent(&ctx);
    CUDA_MEMCPY_NODE_PARAMS params = {.copyCtx = ctx, .copyParams = *m};
    CUgraphNode node = NULL;
    if (st == CUDA_SUCCESS)
        st = vmc_drv_staged_copy_node(&node, graph, dep_copy, edge_copy, n, &params);
    if (st == CUDA_SUCCESS)
        st = per_thread ? cuStreamUpdateCaptureDependencies_v2_ptsz(stream, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES)
                        : cuStreamUpdateCaptureDependencies_v2(stream, &node, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    free(dep_copy);
    free(edge_copy);
    return st;
}

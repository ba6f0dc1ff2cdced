/* Graph copy nodes with one side in this process's memory (drv_graph_staging.c; drv_graph_nodes.c). */
#ifndef DRV_GRAPH_STAGING_H
#define DRV_GRAPH_STAGING_H

#include "drv.h"
#include <stddef.h>

/* drv_graph_nodes.c: adds a node to a graph on the worker (its parameters checked and laid out here). */
CUresult vmc_drv_graph_add_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                const CUgraphEdgeData *edges, size_t n, const CUgraphNodeParams *params);

/* Makes each CU_MEMORYTYPE_UNIFIED side DEVICE or HOST, as the driver knows the pointer (the worker takes no
 * unified side: it cannot tell the program's memory from its own). */
void vmc_drv_staging_resolve_unified(CUDA_MEMCPY3D *m);
/* 1 when the copy can go to the worker as it is: device memory or arrays on both sides, or one side in mapped
 * memory the worker's GPU reaches at the same address. */
int vmc_drv_staging_sendable(const CUDA_MEMCPY3D *m);
/* 1 when one side is this process's other memory and the copy can be staged (the co-located path). */
int vmc_drv_staging_needed(const CUDA_MEMCPY3D *m);
/* Adds the staged form of such a copy to hGraph: one child-graph node, *phGraphNode. */
CUresult vmc_drv_staged_copy_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                  const CUgraphEdgeData *edges, size_t n, const CUDA_MEMCPY_NODE_PARAMS *params);

/* A copy of such memory on a stream being captured (the worker refused it): its staged form joins the capture
 * graph where the copy would have gone, and becomes the stream's capture dependency. Refuses
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, saying why once) where it cannot be staged. */
CUresult vmc_drv_capture_staged_copy(CUstream stream, int per_thread, const CUDA_MEMCPY3D *m);

#endif

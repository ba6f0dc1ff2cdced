/* Runtime functions that are a driver call on the same handles (rt_driver.h): stream capture into a given graph
 * and its dependencies, the device's PCI bus id, driver entry points (vmcuda's libcuda.so.1 answers them, so the
 * pointer the program gets is the driver front end's), cluster occupancy. */
#include <string.h>

#include "rt_driver.h"

#define API __attribute__((visibility("default")))

_Static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "cudaLaunchAttribute is CUlaunchAttribute");
_Static_assert(cudaDriverEntryPointSymbolNotFound == (int)CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND &&
                   (int)cudaEnablePerThreadDefaultStream == (int)CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
               "entry point flags and results carry the driver's numbers");

/* ---- capture ---- */

static cudaError_t capture_info(cudaStream_t stream, enum cudaStreamCaptureStatus *status, unsigned long long *id,
                                cudaGraph_t *graph, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *n) {
    VMC_RT_VIA_DRIVER(cuStreamGetCaptureInfo((CUstream)stream, (CUstreamCaptureStatus *)status, (cuuint64_t *)id, (CUgraph *)graph,
                                             (const CUgraphNode **)deps, (const CUgraphEdgeData **)edges, n));
}

API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                         unsigned long long *id_out, cudaGraph_t *graph_out,
                                         const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out,
                                         size_t *numDependencies_out) {
    return vmc_rt_error(capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out));
}

extern cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                                 unsigned long long *id_out, cudaGraph_t *graph_out,
                                                 const cudaGraphNode_t **dependencies_out,
                                                 const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out);
API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
                                              unsigned long long *id_out, cudaGraph_t *graph_out,
                                              const cudaGraphNode_t **dependencies_out,
                                              const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out) {
    return vmc_rt_error(capture_info(vmc_rt_ptsz_stream(stream), captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out));
}

static cudaError_t update_dependencies(cudaStream_t stream, cudaGraphNode_t *deps, const cudaGraphEdgeData *edges, size_t n,
                                       unsigned int flags) {
    VMC_RT_VIA_DRIVER(cuStreamUpdateCaptureDependencies((CUstream)stream, (CUgraphNode *)deps, (const CUgraphEdgeData *)edges, n, flags));
}

API cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                    const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                    unsigned int flags) {
    return vmc_rt_error(update_dependencies(stream, dependencies, dependencyData, numDependencies, flags));
}

extern cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                            const cudaGraphEdgeData *dependencyData,
                                                            size_t numDependencies, unsigned int flags);
API cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                         const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                         unsigned int flags) {
    return vmc_rt_error(update_dependencies(vmc_rt_ptsz_stream(stream), dependencies, dependencyData, numDependencies, flags));
}

static cudaError_t capture_to_graph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                    const cudaGraphEdgeData *edges, size_t n, enum cudaStreamCaptureMode mode) {
    VMC_RT_VIA_DRIVER(cuStreamBeginCaptureToGraph((CUstream)stream, (CUgraph)graph, (const CUgraphNode *)deps,
                                                  (const CUgraphEdgeData *)edges, n, (CUstreamCaptureMode)mode));
}

API cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                              const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                              enum cudaStreamCaptureMode mode) {
    return vmc_rt_error(capture_to_graph(stream, graph, dependencies, dependencyData, numDependencies, mode));
}

extern cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                      const cudaGraphNode_t *dependencies,
                                                      const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                      enum cudaStreamCaptureMode mode);
API cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
                                                   const cudaGraphEdgeData *dependencyData, size_t numDependencies,
                                                   enum cudaStreamCaptureMode mode) {
    return vmc_rt_error(capture_to_graph(vmc_rt_ptsz_stream(stream), graph, dependencies, dependencyData, numDependencies, mode));
}

/* ---- the device and the driver ---- */

API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
    CUdevice dev;
    cudaError_t st = vmc_rt_device(device, &dev);
    return vmc_rt_error(st != cudaSuccess ? st : vmc_rt_status(cuDeviceGetPCIBusId(pciBusId, len, dev)));
}

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int version, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status) {
    cudaError_t init = vmc_rt_init_driver();
    if (init != cudaSuccess)
        return init;
    return vmc_rt_status(cuGetProcAddress(symbol, funcPtr, (int)version, (cuuint64_t)flags,
                                          (CUdriverProcAddressQueryResult *)status));
}

API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                        enum cudaDriverEntryPointQueryResult *driverStatus) {
    return vmc_rt_error(entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus));
}

API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                 unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus) {
    return vmc_rt_error(entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus));
}

/* Built with per-thread default streams, "default" means the per-thread entry points. */
static unsigned long long ptsz_flags(unsigned long long flags) {
    return flags == cudaEnableDefault ? cudaEnablePerThreadDefaultStream : flags;
}

extern cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                enum cudaDriverEntryPointQueryResult *driverStatus);
API cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus) {
    return vmc_rt_error(entry_point(symbol, funcPtr, CUDART_VERSION, ptsz_flags(flags), driverStatus));
}

extern cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                         unsigned long long flags,
                                                         enum cudaDriverEntryPointQueryResult *driverStatus);
API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                      unsigned long long flags,
                                                      enum cudaDriverEntryPointQueryResult *driverStatus) {
    return vmc_rt_error(entry_point(symbol, funcPtr, cudaVersion, ptsz_flags(flags), driverStatus));
}

/* ---- clusters ---- */

static cudaError_t cluster_query(int which, int *out, const void *func, const cudaLaunchConfig_t *config) {
    if (!out || !config)
        return cudaErrorInvalidValue;
    CUfunction f;
    cudaError_t st = vmc_rt_driver_ready(NULL);
    if (st == cudaSuccess)
        st = vmc_rt_function(func, &f);
    if (st != cudaSuccess)
        return st;
    CUlaunchConfig c = {config->gridDim.x, config->gridDim.y, config->gridDim.z, config->blockDim.x, config->blockDim.y,
                        config->blockDim.z, (unsigned)config->dynamicSmemBytes, (CUstream)config->stream,
                        (CUlaunchAttribute *)config->attrs, config->numAttrs};
    return vmc_rt_status(which ? cuOccupancyMaxPotentialClusterSize(out, f, &c) : cuOccupancyMaxActiveClusters(out, f, &c));
}

API cudaError_t cudaOccupancyMaxActiveClusters(int *numClusters, const void *func, const cudaLaunchConfig_t *launchConfig) {
    return vmc_rt_error(cluster_query(0, numClusters, func, launchConfig));
}

API cudaError_t cudaOccupancyMaxPotentialClusterSize(int *clusterSize, const void *func, const cudaLaunchConfig_t *launchConfig) {
    return vmc_rt_error(cluster_query(1, clusterSize, func, launchConfig));
}

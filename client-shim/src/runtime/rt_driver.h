/* Runtime calls served through the driver front end. NVIDIA's runtime is built on its driver, and most of its
 * newer functions (memory pools, graphs node by node, capture to a graph, cooperative and cluster queries) are a
 * driver call around a conversion of their parameters. The runtime front end serves them the same way, through
 * vmcuda's libcuda.so.1 in the same process: one session and one worker serve both front ends, and the handles
 * the worker's runtime gave (streams, events, graphs, nodes, pools) are the driver's handles there, so they pass
 * between the two unchanged. */
#ifndef RT_DRIVER_H
#define RT_DRIVER_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* The driver front end is initialised and the calling thread has the runtime's context current on the worker,
 * as NVIDIA's runtime makes sure before it calls its driver; *ctx (may be NULL) gets that context. */
cudaError_t vmc_rt_driver_ready(CUcontext *ctx);
/* cuInit through the driver front end, its failure as NVIDIA's runtime reports it: the runtime says whether the
 * appliance lacks a driver (cudaErrorInsufficientDriver) or a GPU (cudaErrorNoDevice), where the driver says only
 * CUDA_ERROR_NO_DEVICE. */
cudaError_t vmc_rt_init_driver(void);
/* A status the runtime function returns, recorded as the thread's last error when it is one (cudaGetLastError,
 * cudaPeekAtLastError see it, as natively). */
cudaError_t vmc_rt_error(cudaError_t st);
/* The driver's status as the runtime's, recorded so (CUDA numbers the runtime's errors after the driver's). */
cudaError_t vmc_rt_status(CUresult r);
/* The CUfunction of a kernel the program registered (host stub), in the calling thread's current context. */
cudaError_t vmc_rt_function(const void *func, CUfunction *out);
/* A runtime device ordinal as the driver front end's CUdevice. */
cudaError_t vmc_rt_device(int ordinal, CUdevice *out);
/* An asynchronous copy between this process's memory and the device on a stream being captured into a graph:
 * the worker cannot capture a copy of memory its GPU does not reach, so the driver front end stages it (mapped
 * staging memory on the co-located path, drv_graph_staging.c), as it does for NVIDIA's runtime. Returns 0 when
 * the stream is not capturing (the caller copies as usual), else 1 with the copy's status in *status. Asks the
 * worker only once a capture has begun in this process. */
int vmc_rt_captured_copy(void *dst, const void *src, size_t count, int to_device, cudaStream_t stream, int per_thread,
                         cudaError_t *status);
/* The body of a runtime function that is its driver twin: the driver made ready, then the call's status. */
#define VMC_RT_VIA_DRIVER(call)                                                                                        \
    do {                                                                                                               \
        cudaError_t ready_ = vmc_rt_driver_ready(NULL);                                                                \
        return ready_ != cudaSuccess ? vmc_rt_error(ready_) : vmc_rt_status(call);                                     \
    } while (0)
/* The stream a per-thread-default-stream entry point (_ptsz) means by 0. */
static inline cudaStream_t vmc_rt_ptsz_stream(cudaStream_t s) { return s ? s : cudaStreamPerThread; }

#endif

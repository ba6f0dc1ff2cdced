/* The runtime front end's way into the driver front end (rt_driver.h). */
#include <stdint.h>

#include "rt_driver.h"
#include "shim_call.h"

cudaError_t vmc_forward_cudaDeviceReset(void);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);

_Static_assert(cudaErrorInvalidValue == (int)CUDA_ERROR_INVALID_VALUE && cudaErrorMemoryAllocation == (int)CUDA_ERROR_OUT_OF_MEMORY &&
                   cudaErrorInvalidResourceHandle == (int)CUDA_ERROR_INVALID_HANDLE &&
                   cudaErrorNotSupported == (int)CUDA_ERROR_NOT_SUPPORTED &&
                   cudaErrorStreamCaptureUnsupported == (int)CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
                   cudaErrorIllegalAddress == (int)CUDA_ERROR_ILLEGAL_ADDRESS,
               "the runtime's errors carry the driver's numbers");
_Static_assert((uintptr_t)cudaStreamPerThread == (uintptr_t)CU_STREAM_PER_THREAD &&
                   (uintptr_t)cudaStreamLegacy == (uintptr_t)CU_STREAM_LEGACY,
               "the special streams are the driver's");

cudaError_t vmc_rt_error(cudaError_t st) { return (cudaError_t)vmc_local_error((int)st); }

cudaError_t vmc_rt_status(CUresult r) { return vmc_rt_error((cudaError_t)r); }

/* As NVIDIA's runtime does before its driver calls: the primary context of the thread's device made current (a
 * retain of it, which the runtime holds for the process). Not cudaFree(NULL): that would end another thread's
 * capture in the global mode. */
cudaError_t vmc_rt_init_driver(void) {
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        return cudaSuccess;
    int n = 0;
    cudaError_t st = cudaGetDeviceCount(&n); /* the runtime's own answer for this session (or for no session) */
    return st != cudaSuccess ? st : n == 0 ? cudaErrorNoDevice : vmc_rt_status(r);
}

cudaError_t vmc_rt_driver_ready(CUcontext *ctx) {
    cudaError_t init = vmc_rt_init_driver();
    if (init != cudaSuccess)
        return init;
    CUcontext current = NULL;
    CUresult r = cuCtxGetCurrent(&current);
    if (r == CUDA_SUCCESS && !current) {
        int ordinal = 0;
        CUdevice dev;
        cudaError_t st = cudaGetDevice(&ordinal); /* the runtime's device of this thread, on the worker */
        if (st != cudaSuccess)
            return st;
        r = cuDeviceGet(&dev, ordinal);
        if (r == CUDA_SUCCESS)
            r = cuDevicePrimaryCtxRetain(&current, dev);
        if (r == CUDA_SUCCESS)
            r = cuCtxSetCurrent(current);
    }
    if (r != CUDA_SUCCESS)
        return vmc_rt_status(r);
    if (ctx)
        *ctx = current;
    return cudaSuccess;
}

cudaError_t vmc_rt_function(const void *func, CUfunction *out) {
    if (!func || !out)
        return cudaErrorInvalidDeviceFunction;
    cudaFunction_t f = NULL;
    cudaError_t st = cudaGetFuncBySymbol(&f, func); /* forwarded: the worker asks its runtime */
    if (st == cudaSuccess)
        *out = (CUfunction)f;
    return st;
}

cudaError_t vmc_rt_device(int ordinal, CUdevice *out) {
    cudaError_t init = vmc_rt_init_driver();
    if (init != cudaSuccess)
        return vmc_rt_error(init);
    CUresult r = cuDeviceGet(out, ordinal);
    return r == CUDA_ERROR_INVALID_DEVICE ? vmc_rt_error(cudaErrorInvalidDevice) : vmc_rt_status(r);
}

int vmc_rt_captured_copy(void *dst, const void *src, size_t count, int to_device, cudaStream_t stream, int per_thread,
                         cudaError_t *status) {
    /* the legacy default stream cannot capture, nor can the NULL stream unless it is the per-thread one */
    if (!count || !vmc_capture_ever_begun() || stream == cudaStreamLegacy || (!stream && !per_thread))
        return 0;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = per_thread ? cuStreamIsCapturing_ptsz((CUstream)stream, &capture) : cuStreamIsCapturing((CUstream)stream, &capture);
    if (r != CUDA_SUCCESS || capture == CU_STREAM_CAPTURE_STATUS_NONE)
        return 0;
    CUstream s = (CUstream)stream;
    if (to_device)
        r = per_thread ? cuMemcpyHtoDAsync_v2_ptsz((CUdeviceptr)(uintptr_t)dst, src, count, s)
                       : cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, count, s);
    else
        r = per_thread ? cuMemcpyDtoHAsync_v2_ptsz(dst, (CUdeviceptr)(uintptr_t)src, count, s)
                       : cuMemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, count, s);
    *status = vmc_rt_status(r);
    return 1;
}

/* A reset takes every module and function of the device's context with it: the driver front end forgets what it
 * remembered of them (parameter layouts, limits, names), whose handles may come back naming other functions. */
__attribute__((visibility("default"))) cudaError_t cudaDeviceReset(void) {
    cudaError_t st = vmc_forward_cudaDeviceReset();
    if (st == cudaSuccess)
        vmc_device_reset_done();
    return st;
}

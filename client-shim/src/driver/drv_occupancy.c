/* cuOccupancyMaxPotentialBlockSize(WithFlags): the search runs here, as the runtime's
 * cudaOccupancyMaxPotentialBlockSizeVariableSMem does in cuda_runtime.h (the callback that gives the dynamic
 * shared memory a block size needs is a function of this process): each block size, from the largest the
 * function and the device allow down by a warp, asks the worker's driver how many blocks of it fit on a
 * multiprocessor, and the size that keeps the most threads resident wins. */
#include "drv.h"
#include "drv_call.h"

/* the dynamic shared memory of the calls without a callback: the same for every block size */
static __thread size_t fixed_smem;
static size_t fixed(int block_size) {
    (void)block_size;
    return fixed_smem;
}

static CUresult search(int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize smem_of, int limit,
                       unsigned flags) {
    if (!minGridSize || !blockSize || !func || limit < 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUdevice dev;
    CUresult st = cuCtxGetDevice(&dev);
    int per_sm = 0, warp = 0, device_max = 0, sms = 0, function_max = 0;
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&device_max, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
    if (st == CUDA_SUCCESS)
        st = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (st == CUDA_SUCCESS)
        st = cuFuncGetAttribute(&function_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func);
    if (st != CUDA_SUCCESS)
        return st;
    if (warp <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    int cap = limit == 0 || limit > device_max ? device_max : limit;
    cap = cap < function_max ? cap : function_max;
    int best_threads = 0, best_size = 0, best_blocks = 0;
    for (int aligned = (cap + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
        int size = aligned < cap ? aligned : cap;
        int blocks = 0;
        st = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, func, size, smem_of(size), flags);
        if (st != CUDA_SUCCESS)
            return st;
        if (blocks * size > best_threads) {
            best_threads = blocks * size;
            best_size = size;
            best_blocks = blocks;
        }
        if (best_threads == per_sm)
            break; /* no size can keep more threads resident */
    }
    *minGridSize = best_blocks * sms;
    *blockSize = best_size;
    return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize,
                                                                                 CUfunction func,
                                                                                 CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                                                 size_t dynamicSMemSize, int blockSizeLimit) {
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                                     dynamicSMemSize, blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

__attribute__((visibility("default"))) CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize,
    size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags) {
    fixed_smem = dynamicSMemSize;
    return search(minGridSize, blockSize, func, blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize : fixed,
                  blockSizeLimit, flags);
}

// cudaFuncGetAttributes, cudaFuncSetAttribute, cudaFuncSetCacheConfig and the
// occupancy calculators.
#include "vmc_check.h"

// Static shared memory of exactly 256 floats (1024 bytes), at most 256 threads.
__global__ void __launch_bounds__(256) tiled(const float *in, float *out)
{
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * 256 + t];
    __syncthreads();
    out[blockIdx.x * 256 + t] = tile[255 - t] + 1.0f;
}

// Needs more dynamic shared memory than the default 48 KiB opt-in limit.
__global__ void big_dynamic(int *out, int n)
{
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = buf[n - 1];
}

int main()
{
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, tiled));
    printf("tiled: maxThreadsPerBlock %d sharedSizeBytes %zu\n", fa.maxThreadsPerBlock, fa.sharedSizeBytes);
    vmc_check(fa.maxThreadsPerBlock == 256 && fa.sharedSizeBytes == 1024, "cudaFuncGetAttributes tiled", "as declared");

    CK(cudaFuncSetCacheConfig(tiled, cudaFuncCachePreferShared));

    const int dyn = 64 * 1024;
    CK(cudaFuncSetAttribute(big_dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
    CK(cudaFuncGetAttributes(&fa, big_dynamic));
    printf("big_dynamic: maxDynamicSharedSizeBytes %d\n", fa.maxDynamicSharedSizeBytes);
    vmc_check(fa.maxDynamicSharedSizeBytes == dyn, "cudaFuncSetAttribute", "opt-in applied");

    int *d = NULL, h = 0;
    CK(cudaMalloc(&d, sizeof(int)));
    big_dynamic<<<1, 256, dyn>>>(d, dyn / (int)sizeof(int));
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    vmc_check(h == dyn / (int)sizeof(int) - 1, "launch with 64 KiB dynamic shared memory", "%d", h);

    float *in = NULL, *out = NULL, hout[512], hin[512];
    for (int i = 0; i < 512; i++) hin[i] = (float)i;
    CK(cudaMalloc(&in, sizeof hin));
    CK(cudaMalloc(&out, sizeof hout));
    CK(cudaMemcpy(in, hin, sizeof hin, cudaMemcpyHostToDevice));
    tiled<<<2, 256>>>(in, out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost));
    vmc_check(hout[0] == 256.0f && hout[256] == 512.0f, "tiled kernel", "%.0f %.0f", hout[0], hout[256]);

    int blocks = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tiled, 256, 0));
    vmc_check(blocks > 0, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "> 0: %s", blocks > 0 ? "yes" : "no");
    int min_grid = 0, block = 0;
    CK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, tiled, 0, 0));
    vmc_check(min_grid > 0 && block > 0 && block <= 256, "cudaOccupancyMaxPotentialBlockSize",
              "grid > 0, 0 < block <= 256: %s", min_grid > 0 && block > 0 && block <= 256 ? "yes" : "no");
    CK(cudaFree(d));
    CK(cudaFree(in));
    CK(cudaFree(out));
    CK(cudaDeviceSynchronize());
    return vmc_finish("func_occupancy");
}

// Streams (flags, priorities, sync, query, cross-stream waits) and events
// (flags, record, sync, query, elapsed time, destroy).
#include "vmc_check.h"

// Busy work so that the ordering checks below would fail if waits were lost.
__global__ void add_slow(int *p, int n, int v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = p[i];
        for (int k = 0; k < 2000; k++) x = (x * 3 + k) % 1000003;
        p[i] = p[i] + v + (x < 0 ? 1 : 0); // x >= 0 always; using it keeps the loop
    }
}

// dst[i] = src[i] * 2: reads what another stream wrote.
__global__ void twice(const int *src, int *dst, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] * 2;
}

int main()
{
    const int n = 1 << 16;
    int least = 0, greatest = 0;
    CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    vmc_check(greatest <= least, "cudaDeviceGetStreamPriorityRange", "greatest <= least: %s",
              greatest <= least ? "yes" : "no");

    cudaStream_t hi, lo, plain;
    CK(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest));
    CK(cudaStreamCreateWithPriority(&lo, cudaStreamDefault, least));
    CK(cudaStreamCreate(&plain));
    int prio = 1;
    unsigned int flags = 99;
    CK(cudaStreamGetPriority(hi, &prio));
    vmc_check(prio == greatest, "cudaStreamGetPriority", "greatest: %s", prio == greatest ? "yes" : "no");
    CK(cudaStreamGetFlags(hi, &flags));
    vmc_check(flags == cudaStreamNonBlocking, "cudaStreamGetFlags hi", "%u", flags);
    CK(cudaStreamGetFlags(lo, &flags));
    vmc_check(flags == cudaStreamDefault, "cudaStreamGetFlags lo", "%u", flags);

    int *a = NULL, *b = NULL;
    CK(cudaMalloc(&a, n * sizeof(int)));
    CK(cudaMalloc(&b, n * sizeof(int)));
    CK(cudaMemset(a, 0, n * sizeof(int)));

    // Events with each flag combination.
    cudaEvent_t start, stop, blocking, notiming, never;
    CK(cudaEventCreate(&start));
    CK(cudaEventCreateWithFlags(&stop, cudaEventDefault));
    CK(cudaEventCreateWithFlags(&blocking, cudaEventBlockingSync));
    CK(cudaEventCreateWithFlags(&notiming, cudaEventDisableTiming));
    CK(cudaEventCreate(&never));
    CK_EXPECT(cudaEventQuery(never), cudaSuccess); // never recorded: complete

    // hi: a += 5, then record; lo waits for that event, then b = 2 * a.
    CK(cudaEventRecord(start, hi));
    add_slow<<<n / 256, 256, 0, hi>>>(a, n, 5);
    CK(cudaGetLastError());
    CK(cudaEventRecord(notiming, hi));
    CK(cudaStreamWaitEvent(lo, notiming, 0));
    twice<<<n / 256, 256, 0, lo>>>(a, b, n);
    CK(cudaGetLastError());
    CK(cudaEventRecord(stop, hi));
    CK(cudaEventRecord(blocking, lo));
    CK(cudaEventSynchronize(blocking));
    CK_EXPECT(cudaEventQuery(blocking), cudaSuccess);
    CK(cudaStreamSynchronize(lo));
    CK_EXPECT(cudaStreamQuery(lo), cudaSuccess);
    CK(cudaEventSynchronize(stop));

    int hb[4];
    CK(cudaMemcpy(&hb[0], b, sizeof(int), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hb[1], b + n - 1, sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(hb[0] == 10 && hb[1] == 10, "cudaStreamWaitEvent orders streams", "%d %d", hb[0], hb[1]);

    float ms = -1.0f;
    CK(cudaEventElapsedTime(&ms, start, stop));
    vmc_check(ms >= 0.0f, "cudaEventElapsedTime", ">= 0: %s", ms >= 0.0f ? "yes" : "no");
    CK_EXPECT(cudaEventElapsedTime(&ms, start, notiming), cudaErrorInvalidResourceHandle);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidResourceHandle);

    // Legacy default stream orders against blocking streams: plain then default then plain.
    add_slow<<<n / 256, 256, 0, plain>>>(a, n, 1);
    twice<<<n / 256, 256>>>(a, b, n);
    add_slow<<<n / 256, 256, 0, plain>>>(b, n, 1);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(plain));
    CK_EXPECT(cudaStreamQuery(plain), cudaSuccess);
    CK(cudaMemcpy(&hb[2], b, sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(hb[2] == 13, "legacy default stream ordering", "%d", hb[2]);

    // Per-stream work to the null-stream handle and cudaStreamPerThread both work.
    CK(cudaMemsetAsync(a, 0, n * sizeof(int), cudaStreamPerThread));
    CK(cudaStreamSynchronize(cudaStreamPerThread));
    CK(cudaMemcpy(&hb[3], a, sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(hb[3] == 0, "cudaStreamPerThread memset", "%d", hb[3]);

    CK(cudaEventDestroy(start));
    CK(cudaEventDestroy(stop));
    CK(cudaEventDestroy(blocking));
    CK(cudaEventDestroy(notiming));
    CK(cudaEventDestroy(never));
    CK(cudaStreamDestroy(hi));
    CK(cudaStreamDestroy(lo));
    CK(cudaStreamDestroy(plain));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaDeviceSynchronize());
    return vmc_finish("streams_events");
}

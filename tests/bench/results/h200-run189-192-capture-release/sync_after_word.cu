// Native probe: a kernel, then a small copy into page-locked memory, then how the enqueuing thread learns it is done:
//   sync      cuStreamSynchronize (what the worker does after a kernel launch today)
//   word+sync poll a word the GPU writes after the copy, then cuStreamSynchronize (flushes device printf)
//   word      poll the word only (the lower bound)
// and the cost of cuStreamSynchronize on a stream with nothing left to do.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>

__global__ void empty_kernel() {}

static double now_us() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main() {
    cudaFree(0);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    unsigned *pinned, *word;
    cudaHostAlloc((void **)&pinned, 1 << 20, cudaHostAllocPortable);
    cudaHostAlloc((void **)&word, 4096, cudaHostAllocPortable | cudaHostAllocMapped);
    CUdeviceptr word_dev;
    cuMemHostGetDevicePointer(&word_dev, word, 0);
    CUdeviceptr dev;
    cuMemAlloc(&dev, 1 << 20);
    const char *names[] = {"sync", "word+sync", "word"};
    const size_t sizes[] = {4, 65536, 1 << 20};
    unsigned seq = 0;
    for (int round = 0; round < 3; round++)
        for (int z = 0; z < 3; z++)
            for (int v = 0; v < 3; v++) {
                const int n = sizes[z] > 65536 ? 3000 : 20000;
                double t0 = now_us();
                for (int i = 0; i < n; i++) {
                    empty_kernel<<<1, 1, 0, (cudaStream_t)s>>>();
                    cuMemcpyDtoHAsync(pinned, dev, sizes[z], s);
                    if (v == 0) {
                        cuStreamSynchronize(s);
                        continue;
                    }
                    seq++;
                    cuStreamWriteValue32(s, word_dev, seq, 0);
                    while (*(volatile unsigned *)word != seq) {
                    }
                    if (v == 1)
                        cuStreamSynchronize(s);
                }
                double per = (now_us() - t0) / n;
                cuStreamSynchronize(s);
                printf("round %d  kernel + %7zu-byte copy, %-9s  %.3f us\n", round, sizes[z], names[v], per);
            }
    double t0 = now_us();
    for (int i = 0; i < 100000; i++)
        cuStreamSynchronize(s);
    printf("cuStreamSynchronize on an idle stream: %.3f us\n", (now_us() - t0) / 100000);
    return 0;
}

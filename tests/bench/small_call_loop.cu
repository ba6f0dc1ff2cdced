// One kind of small call in a loop for a given time, for profiling where a call's time goes
// (tests/gpu/profile-small-calls.sh runs it natively and through vmcuda under perf):
//   small_call_loop async SECONDS    empty kernels launched back to back, a synchronize every 10000
//   small_call_loop sync SECONDS     launch + cudaDeviceSynchronize
//   small_call_loop d2h4 SECONDS     4-byte cudaMemcpy from the device
//   small_call_loop h2d:BYTES SECONDS  a BYTES cudaMemcpy from pageable memory to the device (up to 1 GiB)
//   small_call_loop d2h:BYTES SECONDS  the same from the device to pageable memory
//   small_call_loop pinned-h2d:BYTES / pinned-d2h:BYTES SECONDS  the same with page-locked memory (cudaMallocHost)
//   small_call_loop after-kernel-MODE SECONDS  any copy mode above, each copy right after an empty kernel's launch
//                                      (a program's commonest pattern: a kernel, then its result copied back)
//   small_call_loop h2d2d:W:H SECONDS  a cudaMemcpy2D of H rows of W bytes from pageable rows 256 bytes apart
//                                      more than W, to pitched device memory
// Output: "MODE<TAB>mean us per call<TAB>calls".
#include <cstring>
#include "bench_common.h"

__global__ void empty_kernel() {}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: small_call_loop async|sync|[after-kernel-](d2h4|[pinned-]h2d:BYTES|[pinned-]d2h:BYTES|"
                        "h2d2d:W:H) SECONDS\n");
        return 2;
    }
    int after_kernel = !strncmp(argv[1], "after-kernel-", 13);
    const char *mode = argv[1] + (after_kernel ? 13 : 0);
    double seconds = atof(argv[2]);
    int pinned = !strncmp(mode, "pinned-", 7);
    const char *kind = pinned ? mode + 7 : mode;
    int sized = !strncmp(kind, "h2d:", 4) || !strncmp(kind, "d2h:", 4), to_device = kind[0] == 'h';
    size_t bytes = sized ? strtoull(kind + 4, nullptr, 10) : 0;
    if (sized && (bytes == 0 || bytes > (1u << 30))) {
        fprintf(stderr, "h2d:BYTES and d2h:BYTES take 1 byte to 1 GiB\n");
        return 2;
    }
    size_t w = 0, h = 0;
    if (!strncmp(mode, "h2d2d:", 6) && (sscanf(mode + 6, "%zu:%zu", &w, &h) != 2 || !w || !h || w * h > (1u << 30))) {
        fprintf(stderr, "h2d2d:W:H takes rows of 1 byte or more, 1 GiB in all at most\n");
        return 2;
    }
    size_t hpitch = w + 256;
    size_t room = w ? hpitch * h : bytes > 4 ? bytes : 4;
    CK(cudaSetDevice(0));
    CK(cudaFree(nullptr));
    char *dev;
    CK(cudaMalloc(&dev, room));
    char *host = nullptr;
    if (pinned)
        CK(cudaMallocHost((void **)&host, room));
    else
        host = (char *)malloc(room);
    memset(host, 1, room);
    char *dev2d = nullptr;
    size_t dpitch = 0;
    if (w) CK(cudaMallocPitch((void **)&dev2d, &dpitch, w, h));
    int value = 0;
    long calls = 0;
    double t0 = now_s(), end = t0 + seconds;
    while (now_s() < end) {
        int batch = bytes > (1u << 20) || w * h > (1u << 20) ? 10 : 1000;
        for (int i = 0; i < batch; i++) {
            if (after_kernel)
                empty_kernel<<<1, 1>>>();
            if (!strcmp(mode, "async")) {
                empty_kernel<<<1, 1>>>();
            } else if (!strcmp(mode, "sync")) {
                empty_kernel<<<1, 1>>>();
                CK(cudaDeviceSynchronize());
            } else if (!strcmp(mode, "d2h4")) {
                CK(cudaMemcpy(&value, dev, 4, cudaMemcpyDeviceToHost));
            } else if (w) {
                CK(cudaMemcpy2D(dev2d, dpitch, host, hpitch, w, h, cudaMemcpyHostToDevice));
            } else if (bytes && to_device) {
                CK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
            } else if (bytes) {
                CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
            } else {
                fprintf(stderr, "unknown mode %s\n", mode);
                return 2;
            }
        }
        calls += batch;
        if (calls % 10000 == 0) CK(cudaDeviceSynchronize());
    }
    CK(cudaDeviceSynchronize());
    printf("%s\t%.3f\t%ld\n", argv[1], (now_s() - t0) / calls * 1e6, calls);
    CK(cudaFree(dev));
    if (dev2d) CK(cudaFree(dev2d));
    if (pinned)
        CK(cudaFreeHost(host));
    else
        free(host);
    return 0;
}

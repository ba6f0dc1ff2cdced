// Managed memory (cudaMallocManaged), as NVIDIA's UnifiedMemory samples use it: one pointer that the host
// fills and reads and kernels write, no explicit copy; prefetches, advice and stream attachment accepted;
// copies to and from it; its pointer attributes; freeing it. Through vmcuda this works on the co-located path
// only (the worker maps the client's pages; a kernel reaches them as mapped memory, without migration); over
// TCP it is refused (the test scripts run this program co-located only).
#include <string.h>
#include "vmc_check.h"

__global__ void scale_add(float *x, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}

int main() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    vmc_check(prop.managedMemory == 1, "the device supports managed memory", "%d", prop.managedMemory);

    const int n = 1 << 20;
    float *x = NULL;
    CK(cudaMallocManaged((void **)&x, n * sizeof(float), cudaMemAttachGlobal));
    for (int i = 0; i < n; i++) x[i] = (float)i;
    cudaMemLocation gpu = {cudaMemLocationTypeDevice, 0};
    CK(cudaMemAdvise(x, n * sizeof(float), cudaMemAdviseSetPreferredLocation, gpu));
    CK(cudaMemPrefetchAsync(x, n * sizeof(float), gpu, 0, 0));
    scale_add<<<(n + 255) / 256, 256>>>(x, n, 2.0f, 1.0f);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= x[i] == 2.0f * (float)i + 1.0f;
    vmc_check(ok, "a kernel wrote managed memory the host reads", "2i+1 everywhere");

    // the host writes, a kernel reads and writes again, through a stream it was attached to
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamAttachMemAsync(s, x, 0, cudaMemAttachSingle));
    for (int i = 0; i < 1000; i++) x[i] = 1.0f;
    scale_add<<<4, 256, 0, s>>>(x, 1000, 3.0f, 0.0f);
    CK(cudaStreamSynchronize(s));
    vmc_check(x[0] == 3.0f && x[999] == 3.0f && x[1000] == 2001.0f, "a kernel on a stream saw the host's writes",
              "%g %g %g", x[0], x[999], x[1000]);

    // copies to and from it, explicit and inferred
    float *d = NULL;
    CK(cudaMalloc((void **)&d, 1000 * sizeof(float)));
    CK(cudaMemcpy(d, x, 1000 * sizeof(float), cudaMemcpyDefault));
    float back[4] = {0, 0, 0, 0};
    CK(cudaMemcpy(back, d + 996, sizeof back, cudaMemcpyDeviceToHost));
    vmc_check(back[0] == 3.0f && back[3] == 3.0f, "managed memory copied to device memory", "%g", back[0]);
    CK(cudaMemset(d, 0, 1000 * sizeof(float)));
    CK(cudaMemcpy(x, d, 1000 * sizeof(float), cudaMemcpyDefault));
    vmc_check(x[0] == 0.0f && x[999] == 0.0f && x[1000] == 2001.0f, "device memory copied into managed memory",
              "%g %g", x[0], x[1000]);
    CK(cudaMemset(x, 0, 16));
    CK(cudaDeviceSynchronize());
    vmc_check(x[3] == 0.0f && x[1001] == 2003.0f, "cudaMemset of managed memory", "%g", x[1001]);

    cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    CK(cudaPointerGetAttributes(&a, x + 5));
    vmc_check(a.type == cudaMemoryTypeManaged && a.devicePointer == x + 5 && a.hostPointer == x + 5 && a.device == 0,
              "cudaPointerGetAttributes of managed memory", "type %d", (int)a.type);

    // no bytes: success, as natively (H100, driver 580), and freeing what it gave is too
    float *none = NULL;
    CK(cudaMallocManaged((void **)&none, 0, cudaMemAttachGlobal));
    CK(cudaFree(none));
    CK_EXPECT(cudaMallocManaged((void **)&none, 64, 0), cudaErrorInvalidValue);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidValue);

    CK(cudaStreamDestroy(s));
    CK(cudaFree(x));
    CK(cudaFree(d));
    return vmc_finish("managed");
}

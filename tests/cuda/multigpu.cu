// Several GPUs in one session (VMCUDA_GPUS=k binds k GPUs; natively: every visible GPU): each device
// computes its own part, peer access is queried (and enabled where possible) for every pair, and
// buffers travel between devices with cudaMemcpyPeer(Async). Memory that belongs to a device rather than
// to a context (a stream-ordered pool's, and the virtual memory API's) is copied to and from every device
// in turn, 12 MiB at a time (a worker thread then copies for one device after the other; copies of a
// single-GPU session over TCP are striped over several connections). The program adapts to the device count and
// prints nothing that depends on it, so one GPU and eight give the same output.
#include <cudaTypedefs.h>
#include <string.h>
#include "vmc_driver_check.h"

#define N (1 << 20)
#define MAXDEV 16
#define DEVICE_OWNED_BYTES (12u << 20)

/* Writes a pattern of this device and round into `dev`, reads it back; the number of wrong bytes. */
static long round_trip(void *dev, unsigned char *out, unsigned char *in, size_t bytes, int seed) {
    for (size_t i = 0; i < bytes; i++) out[i] = (unsigned char)(i * 131 + seed * 17 + (i >> 20));
    memset(in, 0, bytes);
    CK(cudaMemcpy(dev, out, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(in, dev, bytes, cudaMemcpyDeviceToHost));
    long wrong = 0;
    for (size_t i = 0; i < bytes; i++) wrong += in[i] != out[i];
    return wrong;
}

/* Pool memory (cudaMallocAsync) and a cuMemCreate allocation of each device, in turn: 0, 1, .., 0 again. */
static void device_owned_memory(int n, cudaStream_t *s) {
    unsigned char *out = (unsigned char *)malloc(DEVICE_OWNED_BYTES), *in = (unsigned char *)malloc(DEVICE_OWNED_BYTES);
    long pool_wrong = 0, vmm_wrong = 0;
    for (int round = 0; round <= n; round++) {
        int d = round % n;
        CK(cudaSetDevice(d));
        void *p = NULL;
        CK(cudaMallocAsync(&p, DEVICE_OWNED_BYTES, s[d]));
        CK(cudaStreamSynchronize(s[d]));
        pool_wrong += round_trip(p, out, in, DEVICE_OWNED_BYTES, round);
        CK(cudaFreeAsync(p, s[d]));
        CK(cudaStreamSynchronize(s[d]));
    }
    vmc_check(pool_wrong == 0, "pool memory of every device in turn", "%ld wrong bytes", pool_wrong);

    PFN_cuMemGetAllocationGranularity_v10020 granularity;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
#define ENTRY(var, name) var = (decltype(var))vmc_driver_entry(name, 10020)
    ENTRY(granularity, "cuMemGetAllocationGranularity");
    ENTRY(create, "cuMemCreate");
    ENTRY(release, "cuMemRelease");
    ENTRY(reserve, "cuMemAddressReserve");
    ENTRY(address_free, "cuMemAddressFree");
    ENTRY(map, "cuMemMap");
    ENTRY(unmap, "cuMemUnmap");
    ENTRY(set_access, "cuMemSetAccess");
#undef ENTRY
    for (int round = 0; round <= n; round++) {
        int d = round % n;
        CK(cudaSetDevice(d));
        CUmemAllocationProp prop;
        memset(&prop, 0, sizeof prop);
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = d;
        size_t gran = 0;
        CU(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        size_t size = (DEVICE_OWNED_BYTES + gran - 1) / gran * gran;
        CUmemGenericAllocationHandle h;
        CUdeviceptr va;
        CU(create(&h, size, &prop, 0));
        CU(reserve(&va, size, 0, 0, 0));
        CU(map(va, size, 0, h, 0));
        CU(release(h)); /* the mapping keeps it, as programs usually do */
        CUmemAccessDesc access;
        memset(&access, 0, sizeof access);
        access.location = prop.location;
        access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CU(set_access(va, size, &access, 1));
        vmm_wrong += round_trip((void *)va, out, in, DEVICE_OWNED_BYTES, round + 100);
        CU(unmap(va, size));
        CU(address_free(va, size));
    }
    vmc_check(vmm_wrong == 0, "virtual-memory allocations of every device in turn", "%ld wrong bytes", vmm_wrong);
    free(out);
    free(in);
}

__global__ void mark(int *v, int n, int dev) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = dev * 1000003 + i;
}

int main() {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n > MAXDEV) n = MAXDEV;
    int *buf[MAXDEV];
    cudaStream_t s[MAXDEV];
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaStreamCreate(&s[d]));
        CK(cudaMalloc((void **)&buf[d], N * sizeof(int)));
        mark<<<(N + 255) / 256, 256, 0, s[d]>>>(buf[d], N, d);
        CK(cudaGetLastError());
    }
    int *h = (int *)malloc(N * sizeof(int));
    int wrong = 0, current_ok = 1;
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        int cur = -1;
        CK(cudaGetDevice(&cur));
        current_ok &= cur == d;
        int sd = -1;
        CK(cudaStreamGetDevice(s[d], &sd));
        current_ok &= sd == d;
        CK(cudaStreamSynchronize(s[d]));
        CK(cudaMemcpy(h, buf[d], N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != d * 1000003 + i;
    }
    vmc_check(wrong == 0 && current_ok, "every device computed its own buffer", "cudaSetDevice/cudaGetDevice agree");

    // peer access: query every ordered pair; enable where possible; the answer must be symmetric in use
    int queries_ok = 1;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            int can = -1;
            CK(cudaDeviceCanAccessPeer(&can, a, b));
            queries_ok &= can == 0 || can == 1;
            if (can) {
                CK(cudaSetDevice(a));
                cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
                queries_ok &= e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled;
                if (e != cudaSuccess) cudaGetLastError();
            }
        }
    vmc_check(queries_ok, "peer access queries for every pair", "answers are 0 or 1, enabling works");

    // peer copies: device d's buffer to device (d+1)%n, synchronously and asynchronously
    wrong = 0;
    for (int d = 0; d < n; d++) {
        int to = (d + 1) % n;
        int *tmp = NULL;
        CK(cudaSetDevice(to));
        CK(cudaMalloc((void **)&tmp, N * sizeof(int)));
        CK(cudaMemcpyPeer(tmp, to, buf[d], d, N * sizeof(int)));
        CK(cudaMemcpy(h, tmp, N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != d * 1000003 + i;
        CK(cudaMemsetAsync(tmp, 0, N * sizeof(int), s[to]));
        CK(cudaMemcpyPeerAsync(tmp, to, buf[d], d, N / 2 * sizeof(int), s[to]));
        CK(cudaStreamSynchronize(s[to]));
        CK(cudaMemcpy(h, tmp, N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) wrong += h[i] != (i < N / 2 ? d * 1000003 + i : 0);
        CK(cudaFree(tmp));
    }
    vmc_check(wrong == 0, "cudaMemcpyPeer and cudaMemcpyPeerAsync between devices", "%d wrong", wrong);

    device_owned_memory(n, s);

    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaFree(buf[d]));
        CK(cudaStreamDestroy(s[d]));
    }
    CK(cudaSetDevice(0));
    free(h);
    return vmc_finish("multigpu");
}

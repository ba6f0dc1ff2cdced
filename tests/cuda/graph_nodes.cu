// The runtime's newer surface, which NVIDIA's runtime builds on its driver: graphs built node by node (kernel,
// memset, device-to-device copy, host, event, child-graph, allocation and free nodes; a conditional while node
// whose body is captured into it with cudaStreamBeginCaptureToGraph), setting a node's parameters on an instance,
// the graph's topology, capture information, stream-ordered memory pools, cooperative launches with a grid-wide
// barrier, cluster occupancy, driver entry points and a kernel's CUfunction. Built -cudart shared it exercises
// vmcuda's runtime front end (which serves these through its driver front end); built static, the driver front
// end under NVIDIA's runtime. Copies from or to this process's memory stay outside the graphs, so that the
// program means the same over TCP and over the co-located path.
#include <cooperative_groups.h>
#include <string.h>
#include "vmc_check.h"

namespace cg = cooperative_groups;

#define N 4096

__global__ void add_k(int *v, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += k;
}

__global__ void fill_index(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = i;
}

// One while-loop iteration: counts down and says whether to go on.
__global__ void count_down(int *counter, int *iterations, cudaGraphConditionalHandle handle) {
    *iterations += 1;
    *counter -= 1;
    cudaGraphSetConditional(handle, *counter > 0 ? 1 : 0);
}

// Each block sums its part, the whole grid waits at the barrier, then block 0 adds the partial sums.
__global__ void grid_sum(const int *v, int n, int *partial, int *total) {
    cg::grid_group grid = cg::this_grid();
    __shared__ int block_sum;
    if (threadIdx.x == 0) block_sum = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&block_sum, v[i]);
    __syncthreads();
    if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int s = 0;
        for (int b = 0; b < gridDim.x; b++) s += partial[b];
        *total = s;
    }
}

__global__ void __cluster_dims__(2, 1, 1) cluster_kernel(int *v) { v[blockIdx.x] = 1; }

__device__ int table[64];

static int host_calls;
static void CUDART_CB count_host_call(void *arg) { *(int *)arg += 1; }

static long long sum_of(const int *h, int n) {
    long long s = 0;
    for (int i = 0; i < n; i++) s += h[i];
    return s;
}

static void graph_node_by_node(cudaStream_t s) {
    int *a, *b;
    CK(cudaMalloc((void **)&a, N * sizeof(int)));
    CK(cudaMalloc((void **)&b, N * sizeof(int)));
    cudaEvent_t done;
    CK(cudaEventCreate(&done));

    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t set, add, copy, host, record;
    cudaMemsetParams ms = {};
    ms.dst = a, ms.value = 2, ms.elementSize = sizeof(int), ms.width = N, ms.height = 1;
    CK(cudaGraphAddMemsetNode(&set, g, NULL, 0, &ms));
    int n = N, k = 5;
    void *args[] = {&a, &n, &k};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add_k, kp.gridDim = dim3(N / 256), kp.blockDim = dim3(256), kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&add, g, &set, 1, &kp));
    CK(cudaGraphAddMemcpyNode1D(&copy, g, &add, 1, b, a, N * sizeof(int), cudaMemcpyDeviceToDevice));
    cudaHostNodeParams hp = {count_host_call, &host_calls};
    CK(cudaGraphAddHostNode(&host, g, &copy, 1, &hp));
    CK(cudaGraphAddEventRecordNode(&record, g, &host, 1, done));

    size_t nodes = 0, roots = 0, edges = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    CK(cudaGraphGetRootNodes(g, NULL, &roots));
    CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &edges));
    vmc_check(nodes == 5 && roots == 1 && edges == 4, "topology", "%zu nodes, %zu root, %zu edges", nodes, roots, edges);
    cudaGraphNode_t root = NULL, dep = NULL;
    size_t one = 1;
    CK(cudaGraphGetRootNodes(g, &root, &one));
    vmc_check(root == set, "the root is the memset node", "%s", root == set ? "yes" : "no");
    one = 1;
    CK(cudaGraphNodeGetDependencies(copy, &dep, NULL, &one));
    vmc_check(one == 1 && dep == add, "the copy depends on the kernel", "%zu dependency", one);
    cudaMemsetParams back = {};
    CK(cudaGraphMemsetNodeGetParams(set, &back));
    vmc_check(back.dst == a && back.value == 2 && back.width == N, "memset node parameters read back", "value %u", back.value);

    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    int *h = (int *)malloc(N * sizeof(int));
    for (int run = 0; run < 3; run++) {
        CK(cudaGraphLaunch(e, s));
        CK(cudaEventSynchronize(done));
    }
    CK(cudaMemcpy(h, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(sum_of(h, N) == 7LL * N, "memset, kernel and copy nodes", "sum %lld (expected %lld)", sum_of(h, N), 7LL * N);
    vmc_check(host_calls == 3, "host node ran at each launch", "%d calls", host_calls);

    k = 40; // the instance's kernel node now adds 40
    CK(cudaGraphExecKernelNodeSetParams(e, add, &kp));
    CK(cudaGraphLaunch(e, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(sum_of(h, N) == 42LL * N, "kernel node parameters set on the instance", "sum %lld", sum_of(h, N));
    CK(cudaGraphNodeSetEnabled(e, add, 0));
    unsigned enabled = 1;
    CK(cudaGraphNodeGetEnabled(e, add, &enabled));
    CK(cudaGraphLaunch(e, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(enabled == 0 && sum_of(h, N) == 2LL * N, "a disabled kernel node is skipped", "sum %lld", sum_of(h, N));

    // a child graph of the whole thing, and its clone's node
    cudaGraph_t parent, clone;
    cudaGraphNode_t child, found;
    CK(cudaGraphCreate(&parent, 0));
    CK(cudaGraphAddChildGraphNode(&child, parent, NULL, 0, g));
    CK(cudaGraphClone(&clone, g));
    CK(cudaGraphNodeFindInClone(&found, add, clone));
    vmc_check(found != NULL, "a node found in the clone", "%s", found ? "yes" : "no");
    cudaGraphExec_t pe;
    CK(cudaGraphInstantiate(&pe, parent, 0));
    CK(cudaGraphLaunch(pe, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, b, N * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(sum_of(h, N) == 7LL * N && host_calls == 6, "the graph as a child node", "sum %lld, %d host calls", sum_of(h, N), host_calls);

    free(h);
    CK(cudaGraphExecDestroy(pe));
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(clone));
    CK(cudaGraphDestroy(parent));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(done));
    CK(cudaFree(a));
    CK(cudaFree(b));
}

static void graph_memory_and_conditional(cudaStream_t s) {
    int dev = 0;
    CK(cudaGetDevice(&dev));
    int *out, *state; // state[0] counter, state[1] iterations
    CK(cudaMalloc((void **)&out, N * sizeof(int)));
    CK(cudaMalloc((void **)&state, 2 * sizeof(int)));

    // allocation node -> kernel into it -> copy out -> free node
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = dev;
    ap.bytesize = N * sizeof(int);
    cudaGraphNode_t alloc, fill, copy, release;
    CK(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &ap));
    vmc_check(ap.dptr != NULL, "allocation node gives its address", "%s", ap.dptr ? "yes" : "no");
    int *tmp = (int *)ap.dptr, n = N;
    void *args[] = {&tmp, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)fill_index, kp.gridDim = dim3(N / 256), kp.blockDim = dim3(256), kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&fill, g, &alloc, 1, &kp));
    CK(cudaGraphAddMemcpyNode1D(&copy, g, &fill, 1, out, tmp, N * sizeof(int), cudaMemcpyDeviceToDevice));
    CK(cudaGraphAddMemFreeNode(&release, g, &copy, 1, tmp));
    void *freed = NULL;
    CK(cudaGraphMemFreeNodeGetParams(release, &freed));
    vmc_check(freed == tmp, "free node parameters read back", "%s", freed == tmp ? "same address" : "another address");

    // while (counter > 0) count_down: a conditional node with a captured body
    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = handle;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t loop;
    CK(cudaGraphAddNode(&loop, g, &release, NULL, 1, &cp));
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    cudaStream_t cs;
    CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
    CK(cudaStreamBeginCaptureToGraph(cs, body, NULL, NULL, 0, cudaStreamCaptureModeRelaxed));
    enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaGraph_t capturing = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t ndeps = 99;
    CK(cudaStreamGetCaptureInfo(cs, &status, &id, &capturing, &deps, NULL, &ndeps));
    vmc_check(status == cudaStreamCaptureStatusActive && capturing == body && ndeps == 0, "capture information",
              "status %d, %s graph, %zu dependencies", (int)status, capturing == body ? "the body" : "another", ndeps);
    count_down<<<1, 1, 0, cs>>>(state, state + 1, handle);
    CK(cudaStreamGetCaptureInfo(cs, &status, NULL, NULL, &deps, NULL, &ndeps));
    vmc_check(ndeps == 1, "the captured kernel is the next dependency", "%zu", ndeps);
    cudaGraph_t ended = NULL;
    CK(cudaStreamEndCapture(cs, &ended));
    vmc_check(ended == body, "capture ends into the given graph", "%s", ended == body ? "yes" : "no");

    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    int start[2] = {4, 0};
    for (int run = 0; run < 2; run++) {
        CK(cudaMemcpy(state, start, sizeof start, cudaMemcpyHostToDevice));
        CK(cudaMemset(out, 0, N * sizeof(int)));
        CK(cudaGraphLaunch(e, s));
        CK(cudaStreamSynchronize(s));
    }
    int got[2];
    int *h = (int *)malloc(N * sizeof(int));
    CK(cudaMemcpy(got, state, sizeof got, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h, out, N * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(got[0] == 0 && got[1] == 4, "while node ran its body until the condition was 0", "counter %d, %d iterations", got[0], got[1]);
    vmc_check(sum_of(h, N) == (long long)N * (N - 1) / 2, "allocation, kernel, copy and free nodes", "sum %lld", sum_of(h, N));
    unsigned long long reserved = 0;
    CK(cudaDeviceGetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemHigh, &reserved));
    vmc_check(reserved >= N * sizeof(int), "graph memory reserved at its peak", "%s", reserved >= N * sizeof(int) ? "at least the allocation" : "less");
    CK(cudaGraphExecDestroy(e));
    CK(cudaDeviceGraphMemTrim(dev));
    free(h);
    CK(cudaStreamDestroy(cs));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(out));
    CK(cudaFree(state));
}

static void memory_pools(cudaStream_t s) {
    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaMemPool_t def, current;
    CK(cudaDeviceGetDefaultMemPool(&def, dev));
    CK(cudaDeviceGetMemPool(&current, dev));
    vmc_check(def == current, "the device's pool is its default one", "%s", def == current ? "yes" : "no");
    unsigned long long threshold = 64ull << 20, read = 0;
    CK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold, &threshold));
    CK(cudaMemPoolGetAttribute(def, cudaMemPoolAttrReleaseThreshold, &read));
    vmc_check(read == threshold, "pool attribute set and read", "%llu MiB", read >> 20);

    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    cudaMemLocation here = {cudaMemLocationTypeDevice, dev};
    cudaMemAccessFlags access = cudaMemAccessFlagsProtNone;
    CK(cudaMemPoolGetAccess(&access, pool, &here));
    vmc_check(access == cudaMemAccessFlagsProtReadWrite, "the pool's own device reads and writes it", "flags %d", (int)access);
    int *p = NULL;
    CK(cudaMallocFromPoolAsync((void **)&p, N * sizeof(int), pool, s));
    fill_index<<<N / 256, 256, 0, s>>>(p, N);
    int *h = (int *)malloc(N * sizeof(int));
    CK(cudaMemcpyAsync(h, p, N * sizeof(int), cudaMemcpyDefault, s)); // the pool's memory is told from host memory
    CK(cudaFreeAsync(p, s));
    CK(cudaStreamSynchronize(s));
    vmc_check(sum_of(h, N) == (long long)N * (N - 1) / 2, "memory from a created pool", "sum %lld", sum_of(h, N));
    unsigned long long used = 1;
    CK(cudaMemPoolTrimTo(pool, 0));
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    vmc_check(used == 0, "nothing in use after the free", "%llu bytes", used);
    CK(cudaDeviceSetMemPool(dev, pool));
    int *q = NULL;
    CK(cudaMallocAsync((void **)&q, 4096, s)); // from the device's current pool, now ours
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
    vmc_check(used >= 4096, "cudaMallocAsync takes from the device's current pool", "%s", used >= 4096 ? "yes" : "no");
    CK(cudaFreeAsync(q, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSetMemPool(dev, def));
    CK(cudaMemPoolDestroy(pool));
    free(h);
}

static void cooperative_and_queries(cudaStream_t s) {
    int dev = 0, coop = 0, sms = 0, per_sm = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, 128, 0));
    vmc_check(coop == 1 && per_sm > 0, "cooperative launches possible", "attribute %d", coop);
    int blocks = sms; // one per SM: all resident at once
    int *v, *partial, *total;
    CK(cudaMalloc((void **)&v, N * sizeof(int)));
    CK(cudaMalloc((void **)&partial, blocks * sizeof(int)));
    CK(cudaMalloc((void **)&total, sizeof(int)));
    fill_index<<<N / 256, 256, 0, s>>>(v, N);
    int n = N;
    void *args[] = {&v, &n, &partial, &total};
    CK(cudaLaunchCooperativeKernel((void *)grid_sum, dim3(blocks), dim3(128), args, 0, s));
    int got = 0;
    CK(cudaMemcpyAsync(&got, total, sizeof got, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    vmc_check(got == N * (N - 1) / 2, "cooperative launch with a grid-wide barrier", "total %d", got);

    cudaFunction_t f = NULL;
    CK(cudaGetFuncBySymbol(&f, (const void *)add_k));
    vmc_check(f != NULL, "a kernel's CUfunction", "%s", f ? "found" : "none");
    const char *name = NULL;
    CK(cudaFuncGetName(&name, (const void *)add_k));
    vmc_check(name && strstr(name, "add_k"), "a kernel's name", "%s", name && strstr(name, "add_k") ? "names add_k" : "other");

    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(16), config.blockDim = dim3(128), config.stream = s;
    int clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&clusters, (void *)cluster_kernel, &config));
    vmc_check(clusters > 0, "clusters of 2 fit", "%s", clusters > 0 ? "some" : "none");

    char bus[32] = "";
    CK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    vmc_check(strchr(bus, ':') != NULL, "PCI bus id", "%s", strchr(bus, ':') ? "domain:bus:device.function" : bus);
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion("cuDriverGetVersion", &fn, 13000, cudaEnableDefault, &q));
    int version = 0;
    int rc = fn ? ((int (*)(int *))fn)(&version) : -1;
    vmc_check(q == cudaDriverEntryPointSuccess && rc == 0 && version >= 13000, "a driver entry point, called",
              "%s", version >= 13000 ? "CUDA 13 or later" : "older or none");
    CK(cudaFree(v));
    CK(cudaFree(partial));
    CK(cudaFree(total));
}

// Copy nodes to and from a __device__ symbol; an error of a node call is the thread's last error, as natively.
static void symbols_and_errors(cudaStream_t s) {
    int *in, *out;
    CK(cudaMalloc((void **)&in, 64 * sizeof(int)));
    CK(cudaMalloc((void **)&out, 64 * sizeof(int)));
    fill_index<<<1, 64, 0, s>>>(in, 64);
    cudaGraph_t g;
    cudaGraphNode_t to, from;
    CK(cudaGraphCreate(&g, 0));
    CK(cudaGraphAddMemcpyNodeToSymbol(&to, g, NULL, 0, table, in, 32 * sizeof(int), 32 * sizeof(int), cudaMemcpyDeviceToDevice));
    CK(cudaGraphAddMemcpyNodeFromSymbol(&from, g, &to, 1, out, table, 64 * sizeof(int), 0, cudaMemcpyDeviceToDevice));
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaMemsetAsync(out, 0, 64 * sizeof(int), s));
    CK(cudaGraphLaunch(e, s));
    int h[64];
    CK(cudaMemcpyAsync(h, out, sizeof h, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    vmc_check(h[32] == 0 && h[63] == 31, "copy nodes to and from a symbol", "table[32] %d, table[63] %d", h[32], h[63]);
    cudaGraphNode_t none;
    CK_EXPECT(cudaGraphAddKernelNode(&none, g, NULL, 0, NULL), cudaErrorInvalidValue);
    CK_EXPECT(cudaGetLastError(), cudaErrorInvalidValue);
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(in));
    CK(cudaFree(out));
}

// After a reset, new modules and functions: a graph's kernel node must launch what it names.
static void after_reset() {
    CK(cudaDeviceReset());
    int *v, n = 256, k = 3;
    CK(cudaMalloc((void **)&v, n * sizeof(int)));
    CK(cudaMemset(v, 0, n * sizeof(int)));
    cudaGraph_t g;
    cudaGraphNode_t add;
    CK(cudaGraphCreate(&g, 0));
    void *args[] = {&v, &n, &k};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add_k, kp.gridDim = dim3(1), kp.blockDim = dim3(256), kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&add, g, NULL, 0, &kp));
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaGraphLaunch(e, 0));
    int *h = (int *)malloc(n * sizeof(int));
    CK(cudaMemcpy(h, v, n * sizeof(int), cudaMemcpyDeviceToHost));
    vmc_check(sum_of(h, n) == 3LL * n, "a kernel node after cudaDeviceReset", "sum %lld", sum_of(h, n));
    free(h);
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(v));
}

int main() {
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    graph_node_by_node(s);
    graph_memory_and_conditional(s);
    memory_pools(s);
    cooperative_and_queries(s);
    symbols_and_errors(s);
    CK(cudaStreamDestroy(s));
    after_reset();
    return vmc_finish("graph_nodes");
}

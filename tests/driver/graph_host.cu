// CUDA graphs that reach this process: host nodes, copy nodes from and to pageable memory, and a stream
// capture of host functions and pageable copies (as cuda-samples' simpleCudaGraphs and graphMemoryNodes do),
// a graph that allocates and frees memory of its own, and a conditional (while) node.
// Each graph runs three times with new input written into the program's memory in between: a host node
// must run at every execution, and a copy node must read the program's memory as it is when the graph runs.
// Built with nvcc's default static runtime (the driver front end). Through vmcuda this needs the co-located
// path (the graph, on the appliance, reaches this process's memory only through shared memory); over TCP
// such copies are refused with a line saying so.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            printf("%s: %s\n", #x, cudaGetErrorName(e_));                                          \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)

static const int N = 1 << 16;

__global__ void scale(const float *in, float *out, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * k;
}

// one turn of a while loop's body: the loop ends when the counter reaches zero
__global__ void count_down(int *counter, int *turns, cudaGraphConditionalHandle loop) {
    *turns += 1;
    if (--*counter <= 0) cudaGraphSetConditional(loop, 0);
}

struct tally {
    int runs;
    float seen; // out[N-1] as the host node after the copy back sees it
    float *host_out;
};

static void CUDART_CB count_run(void *arg) {
    tally *t = (tally *)arg;
    t->runs++;
    t->seen = t->host_out[N - 1];
}

static int failures;
static void check(bool ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok) failures++;
}

// input[i] = i + round; the graph computes out = in * 3
static void fill(float *in, int round) {
    for (int i = 0; i < N; i++) in[i] = (float)(i % 1000) + (float)round;
}

static bool right(const float *out, int round) {
    for (int i = 0; i < N; i++)
        if (out[i] != ((float)(i % 1000) + (float)round) * 3.0f) return false;
    return true;
}

int main() {
    float *in = (float *)malloc(N * sizeof(float)), *out = (float *)malloc(N * sizeof(float)); // pageable
    float *d_in, *d_out;
    CK(cudaMalloc(&d_in, N * sizeof(float)));
    CK(cudaMalloc(&d_out, N * sizeof(float)));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // built node by node: copy in (pageable) -> kernel -> copy out (pageable) -> host node
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t copy_in, kernel, copy_out, host;
    cudaMemcpy3DParms p = {};
    p.srcPtr = make_cudaPitchedPtr(in, N * sizeof(float), N, 1);
    p.dstPtr = make_cudaPitchedPtr(d_in, N * sizeof(float), N, 1);
    p.extent = make_cudaExtent(N * sizeof(float), 1, 1);
    p.kind = cudaMemcpyHostToDevice;
    CK(cudaGraphAddMemcpyNode(&copy_in, g, nullptr, 0, &p));
    float k = 3.0f;
    int n = N;
    void *args[] = {&d_in, &d_out, &k, &n};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)scale;
    kp.gridDim = dim3((N + 255) / 256);
    kp.blockDim = dim3(256);
    kp.kernelParams = args;
    CK(cudaGraphAddKernelNode(&kernel, g, &copy_in, 1, &kp));
    cudaMemcpy3DParms q = {};
    q.srcPtr = make_cudaPitchedPtr(d_out, N * sizeof(float), N, 1);
    q.dstPtr = make_cudaPitchedPtr(out, N * sizeof(float), N, 1);
    q.extent = make_cudaExtent(N * sizeof(float), 1, 1);
    q.kind = cudaMemcpyDeviceToHost;
    CK(cudaGraphAddMemcpyNode(&copy_out, g, &kernel, 1, &q));
    tally t = {0, 0.0f, out};
    cudaHostNodeParams hp = {count_run, &t};
    CK(cudaGraphAddHostNode(&host, g, &copy_out, 1, &hp));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, nullptr, &nodes));
    printf("nodes in the graph built by hand: %zu\n", nodes);
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, g, 0));
    bool all = true;
    for (int round = 1; round <= 3; round++) {
        fill(in, round);
        memset(out, 0, N * sizeof(float));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        all = all && right(out, round) && t.seen == out[N - 1];
    }
    check(all && t.runs == 3, "graph built by hand: pageable copies in and out, host node, three runs");

    // captured: the same work through cudaMemcpyAsync and cudaLaunchHostFunc on a capturing stream
    cudaGraph_t cg;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemcpyAsync(d_in, in, N * sizeof(float), cudaMemcpyHostToDevice, s));
    scale<<<(N + 255) / 256, 256, 0, s>>>(d_in, d_out, 3.0f, N);
    CK(cudaMemcpyAsync(out, d_out, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    tally ct = {0, 0.0f, out};
    CK(cudaLaunchHostFunc(s, count_run, &ct));
    CK(cudaStreamEndCapture(s, &cg));
    CK(cudaGraphGetNodes(cg, nullptr, &nodes));
    printf("nodes in the captured graph: %zu\n", nodes);
    check(ct.runs == 0, "nothing ran during the capture");
    cudaGraphExec_t cge;
    CK(cudaGraphInstantiate(&cge, cg, 0));
    all = true;
    for (int round = 4; round <= 6; round++) {
        fill(in, round);
        memset(out, 0, N * sizeof(float));
        CK(cudaGraphLaunch(cge, s));
        CK(cudaStreamSynchronize(s));
        all = all && right(out, round) && ct.seen == out[N - 1];
    }
    check(all && ct.runs == 3, "captured graph: pageable copies in and out, host function, three runs");

    // a clone of the hand-built graph runs as its original does
    cudaGraph_t clone;
    cudaGraphExec_t clone_exec;
    CK(cudaGraphClone(&clone, g));
    CK(cudaGraphInstantiate(&clone_exec, clone, 0));
    fill(in, 7);
    CK(cudaGraphLaunch(clone_exec, s));
    CK(cudaStreamSynchronize(s));
    check(right(out, 7) && t.runs == 4, "cloned graph");

    // a 2-D copy of pageable rows with a pitch, in and out, kind cudaMemcpyDefault (the driver tells the sides apart)
    const int W = 100, H = 64, HOST_PITCH = 128, BACK_PITCH = 112; // floats
    float *rows_in = (float *)calloc(H * HOST_PITCH, sizeof(float)), *rows_back = (float *)calloc(H * BACK_PITCH, sizeof(float));
    float *d_rows;
    size_t d_pitch;
    CK(cudaMallocPitch(&d_rows, &d_pitch, W * sizeof(float), H));
    cudaGraph_t pg;
    CK(cudaGraphCreate(&pg, 0));
    cudaMemcpy3DParms r_in = {}, r_out = {};
    r_in.srcPtr = make_cudaPitchedPtr(rows_in, HOST_PITCH * sizeof(float), W, H);
    r_in.dstPtr = make_cudaPitchedPtr(d_rows, d_pitch, W, H);
    r_in.extent = make_cudaExtent(W * sizeof(float), H, 1);
    r_in.kind = cudaMemcpyDefault;
    r_out.srcPtr = make_cudaPitchedPtr(d_rows, d_pitch, W, H);
    r_out.dstPtr = make_cudaPitchedPtr(rows_back, BACK_PITCH * sizeof(float), W, H);
    r_out.extent = make_cudaExtent(W * sizeof(float), H, 1);
    r_out.kind = cudaMemcpyDefault;
    cudaGraphNode_t rows_in_node, rows_out_node;
    CK(cudaGraphAddMemcpyNode(&rows_in_node, pg, nullptr, 0, &r_in));
    CK(cudaGraphAddMemcpyNode(&rows_out_node, pg, &rows_in_node, 1, &r_out));
    cudaGraphExec_t pge;
    CK(cudaGraphInstantiate(&pge, pg, 0));
    bool rows_right = true;
    for (int round = 0; round < 2; round++) {
        for (int r = 0; r < H; r++)
            for (int c = 0; c < HOST_PITCH; c++) rows_in[r * HOST_PITCH + c] = c < W ? (float)(r * 1000 + c + round) : -1.0f;
        for (int i = 0; i < H * BACK_PITCH; i++) rows_back[i] = -2.0f;
        CK(cudaGraphLaunch(pge, s));
        CK(cudaStreamSynchronize(s));
        for (int r = 0; r < H; r++)
            for (int c = 0; c < BACK_PITCH; c++)
                rows_right = rows_right && rows_back[r * BACK_PITCH + c] == (c < W ? (float)(r * 1000 + c + round) : -2.0f);
    }
    check(rows_right, "2-D copy nodes of pitched pageable rows (cudaMemcpyDefault), in and out, two runs");
    CK(cudaGraphExecDestroy(pge));
    CK(cudaGraphDestroy(pg));
    CK(cudaFree(d_rows));
    free(rows_in);
    free(rows_back);

    // memory that the graph allocates and frees itself, its address given back at the node's creation
    cudaGraph_t ag;
    CK(cudaGraphCreate(&ag, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N * sizeof(float);
    cudaGraphNode_t alloc_node, fill_node, read_node, free_node;
    CK(cudaGraphAddMemAllocNode(&alloc_node, ag, nullptr, 0, &ap));
    check(ap.dptr != nullptr, "memory allocation node: address given back");
    float *scratch = (float *)ap.dptr;
    void *fill_args[] = {&d_in, &scratch, &k, &n};
    cudaKernelNodeParams fp = kp;
    fp.kernelParams = fill_args;
    CK(cudaGraphAddKernelNode(&fill_node, ag, &alloc_node, 1, &fp));
    cudaMemcpy3DParms rp = {};
    rp.srcPtr = make_cudaPitchedPtr(scratch, N * sizeof(float), N, 1);
    rp.dstPtr = make_cudaPitchedPtr(out, N * sizeof(float), N, 1);
    rp.extent = make_cudaExtent(N * sizeof(float), 1, 1);
    rp.kind = cudaMemcpyDeviceToHost;
    CK(cudaGraphAddMemcpyNode(&read_node, ag, &fill_node, 1, &rp));
    CK(cudaGraphAddMemFreeNode(&free_node, ag, &read_node, 1, scratch));
    cudaGraphExec_t age;
    CK(cudaGraphInstantiate(&age, ag, 0));
    fill(in, 8);
    CK(cudaMemcpy(d_in, in, N * sizeof(float), cudaMemcpyHostToDevice));
    all = true;
    for (int i = 0; i < 2; i++) {
        memset(out, 0, N * sizeof(float));
        CK(cudaGraphLaunch(age, s));
        CK(cudaStreamSynchronize(s));
        all = all && right(out, 8);
    }
    check(all, "graph with its own memory (allocation, kernel, copy out, free), two runs");
    unsigned long long high = 0;
    CK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &high));
    check(high >= N * sizeof(float), "graph memory high-water mark at least the allocation");
    CK(cudaDeviceGraphMemTrim(0));
    CK(cudaGraphExecDestroy(age));
    CK(cudaGraphDestroy(ag));

    // a conditional (while) node: the driver makes its body graph, which the program fills
    cudaGraph_t wg;
    CK(cudaGraphCreate(&wg, 0));
    cudaGraphConditionalHandle loop;
    CK(cudaGraphConditionalHandleCreate(&loop, wg, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = loop;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t while_node, body_node;
    CK(cudaGraphAddNode(&while_node, wg, nullptr, nullptr, 0, &cp));
    int *counters;
    CK(cudaMalloc(&counters, 2 * sizeof(int)));
    int *turns = counters + 1;
    void *cd_args[] = {&counters, &turns, &loop};
    cudaKernelNodeParams cdp = {};
    cdp.func = (void *)count_down;
    cdp.gridDim = dim3(1);
    cdp.blockDim = dim3(1);
    cdp.kernelParams = cd_args;
    CK(cudaGraphAddKernelNode(&body_node, cp.conditional.phGraph_out[0], nullptr, 0, &cdp));
    cudaGraphExec_t wge;
    CK(cudaGraphInstantiate(&wge, wg, 0));
    int start[2] = {5, 0}, end[2] = {-1, -1};
    CK(cudaMemcpy(counters, start, sizeof start, cudaMemcpyHostToDevice));
    CK(cudaGraphLaunch(wge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(end, counters, sizeof end, cudaMemcpyDeviceToHost));
    check(end[0] == 0 && end[1] == 5, "conditional while node: its body ran five times");
    CK(cudaGraphExecDestroy(wge));
    CK(cudaGraphDestroy(wg));
    CK(cudaFree(counters));

    CK(cudaGraphExecDestroy(clone_exec));
    CK(cudaGraphDestroy(clone));
    CK(cudaGraphExecDestroy(cge));
    CK(cudaGraphDestroy(cg));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    printf("%s\n", failures ? "graph_host: FAIL" : "graph_host: PASS");
    return failures ? 1 : 0;
}

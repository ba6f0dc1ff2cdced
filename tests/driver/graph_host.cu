// CUDA graphs that reach this process: host nodes, copy nodes from and to pageable memory, and a stream
// capture of host functions and pageable copies (as cuda-samples' simpleCudaGraphs and graphMemoryNodes do).
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

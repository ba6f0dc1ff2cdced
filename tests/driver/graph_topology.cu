// CUDA graphs built and inspected node by node, the way frameworks look at what they captured (PyTorch
// counts a captured graph's nodes with cudaGraphGetNodes): the lists of nodes, root nodes, edges and
// dependencies, empty/memset/event/child-graph nodes, dependencies added and removed, a node found in a
// clone, nodes disabled in an instantiated graph, the instantiation log. Built with nvcc's default static
// runtime, so it reaches the GPU through the driver front end; a vmcuda run must print what a native run
// prints (node handles are never printed, only what they say).
#include <cstdio>
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

__global__ void add_one(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += 1;
}

static int failures;
static void check(bool ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok) failures++;
}

static int index_of(const cudaGraphNode_t *nodes, size_t n, cudaGraphNode_t x) {
    for (size_t i = 0; i < n; i++)
        if (nodes[i] == x) return (int)i;
    return -1;
}

int main() {
    const int N = 1 << 12;
    int *d = NULL, h[N];
    CK(cudaMalloc((void **)&d, N * sizeof(int)));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    add_one<<<1, 1, 0, s>>>(d, 1); // loads the module outside capture
    CK(cudaStreamSynchronize(s));

    // a captured graph: memset, then two kernels
    cudaGraph_t captured = NULL;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemsetAsync(d, 0, N * sizeof(int), s));
    add_one<<<N / 256, 256, 0, s>>>(d, N);
    add_one<<<N / 256, 256, 0, s>>>(d, N);
    CK(cudaStreamEndCapture(s, &captured));
    size_t count = 0;
    CK(cudaGraphGetNodes(captured, NULL, &count));
    printf("captured graph: %zu nodes\n", count);
    cudaGraphNode_t nodes[8] = {0};
    size_t room = 8;
    CK(cudaGraphGetNodes(captured, nodes, &room));
    check(room == count, "cudaGraphGetNodes fills as many as it counted");
    int kernels = 0, memsets = 0;
    for (size_t i = 0; i < room; i++) {
        cudaGraphNodeType t;
        CK(cudaGraphNodeGetType(nodes[i], &t));
        kernels += t == cudaGraphNodeTypeKernel;
        memsets += t == cudaGraphNodeTypeMemset;
    }
    printf("captured node types: %d kernels, %d memsets\n", kernels, memsets);
    size_t two = 2;
    cudaGraphNode_t first_two[2] = {0};
    CK(cudaGraphGetNodes(captured, first_two, &two));
    check(two == 2 && index_of(nodes, room, first_two[0]) >= 0 && index_of(nodes, room, first_two[1]) >= 0,
          "cudaGraphGetNodes with room for two returns two of them");
    size_t roots = 0;
    CK(cudaGraphGetRootNodes(captured, NULL, &roots));
    printf("captured graph: %zu root nodes\n", roots);
    size_t edges = 0;
    CK(cudaGraphGetEdges(captured, NULL, NULL, NULL, &edges));
    printf("captured graph: %zu edges\n", edges);
    cudaGraphNode_t from[8], to[8];
    size_t edge_room = 8;
    CK(cudaGraphGetEdges(captured, from, to, NULL, &edge_room));
    bool chain = edge_room == edges;
    for (size_t i = 0; i < edge_room; i++) chain = chain && index_of(nodes, room, from[i]) >= 0 && index_of(nodes, room, to[i]) >= 0;
    check(chain, "the edges join nodes of the graph");
    cudaGraphEdgeData edge_data[8];
    memset(edge_data, 0x5a, sizeof edge_data);
    edge_room = 8;
    CK(cudaGraphGetEdges(captured, from, to, edge_data, &edge_room));
    printf("edge data of the first edge: type %u, from port %u, to port %u\n", (unsigned)edge_data[0].type,
           (unsigned)edge_data[0].from_port, (unsigned)edge_data[0].to_port);

    // a graph built node by node: root memset -> (empty, event record) -> child graph (the captured one)
    cudaGraph_t g = NULL;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t memset_node, empty, record, child;
    cudaMemsetParams mp;
    memset(&mp, 0, sizeof mp);
    mp.dst = d;
    mp.value = 7;
    mp.elementSize = 4;
    mp.width = N;
    mp.height = 1;
    CK(cudaGraphAddMemsetNode(&memset_node, g, NULL, 0, &mp));
    cudaMemsetParams back;
    memset(&back, 0, sizeof back);
    CK(cudaGraphMemsetNodeGetParams(memset_node, &back));
    check(back.dst == d && back.value == 7 && back.width == (size_t)N, "cudaGraphMemsetNodeGetParams");
    CK(cudaGraphAddEmptyNode(&empty, g, &memset_node, 1));
    cudaEvent_t ev;
    CK(cudaEventCreate(&ev));
    CK(cudaGraphAddEventRecordNode(&record, g, &memset_node, 1, ev));
    cudaEvent_t ev_back = NULL;
    CK(cudaGraphEventRecordNodeGetEvent(record, &ev_back));
    check(ev_back == ev, "cudaGraphEventRecordNodeGetEvent");
    cudaGraphNode_t deps[2] = {empty, record};
    CK(cudaGraphAddChildGraphNode(&child, g, deps, 2, captured));
    size_t n = 0;
    CK(cudaGraphNodeGetDependencies(child, NULL, NULL, &n));
    printf("child node: %zu dependencies\n", n);
    cudaGraphNode_t got[4] = {0};
    n = 4;
    CK(cudaGraphNodeGetDependencies(child, got, NULL, &n));
    check(n == 2 && index_of(got, n, empty) >= 0 && index_of(got, n, record) >= 0, "cudaGraphNodeGetDependencies");
    n = 4;
    CK(cudaGraphNodeGetDependentNodes(memset_node, got, NULL, &n));
    check(n == 2 && index_of(got, n, empty) >= 0 && index_of(got, n, record) >= 0, "cudaGraphNodeGetDependentNodes");
    n = 0;
    CK(cudaGraphGetRootNodes(g, NULL, &n));
    cudaGraphNode_t root = NULL;
    size_t one = 1;
    CK(cudaGraphGetRootNodes(g, &root, &one));
    check(n == 1 && root == memset_node, "the memset is the only root");
    cudaGraph_t inner = NULL;
    CK(cudaGraphChildGraphNodeGetGraph(child, &inner));
    size_t inner_nodes = 0;
    CK(cudaGraphGetNodes(inner, NULL, &inner_nodes));
    printf("child graph: %zu nodes\n", inner_nodes);

    // dependencies removed and added again
    CK(cudaGraphRemoveDependencies(g, &empty, &child, NULL, 1));
    n = 0;
    CK(cudaGraphNodeGetDependencies(child, NULL, NULL, &n));
    printf("child node after removing one dependency: %zu\n", n);
    cudaGraphEdgeData plain;
    memset(&plain, 0, sizeof plain);
    CK(cudaGraphAddDependencies(g, &empty, &child, &plain, 1));
    CK(cudaGraphGetEdges(g, NULL, NULL, NULL, &n));
    printf("built graph: %zu edges\n", n);
    cudaGraphNode_t self = memset_node;
    printf("a node depending on itself: %s\n", cudaGetErrorName(cudaGraphAddDependencies(g, &self, &self, NULL, 1)));
    cudaGetLastError();

    // a clone, and the clone's node for one of ours
    cudaGraph_t clone = NULL;
    CK(cudaGraphClone(&clone, g));
    cudaGraphNode_t in_clone = NULL;
    CK(cudaGraphNodeFindInClone(&in_clone, child, clone));
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(in_clone, &t));
    check(in_clone != NULL && in_clone != child && t == cudaGraphNodeTypeGraph, "cudaGraphNodeFindInClone");

    // run it: memset to 7, then the child graph sets 0 and adds 2
    cudaGraphExec_t ge = NULL;
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += h[i] != 2;
    printf("after the built graph: %d of %d wrong\n", wrong, N);
    // the root memset disabled in the instantiated graph: 5 before, the child graph still zeroes and adds 2
    unsigned enabled = 9;
    CK(cudaGraphNodeGetEnabled(ge, memset_node, &enabled));
    printf("memset node enabled: %u\n", enabled);
    CK(cudaGraphNodeSetEnabled(ge, memset_node, 0));
    CK(cudaGraphNodeGetEnabled(ge, memset_node, &enabled));
    printf("memset node enabled after disabling: %u\n", enabled);
    printf("a child-graph node cannot be disabled: %s\n", cudaGetErrorName(cudaGraphNodeSetEnabled(ge, child, 0)));
    cudaGetLastError();
    CK(cudaGraphLaunch(ge, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < N; i++) wrong += h[i] != 2;
    printf("with the memset disabled: %d of %d wrong\n", wrong, N);

    // a bad handle is refused as natively
    printf("nodes of no graph: %s\n", cudaGetErrorName(cudaGraphGetNodes(NULL, NULL, &n)));
    cudaGetLastError();

    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(clone));
    CK(cudaGraphDestroy(g));
    CK(cudaGraphDestroy(captured));
    CK(cudaEventDestroy(ev));
    CK(cudaFree(d));
    printf("%s\n", failures ? "FAILED" : "done");
    return failures ? 1 : 0;
}

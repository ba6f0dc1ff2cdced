// Host callbacks: cudaLaunchHostFunc and cudaStreamAddCallback run in this process, in stream order,
// after the work queued before them and before the work queued after them. Through vmcuda the worker
// holds the stream until this process has run the callback (PROTOCOL.md "Host callbacks").
#include <atomic>
#include <string.h>
#include "vmc_check.h"

#define STREAMS 4
#define PER_STREAM 50
#define N 4096

__global__ void add(int *v, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += k;
}

struct tag {
    int stream, seq;
};

static int log_of[STREAMS][PER_STREAM];
static std::atomic<int> logged[STREAMS];
static std::atomic<int> callbacks_with_success;
static std::atomic<int> bad_status;

static void CUDART_CB host_fn(void *p) {
    tag *t = (tag *)p;
    int k = logged[t->stream]++;
    if (k < PER_STREAM) log_of[t->stream][k] = t->seq;
}

static void CUDART_CB stream_cb(cudaStream_t, cudaError_t status, void *p) {
    if (status == cudaSuccess) callbacks_with_success++;
    else bad_status++;
    host_fn(p);
}

static void CUDART_CB say_hello(void *) { printf("callback: runs before the synchronize returns\n"); }

int main() {
    int *dev[STREAMS];
    cudaStream_t s[STREAMS];
    static tag tags[STREAMS][PER_STREAM];
    for (int k = 0; k < STREAMS; k++) {
        CK(cudaStreamCreate(&s[k]));
        CK(cudaMalloc(&dev[k], N * sizeof(int)));
        CK(cudaMemsetAsync(dev[k], 0, N * sizeof(int), s[k]));
    }
    for (int i = 0; i < PER_STREAM; i++)
        for (int k = 0; k < STREAMS; k++) {
            add<<<(N + 255) / 256, 256, 0, s[k]>>>(dev[k], N, i);
            tags[k][i] = tag{k, i};
            if (i % 2 == 0) CK(cudaLaunchHostFunc(s[k], host_fn, &tags[k][i]));
            else CK(cudaStreamAddCallback(s[k], stream_cb, &tags[k][i], 0));
        }
    for (int k = 0; k < STREAMS; k++) CK(cudaStreamSynchronize(s[k]));
    int in_order = 1, all_ran = 1;
    for (int k = 0; k < STREAMS; k++) {
        if (logged[k] != PER_STREAM) all_ran = 0;
        for (int i = 0; i < PER_STREAM && i < logged[k]; i++)
            if (log_of[k][i] != i) in_order = 0;
    }
    vmc_check(all_ran, "every callback ran before its stream's synchronize returned", "%d streams x %d", STREAMS, PER_STREAM);
    vmc_check(in_order, "callbacks ran in stream order", "per stream");
    vmc_check(callbacks_with_success == STREAMS * PER_STREAM / 2 && bad_status == 0,
              "cudaStreamAddCallback status", "%d with cudaSuccess, %d other", callbacks_with_success.load(), bad_status.load());

    // The kernels between the callbacks all ran: each element got 0 + 1 + ... + 49.
    int *host = (int *)malloc(N * sizeof(int));
    int sums_ok = 1;
    for (int k = 0; k < STREAMS; k++) {
        CK(cudaMemcpy(host, dev[k], N * sizeof(int), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++)
            if (host[i] != PER_STREAM * (PER_STREAM - 1) / 2) sums_ok = 0;
    }
    vmc_check(sums_ok, "kernels between callbacks", "every element is %d", PER_STREAM * (PER_STREAM - 1) / 2);

    // Output of a callback lands between the host's lines, in order.
    printf("host: before the callback\n");
    CK(cudaLaunchHostFunc(s[0], say_hello, NULL));
    CK(cudaStreamSynchronize(s[0]));
    printf("host: after the synchronize\n");

    // A callback on the legacy default stream, after a device-wide synchronize.
    static tag legacy{0, 0};
    logged[0] = 0;
    CK(cudaLaunchHostFunc(0, host_fn, &legacy));
    CK(cudaDeviceSynchronize());
    vmc_check(logged[0] == 1, "callback on the default stream", "ran once");

    for (int k = 0; k < STREAMS; k++) {
        CK(cudaFree(dev[k]));
        CK(cudaStreamDestroy(s[k]));
    }
    free(host);
    return vmc_finish("callbacks");
}

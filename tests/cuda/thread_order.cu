// Two threads take turns launching onto one stream, handing a token to each other between launches (what
// PyTorch does with its forward pass on the program's thread and the backward pass on its autograd thread).
// CUDA runs a stream's work in the order it was issued, and each launch here is issued after the other
// thread's previous one returned, so the kernels must run strictly alternating. Through vmcuda each thread
// has its own connection: the worker must keep the client's order across them.
#include <pthread.h>
#include "vmc_check.h"

#define ROUNDS 3000

__global__ void append(int *log, int value) {
    int at = log[0]++; // one thread: the stream's order is the only order
    log[1 + at] = value;
}

static int *dlog;
static cudaStream_t stream;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn; // 0: the main thread launches next, 1: the other one
static cudaError_t other_error;

static void wait_turn(int me) {
    pthread_mutex_lock(&lock);
    while (turn != me) pthread_cond_wait(&turn_changed, &lock);
    pthread_mutex_unlock(&lock);
}

static void pass_turn(int to) {
    pthread_mutex_lock(&lock);
    turn = to;
    pthread_cond_broadcast(&turn_changed);
    pthread_mutex_unlock(&lock);
}

static void *other(void *arg) {
    (void)arg;
    for (int i = 1; i <= ROUNDS; i++) {
        wait_turn(1);
        append<<<1, 1, 0, stream>>>(dlog, -i);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess && other_error == cudaSuccess) other_error = e;
        pass_turn(0);
    }
    return NULL;
}

int main() {
    CK(cudaMalloc((void **)&dlog, (1 + 2 * ROUNDS) * sizeof(int)));
    CK(cudaMemset(dlog, 0, (1 + 2 * ROUNDS) * sizeof(int)));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    for (int i = 1; i <= ROUNDS; i++) {
        wait_turn(0);
        append<<<1, 1, 0, stream>>>(dlog, i);
        CK(cudaGetLastError());
        pass_turn(1);
    }
    pthread_join(t, NULL);
    CK(other_error);
    CK(cudaStreamSynchronize(stream));
    static int log[1 + 2 * ROUNDS];
    CK(cudaMemcpy(log, dlog, sizeof log, cudaMemcpyDeviceToHost));
    int first_wrong = -1;
    for (int k = 0; k < 2 * ROUNDS && first_wrong < 0; k++)
        if (log[1 + k] != (k % 2 == 0 ? k / 2 + 1 : -(k / 2 + 1))) first_wrong = k;
    vmc_check(log[0] == 2 * ROUNDS, "every launch ran", "%d of %d", log[0], 2 * ROUNDS);
    vmc_check(first_wrong < 0, "launches of two threads ran in the order they were issued",
              "%d alternating launches, first out of order at %d", 2 * ROUNDS, first_wrong);
    CK(cudaStreamDestroy(stream));
    CK(cudaFree(dlog));
    return vmc_finish("thread_order");
}

// Eight threads copy 1 MiB each (through vmcuda's shared-memory ring, each on its own connection when
// the client shares memory with the appliance); two are joined, the other six are still blocked when
// main returns. Whatever the process leaves open at exit must not keep shared-region lanes (PROTOCOL.md
// "Shared regions"): SharedRegionTest and tests/gpu/run-on-device.sh check that every lane is free
// afterwards. Prints only the copies' results, in thread order, so native and vmcuda runs compare.
#include <pthread.h>
#include <string.h>
#include "vmc_check.h"

#define BYTES (1u << 20)
#define THREADS 8

static unsigned char *dev; // NULL when there is no device: the copies then return the runtime's error
static cudaError_t result[THREADS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER, never = PTHREAD_COND_INITIALIZER;
static int finished;

static void *copier(void *arg) {
    long k = (long)arg;
    static unsigned char host[THREADS][BYTES];
    memset(host[k], (int)k + 1, BYTES);
    cudaError_t e = cudaMemcpy(dev ? dev + k * BYTES : NULL, host[k], BYTES, cudaMemcpyHostToDevice);
    pthread_mutex_lock(&lock);
    result[k] = e;
    finished++;
    pthread_cond_broadcast(&done);
    if (k >= 2) // stays alive, connection open, until the process ends
        while (1) pthread_cond_wait(&never, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main() {
    cudaError_t e = cudaMalloc(&dev, THREADS * BYTES);
    printf("cudaMalloc: %s\n", cudaGetErrorName(e));
    if (e != cudaSuccess) dev = NULL;
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, copier, (void *)k);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    pthread_mutex_lock(&lock);
    while (finished < THREADS) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    for (int k = 0; k < THREADS; k++) printf("thread %d: cudaMemcpy 1 MiB: %s\n", k, cudaGetErrorName(result[k]));
    return 0; // threads 2.. are still blocked
}

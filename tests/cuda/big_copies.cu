// Large synchronous copies (4 MiB and more: over TCP vmcuda stripes them over several connections,
// client-shim/src/shim_stripe.c). Checks what a program would notice if striping went wrong:
//   - exact round trips at sizes that do not divide evenly, at odd offsets inside one allocation;
//   - ordering: a copy issued while a kernel is still running on the default stream lands after it
//     (host-to-device: the kernel's writes are overwritten; device-to-host: the kernel's writes are read);
//   - two host threads copying at once into different regions;
//   - a copy that runs past the end of its allocation: the runtime's own error, and the last-error state.
// Built twice: big_copies (legacy default stream) and big_copies_ptds (--default-stream per-thread).
#include <pthread.h>
#include <string.h>
#include "vmc_check.h"

#ifndef PROGRAM_NAME
#define PROGRAM_NAME "big_copies"
#endif

#define ALLOC (96u << 20)

// Spins for `spin` clock cycles, then fills p[0..n) with v (every thread of the grid).
__global__ void slow_fill(unsigned char *p, size_t n, unsigned char v, long long spin) {
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

static unsigned char *dev;

// Returns the index of the first byte that did not come back, n when all did.
static size_t round_trip_mismatch(size_t dev_off, size_t host_off, size_t n, unsigned seed) {
    unsigned char *src = (unsigned char *)malloc(n + host_off), *back = (unsigned char *)malloc(n + host_off);
    for (size_t k = 0; k < n; k++) src[host_off + k] = vmc_pattern(k, seed);
    memset(back, 0, n + host_off);
    CK(cudaMemcpy(dev + dev_off, src + host_off, n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(back + host_off, dev + dev_off, n, cudaMemcpyDeviceToHost));
    size_t bad = vmc_first_mismatch(back + host_off, n, seed);
    free(src);
    free(back);
    return bad;
}

static void round_trip(const char *what, size_t dev_off, size_t host_off, size_t n, unsigned seed) {
    size_t bad = round_trip_mismatch(dev_off, host_off, n, seed);
    vmc_check(bad == n, what, "%zu bytes at device offset %zu, host offset %zu: first mismatch at %zu", n, dev_off,
              host_off, bad);
}

// Two threads at once, 40 MiB each into their own region; printed by main in a fixed order.
static size_t thread_mismatch[2];
static void *thread_round_trip(void *arg) {
    size_t k = (size_t)arg;
    thread_mismatch[k] = round_trip_mismatch(k * (48u << 20), 0, 40u << 20, (unsigned)(20 + k));
    return NULL;
}

static size_t count_value(const unsigned char *p, size_t n, unsigned char v) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += p[i] == v;
    return c;
}

int main() {
    CK(cudaMalloc(&dev, ALLOC));
    round_trip("round trip 32 MiB", 0, 0, 32u << 20, 1);
    round_trip("round trip 4 MiB + 4097 at odd offsets (1 MiB stripes)", 8191, 5, (4u << 20) + 4097, 4);
    round_trip("round trip 64 MiB + 12345 at odd offsets", 4097, 3, (64u << 20) + 12345, 2);
    round_trip("round trip of the whole allocation", 0, 0, ALLOC, 3);

    // Ordering with a kernel still running (about 50 ms of spinning at the H200's ~2 GHz).
    const size_t n = 64u << 20;
    const long long spin = 100000000LL;
    unsigned char *host = (unsigned char *)malloc(n);
    for (size_t k = 0; k < n; k++) host[k] = vmc_pattern(k, 7);
    slow_fill<<<132, 256>>>(dev, n, 0xab, spin);
    CK(cudaGetLastError());
    CK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice)); // must land after the kernel's writes
    memset(host, 0, n);
    CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
    size_t bad = vmc_first_mismatch(host, n, 7);
    vmc_check(bad == n, "host-to-device copy after a running kernel", "first mismatch at %zu", bad);
    slow_fill<<<132, 256>>>(dev, n, 0xcd, spin);
    CK(cudaGetLastError());
    CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost)); // must read the kernel's writes
    vmc_check(count_value(host, n, 0xcd) == n, "device-to-host copy after a running kernel", "%zu of %zu bytes written by the kernel",
              count_value(host, n, 0xcd), n);

    pthread_t t[2];
    for (size_t k = 0; k < 2; k++) pthread_create(&t[k], NULL, thread_round_trip, (void *)k);
    for (size_t k = 0; k < 2; k++) pthread_join(t[k], NULL);
    for (size_t k = 0; k < 2; k++)
        vmc_check(thread_mismatch[k] == (40u << 20), k ? "concurrent round trip 1" : "concurrent round trip 0",
                  "first mismatch at %zu", thread_mismatch[k]);

    // Past the end of the allocation: whatever the runtime says, and what cudaGetLastError says then.
    cudaError_t e = cudaMemcpy(dev + ALLOC - (16u << 20), host, 32u << 20, cudaMemcpyHostToDevice);
    printf("H2D past the end of the allocation: %s\n", cudaGetErrorName(e));
    printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
    e = cudaMemcpy(host, dev + ALLOC - (16u << 20), 32u << 20, cudaMemcpyDeviceToHost);
    printf("D2H past the end of the allocation: %s\n", cudaGetErrorName(e));
    printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));

    CK(cudaFree(dev));
    free(host);
    return vmc_finish(PROGRAM_NAME);
}

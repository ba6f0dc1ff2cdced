// Bulk copies of every size class through both vmcuda data paths (socket and shared-memory ring):
// small (socket even when co-located), copies to the device that fit one ring slot and go in pieces
// (two, four with a short last one, four of a slot's quarter), at the ring threshold, several ring
// laps, an odd tail, and symbol copies. Unlike the other programs it keeps going after an error and prints every call's
// result, so that on a machine without a GPU the bulk paths still run end to end (their error must
// be the one the native runtime gives).
#include <string.h>
#include "vmc_check.h"

__device__ unsigned char dev_table[3 << 20];

static void report(const char *what, cudaError_t e) { printf("%s: %s\n", what, cudaGetErrorName(e)); }

int main() {
    const size_t sizes[] = {1000,      (100u << 10) + 5, (256u << 10) - 1, 256u << 10, (3u << 20) + 17, 4u << 20,
                            (4u << 20) + 1, (40u << 20) + 12345};
    const size_t max = (40u << 20) + 12345;
    unsigned char *src = (unsigned char *)malloc(max), *back = (unsigned char *)malloc(max);
    unsigned char *dev = NULL;
    report("cudaMalloc", cudaMalloc(&dev, max));
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (size_t k = 0; k < n; k++) src[k] = vmc_pattern(k, i + 1);
        memset(back, 0, n);
        char what[96];
        snprintf(what, sizeof what, "H2D %zu bytes", n);
        report(what, cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice));
        snprintf(what, sizeof what, "D2H %zu bytes", n);
        cudaError_t e = cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost);
        report(what, e);
        if (e == cudaSuccess) {
            size_t bad = vmc_first_mismatch(back, n, i + 1);
            snprintf(what, sizeof what, "round trip of %zu bytes", n);
            vmc_check(bad == n, what, "first mismatch at %zu", bad);
        }
    }
    // A device variable larger than one ring slot, written and read through the symbol paths.
    size_t n = sizeof dev_table;
    for (size_t k = 0; k < n; k++) src[k] = vmc_pattern(k, 99);
    report("cudaMemcpyToSymbol 3 MiB", cudaMemcpyToSymbol(dev_table, src, n));
    memset(back, 0, n);
    cudaError_t e = cudaMemcpyFromSymbol(back, dev_table, n);
    report("cudaMemcpyFromSymbol 3 MiB", e);
    if (e == cudaSuccess) vmc_check(vmc_first_mismatch(back, n, 99) == n, "symbol round trip", "3 MiB");
    // Copies that fit one ring slot (they go in pieces) but run past the end of their destination: the runtime's
    // error, and nothing written, not even the part in range.
    unsigned char *two = NULL;
    report("cudaMalloc 2 MiB", cudaMalloc(&two, 2u << 20));
    report("cudaMemset 2 MiB", cudaMemset(two, 0, 2u << 20));
    report("H2D 2 MiB at 1 MiB into 2 MiB", cudaMemcpy(two + (1u << 20), src, 2u << 20, cudaMemcpyHostToDevice));
    memset(back, 7, 2u << 20);
    e = cudaMemcpy(back, two, 2u << 20, cudaMemcpyDeviceToHost);
    report("D2H 2 MiB after the failed copy", e);
    if (e == cudaSuccess) {
        size_t written = 0;
        for (size_t k = 0; k < (2u << 20); k++) written += back[k] != 0;
        vmc_check(written == 0, "nothing written by a copy past the end", "%zu bytes written", written);
    }
    report("cudaMemcpyToSymbol 2 MiB at 2 MiB into 3 MiB", cudaMemcpyToSymbol(dev_table, src, 2u << 20, 2u << 20));
    e = cudaMemcpyFromSymbol(back, dev_table, n);
    report("cudaMemcpyFromSymbol 3 MiB after the failed copy", e);
    if (e == cudaSuccess) vmc_check(vmc_first_mismatch(back, n, 99) == n, "variable untouched by a copy past its end", "3 MiB");
    report("last error", cudaGetLastError());
    if (two) cudaFree(two);
    // An invalid device address: the error the runtime gives, and no data written back.
    memset(back, 7, 1 << 20);
    report("D2H from an invalid address", cudaMemcpy(back, (void *)0x10, 1 << 20, cudaMemcpyDeviceToHost));
    vmc_check(back[0] == 7 && back[(1 << 20) - 1] == 7, "destination untouched after a failed copy", "%d", back[0]);
    report("last error", cudaGetLastError());
    if (dev) cudaFree(dev);
    free(src);
    free(back);
    return vmc_finish("bulk_paths");
}

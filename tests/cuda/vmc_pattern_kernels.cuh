/*
 * The kernels and the check of the programs that share a buffer between processes (ipc.cu, shareable.cu): one
 * process fills it with vmc_pattern, others add 1 to every byte, and each checks what it reads.
 */
#ifndef VMC_PATTERN_KERNELS_CUH
#define VMC_PATTERN_KERNELS_CUH

#include "vmc_check.h"

__global__ void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)((i * 2654435761u + seed * 97u + (i >> 13)) & 0xff); /* vmc_pattern */
}

__global__ void add_one(unsigned char *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)(p[i] + 1);
}

/* The first byte of p[0..n) that is not vmc_pattern(i, seed) + plus, or n. */
static size_t first_not_plus(const unsigned char *p, size_t n, unsigned seed, int plus) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(vmc_pattern(i, seed) + plus)) return i;
    return n;
}

#endif

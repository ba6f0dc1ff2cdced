/*
 * Shared checking helpers for the vmcuda test programs.
 *
 * Every program prints only deterministic lines, so that a native run and a
 * vmcuda run of the same binary can be compared byte for byte (stdout + exit
 * code). Exit codes:
 *   0  all checks passed
 *   1  a value check failed (the program keeps going and reports all of them)
 *   2  a CUDA call returned an unexpected error (the program stops at once,
 *      after printing the error's name and string; on a machine without a GPU
 *      this is cudaErrorInsufficientDriver at the first call that needs one)
 */
#ifndef VMC_CHECK_H
#define VMC_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define VMC_EXIT_CHECK_FAILED 1
#define VMC_EXIT_CUDA_ERROR 2

static int vmc_failures = 0;

static void vmc_cuda_fail(const char *expr, cudaError_t err)
{
    printf("CUDA_ERROR %s -> %s: %s\n", expr, cudaGetErrorName(err), cudaGetErrorString(err));
    printf("FAIL (stopped at the first CUDA error)\n");
    fflush(stdout);
    exit(VMC_EXIT_CUDA_ERROR);
}

/* A CUDA call that must succeed. */
#define CK(call)                                                   \
    do {                                                           \
        cudaError_t vmc_err_ = (call);                             \
        if (vmc_err_ != cudaSuccess) vmc_cuda_fail(#call, vmc_err_); \
    } while (0)

/* A CUDA call that must return a given error code (printed either way). */
#define CK_EXPECT(call, expected)                                                   \
    do {                                                                            \
        cudaError_t vmc_err_ = (call);                                              \
        if (vmc_err_ == cudaErrorInsufficientDriver && (expected) != vmc_err_)      \
            vmc_cuda_fail(#call, vmc_err_);                                         \
        vmc_check(vmc_err_ == (expected), #call, "returns %s, expected %s",        \
                  cudaGetErrorName(vmc_err_), cudaGetErrorName(expected));          \
    } while (0)

/* One value check: prints "ok <name>: <detail>" or "FAIL <name>: <detail>". */
#define vmc_check(cond, name, ...)            \
    do {                                      \
        int vmc_ok_ = (cond) ? 1 : 0;         \
        printf("%s %s: ", vmc_ok_ ? "ok" : "FAIL", name); \
        printf(__VA_ARGS__);                  \
        printf("\n");                         \
        if (!vmc_ok_) vmc_failures++;         \
    } while (0)

/* Deterministic byte pattern; seed makes buffers of the same size differ. */
static inline unsigned char vmc_pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 2654435761u + seed * 97u + (i >> 13)) & 0xff);
}

/* Index of the first byte that differs from the pattern, or n when none does. */
static inline size_t vmc_first_mismatch(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != vmc_pattern(i, seed)) return i;
    return n;
}

/* Final line and exit code. Flushes so that order with device output is stable. */
static inline int vmc_finish(const char *program)
{
    if (vmc_failures == 0)
        printf("PASS %s\n", program);
    else
        printf("FAIL %s: %d check(s) failed\n", program, vmc_failures);
    fflush(stdout);
    return vmc_failures == 0 ? 0 : VMC_EXIT_CHECK_FAILED;
}

#endif

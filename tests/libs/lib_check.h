/* Shared checks for the library test programs: each failing call prints where and what, and the
 * program exits 1; results print rounded so that a vmcuda run can be compared byte for byte. */
#ifndef LIB_CHECK_H
#define LIB_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(x)                                                                            \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            printf("%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_),       \
                   cudaGetErrorName(e_));                                                        \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* Library status enums are plain ints: one macro serves cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE. */
#define CHECK_LIB(x)                                                                             \
    do {                                                                                         \
        int s_ = (int)(x);                                                                       \
        if (s_ != 0) {                                                                           \
            printf("%s:%d: %s: status %d\n", __FILE__, __LINE__, #x, s_);                        \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

#endif

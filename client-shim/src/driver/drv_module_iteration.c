/* The private driver table cuFFT asks for (6e163fbe..., 99 words: a size word and 98 slots). cuFFT loads
 * its kernels with cuModuleLoadData and finds them through slot 7 instead of cuModuleGetFunction. What the
 * slot does was read off NVIDIA's driver with the discovery tracer (tests/driver/discovery,
 * 2026-11-23, driver 580, cuFFT of CUDA 13.0): slot 7(context, module, visit, out, user, options) calls
 *     visit(out, function, name, 0, 0, user)
 * for each function of the module, stops when visit returns non-zero, and returns how many functions it
 * visited (1 for each of cuFFT's one-kernel modules). cuFFT's visit stores the function in *out. We do the
 * same with the public cuModuleGetFunctionCount, cuModuleEnumerateFunctions and cuFuncGetName. The other
 * 97 slots are not served: each says so once and fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "drv.h"
#include "drv_tables.h"

typedef int (*function_visitor)(void *out, CUfunction function, const char *name, uint64_t zero1, uint64_t zero2,
                                void *user);

static uint64_t visit_module_functions(CUcontext ctx, CUmodule module, function_visitor visit, void *out, void *user,
                                       const void *options) {
    (void)ctx;
    (void)options; /* a pointer into cuFFT's own data; NVIDIA's driver was not seen to need it either */
    unsigned n = 0;
    if (!visit || cuModuleGetFunctionCount(&n, module) != CUDA_SUCCESS || n == 0)
        return 0;
    CUfunction *functions = calloc(n, sizeof *functions);
    if (!functions)
        return 0;
    uint64_t visited = 0;
    if (cuModuleEnumerateFunctions(functions, n, module) == CUDA_SUCCESS)
        for (unsigned i = 0; i < n; i++) {
            const char *name = NULL;
            if (cuFuncGetName(&name, functions[i]) != CUDA_SUCCESS)
                break;
            visited++;
            if (visit(out, functions[i], name, 0, 0, user) != 0)
                break;
        }
    free(functions);
    return visited;
}

#define SLOTS 99
static int told[SLOTS];

static CUresult slot_not_served(int slot) {
    return vmc_drv_slot_not_served("cuFFT's private driver table", slot, &told[slot]);
}

#define SLOT(n) static CUresult slot_##n(void) { return slot_not_served(n); }
#define SLOTS10(t) SLOT(t##0) SLOT(t##1) SLOT(t##2) SLOT(t##3) SLOT(t##4) SLOT(t##5) SLOT(t##6) SLOT(t##7) SLOT(t##8) SLOT(t##9)
SLOT(1) SLOT(2) SLOT(3) SLOT(4) SLOT(5) SLOT(6) SLOT(8) SLOT(9)
SLOTS10(1) SLOTS10(2) SLOTS10(3) SLOTS10(4) SLOTS10(5) SLOTS10(6) SLOTS10(7) SLOTS10(8)
SLOT(90) SLOT(91) SLOT(92) SLOT(94) SLOT(95) SLOT(96) SLOT(97) SLOT(98)
#undef SLOTS10
#undef SLOT

#define S(n) (const void *)slot_##n
#define S10(t) S(t##0), S(t##1), S(t##2), S(t##3), S(t##4), S(t##5), S(t##6), S(t##7), S(t##8), S(t##9)
const void *const vmc_drv_module_iteration_table[SLOTS] = {
    (const void *)(SLOTS * sizeof(void *)), S(1), S(2), S(3), S(4), S(5), S(6), (const void *)visit_module_functions, S(8), S(9),
    S10(1), S10(2), S10(3), S10(4), S10(5), S10(6), S10(7), S10(8),
    S(90), S(91), S(92), NULL /* NULL in NVIDIA's table too */, S(94), S(95), S(96), S(97), S(98),
};
#undef S10
#undef S

/* The driver front end's local answers, linked against our libcuda.so.1 with no appliance configured:
 * cuGetProcAddress (versions, per-thread variants, unknown names, the runtimes' empty-name probe),
 * error names and texts, the private tables the runtimes ask for, and what every call says when there
 * is no appliance (the same as a machine without a GPU: cuInit fails with CUDA_ERROR_NO_DEVICE). */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

#define EXPECT(cond) CHECK(cond, "%s", #cond)

static void *proc(const char *name, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
    void *fn = (void *)1;
    EXPECT(cuGetProcAddress_v2(name, &fn, version, flags, status) == CUDA_SUCCESS);
    return fn;
}

static void *exported(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int main(void) {
    CUdriverProcAddressQueryResult st;

    /* the highest ABI not above the version asked: cuMemAlloc is cuMemAlloc_v2 from 3.2 on */
    EXPECT(proc("cuMemAlloc", 13000, 0, &st) == exported("cuMemAlloc_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT(proc("cuMemAlloc", 3020, 0, &st) == exported("cuMemAlloc_v2"));
    EXPECT(proc("cuMemAlloc", 3010, 0, &st) == exported("cuMemAlloc"));
    /* three ABIs of one name */
    EXPECT(proc("cuStreamGetCaptureInfo", 12030, 0, &st) == exported("cuStreamGetCaptureInfo_v3"));
    EXPECT(proc("cuStreamGetCaptureInfo", 12020, 0, &st) == exported("cuStreamGetCaptureInfo_v2"));
    EXPECT(proc("cuStreamGetCaptureInfo", 11000, 0, &st) == exported("cuStreamGetCaptureInfo"));
    /* per-thread default stream: the _ptsz/_ptds variant when asked for and there is one, else the plain one */
    EXPECT(proc("cuMemcpyHtoDAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) ==
          exported("cuMemcpyHtoDAsync_v2_ptsz"));
    EXPECT(proc("cuMemcpyHtoDAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) == exported("cuMemcpyHtoDAsync_v2"));
    EXPECT(proc("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == exported("cuMemcpyHtoD_v2_ptds"));
    EXPECT(proc("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == exported("cuLaunchKernel_ptsz"));
    EXPECT(proc("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == exported("cuMemAlloc_v2"));
    EXPECT(proc("cuGetProcAddress", 13000, 0, &st) == exported("cuGetProcAddress_v2"));
    EXPECT(proc("cuGetProcAddress", 11030, 0, &st) == exported("cuGetProcAddress"));
    /* not found, and too old a version: success with NULL and a status, as documented */
    EXPECT(proc("cuNoSuchFunction", 13000, 0, &st) == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(proc("", 13000, 0, &st) == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(proc("cuLibraryLoadData", 11080, 0, &st) == NULL && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(proc("cuLibraryLoadData", 12000, 0, NULL) == exported("cuLibraryLoadData"));
    /* the CUDA 11.3 signature */
    void *fn = NULL;
    EXPECT(cuGetProcAddress("cuInit", &fn, 13000, 0) == CUDA_SUCCESS && fn == exported("cuInit"));
    EXPECT(cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGetProcAddress_v2("cuInit", &fn, 13000, 0x100, NULL) == CUDA_ERROR_INVALID_VALUE);

    /* error names from cuda.h, texts as the runtime's for the same number */
    const char *s = NULL;
    EXPECT(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s) == CUDA_SUCCESS && strcmp(s, "CUDA_ERROR_INVALID_VALUE") == 0);
    EXPECT(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s) == CUDA_SUCCESS && strcmp(s, "invalid argument") == 0);
    EXPECT(cuGetErrorName(CUDA_ERROR_NO_DEVICE, &s) == CUDA_SUCCESS && strcmp(s, "CUDA_ERROR_NO_DEVICE") == 0);
    EXPECT(cuGetErrorString(CUDA_ERROR_NO_DEVICE, &s) == CUDA_SUCCESS && strcmp(s, "no CUDA-capable device is detected") == 0);
    EXPECT(cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &s) == CUDA_SUCCESS && strcmp(s, "invalid device context") == 0);
    EXPECT(cuGetErrorString(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, &s) == CUDA_SUCCESS && strcmp(s, "context already current") == 0);
    EXPECT(cuGetErrorName((CUresult)12345, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL);
    EXPECT(cuGetErrorString((CUresult)12345, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL);

    /* the private tables the runtimes require are served; others are refused */
    static const CUuuid runtime = {{(char)0x6b, (char)0xd5, (char)0xfb, (char)0x6c, (char)0x5b, (char)0xf4, (char)0xe7, (char)0x4a,
                                    (char)0x89, (char)0x87, (char)0xd9, (char)0x39, (char)0x12, (char)0xfd, (char)0x9d, (char)0xf9}};
    static const CUuuid integrity = {{(char)0xd4, (char)0x08, (char)0x20, (char)0x55, (char)0xbd, (char)0xe6, (char)0x70, (char)0x4b,
                                      (char)0x8d, (char)0x34, (char)0xba, (char)0x12, (char)0x3c, (char)0x66, (char)0xe1, (char)0xf2}};
    static const CUuuid unknown = {{1, 2, 3}};
    const void *table = NULL;
    EXPECT(cuGetExportTable(&table, &runtime) == CUDA_SUCCESS && table && *(const size_t *)table == 13 * sizeof(void *));
    EXPECT(cuGetExportTable(&table, &integrity) == CUDA_SUCCESS && table && *(const size_t *)table == 3 * sizeof(void *));
    EXPECT(cuGetExportTable(&table, &unknown) == CUDA_ERROR_INVALID_VALUE && table == NULL);
    /* the fixed answers of the integrity check for the runtimes that ask for them */
    typedef CUresult (*integrity_fn)(unsigned, unsigned long long, unsigned long long (*)[2]);
    cuGetExportTable(&table, &integrity);
    unsigned long long answer[2];
    EXPECT(((integrity_fn)((void *const *)table)[1])(12020, 0, &answer) == CUDA_SUCCESS &&
          answer[0] == 0x3341181c03cb675cULL && answer[1] == 0x8ed383aa1f4cd1e8ULL);

    /* no appliance: what a machine without a GPU says */
    int v = 0;
    EXPECT(cuDriverGetVersion(&v) == CUDA_SUCCESS && v == CUDA_VERSION);
    EXPECT(cuInit(0) == CUDA_ERROR_NO_DEVICE);
    EXPECT(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
    int n = -1;
    EXPECT(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
    CUdeviceptr p = 0;
    EXPECT(cuMemAlloc_v2(&p, 16) == CUDA_ERROR_NO_DEVICE);
    CUmoduleLoadingMode mode;
    EXPECT(cuModuleGetLoadingMode(&mode) == CUDA_SUCCESS && mode == CU_MODULE_LAZY_LOADING);
    /* an unsupported function says so and fails */
    EXPECT(cuCtxAttach(NULL, 0) == CUDA_ERROR_NOT_SUPPORTED);
    return check_summary("test_driver_local");
}

/* A driver-API program as users write them (linked with -lcuda): contexts (create, push/pop, the primary
 * one), modules from a cubin file (cuModuleLoad), from PTX text (JIT, with a log buffer) and from a fat
 * binary (cuModuleLoadData, cuModuleLoadFatBinary, cuLibraryLoadData), launches with every kind of
 * parameter (kernelParams and the `extra` buffer), 1-D, unified, 2-D and 3-D copies, memsets, streams and
 * events, module variables, and error reporting. Its kernels (drv_kernels.cu) lie next to it as
 * drv_kernels.cubin, .ptx and .fatbin. Each line printed is deterministic, so a run through vmcuda must
 * print exactly what a native run prints. Exit status 0 when every check passed. */
#define __CUDA_API_VERSION_INTERNAL 1 /* name the versioned entry points explicitly, as the driver exports them */
#include <cuda.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the CUDA 3.2 ABI of cuCtxCreate, which cuda.h no longer declares (libcuda.so.1 still exports it) */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

static int failures;

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult e_ = (call);                                                                      \
        if (e_ != CUDA_SUCCESS) {                                                                  \
            const char *n_ = "?", *s_ = "?";                                                       \
            cuGetErrorName(e_, &n_);                                                               \
            cuGetErrorString(e_, &s_);                                                             \
            printf("%s: %s (%s, %d)\n", #call, n_, s_, (int)e_);                                    \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* A call whose error is the point: its CUresult's name. */
static void status(const char *what, CUresult r) {
    const char *n = "?";
    cuGetErrorName(r, &n);
    printf("%s: %s\n", what, n);
}

static void check(int ok, const char *what) {
    printf("%s: %s\n", what, ok ? "ok" : "WRONG");
    if (!ok)
        failures++;
}

static char dir[4096];

static char *path_of(const char *name) {
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void *read_file(const char *name, size_t *size) {
    FILE *f = fopen(path_of(name), "rb");
    if (!f) {
        printf("cannot open %s\n", path_of(name));
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc(1, (size_t)n + 1);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
        exit(2);
    fclose(f);
    if (size)
        *size = (size_t)n;
    return b;
}

struct Triple {
    char c;
    double d;
    short s;
};

/* dynamic shared memory a block of `threads` needs: 48 bytes a thread (the occupancy callback) */
static size_t smem_per_block(int threads) { return (size_t)threads * 48; }

/* cudaOccupancyMaxPotentialBlockSizeVariableSMem's search (cuda_runtime.h), with the driver's per-size answer */
static void documented_search(CUfunction f, CUdevice dev, size_t fixed, int by_block, int *grid, int *block) {
    int per_sm = 0, warp = 0, device_max = 0, sms = 0, function_max = 0;
    cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
    cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev);
    cuDeviceGetAttribute(&device_max, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    cuFuncGetAttribute(&function_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    int cap = device_max < function_max ? device_max : function_max, best = 0;
    *grid = *block = 0;
    for (int aligned = (cap + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
        int size = aligned < cap ? aligned : cap, blocks = 0;
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, size, by_block ? smem_per_block(size) : fixed);
        if (blocks * size > best) {
            best = blocks * size;
            *block = size;
            *grid = blocks * sms;
        }
        if (best == per_sm)
            break;
    }
}

static void vector_add(CUfunction add, CUstream stream, const char *label) {
    enum { N = 50000 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i);
    }
    CUdeviceptr da, db, dc;
    CU(cuMemAlloc_v2(&da, sizeof a));
    CU(cuMemAlloc_v2(&db, sizeof b));
    CU(cuMemAlloc_v2(&dc, sizeof c));
    CU(cuMemcpyHtoD_v2(da, a, sizeof a));
    CU(cuMemcpyHtoDAsync_v2(db, b, sizeof b, stream));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CU(cuLaunchKernel(add, (N + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
    CU(cuMemcpyDtoHAsync_v2(c, dc, sizeof c, stream));
    CU(cuStreamSynchronize(stream));
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok = ok && c[i] == (float)(3 * i);
    check(ok, label);
    CU(cuMemFree_v2(da));
    CU(cuMemFree_v2(db));
    CU(cuMemFree_v2(dc));
}

int main(int argc, char **argv) {
    (void)argc;
    char self[4096];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    self[sn > 0 ? sn : 0] = 0;
    snprintf(dir, sizeof dir, "%s", sn > 0 ? dirname(self) : dirname(argv[0]));

    CU(cuInit(0));
    int version = 0, count = 0;
    CU(cuDriverGetVersion(&version));
    printf("driver version >= 13000: %s\n", version >= 13000 ? "yes" : "no");
    CU(cuDeviceGetCount(&count));
    printf("devices: at least one: %s\n", count > 0 ? "yes" : "no");
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    int major = 0;
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    char name[256];
    CU(cuDeviceGetName(name, sizeof name, dev));
    size_t total = 0;
    CU(cuDeviceTotalMem_v2(&total, dev));
    check(major >= 7 && strlen(name) > 0 && total > (1u << 30), "device queries");

    /* a context of our own, current on this thread */
    CUcontext ctx, current;
    CU(cuCtxCreate_v4(&ctx, NULL, 0, dev));
    CU(cuCtxGetCurrent(&current));
    check(current == ctx, "cuCtxCreate makes the new context current");
    CUdevice ctx_dev = -1;
    CU(cuCtxGetDevice(&ctx_dev));
    check(ctx_dev == dev, "cuCtxGetDevice");
    /* CUDA 13's samples pass a zeroed CUctxCreateParams; programs that load the driver by hand call the CUDA
     * 3.2 ABI, cuCtxCreate_v2. Both are a plain context. */
    CUctxCreateParams no_params = {0};
    CUcontext zeroed, old_abi;
    CU(cuCtxCreate_v4(&zeroed, &no_params, 0, dev));
    CU(cuCtxCreate_v2(&old_abi, 0, dev));
    CU(cuCtxGetCurrent(&current));
    check(current == old_abi && zeroed != ctx && old_abi != zeroed, "cuCtxCreate with zeroed parameters, cuCtxCreate_v2");
    CU(cuCtxDestroy_v2(old_abi));
    CU(cuCtxDestroy_v2(zeroed));
    CU(cuCtxSetCurrent(ctx));

    /* modules: a cubin file, PTX through the JIT, a fat binary three ways */
    CUmodule from_cubin, from_ptx, from_fatbin, from_fatbinary;
    CU(cuModuleLoad(&from_cubin, path_of("drv_kernels.cubin")));
    char *ptx = read_file("drv_kernels.ptx", NULL);
    char log[4096] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_OPTIMIZATION_LEVEL};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log, (void *)(uintptr_t)3};
    CU(cuModuleLoadDataEx(&from_ptx, ptx, 3, opts, vals));
    printf("PTX JIT error log empty: %s\n", log[0] == 0 ? "yes" : "no");
    void *fatbin = read_file("drv_kernels.fatbin", NULL);
    CU(cuModuleLoadData(&from_fatbin, fatbin));
    CU(cuModuleLoadFatBinary(&from_fatbinary, fatbin));
    CUlibrary lib;
    CU(cuLibraryLoadData(&lib, fatbin, NULL, NULL, 0, NULL, NULL, 0));

    CUstream stream;
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUfunction add;
    CU(cuModuleGetFunction(&add, from_cubin, "add"));
    vector_add(add, stream, "vector add, cubin module");
    CU(cuModuleGetFunction(&add, from_ptx, "add"));
    vector_add(add, stream, "vector add, PTX module (JIT)");
    CU(cuModuleGetFunction(&add, from_fatbin, "add"));
    vector_add(add, 0, "vector add, fat binary module, default stream");

    /* JIT linking: the PTX through the driver's linker, with logs and the wall time asked at creation; the
     * linked image loaded as a module; malformed PTX refused with the linker's error log */
    char link_errors[4096] = "", link_info[4096] = "";
    CUjit_option link_opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                                CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME};
    void *link_vals[] = {link_errors, (void *)(uintptr_t)sizeof link_errors, link_info,
                         (void *)(uintptr_t)sizeof link_info, NULL};
    CUlinkState link;
    CU(cuLinkCreate_v2(5, link_opts, link_vals, &link));
    CU(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "drv_kernels.ptx", 0, NULL, NULL));
    void *linked = NULL;
    size_t linked_size = 0;
    CU(cuLinkComplete(link, &linked, &linked_size));
    CUmodule from_link;
    CU(cuModuleLoadData(&from_link, linked));
    CU(cuLinkDestroy(link));
    printf("JIT link error log empty: %s\n", link_errors[0] == 0 ? "yes" : "no");
    CU(cuModuleGetFunction(&add, from_link, "add"));
    vector_add(add, stream, "vector add, JIT-linked image (cuLinkCreate ... cuLinkComplete)");
    CU(cuModuleUnload(from_link));
    static const char bad_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\nthis is not PTX;\n";
    link_errors[0] = 0;
    CU(cuLinkCreate_v2(2, link_opts, link_vals, &link));
    CUresult bad_link = cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, (void *)bad_ptx, sizeof bad_ptx, "bad.ptx", 0, NULL, NULL);
    if (bad_link == CUDA_SUCCESS) /* a linker may compile at cuLinkComplete only */
        bad_link = cuLinkComplete(link, &linked, &linked_size);
    /* what the driver says of it is printed (a native run and a vmcuda run must agree), not judged */
    printf("malformed PTX: refused: %s, error log: %s\n", bad_link != CUDA_SUCCESS ? "yes" : "no",
           link_errors[0] ? "not empty" : "empty");
    CU(cuLinkDestroy(link));
    CUkernel kernel;
    CU(cuLibraryGetKernel(&kernel, lib, "add"));
    vector_add((CUfunction)kernel, stream, "vector add, library kernel (CUkernel)");
    CUresult missing = cuModuleGetFunction(&add, from_fatbinary, "no_such_kernel");
    const char *missing_name = "?";
    cuGetErrorName(missing, &missing_name);
    printf("unknown kernel name: %s\n", missing_name);

    /* every kind of parameter, through kernelParams and through the extra buffer */
    CUfunction params;
    CU(cuModuleGetFunction(&params, from_fatbin, "params"));
    CUdeviceptr dout;
    CU(cuMemAlloc_v2(&dout, 9 * sizeof(unsigned long long)));
    char c = -5;
    short s = 1234;
    int i = -123456;
    long long l = 0x123456789abcLL;
    float f = 2.5f;
    double d = 3.141592;
    struct Triple t = {7, 4.5, -9};
    void *pargs[] = {&c, &s, &i, &l, &f, &d, &t, &dout};
    CU(cuLaunchKernel(params, 1, 1, 1, 1, 1, 1, 0, 0, pargs, NULL));
    unsigned long long out[9];
    CU(cuMemcpyDtoH_v2(out, dout, sizeof out));
    check((long long)out[0] == -5 && out[1] == 1234 && (long long)out[2] == -123456 && out[3] == 0x123456789abcULL &&
              out[4] == 2500 && out[5] == 3141592 && out[6] == 7 && out[7] == 45 && (long long)out[8] == -9,
          "parameters of every width, a double, a struct by value (kernelParams)");
    size_t offsets[8], sizes[8], extent = 0;
    for (int p = 0; p < 8; p++) {
        CU(cuFuncGetParamInfo(params, (size_t)p, &offsets[p], &sizes[p]));
        if (offsets[p] + sizes[p] > extent)
            extent = offsets[p] + sizes[p];
    }
    unsigned char buffer[256];
    memset(buffer, 0, sizeof buffer);
    c = 9;
    for (int p = 0; p < 8; p++)
        memcpy(buffer + offsets[p], pargs[p], sizes[p]);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &extent, CU_LAUNCH_PARAM_END};
    CU(cuMemsetD8_v2(dout, 0, sizeof out));
    CU(cuLaunchKernel(params, 1, 1, 1, 1, 1, 1, 0, 0, NULL, extra));
    CU(cuMemcpyDtoH_v2(out, dout, sizeof out));
    check(out[0] == 9 && out[1] == 1234 && out[7] == 45, "parameters through the extra buffer");

    /* unified copies, memsets of every width */
    CUdeviceptr u;
    CU(cuMemAlloc_v2(&u, 4096));
    unsigned int words[1024];
    CU(cuMemsetD32_v2(u, 0xdeadbeef, 1024));
    CU(cuMemcpy((CUdeviceptr)(uintptr_t)words, u, sizeof words));
    check(words[0] == 0xdeadbeef && words[1023] == 0xdeadbeef, "cuMemsetD32 + cuMemcpy (unified, to host)");
    CU(cuMemsetD16_v2(u, 0x1234, 2048));
    CU(cuMemcpyDtoH_v2(words, u, 8));
    check(words[0] == 0x12341234u, "cuMemsetD16");
    for (int k = 0; k < 1024; k++)
        words[k] = (unsigned)k;
    CU(cuMemcpy(u, (CUdeviceptr)(uintptr_t)words, sizeof words));
    CUdeviceptr u2;
    CU(cuMemAlloc_v2(&u2, 4096));
    CU(cuMemcpyDtoD_v2(u2, u, 4096));
    memset(words, 0, sizeof words);
    CU(cuMemcpyDtoH_v2(words, u2, sizeof words));
    check(words[1] == 1 && words[1023] == 1023, "cuMemcpy (unified, to device) + cuMemcpyDtoD");

    /* 2-D: host rows to pitched device memory, a kernel, back */
    CUdeviceptr pitched;
    size_t pitch = 0;
    enum { W = 100, H = 37 };
    CU(cuMemAllocPitch_v2(&pitched, &pitch, W * sizeof(float), H, 4));
    static float grid[H][W + 3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            grid[y][x] = (float)(y * W + x);
    CUDA_MEMCPY2D up;
    memset(&up, 0, sizeof up);
    up.srcMemoryType = CU_MEMORYTYPE_HOST;
    up.srcHost = grid;
    up.srcPitch = sizeof grid[0];
    up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    up.dstDevice = pitched;
    up.dstPitch = pitch;
    up.WidthInBytes = W * sizeof(float);
    up.Height = H;
    CU(cuMemcpy2D_v2(&up));
    CUfunction scale;
    CU(cuModuleGetFunction(&scale, from_cubin, "scale2d"));
    int w = W, h = H;
    float k = 2.0f;
    void *sargs[] = {&pitched, &pitch, &w, &h, &k};
    CU(cuLaunchKernel(scale, (W + 15) / 16, (H + 15) / 16, 1, 16, 16, 1, 0, stream, sargs, NULL));
    CU(cuStreamSynchronize(stream));
    memset(grid, 0, sizeof grid);
    CUDA_MEMCPY2D down = up;
    down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    down.srcDevice = pitched;
    down.srcPitch = pitch;
    down.dstMemoryType = CU_MEMORYTYPE_HOST;
    down.dstHost = grid;
    down.dstPitch = sizeof grid[0];
    CU(cuMemcpy2DAsync_v2(&down, stream));
    CU(cuStreamSynchronize(stream));
    int ok2 = 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            ok2 = ok2 && grid[y][x] == 2.0f * (float)(y * W + x);
    check(ok2, "cuMemcpy2D host rows <-> pitched device memory, kernel between");

    /* 3-D: a box of host memory into a 3-D array and back */
    CUDA_ARRAY3D_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = 16;
    ad.Height = 8;
    ad.Depth = 4;
    ad.Format = CU_AD_FORMAT_UNSIGNED_INT32;
    ad.NumChannels = 1;
    CUarray array;
    CU(cuArray3DCreate_v2(&array, &ad));
    static unsigned cube[4][8][16], back[4][8][16];
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 16; x++)
                cube[z][y][x] = (unsigned)(z * 1000 + y * 100 + x);
    CUDA_MEMCPY3D m3;
    memset(&m3, 0, sizeof m3);
    m3.srcMemoryType = CU_MEMORYTYPE_HOST;
    m3.srcHost = cube;
    m3.srcPitch = sizeof cube[0][0];
    m3.srcHeight = 8;
    m3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    m3.dstArray = array;
    m3.WidthInBytes = sizeof cube[0][0];
    m3.Height = 8;
    m3.Depth = 4;
    CU(cuMemcpy3D_v2(&m3));
    CUDA_MEMCPY3D b3 = m3;
    b3.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    b3.srcArray = array;
    b3.srcHost = NULL;
    b3.dstMemoryType = CU_MEMORYTYPE_HOST;
    b3.dstHost = back;
    b3.dstPitch = sizeof back[0][0];
    b3.dstHeight = 8;
    b3.dstArray = NULL;
    CU(cuMemcpy3D_v2(&b3));
    check(memcmp(cube, back, sizeof cube) == 0, "cuMemcpy3D host <-> 3-D array");
    CU(cuArrayDestroy(array));

    /* a module variable */
    CUdeviceptr counter;
    size_t counter_size = 0;
    CU(cuModuleGetGlobal_v2(&counter, &counter_size, from_cubin, "counter"));
    int zero = 0, value = 0;
    CU(cuMemcpyHtoD_v2(counter, &zero, sizeof zero));
    CUfunction bump;
    CU(cuModuleGetFunction(&bump, from_cubin, "bump"));
    int by = 3;
    void *bargs[] = {&by};
    CU(cuLaunchKernel(bump, 4, 1, 1, 32, 1, 1, 0, 0, bargs, NULL));
    CU(cuMemcpyDtoH_v2(&value, counter, sizeof value));
    check(counter_size == sizeof(int) && value == 4 * 32 * 3, "cuModuleGetGlobal, kernel atomics on it");

    /* events: both recorded, the elapsed time is not negative */
    CUevent start, stop;
    CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CU(cuEventRecord(start, stream));
    CU(cuLaunchKernel(bump, 1, 1, 1, 1, 1, 1, 0, stream, bargs, NULL));
    CU(cuEventRecord(stop, stream));
    CU(cuEventSynchronize(stop));
    float ms = -1;
    CU(cuEventElapsedTime_v2(&ms, start, stop));
    check(ms >= 0.0f && cuEventQuery(stop) == CUDA_SUCCESS, "events: elapsed time and query");

    /* push/pop: the primary context on top of ours, then ours again */
    CUcontext primary, popped;
    CU(cuDevicePrimaryCtxRetain(&primary, dev));
    CU(cuCtxPushCurrent_v2(primary));
    CU(cuCtxGetCurrent(&current));
    check(current == primary, "cuCtxPushCurrent");
    CUdeviceptr in_primary;
    CU(cuMemAlloc_v2(&in_primary, 256));
    CU(cuMemFree_v2(in_primary));
    CU(cuCtxPopCurrent_v2(&popped));
    CU(cuCtxGetCurrent(&current));
    check(popped == primary && current == ctx, "cuCtxPopCurrent restores ours");
    CU(cuDevicePrimaryCtxRelease_v2(dev));

    /* errors are the driver's: a launch with no kernel, a free of what was never allocated */
    CUresult bad = cuMemFree_v2((CUdeviceptr)0x10);
    const char *bad_name = "?";
    cuGetErrorName(bad, &bad_name);
    printf("cuMemFree of a wild pointer: %s\n", bad_name);

    /* a bad launch configuration is refused by the launch itself (not at the next synchronisation), and
     * leaves nothing behind */
    CUfunction add_fn;
    CU(cuModuleGetFunction(&add_fn, from_fatbin, "add"));
    CUdeviceptr nowhere = 0;
    int none = 0;
    void *noargs[] = {&nowhere, &nowhere, &nowhere, &none};
    status("launch with 2048 threads per block", cuLaunchKernel(add_fn, 1, 1, 1, 2048, 1, 1, 0, 0, noargs, NULL));
    status("launch with block 32 x 64", cuLaunchKernel(add_fn, 1, 1, 1, 32, 64, 1, 0, 0, noargs, NULL));
    status("launch with grid 0", cuLaunchKernel(add_fn, 0, 1, 1, 32, 1, 1, 0, 0, noargs, NULL));
    status("launch with 1 GiB of dynamic shared memory", cuLaunchKernel(add_fn, 1, 1, 1, 32, 1, 1, 1u << 30, 0, noargs, NULL));
    status("cuCtxSynchronize after them", cuCtxSynchronize());
    vector_add(add_fn, stream, "a good launch after the refused ones");

    /* a settable attribute: what was set is what is read, the same set again succeeds, a refused set
     * changes nothing (vmcuda keeps these answers on the client) */
    int dynamic0 = 0, dynamic = 0;
    CU(cuFuncGetAttribute(&dynamic0, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_fn));
    CU(cuFuncSetAttribute(add_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192));
    CU(cuFuncGetAttribute(&dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_fn));
    int set_once = dynamic == 8192;
    CU(cuFuncSetAttribute(add_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192));
    CUresult too_big = cuFuncSetAttribute(add_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30);
    CU(cuFuncGetAttribute(&dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_fn));
    int kept = dynamic == 8192;
    CU(cuFuncSetAttribute(add_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic0));
    CU(cuFuncGetAttribute(&dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_fn));
    check(set_once && too_big == CUDA_ERROR_INVALID_VALUE && kept && dynamic == dynamic0,
          "cuFuncSetAttribute then cuFuncGetAttribute (set, set again, refused, restored)");
    size_t fifo0 = 0, fifo = 0;
    CU(cuCtxGetLimit(&fifo0, CU_LIMIT_PRINTF_FIFO_SIZE));
    CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 4u << 20));
    CU(cuCtxGetLimit(&fifo, CU_LIMIT_PRINTF_FIFO_SIZE));
    int raised = fifo == (4u << 20);
    CU(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, fifo0));
    CU(cuCtxGetLimit(&fifo, CU_LIMIT_PRINTF_FIFO_SIZE));
    check(raised && fifo == fifo0, "cuCtxSetLimit then cuCtxGetLimit (raised, restored)");

    /* what cuBLAS asks before each call, and what cuFFT asks about its modules */
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    cuuint64_t capture_id = 0;
    CUgraph capture_graph = NULL;
    const CUgraphNode *capture_deps = NULL;
    size_t capture_n = 0;
    CU(cuStreamGetCaptureInfo_v2(stream, &capture, &capture_id, &capture_graph, &capture_deps, &capture_n));
    check(capture == CU_STREAM_CAPTURE_STATUS_NONE, "cuStreamGetCaptureInfo: the stream is not capturing");
    unsigned n_functions = 0;
    CU(cuModuleGetFunctionCount(&n_functions, from_cubin));
    CUfunction functions[16];
    int found_add = 0;
    if (n_functions > 0 && n_functions <= 16) {
        CU(cuModuleEnumerateFunctions(functions, n_functions, from_cubin));
        for (unsigned k2 = 0; k2 < n_functions; k2++) {
            const char *fname = NULL;
            CU(cuFuncGetName(&fname, functions[k2]));
            found_add |= fname && strcmp(fname, "add") == 0;
        }
    }
    check(found_add, "cuModuleEnumerateFunctions + cuFuncGetName list the module's kernels");
    CUlaunchAttribute cluster;
    memset(&cluster, 0, sizeof cluster);
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = 1;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 32;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
    int clusters = 0;
    CU(cuOccupancyMaxActiveClusters(&clusters, add_fn, &cfg));
    check(clusters > 0, "cuOccupancyMaxActiveClusters");
    /* the block size for the most resident threads: the driver's answer, with and without a callback for the
     * dynamic shared memory, against the search cuda_runtime.h documents (natively this compares NVIDIA's
     * driver with that search; through vmcuda, vmcuda's search with it) */
    int grid_fixed = 0, block_fixed = 0, grid_cb = 0, block_cb = 0;
    CU(cuOccupancyMaxPotentialBlockSize(&grid_fixed, &block_fixed, add_fn, NULL, 1024, 0));
    CU(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid_cb, &block_cb, add_fn, smem_per_block, 0, 0, CU_OCCUPANCY_DEFAULT));
    int want_grid = 0, want_block = 0;
    documented_search(add_fn, dev, 1024, 0, &want_grid, &want_block);
    check(grid_fixed == want_grid && block_fixed == want_block, "cuOccupancyMaxPotentialBlockSize, fixed shared memory");
    documented_search(add_fn, dev, 0, 1, &want_grid, &want_block);
    check(grid_cb == want_grid && block_cb == want_block, "cuOccupancyMaxPotentialBlockSizeWithFlags, shared memory by block size");
    CUdevice named_dev = -1;
    CU(cuCtxGetDevice_v2(&named_dev, ctx));
    check(named_dev == dev, "cuCtxGetDevice_v2 of a named context");

    /* the primary context: reset, then retained again, it serves calls */
    CUcontext reset_primary;
    CU(cuDevicePrimaryCtxRetain(&reset_primary, dev));
    CU(cuCtxPushCurrent_v2(reset_primary));
    CUdeviceptr before_reset;
    CU(cuMemAlloc_v2(&before_reset, 4096));
    CU(cuCtxPopCurrent_v2(NULL));
    CU(cuDevicePrimaryCtxReset_v2(dev));
    CU(cuDevicePrimaryCtxRetain(&reset_primary, dev));
    CU(cuCtxPushCurrent_v2(reset_primary));
    CUdeviceptr after_reset;
    CU(cuMemAlloc_v2(&after_reset, 4096));
    CU(cuMemsetD8_v2(after_reset, 7, 4096));
    unsigned char seven[4096];
    CU(cuMemcpyDtoH_v2(seven, after_reset, sizeof seven));
    CU(cuMemFree_v2(after_reset));
    CU(cuCtxPopCurrent_v2(NULL));
    CU(cuDevicePrimaryCtxRelease_v2(dev));
    check(seven[0] == 7 && seven[4095] == 7, "the primary context works again after cuDevicePrimaryCtxReset");

    /* page-locked memory: copies from and to it, in stream order (with pinned_in_region on a co-located
     * client, it is memory shared with the worker and the copies move no byte over the connection) */
    unsigned char *pinned_in = NULL, *pinned_out = NULL;
    CU(cuMemAllocHost_v2((void **)&pinned_in, 1 << 20));
    CU(cuMemHostAlloc((void **)&pinned_out, 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    for (int i = 0; i < 1 << 20; i++) {
        pinned_in[i] = (unsigned char)(i * 7 + 3);
        pinned_out[i] = 0;
    }
    CUdeviceptr staged;
    CU(cuMemAlloc_v2(&staged, 1 << 20));
    CU(cuMemcpyHtoDAsync_v2(staged, pinned_in, 1 << 20, stream));
    CU(cuMemcpyDtoHAsync_v2(pinned_out, staged, 1 << 20, stream));
    CU(cuStreamSynchronize(stream));
    int pinned_same = memcmp(pinned_in, pinned_out, 1 << 20) == 0;
    memset(pinned_out, 0, 4096);
    CU(cuMemcpyDtoH_v2(pinned_out + 100, staged + 100, 1000)); /* inside the allocations, not at their start */
    pinned_same = pinned_same && memcmp(pinned_in + 100, pinned_out + 100, 1000) == 0 && pinned_out[99] == 0;
    CU(cuMemFree_v2(staged));
    CU(cuMemFreeHost(pinned_in));
    CU(cuMemFreeHost(pinned_out));
    check(pinned_same, "copies through page-locked memory, asynchronous and synchronous");
    check(cuMemFreeHost(pinned_in) != CUDA_SUCCESS, "page-locked memory freed twice");

    /* memory pools: the device's default pool's attributes (an int and a 64-bit one), a pool of our own
     * allocated from and freed in stream order, its access from its own device */
    CUmemoryPool default_pool, own_pool;
    CU(cuDeviceGetDefaultMemPool(&default_pool, dev));
    cuuint64_t threshold = 1u << 20, threshold_back = 0, no_threshold = 0;
    int follow = -1, opportunistic = 0, opportunistic_back = 7;
    CU(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CU(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold_back));
    CU(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &follow));
    CU(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic));
    CU(cuMemPoolGetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic_back));
    int allowed = 1;
    CU(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &allowed));
    CU(cuMemPoolSetAttribute(default_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &no_threshold));
    check(threshold_back == 1u << 20 && follow == 1 && opportunistic_back == 0, "memory pool attributes, set and read back");
    CUmemPoolProps pool_props;
    memset(&pool_props, 0, sizeof pool_props);
    pool_props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pool_props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pool_props.location.id = dev;
    CU(cuMemPoolCreate(&own_pool, &pool_props));
    CUdeviceptr from_pool;
    CU(cuMemAllocFromPoolAsync(&from_pool, 1u << 20, own_pool, stream));
    CU(cuMemsetD8Async(from_pool, 3, 1u << 20, stream));
    unsigned char pooled = 0;
    CU(cuMemcpyDtoHAsync_v2(&pooled, from_pool + 12345, 1, stream));
    CU(cuMemFreeAsync(from_pool, stream));
    CU(cuStreamSynchronize(stream));
    CUmemAccess_flags pool_access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CU(cuMemPoolGetAccess(&pool_access, own_pool, &pool_props.location));
    CU(cuMemPoolDestroy(own_pool));
    check(pooled == 3 && pool_access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "a pool of our own: allocate, use, free, access");

    /* a graph's topology through the array arguments: three empty nodes, root -> a, root -> b, a -> b */
    CUgraph graph;
    CU(cuGraphCreate(&graph, 0));
    CUgraphNode root, node_a, node_b;
    CU(cuGraphAddEmptyNode(&root, graph, NULL, 0));
    CU(cuGraphAddEmptyNode(&node_a, graph, &root, 1));
    CU(cuGraphAddEmptyNode(&node_b, graph, &root, 1));
    CUgraphEdgeData edge;
    memset(&edge, 0, sizeof edge);
    CU(cuGraphAddDependencies_v2(graph, &node_a, &node_b, &edge, 1));
    size_t n_nodes = 0, n_roots = 0;
    CU(cuGraphGetNodes(graph, NULL, &n_nodes));
    CUgraphNode listed[8] = {0}, first_root = NULL;
    size_t room = 8, one = 1;
    CU(cuGraphGetNodes(graph, listed, &room));
    CU(cuGraphGetRootNodes(graph, &first_root, &one));
    CU(cuGraphGetRootNodes(graph, NULL, &n_roots));
    int seen = 0; /* the order of the list is the driver's */
    for (size_t i = 0; i < room && i < 8; i++)
        seen |= (listed[i] == root) | (listed[i] == node_a) << 1 | (listed[i] == node_b) << 2;
    check(n_nodes == 3 && room == 3 && seen == 7 && n_roots == 1 && one == 1 && first_root == root,
          "cuGraphGetNodes and cuGraphGetRootNodes");
    CUgraphNode deps[4] = {0};
    size_t n_deps = 4;
    CU(cuGraphNodeGetDependencies_v2(node_b, deps, NULL, &n_deps));
    size_t just_one = 1;
    CUgraphNode only = NULL;
    CU(cuGraphNodeGetDependencies_v2(node_b, &only, NULL, &just_one));
    check(n_deps == 2 && ((deps[0] == root && deps[1] == node_a) || (deps[0] == node_a && deps[1] == root)) &&
          just_one == 1 && (only == root || only == node_a), "cuGraphNodeGetDependencies_v2 with room for all and for one");
    CUgraphNode loop = root;
    check(cuGraphAddDependencies_v2(graph, &loop, &loop, NULL, 1) != CUDA_SUCCESS, "a node cannot depend on itself");
    CU(cuGraphDestroy(graph));

    /* a graph made node by node and run: memset -> kernel fill(p, n, v) -> copy p to q; then the kernel
     * node's argument changed in the instance (the driver copied the arguments when the node was made, so
     * the new value counts only once set again) and run again */
    CUfunction fill_fn;
    CU(cuModuleGetFunction(&fill_fn, from_cubin, "fill"));
    enum { GN = 4096 };
    CUdeviceptr gp, gq;
    CU(cuMemAlloc_v2(&gp, GN * sizeof(float)));
    CU(cuMemAlloc_v2(&gq, GN * sizeof(float)));
    CUgraph built;
    CU(cuGraphCreate(&built, 0));
    CUgraphNodeParams set_params;
    memset(&set_params, 0, sizeof set_params);
    set_params.type = CU_GRAPH_NODE_TYPE_MEMSET;
    set_params.memset.dst = gp;
    set_params.memset.pitch = GN * sizeof(float);
    set_params.memset.value = 0;
    set_params.memset.elementSize = 4;
    set_params.memset.width = GN;
    set_params.memset.height = 1;
    set_params.memset.ctx = ctx;
    int gn = GN;
    float fill_value = 2.5f;
    void *fill_args[] = {&gp, &gn, &fill_value};
    CUDA_KERNEL_NODE_PARAMS_v2 fill_params;
    memset(&fill_params, 0, sizeof fill_params);
    fill_params.func = fill_fn;
    fill_params.gridDimX = GN / 256, fill_params.gridDimY = 1, fill_params.gridDimZ = 1;
    fill_params.blockDimX = 256, fill_params.blockDimY = 1, fill_params.blockDimZ = 1;
    fill_params.kernelParams = fill_args;
    CUDA_MEMCPY3D copy_params;
    memset(&copy_params, 0, sizeof copy_params);
    copy_params.srcMemoryType = CU_MEMORYTYPE_DEVICE, copy_params.srcDevice = gp;
    copy_params.dstMemoryType = CU_MEMORYTYPE_DEVICE, copy_params.dstDevice = gq;
    copy_params.WidthInBytes = GN * sizeof(float), copy_params.Height = 1, copy_params.Depth = 1;
    CUgraphNode set_node, fill_node, copy_node;
    CU(cuGraphAddNode_v2(&set_node, built, NULL, NULL, 0, &set_params));
    CU(cuGraphAddKernelNode_v2(&fill_node, built, &set_node, 1, &fill_params));
    CU(cuGraphAddMemcpyNode(&copy_node, built, &fill_node, 1, &copy_params, ctx));
    CUgraphExec instance;
    CU(cuGraphInstantiateWithFlags(&instance, built, 0));
    static float graph_out[GN];
    int graph_ok = 1;
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            fill_value = 7.0f;
            CU(cuGraphExecKernelNodeSetParams_v2(instance, fill_node, &fill_params));
        }
        CU(cuGraphLaunch(instance, stream));
        CU(cuStreamSynchronize(stream));
        CU(cuMemcpyDtoH_v2(graph_out, gq, sizeof graph_out));
        for (int i = 0; i < GN; i++)
            graph_ok = graph_ok && graph_out[i] == (round ? 7.0f : 2.5f) + (float)i;
    }
    check(graph_ok, "a graph made node by node (memset, kernel, copy), run, and run again with a new kernel argument");
    CU(cuGraphExecDestroy(instance));
    CU(cuGraphDestroy(built));
    CU(cuMemFree_v2(gp));
    CU(cuMemFree_v2(gq));

    /* a tensor map (a TMA descriptor): encoded by the driver, 128 bytes the program keeps and passes to its
     * kernels by value; replacing its address changes it; a rank the driver does not take is refused */
    CUdeviceptr tile_memory;
    CU(cuMemAlloc_v2(&tile_memory, 64 * 64 * sizeof(float)));
    CUtensorMap map, moved;
    memset(&map, 0, sizeof map);
    cuuint64_t global_dim[6] = {64, 64, 1, 1, 1, 1}, global_strides[5] = {64 * sizeof(float), 4096, 4096, 4096, 4096};
    cuuint32_t box[6] = {16, 16, 1, 1, 1, 1}, element_strides[6] = {1, 1, 1, 1, 1, 1};
    CU(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(uintptr_t)tile_memory, global_dim,
                              global_strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                              CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    int encoded = 0;
    for (int i = 0; i < CU_TENSOR_MAP_NUM_QWORDS; i++)
        encoded |= map.opaque[i] != 0;
    moved = map;
    CU(cuTensorMapReplaceAddress(&moved, (void *)(uintptr_t)(tile_memory + 1024)));
    check(encoded && memcmp(&map, &moved, sizeof map) != 0, "cuTensorMapEncodeTiled, then cuTensorMapReplaceAddress");
    status("cuTensorMapEncodeTiled of rank 6",
           cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 6, (void *)(uintptr_t)tile_memory, global_dim,
                                  global_strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    CU(cuMemFree_v2(tile_memory));

    CU(cuStreamDestroy_v2(stream));
    CU(cuModuleUnload(from_cubin));
    CU(cuModuleUnload(from_ptx));
    CU(cuModuleUnload(from_fatbin));
    CU(cuModuleUnload(from_fatbinary));
    CU(cuLibraryUnload(lib));
    CU(cuCtxDestroy_v2(ctx));
    printf("%s\n", failures ? "drv_api: FAIL" : "drv_api: PASS");
    return failures ? 1 : 0;
}

/* A stand-in for NVIDIA's libcuda.so.1 in the appliance's worker, for the end-to-end tests on machines
 * without a GPU (CI). It is NOT a GPU and NOT part of vmcuda: it lets the tests drive everything vmcuda
 * does around a driver call (the client's front ends, NVIDIA's own static runtime on the client, the
 * wire, the worker's dispatch) while this file plays the driver's part with host memory, and "runs" the
 * few kernels of the test programs (tests/driver/drv_kernels.cu and rt_static.cu, named extern "C") on
 * the CPU. The GPU runs (tests/gpu/run-on-device.sh) use NVIDIA's real driver.
 *
 * The worker loads it when the daemon's worker.extra_env sets VMCUDA_WORKER_LIBCUDA to its path. Its
 * cuGetProcAddress knows each function by name; calls it does not implement are logged on stderr (the
 * session's worker.log) and fail with CUDA_ERROR_NOT_SUPPORTED. The few entry points the daemon's GPU
 * inventory calls by symbol are exported too (at the end). */
#define _GNU_SOURCE 1 /* memmem */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- device memory: one arena of host memory at an address far from the heap ---- */

#define ARENA_BYTES (256ull << 20)
static unsigned char *arena;
static size_t arena_used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

struct block {
    CUdeviceptr base;
    size_t size;
    int live;
};
static struct block blocks[4096];
static int n_blocks;

static CUresult dev_alloc(CUdeviceptr *p, size_t size) {
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    if (!arena)
        arena = mmap((void *)0x7e0000000000ull, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t need = (size + 255) & ~(size_t)255;
    if (arena == MAP_FAILED || arena_used + need > ARENA_BYTES || n_blocks == 4096) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = (CUdeviceptr)(uintptr_t)(arena + arena_used);
    blocks[n_blocks++] = (struct block){*p, size, 1};
    arena_used += need ? need : 256;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult dev_free(CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_blocks; i++)
        if (blocks[i].base == p && blocks[i].live) {
            blocks[i].live = 0;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}

/* The allocation containing [p, p + n), or NULL. */
static const struct block *find(CUdeviceptr p, size_t n) {
    const struct block *b = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_blocks && !b; i++)
        if (blocks[i].live && p >= blocks[i].base && p + n <= blocks[i].base + blocks[i].size)
            b = &blocks[i];
    pthread_mutex_unlock(&lock);
    return b;
}

/* Registered host memory (cuMemHostRegister): recorded; its device address is its host address, as with
 * unified addressing, so kernels and copies may use it like device memory. */
static struct { void *p; size_t n; } registered[64];

static int in_registered(CUdeviceptr p, size_t n) {
    int in = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 64 && !in; i++)
        in = registered[i].p && p >= (CUdeviceptr)(uintptr_t)registered[i].p &&
             p + n <= (CUdeviceptr)(uintptr_t)registered[i].p + registered[i].n;
    pthread_mutex_unlock(&lock);
    return in;
}

static int valid(CUdeviceptr p, size_t n) { return n == 0 || find(p, n) != NULL || in_registered(p, n); }

/* ---- contexts: a per-thread stack; the primary context is a static object ---- */

struct ctx {
    int device;
    int primary;
};
static struct ctx primary_ctx = {0, 1};
static int primary_refs;
static unsigned primary_flags;
static __thread CUcontext stack[16];
static __thread int depth;

static CUcontext current(void) { return depth ? stack[depth - 1] : NULL; }

/* ---- kernels the test programs use, run on the CPU ---- */

struct kernel {
    const char *name;
    int n;
    size_t offset[8], size[8];
};

static const struct kernel kernels[] = {
    {"add", 4, {0, 8, 16, 24}, {8, 8, 8, 4}},
    {"params", 8, {0, 2, 4, 8, 16, 24, 32, 56}, {1, 2, 4, 8, 4, 8, 24, 8}},
    {"scale2d", 5, {0, 8, 16, 20, 24}, {8, 8, 4, 4, 4}},
    {"bump", 1, {0}, {4}},
    {"fill", 3, {0, 8, 12}, {8, 4, 4}},
    {"append", 2, {0, 8}, {8, 4}},
};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])

struct module {
    int is_library;
    int counter; /* the __device__ int counter of drv_kernels.cu */
};

/* A function (CUfunction) or kernel (CUkernel) handle: the module and which kernel. */
struct function {
    struct module *module;
    const struct kernel *k;
    int is_kernel;
    int max_dynamic_shared; /* settable, as CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is (0: the default) */
};

static struct function *function_of(struct module *m, const char *name, int is_kernel) {
    for (size_t i = 0; i < N_KERNELS; i++)
        if (strcmp(kernels[i].name, name) == 0) {
            struct function *f = calloc(1, sizeof *f);
            f->module = m;
            f->k = &kernels[i];
            f->is_kernel = is_kernel;
            return f;
        }
    return NULL;
}

struct triple {
    char c;
    double d;
    short s;
};

static CUresult run(const struct function *f, unsigned gx, unsigned gy, unsigned bx, unsigned by, const unsigned char *args) {
    const struct kernel *k = f->k;
#define ARG(type, i) (*(const type *)(args + k->offset[i]))
    if (!strcmp(k->name, "add")) {
        float *a = (float *)(uintptr_t)ARG(uint64_t, 0), *b = (float *)(uintptr_t)ARG(uint64_t, 1);
        float *c = (float *)(uintptr_t)ARG(uint64_t, 2);
        int n = ARG(int, 3);
        if (!valid((CUdeviceptr)(uintptr_t)a, (size_t)n * 4) || !valid((CUdeviceptr)(uintptr_t)c, (size_t)n * 4))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        for (unsigned long i = 0; i < (unsigned long)gx * bx && i < (unsigned long)n; i++)
            c[i] = a[i] + b[i];
    } else if (!strcmp(k->name, "params")) {
        unsigned long long *out = (unsigned long long *)(uintptr_t)ARG(uint64_t, 7);
        if (!valid((CUdeviceptr)(uintptr_t)out, 72))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        struct triple t = ARG(struct triple, 6);
        out[0] = (unsigned long long)(long long)ARG(char, 0);
        out[1] = (unsigned long long)(long long)ARG(short, 1);
        out[2] = (unsigned long long)(long long)ARG(int, 2);
        out[3] = (unsigned long long)ARG(long long, 3);
        out[4] = (unsigned long long)(ARG(float, 4) * 1000.0f);
        out[5] = (unsigned long long)(ARG(double, 5) * 1000000.0);
        out[6] = (unsigned long long)(long long)t.c;
        out[7] = (unsigned long long)(t.d * 10.0);
        out[8] = (unsigned long long)(long long)t.s;
    } else if (!strcmp(k->name, "scale2d")) {
        char *p = (char *)(uintptr_t)ARG(uint64_t, 0);
        size_t pitch = ARG(size_t, 1);
        int w = ARG(int, 2), h = ARG(int, 3);
        float s = ARG(float, 4);
        for (int y = 0; y < h && (unsigned)y < gy * by; y++)
            for (int x = 0; x < w && (unsigned)x < gx * bx; x++)
                ((float *)(p + y * pitch))[x] *= s;
    } else if (!strcmp(k->name, "bump")) {
        f->module->counter += ARG(int, 0) * (int)(gx * bx * gy * by);
    } else if (!strcmp(k->name, "fill")) {
        float *p = (float *)(uintptr_t)ARG(uint64_t, 0);
        int n = ARG(int, 1);
        float v = ARG(float, 2);
        if (!valid((CUdeviceptr)(uintptr_t)p, (size_t)n * 4))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        for (int i = 0; i < n && (unsigned)i < gx * bx; i++)
            p[i] = v + (float)i;
    } else if (!strcmp(k->name, "append")) {
        int *log = (int *)(uintptr_t)ARG(uint64_t, 0);
        if (!valid((CUdeviceptr)(uintptr_t)log, 4) || !valid((CUdeviceptr)(uintptr_t)log, (size_t)(log[0] + 2) * 4))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        log[1 + log[0]++] = ARG(int, 1);
    }
#undef ARG
    return CUDA_SUCCESS;
}

/* ---- init, versions, the device ---- */

static CUresult f_cuInit(unsigned flags) { return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS; }
static CUresult f_cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
static CUresult f_cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
static CUresult f_cuDeviceGet(CUdevice *d, int i) { if (i) return CUDA_ERROR_INVALID_DEVICE; *d = 0; return CUDA_SUCCESS; }
static CUresult f_cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "vmcuda test double (no GPU)");
    return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetUuid(CUuuid *u, CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; i++) u->bytes[i] = (char)(0xa0 + i);
    return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetLuid(char *luid, unsigned *mask, CUdevice d) { (void)luid; (void)mask; (void)d; return CUDA_ERROR_NOT_SUPPORTED; }
static CUresult f_cuDeviceTotalMem(size_t *b, CUdevice d) { if (d) return CUDA_ERROR_INVALID_DEVICE; *b = 8ull << 30; return CUDA_SUCCESS; }
static CUresult f_cuDeviceGetPCIBusId(char *s, int len, CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(s, (size_t)len, "00000000:17:00.0");
    return CUDA_SUCCESS;
}
static CUresult f_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = 0x17; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = 3; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: *v = 131072; break;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT:
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: *v = 16384; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

static CUresult f_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    __atomic_add_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
    *c = (CUcontext)&primary_ctx;
    return CUDA_SUCCESS;
}
static CUresult f_cuDevicePrimaryCtxRelease(CUdevice d) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    __atomic_sub_fetch(&primary_refs, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
static CUresult f_cuDevicePrimaryCtxReset(CUdevice d) { (void)d; primary_refs = 0; return CUDA_SUCCESS; }
static CUresult f_cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags) { (void)d; primary_flags = flags; return CUDA_SUCCESS; }
static CUresult f_cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active) {
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    *flags = primary_flags;
    *active = primary_refs > 0;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxCreate_v4(CUcontext *c, CUctxCreateParams *p, unsigned flags, CUdevice d) {
    (void)p; (void)flags;
    if (d) return CUDA_ERROR_INVALID_DEVICE;
    struct ctx *x = calloc(1, sizeof *x);
    *c = (CUcontext)x;
    if (depth < 16) stack[depth++] = *c;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxDestroy(CUcontext c) {
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < depth; i++)
        if (stack[i] == c) { memmove(stack + i, stack + i + 1, (size_t)(depth - i - 1) * sizeof *stack); depth--; i--; }
    if (c != (CUcontext)&primary_ctx) free(c);
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetCurrent(CUcontext *c) { *c = current(); return CUDA_SUCCESS; }
static CUresult f_cuCtxSetCurrent(CUcontext c) {
    if (!c) { if (depth) depth--; return CUDA_SUCCESS; }
    if (depth) stack[depth - 1] = c; else stack[depth++] = c;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxPushCurrent(CUcontext c) { if (!c || depth == 16) return CUDA_ERROR_INVALID_VALUE; stack[depth++] = c; return CUDA_SUCCESS; }
static CUresult f_cuCtxPopCurrent(CUcontext *c) {
    if (!depth) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext top = stack[--depth];
    if (c) *c = top;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetDevice(CUdevice *d) { if (!current()) return CUDA_ERROR_INVALID_CONTEXT; *d = 0; return CUDA_SUCCESS; }
/* FAKE_LIBCUDA_CRASH=1 in the worker's environment: the stand-in crashes here as a faulty driver would (a test
 * of what a crashing worker leaves in its session log). */
static CUresult f_cuCtxSynchronize(void) {
    if (getenv("FAKE_LIBCUDA_CRASH"))
        *(volatile int *)(uintptr_t)16 = 1;
    return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
static CUresult f_cuCtxGetFlags(unsigned *f) { *f = 0; return CUDA_SUCCESS; }
static CUresult f_cuCtxGetApiVersion(CUcontext c, unsigned *v) { (void)c; *v = 13000; return CUDA_SUCCESS; }
static size_t limits[CU_LIMIT_MAX];
static CUresult f_cuCtxGetLimit(size_t *v, CUlimit l) {
    if (l >= CU_LIMIT_MAX) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *v = limits[l] ? limits[l] : l == CU_LIMIT_STACK_SIZE ? 1024 : 1 << 20;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxSetLimit(CUlimit l, size_t v) {
    if (l >= CU_LIMIT_MAX) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    limits[l] = v;
    return CUDA_SUCCESS;
}
static CUresult f_cuCtxGetStreamPriorityRange(int *least, int *greatest) { if (least) *least = 0; if (greatest) *greatest = -5; return CUDA_SUCCESS; }
static CUresult f_cuCtxGetCacheConfig(CUfunc_cache *c) { *c = CU_FUNC_CACHE_PREFER_NONE; return CUDA_SUCCESS; }
static CUresult f_cuCtxSetCacheConfig(CUfunc_cache c) { (void)c; return CUDA_SUCCESS; }
static CUresult f_cuCtxGetId(CUcontext c, unsigned long long *id) { *id = (unsigned long long)(uintptr_t)c; return CUDA_SUCCESS; }

/* ---- memory ---- */

static CUresult f_cuMemAlloc(CUdeviceptr *p, size_t n) { return current() ? dev_alloc(p, n) : CUDA_ERROR_INVALID_CONTEXT; }
static CUresult f_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { (void)s; return f_cuMemAlloc(p, n); }
static CUresult f_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { (void)pool; (void)s; return f_cuMemAlloc(p, n); }
static CUresult f_cuMemAllocPitch(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned e) {
    (void)e;
    *pitch = (w + 511) & ~(size_t)511;
    return f_cuMemAlloc(p, *pitch * h);
}
static CUresult f_cuMemFree(CUdeviceptr p) { return dev_free(p); }
/* An IPC handle that names the allocation by address: enough for the policy around it (worker.cuda_ipc); this
 * stand-in cannot share its host memory with another process, so it opens nothing */
static CUresult f_cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    if (!current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &p, sizeof p);
    return CUDA_SUCCESS;
}
static CUresult f_cuMemFreeAsync(CUdeviceptr p, CUstream s) { (void)s; return dev_free(p); }
static CUresult f_cuMemGetInfo(size_t *free_bytes, size_t *total) { *free_bytes = ARENA_BYTES - arena_used; *total = 8ull << 30; return CUDA_SUCCESS; }
static CUresult f_cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    const struct block *b = find(p, 1);
    if (!b) return CUDA_ERROR_NOT_FOUND;
    if (base) *base = b->base;
    if (size) *size = b->size;
    return CUDA_SUCCESS;
}
static CUresult f_cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) { if (!valid(d, n)) return CUDA_ERROR_INVALID_VALUE; memcpy((void *)(uintptr_t)d, h, n); return CUDA_SUCCESS; }
static CUresult f_cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) { if (!valid(d, n)) return CUDA_ERROR_INVALID_VALUE; memcpy(h, (void *)(uintptr_t)d, n); return CUDA_SUCCESS; }
static CUresult f_cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { if (!valid(d, n) || !valid(s, n)) return CUDA_ERROR_INVALID_VALUE; memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
static CUresult f_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) { (void)s; return f_cuMemcpyHtoD(d, h, n); }

static CUresult f_cuMemHostRegister(void *p, size_t n, unsigned flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 64; i++)
        if (!registered[i].p) {
            registered[i].p = p;
            registered[i].n = n;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_cuMemHostUnregister(void *p) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 64; i++)
        if (registered[i].p == p && p) {
            registered[i].p = NULL;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
/* Page-locked memory of the worker (mapped memory mirrored for a client across machines): host memory that
 * the test double's "device" reaches as it reaches registered memory. */
static CUresult f_cuMemHostAlloc(void **pp, size_t n, unsigned flags) {
    (void)flags;
    void *p = calloc(1, n ? n : 1);
    if (!pp || !p) { free(p); return CUDA_ERROR_OUT_OF_MEMORY; }
    CUresult st = f_cuMemHostRegister(p, n ? n : 1, 0);
    if (st != CUDA_SUCCESS) { free(p); return st; }
    *pp = p;
    return CUDA_SUCCESS;
}
static CUresult f_cuMemFreeHost(void *p) {
    CUresult st = f_cuMemHostUnregister(p);
    if (st == CUDA_SUCCESS) free(p);
    return st == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned flags) {
    if (!d || flags)
        return CUDA_ERROR_INVALID_VALUE;
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
static CUresult f_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) { (void)s; return f_cuMemcpyDtoH(h, d, n); }
static CUresult f_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return f_cuMemcpyDtoD(d, s, n); }
static CUresult f_cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
static CUresult f_cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return f_cuMemcpy(d, s, n); }
#define MEMSET(name, T)                                                                                     \
    static CUresult f_##name(CUdeviceptr d, T v, size_t n) {                                                \
        if (!valid(d, n * sizeof(T))) return CUDA_ERROR_INVALID_VALUE;                                      \
        for (size_t i = 0; i < n; i++) ((T *)(uintptr_t)d)[i] = v;                                          \
        return CUDA_SUCCESS;                                                                                \
    }                                                                                                       \
    static CUresult f_##name##Async(CUdeviceptr d, T v, size_t n, CUstream s) { (void)s; return f_##name(d, v, n); }
MEMSET(cuMemsetD8, unsigned char)
MEMSET(cuMemsetD16, unsigned short)
MEMSET(cuMemsetD32, unsigned int)

/* ---- arrays (linear memory inside) and 2-D/3-D copies ---- */

struct array {
    CUDA_ARRAY3D_DESCRIPTOR d;
    size_t elem;
    unsigned char *data;
};

static size_t format_bytes(CUarray_format f) {
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    default: return 4;
    }
}

static CUresult f_cuArray3DCreate(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d) {
    struct array *x = calloc(1, sizeof *x);
    x->d = *d;
    x->elem = format_bytes(d->Format) * d->NumChannels;
    size_t h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
    x->data = calloc(1, d->Width * x->elem * h * z);
    *a = (CUarray)x;
    return CUDA_SUCCESS;
}
static CUresult f_cuArrayCreate(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d) {
    CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
    return f_cuArray3DCreate(a, &d3);
}
static CUresult f_cuArrayDestroy(CUarray a) { struct array *x = (struct array *)a; free(x->data); free(x); return CUDA_SUCCESS; }
static CUresult f_cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *d, CUarray a) { *d = ((struct array *)a)->d; return CUDA_SUCCESS; }

/* Where (x bytes, y, z) of one side is in this process's memory. */
static unsigned char *at(CUmemorytype t, const void *host, CUdeviceptr dev, CUarray arr, size_t pitch, size_t height,
                         size_t x, size_t y, size_t z) {
    if (t == CU_MEMORYTYPE_ARRAY) {
        struct array *a = (struct array *)arr;
        size_t row = a->d.Width * a->elem, rows = a->d.Height ? a->d.Height : 1;
        return a->data + (z * rows + y) * row + x;
    }
    unsigned char *base = t == CU_MEMORYTYPE_HOST ? (unsigned char *)(uintptr_t)host : (unsigned char *)(uintptr_t)dev;
    return base + (z * height + y) * pitch + x;
}

static size_t pitch_of(CUmemorytype t, CUarray arr, size_t pitch) {
    if (t != CU_MEMORYTYPE_ARRAY) return pitch;
    struct array *a = (struct array *)arr;
    return a->d.Width * a->elem;
}

static CUresult f_cuMemcpy3D(const CUDA_MEMCPY3D *p) {
    size_t sp = pitch_of(p->srcMemoryType, p->srcArray, p->srcPitch), dp = pitch_of(p->dstMemoryType, p->dstArray, p->dstPitch);
    for (size_t z = 0; z < (p->Depth ? p->Depth : 1); z++)
        for (size_t y = 0; y < p->Height; y++) {
            unsigned char *s = at(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, sp, p->srcHeight,
                                  p->srcXInBytes, p->srcY + y, p->srcZ + z);
            unsigned char *d = at(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, dp, p->dstHeight,
                                  p->dstXInBytes, p->dstY + y, p->dstZ + z);
            memmove(d, s, p->WidthInBytes);
        }
    return CUDA_SUCCESS;
}
static CUresult f_cuMemcpy3DAsync(const CUDA_MEMCPY3D *p, CUstream s) { (void)s; return f_cuMemcpy3D(p); }
static CUresult f_cuMemcpy2D(const CUDA_MEMCPY2D *p) {
    CUDA_MEMCPY3D q;
    memset(&q, 0, sizeof q);
    q.srcXInBytes = p->srcXInBytes, q.srcY = p->srcY, q.srcMemoryType = p->srcMemoryType, q.srcHost = p->srcHost;
    q.srcDevice = p->srcDevice, q.srcArray = p->srcArray, q.srcPitch = p->srcPitch, q.srcHeight = p->Height + p->srcY;
    q.dstXInBytes = p->dstXInBytes, q.dstY = p->dstY, q.dstMemoryType = p->dstMemoryType, q.dstHost = p->dstHost;
    q.dstDevice = p->dstDevice, q.dstArray = p->dstArray, q.dstPitch = p->dstPitch, q.dstHeight = p->Height + p->dstY;
    q.WidthInBytes = p->WidthInBytes, q.Height = p->Height, q.Depth = 1;
    return f_cuMemcpy3D(&q);
}
static CUresult f_cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream s) { (void)s; return f_cuMemcpy2D(p); }

/* ---- streams and events (everything is synchronous here) ---- */

static CUresult f_cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = (CUstream)calloc(1, 16); return CUDA_SUCCESS; }
static CUresult f_cuStreamCreateWithPriority(CUstream *s, unsigned flags, int prio) { (void)prio; return f_cuStreamCreate(s, flags); }
static CUresult f_cuStreamDestroy(CUstream s) { free(s); return CUDA_SUCCESS; }
static CUresult f_cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
static CUresult f_cuStreamQuery(CUstream s) { (void)s; return CUDA_SUCCESS; }
static CUresult f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { (void)s; (void)e; (void)f; return CUDA_SUCCESS; }
static CUresult f_cuStreamGetFlags(CUstream s, unsigned *f) { (void)s; *f = 0; return CUDA_SUCCESS; }
static CUresult f_cuStreamGetPriority(CUstream s, int *p) { (void)s; *p = 0; return CUDA_SUCCESS; }
static CUresult f_cuStreamGetId(CUstream s, unsigned long long *id) { *id = (unsigned long long)(uintptr_t)s; return CUDA_SUCCESS; }
static CUresult f_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *c) {
    (void)s;
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    *c = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
/* The calling thread's capture mode: nothing is ever captured here, but the worker relaxes it around bulk copies. */
static __thread CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static CUresult f_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode before = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = before;
    return CUDA_SUCCESS;
}
/* no stream is ever capturing here */
static CUresult f_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *c, cuuint64_t *id, CUgraph *g,
                                         const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n) {
    (void)s;
    *c = CU_STREAM_CAPTURE_STATUS_NONE;
    if (id) *id = 0;
    if (g) *g = NULL;
    if (deps) *deps = NULL;
    if (edges) *edges = NULL;
    if (n) *n = 0;
    return CUDA_SUCCESS;
}
static CUresult f_cuStreamGetCtx(CUstream s, CUcontext *c) { (void)s; *c = current(); return CUDA_SUCCESS; }

struct event {
    double t;
};
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static CUresult f_cuEventCreate(CUevent *e, unsigned flags) { (void)flags; *e = (CUevent)calloc(1, sizeof(struct event)); return CUDA_SUCCESS; }
static CUresult f_cuEventDestroy(CUevent e) { free(e); return CUDA_SUCCESS; }
static CUresult f_cuEventRecord(CUevent e, CUstream s) { (void)s; ((struct event *)e)->t = now_ms(); return CUDA_SUCCESS; }
static CUresult f_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned f) { (void)f; return f_cuEventRecord(e, s); }
static CUresult f_cuEventSynchronize(CUevent e) { (void)e; return CUDA_SUCCESS; }
static CUresult f_cuEventQuery(CUevent e) { (void)e; return CUDA_SUCCESS; }
static CUresult f_cuEventElapsedTime(float *ms, CUevent a, CUevent b) { *ms = (float)(((struct event *)b)->t - ((struct event *)a)->t); return CUDA_SUCCESS; }

/* ---- modules, libraries, kernels ---- */

static CUresult load(struct module **m, const void *image, int is_library) {
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    *m = calloc(1, sizeof **m);
    (*m)->is_library = is_library;
    return CUDA_SUCCESS;
}
static CUresult f_cuModuleLoadData(CUmodule *m, const void *image) { return load((struct module **)m, image, 0); }
static CUresult f_cuModuleLoadFatBinary(CUmodule *m, const void *image) { return load((struct module **)m, image, 0); }
static CUresult f_cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v) {
    for (unsigned i = 0; i < n; i++)
        if (o[i] == CU_JIT_ERROR_LOG_BUFFER || o[i] == CU_JIT_INFO_LOG_BUFFER)
            ((char *)v[i])[0] = 0;
    return load((struct module **)m, image, 0);
}
static CUresult f_cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *o, void **v, unsigned n,
                                    CUlibraryOption *lo, void **lv, unsigned ln) {
    (void)o; (void)v; (void)n; (void)lo; (void)lv; (void)ln;
    return load((struct module **)l, code, 1);
}
/* JIT linking: the "linked image" is the PTX inputs one after the other (load() takes any image and kernels are
 * found by name); PTX without an .entry is refused as the real linker refuses malformed PTX, with its log. */
struct link {
    char *text;
    size_t size;
    char *error_log;
    size_t error_size;
};
static CUresult f_cuLinkCreate(unsigned n, CUjit_option *o, void **v, CUlinkState *out) {
    struct link *l = calloc(1, sizeof *l);
    for (unsigned i = 0; i < n; i++) {
        if (o[i] == CU_JIT_ERROR_LOG_BUFFER) l->error_log = v[i];
        if (o[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) l->error_size = (size_t)(uintptr_t)v[i];
    }
    if (l->error_log && l->error_size) l->error_log[0] = 0;
    *out = (CUlinkState)l;
    return CUDA_SUCCESS;
}
static CUresult f_cuLinkAddData(CUlinkState s, CUjitInputType type, void *data, size_t size, const char *name,
                                unsigned n, CUjit_option *o, void **v) {
    (void)name; (void)n; (void)o; (void)v;
    struct link *l = (struct link *)s;
    size_t len = strnlen(data, size);
    if (type != CU_JIT_INPUT_PTX || !memmem(data, len, ".entry", 6)) {
        if (l->error_log && l->error_size) snprintf(l->error_log, l->error_size, "fake libcuda: input is no PTX with a kernel");
        return CUDA_ERROR_INVALID_PTX;
    }
    l->text = realloc(l->text, l->size + len + 1);
    memcpy(l->text + l->size, data, len);
    l->size += len;
    l->text[l->size] = 0;
    return CUDA_SUCCESS;
}
static CUresult f_cuLinkComplete(CUlinkState s, void **out, size_t *size) {
    struct link *l = (struct link *)s;
    if (!l->text) return CUDA_ERROR_INVALID_VALUE;
    *out = l->text;
    *size = l->size + 1;
    return CUDA_SUCCESS;
}
static CUresult f_cuLinkDestroy(CUlinkState s) {
    struct link *l = (struct link *)s;
    free(l->text);
    free(l);
    return CUDA_SUCCESS;
}
static CUresult f_cuModuleUnload(CUmodule m) { free(m); return CUDA_SUCCESS; }
static CUresult f_cuLibraryUnload(CUlibrary l) { free(l); return CUDA_SUCCESS; }
static CUresult f_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    struct function *x = function_of((struct module *)m, name, 0);
    if (!x) return CUDA_ERROR_NOT_FOUND;
    *f = (CUfunction)x;
    return CUDA_SUCCESS;
}
static CUresult f_cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name) {
    struct function *x = function_of((struct module *)l, name, 1);
    if (!x) return CUDA_ERROR_NOT_FOUND;
    *k = (CUkernel)x;
    return CUDA_SUCCESS;
}
static CUresult f_cuLibraryGetModule(CUmodule *m, CUlibrary l) { *m = (CUmodule)l; return CUDA_SUCCESS; }
static CUresult f_cuKernelGetFunction(CUfunction *f, CUkernel k) {
    struct function *x = calloc(1, sizeof *x);
    *x = *(struct function *)k;
    x->is_kernel = 0;
    *f = (CUfunction)x;
    return CUDA_SUCCESS;
}
static CUresult global(CUdeviceptr *p, size_t *bytes, struct module *m, const char *name) {
    if (strcmp(name, "counter")) return CUDA_ERROR_NOT_FOUND;
    if (p) *p = (CUdeviceptr)(uintptr_t)&m->counter;
    if (bytes) *bytes = sizeof m->counter;
    pthread_mutex_lock(&lock);
    if (n_blocks < 4096) blocks[n_blocks++] = (struct block){(CUdeviceptr)(uintptr_t)&m->counter, sizeof m->counter, 1};
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
static CUresult f_cuModuleGetGlobal(CUdeviceptr *p, size_t *b, CUmodule m, const char *n) { return global(p, b, (struct module *)m, n); }
static CUresult f_cuLibraryGetGlobal(CUdeviceptr *p, size_t *b, CUlibrary l, const char *n) { return global(p, b, (struct module *)l, n); }
static CUresult param_info(const void *f, size_t i, size_t *off, size_t *size) {
    const struct kernel *k = ((const struct function *)f)->k;
    if (i >= (size_t)k->n) return CUDA_ERROR_INVALID_VALUE;
    *off = k->offset[i];
    *size = k->size[i];
    return CUDA_SUCCESS;
}
static CUresult f_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *o, size_t *s) { return param_info(f, i, o, s); }
static CUresult f_cuKernelGetParamInfo(CUkernel k, size_t i, size_t *o, size_t *s) { return param_info(k, i, o, s); }
static CUresult f_cuFuncGetName(const char **n, CUfunction f) { *n = ((struct function *)f)->k->name; return CUDA_SUCCESS; }
static CUresult f_cuKernelGetName(const char **n, CUkernel k) { *n = ((struct function *)k)->k->name; return CUDA_SUCCESS; }
static CUresult attribute(int *v, CUfunction_attribute a) {
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = 48 * 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
    default: *v = 0;
    }
    return CUDA_SUCCESS;
}
static CUresult f_cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
    struct function *fn = (struct function *)f;
    if (fn && a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && fn->max_dynamic_shared) {
        *v = fn->max_dynamic_shared;
        return CUDA_SUCCESS;
    }
    return attribute(v, a);
}
static CUresult f_cuKernelGetAttribute(int *v, CUfunction_attribute a, CUkernel k, CUdevice d) { (void)k; (void)d; return attribute(v, a); }
static CUresult f_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    struct function *fn = (struct function *)f;
    if (!fn)
        return CUDA_ERROR_INVALID_HANDLE;
    if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (v < 0 || v > 227 * 1024)
            return CUDA_ERROR_INVALID_VALUE;
        fn->max_dynamic_shared = v;
    }
    return CUDA_SUCCESS;
}
static CUresult f_cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) { (void)a; (void)v; (void)k; (void)d; return CUDA_SUCCESS; }
static CUresult f_cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c) { (void)f; (void)c; return CUDA_SUCCESS; }
static CUresult f_cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d) { (void)k; (void)c; (void)d; return CUDA_SUCCESS; }
static CUresult f_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int bs, size_t sm) { (void)f; (void)sm; *n = bs ? 2048 / bs : 0; return CUDA_SUCCESS; }
static CUresult f_cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *c) { (void)f; *n = c && c->blockDimX ? 132 : 0; return CUDA_SUCCESS; }
static CUresult f_cuOccupancyMaxPotentialClusterSize(int *n, CUfunction f, const CUlaunchConfig *c) { (void)f; (void)c; *n = 8; return CUDA_SUCCESS; }
/* every module of the test double holds every kernel it knows */
static CUresult f_cuModuleGetFunctionCount(unsigned *n, CUmodule m) { (void)m; *n = (unsigned)N_KERNELS; return CUDA_SUCCESS; }
static CUresult f_cuModuleEnumerateFunctions(CUfunction *fs, unsigned n, CUmodule m) {
    if (n != N_KERNELS) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++) fs[i] = (CUfunction)function_of((struct module *)m, kernels[i].name, 0);
    return CUDA_SUCCESS;
}
static CUresult f_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f, int bs, size_t sm, unsigned fl) { (void)fl; return f_cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, bs, sm); }

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by, void **params, void **extra) {
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    const struct kernel *k = ((struct function *)f)->k;
    unsigned char buf[256];
    const unsigned char *args = buf;
    if (extra) {
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) args = extra[i + 1];
    } else {
        for (int i = 0; i < k->n; i++) memcpy(buf + k->offset[i], params[i], k->size[i]);
    }
    return run((struct function *)f, gx, gy, bx, by, args);
}
static CUresult f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned sm, CUstream s, void **params, void **extra) {
    (void)gz; (void)bz; (void)sm; (void)s;
    return launch(f, gx, gy, bx, by, params, extra);
}
static CUresult f_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    return launch(f, c->gridDimX, c->gridDimY, c->blockDimX, c->blockDimY, params, extra);
}

/* ---- pointer attributes ---- */

static CUresult f_cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data, CUdeviceptr p) {
    const struct block *b = find(p, 1);
    for (unsigned i = 0; i < n; i++) {
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data[i] = b ? CU_MEMORYTYPE_DEVICE : 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data[i] = b ? p : 0; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = b ? 0 : -2; break;
        case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[i] = b ? current() : NULL; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = b ? b->base : 0; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = b ? b->size : 0; break;
        default: break;
        }
    }
    return CUDA_SUCCESS;
}

/* ---- graphs: topology (nodes and edges), enough for the array arguments of the graph API, and nodes
 * that run (kernel, memset, device-to-device copy), run in the order they were added ---- */

struct fake_work {
    CUgraphNodeType type;
    CUfunction f;
    unsigned gx, gy, bx, by;
    unsigned char args[256];
    CUdeviceptr dst, src;
    size_t bytes;      /* memcpy: bytes; memset: elements */
    unsigned value, element;
};
struct fake_node {
    struct fake_graph *graph;
    struct fake_node *deps[8];
    int n_deps;
    struct fake_work work; /* type 0 (kernel) unused: empty nodes have type CU_GRAPH_NODE_TYPE_EMPTY */
};
struct fake_graph {
    struct fake_node nodes[16];
    int n_nodes, live;
};
static struct fake_graph graphs[8];

static CUresult f_cuGraphCreate(CUgraph *g, unsigned flags) {
    (void)flags;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < 8; i++)
        if (!graphs[i].live) {
            memset(&graphs[i], 0, sizeof graphs[i]);
            graphs[i].live = 1;
            *g = (CUgraph)&graphs[i];
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static struct fake_graph *graph_of(CUgraph g) {
    struct fake_graph *fg = (struct fake_graph *)g;
    return fg >= graphs && fg < graphs + 8 && fg->live ? fg : NULL;
}

static CUresult f_cuGraphDestroy(CUgraph g) {
    struct fake_graph *fg = graph_of(g);
    if (!fg)
        return CUDA_ERROR_INVALID_VALUE;
    fg->live = 0;
    return CUDA_SUCCESS;
}

static CUresult add_edge(struct fake_node *from, struct fake_node *to) {
    if (!from || !to || from->graph != to->graph || from == to || to->n_deps == 8)
        return CUDA_ERROR_INVALID_VALUE;
    to->deps[to->n_deps++] = from;
    return CUDA_SUCCESS;
}

static CUresult f_cuGraphAddEmptyNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n) {
    struct fake_graph *fg = graph_of(g);
    if (!fg || !node || (n && !deps) || fg->n_nodes == 16)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_node *x = &fg->nodes[fg->n_nodes++];
    memset(x, 0, sizeof *x);
    x->graph = fg;
    x->work.type = CU_GRAPH_NODE_TYPE_EMPTY;
    for (size_t i = 0; i < n; i++)
        if (add_edge((struct fake_node *)deps[i], x) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_VALUE;
    *node = (CUgraphNode)x;
    return CUDA_SUCCESS;
}

static CUresult f_cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                            const CUgraphEdgeData *edges, size_t n) {
    (void)edges;
    if (!graph_of(g) || (n && (!from || !to)))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++)
        if (add_edge((struct fake_node *)from[i], (struct fake_node *)to[i]) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* The driver's list convention: count when the array is NULL, else fill up to *n and say how many. */
static CUresult list_nodes(CUgraph g, CUgraphNode *out, size_t *n, int roots_only) {
    struct fake_graph *fg = graph_of(g);
    if (!fg || !n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (int i = 0; i < fg->n_nodes; i++) {
        if (roots_only && fg->nodes[i].n_deps)
            continue;
        if (out && k < *n)
            out[k] = (CUgraphNode)&fg->nodes[i];
        k++;
    }
    if (out && k > *n)
        k = *n;
    *n = k;
    return CUDA_SUCCESS;
}

static CUresult f_cuGraphGetNodes(CUgraph g, CUgraphNode *out, size_t *n) { return list_nodes(g, out, n, 0); }
static CUresult f_cuGraphGetRootNodes(CUgraph g, CUgraphNode *out, size_t *n) { return list_nodes(g, out, n, 1); }

static CUresult f_cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *out, CUgraphEdgeData *edges, size_t *n) {
    struct fake_node *x = (struct fake_node *)node;
    if (!x || !n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t k = (size_t)x->n_deps;
    if (out) {
        if (k > *n)
            k = *n;
        for (size_t i = 0; i < k; i++) {
            out[i] = (CUgraphNode)x->deps[i];
            if (edges)
                memset(&edges[i], 0, sizeof edges[i]);
        }
    }
    *n = k;
    return CUDA_SUCCESS;
}

/* ---- memory pools: the default one and pools made here, with their attributes ---- */

struct fake_pool {
    int live, device;
    uint64_t attr[9]; /* by CUmemPool_attribute */
};
static struct fake_pool pools[8] = {{1, 0, {0, 1, 1, 1, 0, 0, 0, 0, 0}}}; /* [0]: the device's default pool */

static struct fake_pool *pool_of(CUmemoryPool p) {
    struct fake_pool *fp = (struct fake_pool *)p;
    return fp >= pools && fp < pools + 8 && fp->live ? fp : NULL;
}

static CUresult f_cuDeviceGetDefaultMemPool(CUmemoryPool *p, CUdevice d) {
    if (!p || d != 0) return CUDA_ERROR_INVALID_VALUE;
    *p = (CUmemoryPool)&pools[0];
    return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolCreate(CUmemoryPool *p, const CUmemPoolProps *props) {
    if (!p || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props->location.id != 0) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 1; i < 8; i++)
        if (!pools[i].live) {
            pools[i] = pools[0];
            *p = (CUmemoryPool)&pools[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_cuMemPoolDestroy(CUmemoryPool p) {
    struct fake_pool *fp = pool_of(p);
    if (!fp || fp == &pools[0]) return CUDA_ERROR_INVALID_VALUE;
    fp->live = 0;
    return CUDA_SUCCESS;
}
/* ---- physical allocations and shareable handles: an exported handle or pool is a descriptor of a character device,
 * as NVIDIA's are (of /dev/nvidiactl; here /dev/null), and an import of one makes a new handle or pool: this stand-in
 * shares no memory between processes, so only the calls' outcomes can be checked through it ---- */

static unsigned long long next_physical = 0x5000;
static CUresult f_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop, unsigned long long flags) {
    if (!h || !size || !prop || flags) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *h = next_physical++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
static CUresult f_cuMemRelease(CUmemGenericAllocationHandle h) { return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static CUresult export_descriptor(void *out, CUmemAllocationHandleType type) {
    if (!out || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(out, &fd, sizeof fd);
    return CUDA_SUCCESS;
}
static int imported_descriptor(void *os, CUmemAllocationHandleType type) {
    struct stat st;
    return type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR && fstat((int)(intptr_t)os, &st) == 0 && S_ISCHR(st.st_mode);
}
static CUresult f_cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType type,
                                               unsigned long long flags) {
    return h && !flags ? export_descriptor(out, type) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os, CUmemAllocationHandleType type) {
    if (!h || !imported_descriptor(os, type)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *h = next_physical++;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolExportToShareableHandle(void *out, CUmemoryPool p, CUmemAllocationHandleType type, unsigned long long flags) {
    return pool_of(p) && !flags ? export_descriptor(out, type) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_cuMemPoolImportFromShareableHandle(CUmemoryPool *p, void *os, CUmemAllocationHandleType type, unsigned long long flags) {
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    return !flags && imported_descriptor(os, type) ? f_cuMemPoolCreate(p, &props) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult f_cuMemPoolExportPointer(CUmemPoolPtrExportData *data, CUdeviceptr p) {
    if (!data || !p) return CUDA_ERROR_INVALID_VALUE;
    memset(data, 0, sizeof *data);
    memcpy(data->reserved, &p, sizeof p);
    return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolImportPointer(CUdeviceptr *p, CUmemoryPool pool, CUmemPoolPtrExportData *data) {
    if (!p || !pool_of(pool) || !data) return CUDA_ERROR_INVALID_VALUE;
    memcpy(p, data->reserved, sizeof *p);
    return CUDA_SUCCESS;
}
static int int_attribute(CUmemPool_attribute a) { return a >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && a <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES; }
static CUresult f_cuMemPoolSetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v) {
    struct fake_pool *fp = pool_of(p);
    if (!fp || !v || a < 1 || a > CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) return CUDA_ERROR_INVALID_VALUE;
    fp->attr[a] = int_attribute(a) ? (uint64_t)*(int *)v : *(cuuint64_t *)v;
    return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolGetAttribute(CUmemoryPool p, CUmemPool_attribute a, void *v) {
    struct fake_pool *fp = pool_of(p);
    if (!fp || !v || a < 1 || a > CU_MEMPOOL_ATTR_USED_MEM_HIGH) return CUDA_ERROR_INVALID_VALUE;
    if (int_attribute(a)) *(int *)v = (int)fp->attr[a];
    else *(cuuint64_t *)v = fp->attr[a];
    return CUDA_SUCCESS;
}
static CUresult f_cuMemPoolGetAccess(CUmemAccess_flags *f, CUmemoryPool p, CUmemLocation *loc) {
    if (!f || !pool_of(p) || !loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    *f = loc->id == 0 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

/* What a node does, from the generic parameters (the only ones the worker uses for these types). */
static CUresult work_of(const CUgraphNodeParams *p, struct fake_work *w) {
    memset(w, 0, sizeof *w);
    w->type = p->type;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
        if (!k->func) return CUDA_ERROR_INVALID_VALUE; /* the tests make nodes of CUfunctions */
        const struct kernel *kn = ((struct function *)k->func)->k;
        w->f = k->func, w->gx = k->gridDimX, w->gy = k->gridDimY, w->bx = k->blockDimX, w->by = k->blockDimY;
        if (k->extra) {
            const void *buf = NULL;
            size_t size = 0;
            for (int i = 0; k->extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
                if (k->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = k->extra[i + 1];
                if (k->extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *(const size_t *)k->extra[i + 1];
            }
            if (!buf || size > sizeof w->args) return CUDA_ERROR_INVALID_VALUE;
            memcpy(w->args, buf, size);
        } else {
            for (int i = 0; i < kn->n; i++) memcpy(w->args + kn->offset[i], k->kernelParams[i], kn->size[i]);
        }
        return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET:
        if (p->memset.height != 1 || (p->memset.elementSize != 1 && p->memset.elementSize != 4)) return CUDA_ERROR_INVALID_VALUE;
        w->dst = p->memset.dst, w->bytes = p->memset.width, w->value = p->memset.value, w->element = p->memset.elementSize;
        return valid(w->dst, w->bytes * w->element) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
        const CUDA_MEMCPY3D *m = &p->memcpy.copyParams;
        if (m->srcMemoryType != CU_MEMORYTYPE_DEVICE || m->dstMemoryType != CU_MEMORYTYPE_DEVICE || m->Height != 1 || m->Depth != 1)
            return CUDA_ERROR_INVALID_VALUE;
        w->dst = m->dstDevice + m->dstXInBytes, w->src = m->srcDevice + m->srcXInBytes, w->bytes = m->WidthInBytes;
        return valid(w->dst, w->bytes) && valid(w->src, w->bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY: return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static CUresult f_cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                                    size_t n, CUgraphNodeParams *p) {
    (void)edges;
    struct fake_work w;
    CUresult st = p ? work_of(p, &w) : CUDA_ERROR_INVALID_VALUE;
    if (st == CUDA_SUCCESS) st = f_cuGraphAddEmptyNode(node, g, deps, n);
    if (st == CUDA_SUCCESS) ((struct fake_node *)*node)->work = w;
    return st;
}
static CUresult f_cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *p) {
    struct fake_node *x = (struct fake_node *)node;
    struct fake_work w;
    CUresult st = x && p ? work_of(p, &w) : CUDA_ERROR_INVALID_VALUE;
    if (st == CUDA_SUCCESS && w.type != x->work.type) st = CUDA_ERROR_INVALID_VALUE;
    if (st == CUDA_SUCCESS) x->work = w;
    return st;
}

/* An instantiated graph: a copy of the nodes' work, updated by cuGraphExecNodeSetParams. */
struct fake_exec {
    struct fake_graph *from;
    struct fake_work work[16];
    int n, live;
};
static struct fake_exec execs[8];

static CUresult f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
    (void)flags;
    struct fake_graph *fg = graph_of(g);
    if (!fg || !e) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < 8; i++)
        if (!execs[i].live) {
            execs[i].live = 1, execs[i].from = fg, execs[i].n = fg->n_nodes;
            for (int j = 0; j < fg->n_nodes; j++) execs[i].work[j] = fg->nodes[j].work;
            *e = (CUgraphExec)&execs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}
static struct fake_exec *exec_of(CUgraphExec e) {
    struct fake_exec *x = (struct fake_exec *)e;
    return x >= execs && x < execs + 8 && x->live ? x : NULL;
}
static CUresult f_cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode node, CUgraphNodeParams *p) {
    struct fake_exec *x = exec_of(e);
    struct fake_node *nd = (struct fake_node *)node;
    if (!x || !nd || nd->graph != x->from || !p) return CUDA_ERROR_INVALID_VALUE;
    struct fake_work w;
    CUresult st = work_of(p, &w);
    int i = (int)(nd - x->from->nodes);
    if (st == CUDA_SUCCESS && w.type != x->work[i].type) st = CUDA_ERROR_INVALID_VALUE;
    if (st == CUDA_SUCCESS) x->work[i] = w;
    return st;
}
static CUresult f_cuGraphLaunch(CUgraphExec e, CUstream s) {
    (void)s;
    struct fake_exec *x = exec_of(e);
    if (!x) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < x->n; i++) {
        struct fake_work *w = &x->work[i];
        CUresult st = CUDA_SUCCESS;
        if (w->type == CU_GRAPH_NODE_TYPE_KERNEL) st = run((struct function *)w->f, w->gx, w->gy, w->bx, w->by, w->args);
        else if (w->type == CU_GRAPH_NODE_TYPE_MEMCPY) memmove((void *)(uintptr_t)w->dst, (void *)(uintptr_t)w->src, w->bytes);
        else if (w->type == CU_GRAPH_NODE_TYPE_MEMSET && w->element == 1) memset((void *)(uintptr_t)w->dst, (int)w->value, w->bytes);
        else if (w->type == CU_GRAPH_NODE_TYPE_MEMSET)
            for (size_t k = 0; k < w->bytes; k++) ((uint32_t *)(uintptr_t)w->dst)[k] = w->value;
        if (st != CUDA_SUCCESS) return st;
    }
    return CUDA_SUCCESS;
}
static CUresult f_cuGraphExecDestroy(CUgraphExec e) {
    struct fake_exec *x = exec_of(e);
    if (!x) return CUDA_ERROR_INVALID_VALUE;
    x->live = 0;
    return CUDA_SUCCESS;
}

/* ---- tensor maps: not NVIDIA's encoding, but one that depends on every input, so that the test sees the
 * worker encode what the client asked (and a replaced address change the map) ---- */
static CUresult f_cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, void *address,
                                         const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                         const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
                                         CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
    if (!m || rank < 1 || rank > 5 || !dims || !box || !element_strides || (rank > 1 && !strides)) return CUDA_ERROR_INVALID_VALUE;
    memset(m, 0, sizeof *m);
    m->opaque[0] = (cuuint64_t)(uintptr_t)address;
    m->opaque[1] = (cuuint64_t)type | (cuuint64_t)rank << 8 | (cuuint64_t)interleave << 16 | (cuuint64_t)swizzle << 24 |
                   (cuuint64_t)l2 << 32 | (cuuint64_t)oob << 40;
    for (cuuint32_t i = 0; i < rank; i++) {
        m->opaque[2 + i] = dims[i] ^ (i + 1 < rank ? strides[i] << 20 : 0);
        m->opaque[8 + i] = (cuuint64_t)box[i] << 32 | element_strides[i];
    }
    return CUDA_SUCCESS;
}
static CUresult f_cuTensorMapReplaceAddress(CUtensorMap *m, void *address) {
    if (!m) return CUDA_ERROR_INVALID_VALUE;
    m->opaque[0] = (cuuint64_t)(uintptr_t)address;
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress: by name ---- */

#define F(name, fn) {#name, (void *)fn}
static const struct {
    const char *name;
    void *fn;
} table[] = {
    F(cuInit, f_cuInit), F(cuDriverGetVersion, f_cuDriverGetVersion), F(cuDeviceGetCount, f_cuDeviceGetCount),
    F(cuDeviceGet, f_cuDeviceGet), F(cuDeviceGetName, f_cuDeviceGetName), F(cuDeviceGetUuid, f_cuDeviceGetUuid),
    F(cuDeviceGetLuid, f_cuDeviceGetLuid), F(cuDeviceTotalMem, f_cuDeviceTotalMem),
    F(cuDeviceGetPCIBusId, f_cuDeviceGetPCIBusId), F(cuDeviceGetAttribute, f_cuDeviceGetAttribute),
    F(cuDevicePrimaryCtxRetain, f_cuDevicePrimaryCtxRetain), F(cuDevicePrimaryCtxRelease, f_cuDevicePrimaryCtxRelease),
    F(cuDevicePrimaryCtxReset, f_cuDevicePrimaryCtxReset), F(cuDevicePrimaryCtxSetFlags, f_cuDevicePrimaryCtxSetFlags),
    F(cuDevicePrimaryCtxGetState, f_cuDevicePrimaryCtxGetState), F(cuCtxCreate, f_cuCtxCreate_v4),
    F(cuCtxDestroy, f_cuCtxDestroy), F(cuCtxGetCurrent, f_cuCtxGetCurrent), F(cuCtxSetCurrent, f_cuCtxSetCurrent),
    F(cuCtxPushCurrent, f_cuCtxPushCurrent), F(cuCtxPopCurrent, f_cuCtxPopCurrent), F(cuCtxGetDevice, f_cuCtxGetDevice),
    F(cuCtxSynchronize, f_cuCtxSynchronize), F(cuCtxGetFlags, f_cuCtxGetFlags), F(cuCtxGetApiVersion, f_cuCtxGetApiVersion),
    F(cuCtxGetLimit, f_cuCtxGetLimit), F(cuCtxSetLimit, f_cuCtxSetLimit),
    F(cuCtxGetStreamPriorityRange, f_cuCtxGetStreamPriorityRange), F(cuCtxGetCacheConfig, f_cuCtxGetCacheConfig),
    F(cuCtxSetCacheConfig, f_cuCtxSetCacheConfig), F(cuCtxGetId, f_cuCtxGetId),
    F(cuMemAlloc, f_cuMemAlloc), F(cuMemAllocAsync, f_cuMemAllocAsync), F(cuMemAllocFromPoolAsync, f_cuMemAllocFromPoolAsync),
    F(cuMemAllocPitch, f_cuMemAllocPitch), F(cuMemFree, f_cuMemFree), F(cuIpcGetMemHandle, f_cuIpcGetMemHandle), F(cuMemFreeAsync, f_cuMemFreeAsync),
    F(cuMemGetInfo, f_cuMemGetInfo), F(cuMemGetAddressRange, f_cuMemGetAddressRange),
    F(cuMemcpyHtoD, f_cuMemcpyHtoD), F(cuMemcpyDtoH, f_cuMemcpyDtoH), F(cuMemcpyDtoD, f_cuMemcpyDtoD),
    F(cuMemcpyHtoDAsync, f_cuMemcpyHtoDAsync), F(cuMemcpyDtoHAsync, f_cuMemcpyDtoHAsync),
    F(cuMemcpyDtoDAsync, f_cuMemcpyDtoDAsync), F(cuMemcpy, f_cuMemcpy), F(cuMemcpyAsync, f_cuMemcpyAsync),
    F(cuMemsetD8, f_cuMemsetD8), F(cuMemsetD16, f_cuMemsetD16), F(cuMemsetD32, f_cuMemsetD32),
    F(cuMemsetD8Async, f_cuMemsetD8Async), F(cuMemsetD16Async, f_cuMemsetD16Async), F(cuMemsetD32Async, f_cuMemsetD32Async),
    F(cuArrayCreate, f_cuArrayCreate), F(cuArray3DCreate, f_cuArray3DCreate), F(cuArrayDestroy, f_cuArrayDestroy),
    F(cuArray3DGetDescriptor, f_cuArray3DGetDescriptor), F(cuMemcpy2D, f_cuMemcpy2D), F(cuMemcpy2DAsync, f_cuMemcpy2DAsync),
    F(cuMemcpy3D, f_cuMemcpy3D), F(cuMemcpy3DAsync, f_cuMemcpy3DAsync),
    F(cuStreamCreate, f_cuStreamCreate), F(cuStreamCreateWithPriority, f_cuStreamCreateWithPriority),
    F(cuStreamDestroy, f_cuStreamDestroy), F(cuStreamSynchronize, f_cuStreamSynchronize), F(cuStreamQuery, f_cuStreamQuery),
    F(cuStreamWaitEvent, f_cuStreamWaitEvent), F(cuStreamGetFlags, f_cuStreamGetFlags), F(cuStreamGetPriority, f_cuStreamGetPriority),
    F(cuStreamGetId, f_cuStreamGetId), F(cuStreamIsCapturing, f_cuStreamIsCapturing), F(cuStreamGetCtx, f_cuStreamGetCtx),
    F(cuEventCreate, f_cuEventCreate), F(cuEventDestroy, f_cuEventDestroy), F(cuEventRecord, f_cuEventRecord),
    F(cuEventRecordWithFlags, f_cuEventRecordWithFlags), F(cuEventSynchronize, f_cuEventSynchronize),
    F(cuEventQuery, f_cuEventQuery), F(cuEventElapsedTime, f_cuEventElapsedTime),
    F(cuModuleLoadData, f_cuModuleLoadData), F(cuLinkCreate, f_cuLinkCreate), F(cuLinkAddData, f_cuLinkAddData),
    F(cuLinkComplete, f_cuLinkComplete), F(cuLinkDestroy, f_cuLinkDestroy), F(cuModuleLoadDataEx, f_cuModuleLoadDataEx),
    F(cuModuleLoadFatBinary, f_cuModuleLoadFatBinary), F(cuLibraryLoadData, f_cuLibraryLoadData),
    F(cuModuleUnload, f_cuModuleUnload), F(cuLibraryUnload, f_cuLibraryUnload), F(cuModuleGetFunction, f_cuModuleGetFunction),
    F(cuLibraryGetKernel, f_cuLibraryGetKernel), F(cuLibraryGetModule, f_cuLibraryGetModule),
    F(cuKernelGetFunction, f_cuKernelGetFunction), F(cuModuleGetGlobal, f_cuModuleGetGlobal),
    F(cuLibraryGetGlobal, f_cuLibraryGetGlobal), F(cuFuncGetParamInfo, f_cuFuncGetParamInfo),
    F(cuKernelGetParamInfo, f_cuKernelGetParamInfo), F(cuFuncGetName, f_cuFuncGetName), F(cuKernelGetName, f_cuKernelGetName),
    F(cuFuncGetAttribute, f_cuFuncGetAttribute), F(cuKernelGetAttribute, f_cuKernelGetAttribute),
    F(cuFuncSetAttribute, f_cuFuncSetAttribute), F(cuKernelSetAttribute, f_cuKernelSetAttribute),
    F(cuFuncSetCacheConfig, f_cuFuncSetCacheConfig), F(cuKernelSetCacheConfig, f_cuKernelSetCacheConfig),
    F(cuOccupancyMaxActiveBlocksPerMultiprocessor, f_cuOccupancyMaxActiveBlocksPerMultiprocessor),
    F(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, f_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
    F(cuLaunchKernel, f_cuLaunchKernel), F(cuLaunchKernelEx, f_cuLaunchKernelEx),
    F(cuOccupancyMaxActiveClusters, f_cuOccupancyMaxActiveClusters),
    F(cuOccupancyMaxPotentialClusterSize, f_cuOccupancyMaxPotentialClusterSize),
    F(cuModuleGetFunctionCount, f_cuModuleGetFunctionCount), F(cuModuleEnumerateFunctions, f_cuModuleEnumerateFunctions),
    F(cuStreamGetCaptureInfo, f_cuStreamGetCaptureInfo), F(cuThreadExchangeStreamCaptureMode, f_cuThreadExchangeStreamCaptureMode),
    F(cuPointerGetAttributes, f_cuPointerGetAttributes),
    F(cuMemHostRegister, f_cuMemHostRegister), F(cuMemHostUnregister, f_cuMemHostUnregister),
    F(cuMemHostGetDevicePointer, f_cuMemHostGetDevicePointer), F(cuMemHostAlloc, f_cuMemHostAlloc),
    F(cuMemFreeHost, f_cuMemFreeHost),
    F(cuDeviceGetDefaultMemPool, f_cuDeviceGetDefaultMemPool), F(cuMemPoolCreate, f_cuMemPoolCreate),
    F(cuMemPoolDestroy, f_cuMemPoolDestroy), F(cuMemPoolSetAttribute, f_cuMemPoolSetAttribute),
    F(cuMemPoolGetAttribute, f_cuMemPoolGetAttribute), F(cuMemPoolGetAccess, f_cuMemPoolGetAccess),
    F(cuMemCreate, f_cuMemCreate), F(cuMemRelease, f_cuMemRelease),
    F(cuMemPoolExportPointer, f_cuMemPoolExportPointer), F(cuMemPoolImportPointer, f_cuMemPoolImportPointer),
    F(cuMemExportToShareableHandle, f_cuMemExportToShareableHandle),
    F(cuMemImportFromShareableHandle, f_cuMemImportFromShareableHandle),
    F(cuMemPoolExportToShareableHandle, f_cuMemPoolExportToShareableHandle),
    F(cuMemPoolImportFromShareableHandle, f_cuMemPoolImportFromShareableHandle),
    F(cuGraphCreate, f_cuGraphCreate), F(cuGraphDestroy, f_cuGraphDestroy), F(cuGraphAddEmptyNode, f_cuGraphAddEmptyNode),
    F(cuGraphAddDependencies, f_cuGraphAddDependencies_v2), F(cuGraphGetNodes, f_cuGraphGetNodes),
    F(cuGraphGetRootNodes, f_cuGraphGetRootNodes), F(cuGraphNodeGetDependencies, f_cuGraphNodeGetDependencies_v2),
    F(cuTensorMapEncodeTiled, f_cuTensorMapEncodeTiled), F(cuTensorMapReplaceAddress, f_cuTensorMapReplaceAddress),
    F(cuGraphAddNode, f_cuGraphAddNode_v2), F(cuGraphNodeSetParams, f_cuGraphNodeSetParams),
    F(cuGraphExecNodeSetParams, f_cuGraphExecNodeSetParams), F(cuGraphInstantiateWithFlags, f_cuGraphInstantiateWithFlags),
    F(cuGraphLaunch, f_cuGraphLaunch), F(cuGraphExecDestroy, f_cuGraphExecDestroy),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
    (void)version; (void)flags;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, symbol)) {
            *pfn = table[i].fn;
            if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    fprintf(stderr, "fake libcuda: %s is not implemented by the test double\n", symbol);
    *pfn = NULL;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

/* ---- the entry points a process calls by symbol, as NVIDIA's libcuda.so.1 exports them all: those of the
 * daemon's GPU inventory (scheduler's CudaDriverQuery, through JNA; tests/src/test/java/.../CudaDriverQueryTest),
 * under the names cuda.h maps the API to. vmcuda_fake_fail makes the next calls of one of them return an error,
 * for that test's failure paths (the worker never calls it). ---- */

static char fail_symbol[64];
static CUresult fail_result;

EXPORT void vmcuda_fake_fail(const char *symbol, CUresult result) {
    snprintf(fail_symbol, sizeof fail_symbol, "%s", symbol ? symbol : "");
    fail_result = result;
}

static int failing(const char *symbol) { return fail_symbol[0] && !strcmp(fail_symbol, symbol); }

EXPORT CUresult cuInit(unsigned flags) { return failing("cuInit") ? fail_result : f_cuInit(flags); }
EXPORT CUresult cuDeviceGetCount(int *n) { return failing("cuDeviceGetCount") ? fail_result : f_cuDeviceGetCount(n); }
EXPORT CUresult cuDeviceGet(CUdevice *d, int i) { return failing("cuDeviceGet") ? fail_result : f_cuDeviceGet(d, i); }
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    return failing("cuDeviceGetName") ? fail_result : f_cuDeviceGetName(name, len, d);
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
    return failing("cuDeviceGetUuid_v2") ? fail_result : f_cuDeviceGetUuid(u, d);
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
    return failing("cuDeviceTotalMem_v2") ? fail_result : f_cuDeviceTotalMem(b, d);
}
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    return failing("cuDeviceGetAttribute") ? fail_result : f_cuDeviceGetAttribute(v, a, d);
}

/* The names of the results this stand-in returns; others are unknown to it, as an unknown number is to NVIDIA's. */
EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
    static const struct {
        CUresult r;
        const char *name;
    } names[] = {
        {CUDA_SUCCESS, "CUDA_SUCCESS"}, {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"}, {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
        {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"}, {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
        {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"}, {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
        {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
    };
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].r == error) {
            *name = names[i].name;
            return CUDA_SUCCESS;
        }
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* How the worker starts. A session that ships its executable: the rewritten executable calls
 * vmcuda_worker_start_main where it called
 * glibc's __libc_start_main. We call the real one with our own main, so glibc still runs the
 * application's constructors, which register every fat binary, kernel and variable with NVIDIA's
 * runtime exactly as in a native run; the application's main never runs here.
 * The registration entry points are interposed (this library is the executable's first DT_NEEDED)
 * to remember what was registered, in order, for the client's manifest. A session without a shipped
 * executable (the driver front end's: static cudart, the CUDA libraries, frameworks) runs the plain
 * worker (worker_plain.c), whose main calls vmcuda_worker_serve directly. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

extern int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                             void (*init)(void), void (*fini)(void), void (*rtld_fini)(void), void *stack_end);

static int log_fd = 2;

void vmc_w_log(const char *fmt, ...) {
    char line[1200];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%02d:%02d:%02d.%03ld vmcuda-worker[%d]: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t ignored = write(log_fd, line, (size_t)n);
    (void)ignored;
}

/* ---- registrations ---- */

struct entry {
    const void *host;
    const char *name;
    size_t size;
};
static struct entry *kernels, *vars;
static uint32_t n_kernels, cap_kernels, n_vars, cap_vars;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static void remember(struct entry **a, uint32_t *n, uint32_t *cap, const void *host, const char *name, size_t size) {
    pthread_mutex_lock(&reg_lock);
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 64;
        struct entry *e = realloc(*a, c * sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&reg_lock);
            vmc_w_log("out of memory recording registrations");
            abort();
        }
        *a = e;
        *cap = c;
    }
    (*a)[(*n)++] = (struct entry){host, name, size};
    pthread_mutex_unlock(&reg_lock);
}

#define LOOKUP(array, count, field, empty)                 \
    pthread_mutex_lock(&reg_lock);                          \
    __typeof__(array[0].field) r = index < count ? array[index].field : empty; \
    pthread_mutex_unlock(&reg_lock);                        \
    return r

uint32_t vmc_w_kernel_count(void) { return __atomic_load_n(&n_kernels, __ATOMIC_ACQUIRE); }
uint32_t vmc_w_var_count(void) { return __atomic_load_n(&n_vars, __ATOMIC_ACQUIRE); }
const void *vmc_w_kernel_host_fun(uint32_t index) { LOOKUP(kernels, n_kernels, host, NULL); }
const char *vmc_w_kernel_name(uint32_t index) { LOOKUP(kernels, n_kernels, name, NULL); }
const void *vmc_w_var_host_var(uint32_t index) { LOOKUP(vars, n_vars, host, NULL); }
const char *vmc_w_var_name(uint32_t index) { LOOKUP(vars, n_vars, name, NULL); }
size_t vmc_w_var_size(uint32_t index) { LOOKUP(vars, n_vars, size, 0); }

static void *real(const char *symbol) {
    void *f = dlsym(RTLD_NEXT, symbol);
    if (!f) {
        vmc_w_log("cannot find NVIDIA's %s: %s", symbol, dlerror());
        abort();
    }
    return f;
}

/* Each of the program's fat binaries, as its constructors register them: read for device printf
 * (worker_completion.c) before any of its kernels can be launched. */
__attribute__((visibility("default"))) void **__cudaRegisterFatBinary(void *fatCubin) {
    static void **(*next)(void *);
    if (!next)
        next = real("__cudaRegisterFatBinary");
    vmc_w_completion_wrapper_registered(fatCubin);
    return next(fatCubin);
}

__attribute__((visibility("default"))) void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
        char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim,
        int *wSize) {
    static void (*next)(void **, const char *, char *, const char *, int, uint3 *, uint3 *, dim3 *, dim3 *, int *);
    if (!next)
        next = real("__cudaRegisterFunction");
    remember(&kernels, &n_kernels, &cap_kernels, hostFun, deviceName, 0);
    next(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

__attribute__((visibility("default"))) void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
        const char *deviceName, int ext, size_t size, int constant, int global) {
    static void (*next)(void **, char *, char *, const char *, int, size_t, int, int);
    if (!next)
        next = real("__cudaRegisterVar");
    remember(&vars, &n_vars, &cap_vars, hostVar, deviceName, size);
    next(fatCubinHandle, hostVar, deviceAddress, deviceName, ext, size, constant, global);
}

__attribute__((visibility("default"))) void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
        char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global) {
    static void (*next)(void **, void **, char *, const char *, int, size_t, int, int);
    if (!next)
        next = real("__cudaRegisterManagedVar");
    remember(&vars, &n_vars, &cap_vars, hostVarPtrAddress, deviceName, size);
    next(fatCubinHandle, hostVarPtrAddress, deviceAddress, deviceName, ext, size, constant, global);
}

/* ---- start ---- */

/* Serves the session: the daemon hands over the client's connections; returns only by exiting. */
__attribute__((visibility("default"))) int vmcuda_worker_serve(void) {
    /* Keep the session log (the daemon's redirect of our stderr) for diagnostics before stdout and
     * stderr are captured for the client. */
    log_fd = dup(2);
    if (log_fd < 0)
        log_fd = 2;
    vmc_w_crash_report_to(log_fd);
    if (vmc_w_output_start() != 0)
        vmc_w_log("cannot capture stdout/stderr; device printf will not reach the client");
    vmc_w_log("started: %u kernels, %u variables registered", n_kernels, n_vars);
    if (vmc_w_daemon_connect() != 0)
        return 3;
    struct vmc_w_client_link link = {0};
    link.fd = vmc_w_daemon_receive_client(&link);
    if (link.fd < 0) {
        vmc_w_log("the daemon closed the link before handing over a client");
        vmc_w_daemon_bye(4);
        _exit(4);
    }
    vmc_w_daemon_start_threads();
    vmc_w_serve(&link, 1);
    /* The client is gone. Exiting releases every allocation, stream and context of this process on
     * the GPU; the application's destructors are not run (its main never ran either). */
    vmc_w_log("client disconnected; exiting");
    vmc_w_daemon_bye(0);
    vmc_w_shm_release_all_lanes(); /* as late as possible: other connection threads may still be finishing */
    _exit(0);
}

static int worker_main(int argc, char **argv, char **envp) {
    (void)argc; (void)argv; (void)envp;
    return vmcuda_worker_serve();
}

__attribute__((visibility("default"))) int vmcuda_worker_start_main(int (*main)(int, char **, char **), int argc,
        char **argv, void (*init)(void), void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    (void)main;
    return __libc_start_main(worker_main, argc, argv, init, fini, rtld_fini, stack_end);
}

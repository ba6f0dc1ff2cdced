/* NVML's life cycle, errors and system queries. nvmlInit opens (or joins) the program's vmcuda session
 * through the driver front end and reads the session's GPUs once; NVML counts its initialisations, and the
 * session outlives nvmlShutdown (it is the process's, shared with CUDA). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "nvml_front.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;     /* nvmlInit* minus nvmlShutdown */
static int gpus_read;      /* vmc_nvml_read_gpus succeeded once */

nvmlReturn_t vmc_nvml_ready(void) {
    return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

static nvmlReturn_t init_with_flags(unsigned int flags) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t st = NVML_SUCCESS;
    if (!gpus_read) {
        CUresult cu = vmc_nvml_read_gpus();
        if (cu == CUDA_SUCCESS) {
            gpus_read = 1;
        } else if (cu == CUDA_ERROR_NO_DEVICE && (flags & NVML_INIT_FLAG_NO_GPUS)) {
            st = NVML_SUCCESS; /* asked not to fail without GPUs: zero devices, and read again next time */
        } else {
            /* no appliance, or one without GPUs for this program: as on a machine without NVIDIA's driver */
            const char *name = NULL;
            cuGetErrorName(cu, &name);
            fprintf(stderr, "vmcuda: NVML has no GPU to report: the appliance session answered %s; nvmlInit returns "
                            "NVML_ERROR_DRIVER_NOT_LOADED\n", name ? name : "an unknown error");
            st = NVML_ERROR_DRIVER_NOT_LOADED;
        }
    }
    if (st == NVML_SUCCESS)
        __atomic_add_fetch(&init_count, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_lock);
    return st;
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return init_with_flags(0); }
NVML_EXPORT nvmlReturn_t nvmlInit(void) { return init_with_flags(0); }
NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return init_with_flags(flags); }

NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t st = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (init_count > 0)
        __atomic_sub_fetch(&init_count, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&init_lock);
    return st;
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    const char *text = vmc_nvml_error_text(result);
    return text ? text : "Unknown Error";
}

nvmlReturn_t vmc_nvml_copy_text(char *out, unsigned int length, const char *text) {
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(text);
    if (n + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, text, n + 1);
    return NVML_SUCCESS;
}

int vmc_nvml_unsupported(const char *name, int *told) {
    if (!__atomic_exchange_n(told, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "vmcuda: %s is not supported by vmcuda's NVML; it returns NVML_ERROR_NOT_SUPPORTED\n", name);
        fflush(stderr);
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

/* ---- system ---- */

/* The appliance's driver and NVML versions (device -1 of the query). */
static nvmlReturn_t versions(struct vmc_nvml_answer *a) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st == NVML_SUCCESS)
        st = vmc_nvml_query(-1, a);
    return st == NVML_SUCCESS ? a->status[VMC_NVML_Q_VERSIONS] : st;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    struct vmc_nvml_answer a;
    nvmlReturn_t st = versions(&a);
    return st == NVML_SUCCESS ? vmc_nvml_copy_text(version, length, a.driver_version) : st;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    struct vmc_nvml_answer a;
    nvmlReturn_t st = versions(&a);
    return st == NVML_SUCCESS ? vmc_nvml_copy_text(version, length, a.nvml_version) : st;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    return cuDriverGetVersion(cudaDriverVersion) == CUDA_SUCCESS ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* A process of this machine (the client): its name from /proc, as NVML reads it on its own machine. */
NVML_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
    nvmlReturn_t st = vmc_nvml_ready();
    if (st != NVML_SUCCESS)
        return st;
    if (!name || length == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    if (!f)
        return NVML_ERROR_NOT_FOUND;
    text[n] = 0; /* argv[0] ends at its NUL */
    if (n == 0) {  /* a kernel thread or a zombie: its comm */
        snprintf(path, sizeof path, "/proc/%u/comm", pid);
        f = fopen(path, "r");
        n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[n] = 0;
        text[strcspn(text, "\n")] = 0;
    }
    /* NVML truncates a long name to the buffer */
    snprintf(name, length, "%s", text);
    return NVML_SUCCESS;
}

/* CUDA IPC (cuIpc*; the client's drv_ipc.c), served through the hooks of cuda-driver.spec.
 *
 * Whether at all: NVIDIA's driver opens a memory handle for whichever process of this machine presents it,
 * whatever its user or namespaces (tests/bench/results/h200-run139-149-cuda-ipc), so serving these calls lets one
 * session's code open what another session exported. The daemon says whether this worker may (VMCUDA_CUDA_IPC=1,
 * from the appliance setting worker.cuda_ipc); refused, a call is answered CUDA_ERROR_NOT_PERMITTED without reaching
 * the driver (PROTOCOL.md "CUDA IPC"), which the client turns into CUDA_ERROR_NOT_SUPPORTED and a line saying why.
 *
 * Events: the driver backs an interprocess event with a file in /dev/shm, cuda.shm.<uid>.<exporter's PID>.<n> (hex),
 * mode 0600, which the opening process maps, naming it with its own uid and the PID and n of the handle (measured on
 * driver 580: an opener of another uid finds no file, cudaErrorMapBufferObjectFailed, whatever the file's mode).
 * Workers run as a uid per session, with the worker user's group, so the exporting worker gives that group read and
 * write on its files before it answers, and the opening worker links the exporter's file under the name its driver
 * looks for, just for the open. Where the driver names them otherwise, nothing matches and the driver's own error
 * stands. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"
#include "vmc_drv_worker_hooks.h"

static int allowed(const char *function) {
    static int told;
    const char *v = getenv("VMCUDA_CUDA_IPC");
    if (v && strcmp(v, "1") == 0)
        return 1;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        vmc_w_log("CUDA IPC refused (%s): the appliance setting worker.cuda_ipc is off for this session", function);
    return 0;
}

/* The driver's files behind this process's exported events, opened to the workers' group. */
static void share_event_files(void) {
    char mine[32];
    snprintf(mine, sizeof mine, ".%x.", (unsigned)getpid());
    DIR *d = opendir("/dev/shm");
    if (!d) {
        vmc_w_log("CUDA IPC: /dev/shm cannot be read; other sessions may not open this session's events");
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "cuda.shm.", 9) != 0 || !strstr(e->d_name + 8, mine))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            (st.st_mode & 0777) != 0660 && fchmod(fd, 0660) != 0)
            vmc_w_log("CUDA IPC: cannot open /dev/shm/%s to the workers' group; other sessions cannot open its event", e->d_name);
        if (fd >= 0)
            close(fd);
    }
    closedir(d);
}

CUresult vmc_w_hook_cuIpcGetMemHandle(vmc_w_real_cuIpcGetMemHandle real, CUipcMemHandle_v1 *pHandle, CUdeviceptr_v2 dptr) {
    return allowed("cuIpcGetMemHandle") ? real(pHandle, dptr) : CUDA_ERROR_NOT_PERMITTED;
}

CUresult vmc_w_hook_cuIpcGetEventHandle(vmc_w_real_cuIpcGetEventHandle real, CUipcEventHandle_v1 *pHandle, CUevent event) {
    if (!allowed("cuIpcGetEventHandle"))
        return CUDA_ERROR_NOT_PERMITTED;
    CUresult st = real(pHandle, event);
    if (st == CUDA_SUCCESS)
        share_event_files();
    return st;
}

CUresult vmc_w_hook_cuIpcOpenMemHandle(vmc_w_real_cuIpcOpenMemHandle real, CUdeviceptr_v2 *pdptr, CUipcMemHandle_v1 handle,
                                       unsigned int Flags) {
    return allowed("cuIpcOpenMemHandle") ? real(pdptr, handle, Flags) : CUDA_ERROR_NOT_PERMITTED;
}

CUresult vmc_w_hook_cuIpcOpenMemHandle_v2(vmc_w_real_cuIpcOpenMemHandle_v2 real, CUdeviceptr_v2 *pdptr,
                                          CUipcMemHandle_v1 handle, unsigned int Flags) {
    return allowed("cuIpcOpenMemHandle") ? real(pdptr, handle, Flags) : CUDA_ERROR_NOT_PERMITTED;
}

/* The exporter's file for `handle` linked as the name this worker's driver opens (into `mine`); 0 when none was made
 * (the event is this uid's own, or no single file of another uid matches). */
static int link_exporters_file(const CUipcEventHandle_v1 *handle, char *mine, size_t size) {
    uint32_t pid, n;
    memcpy(&pid, handle->reserved, sizeof pid);
    memcpy(&n, handle->reserved + 8, sizeof n);
    snprintf(mine, size, "cuda.shm.%x.%x.%x", (unsigned)geteuid(), (unsigned)pid, (unsigned)n);
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    char theirs[256] = "";
    int found = 0, made = 0;
    for (struct dirent *e; (e = readdir(d));) {
        unsigned uid, p, k;
        int end = 0;
        if (sscanf(e->d_name, "cuda.shm.%x.%x.%x%n", &uid, &p, &k, &end) != 3 || e->d_name[end] || p != pid || k != n)
            continue;
        if (uid == (unsigned)geteuid()) { /* the event is this uid's own: the driver finds it as it is */
            found = 0;
            break;
        }
        snprintf(theirs, sizeof theirs, "%s", e->d_name);
        found++;
    }
    if (found == 1)
        made = linkat(dirfd(d), theirs, dirfd(d), mine, 0) == 0;
    closedir(d);
    return made;
}

CUresult vmc_w_hook_cuIpcOpenEventHandle(vmc_w_real_cuIpcOpenEventHandle real, CUevent *phEvent, CUipcEventHandle_v1 handle) {
    if (!allowed("cuIpcOpenEventHandle"))
        return CUDA_ERROR_NOT_PERMITTED;
    char mine[64];
    int linked = link_exporters_file(&handle, mine, sizeof mine);
    CUresult st = real(phEvent, handle);
    if (linked) { /* the driver keeps what it mapped; the name was only for its open */
        int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            unlinkat(dir, mine, 0);
            close(dir);
        }
    }
    return st;
}

CUresult vmc_w_hook_cuIpcCloseMemHandle(vmc_w_real_cuIpcCloseMemHandle real, CUdeviceptr_v2 dptr) {
    return allowed("cuIpcCloseMemHandle") ? real(dptr) : CUDA_ERROR_NOT_PERMITTED;
}

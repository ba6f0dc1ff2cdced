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
 * write on the event's file before it answers, and the opening worker hard-links the exporter's file under the name
 * its driver looks for (event_file_ready). /dev/shm is shared and world-writable, so neither trusts a name alone: the
 * exporter changes only a file it owns with no other name, the opener lets its driver map only a file that is its
 * own or the exporter's (same inode). Where the driver names the files otherwise, nothing matches and the driver's
 * own error stands. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
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

/* The name the driver gives the file of the event `handle` names, as seen by a process of uid `uid`: its PID and n
 * are the handle's first and third words. */
static void event_file_name(const CUipcEventHandle_v1 *handle, unsigned uid, char *name, size_t size) {
    uint32_t pid, n;
    memcpy(&pid, handle->reserved, sizeof pid);
    memcpy(&n, handle->reserved + 8, sizeof n);
    snprintf(name, size, "cuda.shm.%x.%x.%x", uid, (unsigned)pid, (unsigned)n);
}

/* The file of an event this worker exported, opened to the workers' group: only a regular file this uid owns under
 * exactly that name and with no other name (a hard link planted under the name by another session would otherwise
 * open that session's choice of this uid's files). */
static void share_event_file(const CUipcEventHandle_v1 *handle) {
    char name[64];
    event_file_name(handle, (unsigned)geteuid(), name, sizeof name);
    int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dir < 0 ? -1 : openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             ((st.st_mode & 0777) == 0660 || (st.st_nlink == 1 && fchmod(fd, 0660) == 0));
    if (!ok)
        vmc_w_log("CUDA IPC: /dev/shm/%s is not this worker's own event file; other sessions cannot open that event", name);
    if (fd >= 0)
        close(fd);
    if (dir >= 0)
        close(dir);
}

CUresult vmc_w_hook_cuIpcGetMemHandle(vmc_w_real_cuIpcGetMemHandle real, CUipcMemHandle_v1 *pHandle, CUdeviceptr_v2 dptr) {
    return allowed("cuIpcGetMemHandle") ? real(pHandle, dptr) : CUDA_ERROR_NOT_PERMITTED;
}

CUresult vmc_w_hook_cuIpcGetEventHandle(vmc_w_real_cuIpcGetEventHandle real, CUipcEventHandle_v1 *pHandle, CUevent event) {
    if (!allowed("cuIpcGetEventHandle"))
        return CUDA_ERROR_NOT_PERMITTED;
    CUresult st = real(pHandle, event);
    if (st == CUDA_SUCCESS)
        share_event_file(pHandle);
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

/* The file of another uid's event: the one regular file whose name, written back exactly, is
 * cuda.shm.<uid>.<pid>.<n> of the handle and whose owner is that uid (a link an earlier opener made bears the
 * opener's uid in its name but the exporter's as owner, so it is not taken for an export). 1 with its identity. */
static int exporters_file(int dir, const CUipcEventHandle_v1 *handle, char *theirs, size_t size, struct stat *id) {
    DIR *d = fdopendir(dup(dir));
    if (!d)
        return 0;
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        unsigned uid;
        char exact[64];
        struct stat st;
        if (sscanf(e->d_name, "cuda.shm.%x.", &uid) != 1 || uid == (unsigned)geteuid())
            continue;
        event_file_name(handle, uid, exact, sizeof exact);
        if (strcmp(exact, e->d_name) != 0 || fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != uid)
            continue;
        snprintf(theirs, size, "%s", exact); /* the same string */
        *id = st;
        found++;
    }
    closedir(d);
    return found == 1;
}

/* Makes the name this worker's driver opens for `handle` (cuda.shm.<this uid>.<pid>.<n>) lead to the event's file:
 * this uid's own file (the event is this session's), or the exporter's, hard-linked under that name. The link stays
 * (in sticky /dev/shm only the exporter's uid may remove it; the daemon does when the exporter's session ends) and
 * serves later opens of the same event. 0 when the name leads elsewhere: a file of another uid planted there, or a
 * stale link to an event that is gone; the driver must not map that. */
static int event_file_ready(const CUipcEventHandle_v1 *handle) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* one check-and-link at a time */
    char mine[64], theirs[64];
    event_file_name(handle, (unsigned)geteuid(), mine, sizeof mine);
    int dir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return 1; /* nothing to check: the driver's own open fails or succeeds as natively */
    pthread_mutex_lock(&lock);
    struct stat at, id;
    int have = exporters_file(dir, handle, theirs, sizeof theirs, &id);
    int ready;
    if (fstatat(dir, mine, &at, AT_SYMLINK_NOFOLLOW) == 0)
        ready = S_ISREG(at.st_mode) && (at.st_uid == geteuid() || (have && at.st_dev == id.st_dev && at.st_ino == id.st_ino));
    else
        ready = !have || linkat(dir, theirs, dir, mine, 0) == 0;
    pthread_mutex_unlock(&lock);
    close(dir);
    if (!ready)
        vmc_w_log("CUDA IPC: /dev/shm/%s is not the file of the event asked for; refusing to open it", mine);
    return ready;
}

CUresult vmc_w_hook_cuIpcOpenEventHandle(vmc_w_real_cuIpcOpenEventHandle real, CUevent *phEvent, CUipcEventHandle_v1 handle) {
    if (!allowed("cuIpcOpenEventHandle"))
        return CUDA_ERROR_NOT_PERMITTED;
    if (!event_file_ready(&handle))
        return CUDA_ERROR_MAP_FAILED; /* what the driver answers when it cannot map an event's file */
    return real(phEvent, handle);
}

CUresult vmc_w_hook_cuIpcCloseMemHandle(vmc_w_real_cuIpcCloseMemHandle real, CUdeviceptr_v2 dptr) {
    return allowed("cuIpcCloseMemHandle") ? real(dptr) : CUDA_ERROR_NOT_PERMITTED;
}

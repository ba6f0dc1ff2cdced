/* drv_shareable: shareable handles as POSIX file descriptors between two processes of one program, as NCCL,
 * memMapIPCDrv and streamOrderedAllocationIPC use them. The parent exports a physical allocation and a memory pool,
 * sends both descriptors to its child over a Unix socket (SCM_RIGHTS) and closes its own; the child imports them.
 * Also: a fabric handle is refused, one handle exported again and again keeps being exported, a descriptor of
 * anything else or of the other kind imports nothing, a forged
 * copy of the descriptor's contents imports nothing, and once the parent has released the allocation its descriptor
 * imports nothing more (through vmcuda; natively the descriptor would keep it). Each outcome is printed by name; run
 * through vmcuda against the stand-in driver by DriverFrontEndTest (the GPU runs check the memory itself:
 * tests/cuda/shareable.cu). */
#define _GNU_SOURCE
#define DRV_CHECK_NO_KERNELS
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "drv_check.h"

static void said(const char *what, CUresult st) {
    const char *name = "?";
    cuGetErrorName(st, &name);
    printf("%s: %s\n", what, name);
}

static int send_two(int s, int a, int b) {
    char byte = 0, control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    memset(control, 0, sizeof control);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {a, b};
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    return sendmsg(s, &m, 0) == 1 ? 0 : -1;
}

static int receive_two(int s, int fds[2]) {
    char byte, control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct cmsghdr *c;
    if (recvmsg(s, &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
        return -1;
    memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
    return 0;
}

static void step(int s) { /* tells the other process, and waits for it */
    char byte = 1;
    if (write(s, &byte, 1) != 1 || read(s, &byte, 1) != 1) {
        printf("the other process went away\n");
        exit(2);
    }
}

static int child(int s) {
    int fds[2];
    if (receive_two(s, fds) != 0) {
        printf("child: no descriptors\n");
        return 2;
    }
    use_primary_context();
    CUmemGenericAllocationHandle h = 0, other = 0;
    CUmemoryPool pool = NULL;
    said("child: import the allocation", cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fds[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    check(h != 0, "child: an allocation handle");
    said("child: import the pool", cuMemPoolImportFromShareableHandle(&pool, (void *)(intptr_t)fds[1], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    check(pool != NULL, "child: a pool");
    said("child: import the pool's descriptor as an allocation",
         cuMemImportFromShareableHandle(&other, (void *)(intptr_t)fds[1], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    int p[2];
    if (pipe(p) != 0)
        return 2;
    said("child: import a pipe", cuMemImportFromShareableHandle(&other, (void *)(intptr_t)p[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));

    /* the same contents with the last byte changed, in a descriptor of the child's own */
    unsigned char copy[4096];
    ssize_t n = pread(fds[0], copy, sizeof copy, 0);
    int forged = memfd_create("forged", 0);
    check(n > 0 && forged >= 0, "child: the descriptor's contents read");
    if (n > 0) {
        copy[n - 1] ^= 0x5a;
        if (pwrite(forged, copy, (size_t)n, 0) != n)
            return 2;
    }
    said("child: import a forged copy", cuMemImportFromShareableHandle(&other, (void *)(intptr_t)forged, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CU(cuMemRelease(h));
    CU(cuMemPoolDestroy(pool));
    step(s); /* the parent releases its allocation now */
    said("child: import after the exporter released it",
         cuMemImportFromShareableHandle(&other, (void *)(intptr_t)fds[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fds[0]);
    close(fds[1]);
    return failures ? 1 : 0;
}

/* drv_shareable export-ticket FILE: exports an allocation, writes the descriptor's contents to FILE and exits (its
 * session and its worker's socket with it); hold-ticket FILE: the same, but exits only once FILE.done exists.
 * drv_shareable import-ticket FILE: imports from a descriptor holding FILE's contents; import-ticket-16 FILE: 16
 * threads import at once (each thread has a connection and a worker thread of its own: 16 importers at once). DriverFrontEndTest listens at
 * the vanished socket's name in between, as a hostile party that reads /dev/shm could, and knocks at a live one as
 * a process that is no worker. */
/* One thread's import from the ticket descriptor fd; NULL on success. */
static void *import_in_thread(void *fd) {
    CUcontext ctx;
    CUmemGenericAllocationHandle h = 0;
    if (cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    CUresult r = cuMemImportFromShareableHandle(&h, fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    return r == CUDA_SUCCESS ? NULL : (void *)1;
}

static int ticket_mode(const char *mode, const char *file) {
    unsigned char record[4096];
    int hold = !strcmp(mode, "hold-ticket");
    use_primary_context();
    if (!strcmp(mode, "export-ticket") || hold) {
        CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                    .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                    .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
        CUmemGenericAllocationHandle h;
        int fd = -1;
        CU(cuMemCreate(&h, 2 << 20, &prop, 0));
        said("export", cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        ssize_t n = pread(fd, record, sizeof record, 0);
        char written[4200];
        snprintf(written, sizeof written, "%s.part", file);
        FILE *f = fopen(written, "wb");
        int ok = n > 0 && f && fwrite(record, 1, (size_t)n, f) == (size_t)n;
        if (f)
            fclose(f);
        ok = ok && rename(written, file) == 0; /* whole, or not there */
        if (ok && hold) { /* hold-ticket: the export stays until FILE.done appears (at most a minute) */
            char done[4200];
            snprintf(done, sizeof done, "%s.done", file);
            for (int i = 0; i < 600 && access(done, F_OK) != 0; i++)
                usleep(100000);
        }
        return ok ? 0 : 2;
    }
    FILE *f = fopen(file, "rb");
    size_t n = f ? fread(record, 1, sizeof record, f) : 0;
    if (f)
        fclose(f);
    int fd = memfd_create("ticket", 0);
    if (!n || fd < 0 || pwrite(fd, record, n, 0) != (ssize_t)n)
        return 2;
    if (!strcmp(mode, "import-ticket-16")) {
        pthread_t t[16];
        int ok = 0;
        for (int i = 0; i < 16; i++)
            if (pthread_create(&t[i], NULL, import_in_thread, (void *)(intptr_t)fd) != 0)
                return 2;
        for (int i = 0; i < 16; i++) {
            void *r;
            pthread_join(t[i], &r);
            ok += r == NULL;
        }
        printf("imports: %d of 16 CUDA_SUCCESS\n", ok);
        return 0;
    }
    CUmemGenericAllocationHandle h = 0;
    said("import", cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3)
        return ticket_mode(argv[1], argv[2]);
    setvbuf(stdout, NULL, _IOLBF, 0); /* parent and child print in turn, each line when it is printed */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 2;
    pid_t pid = fork(); /* before any CUDA call: each process has a session of its own */
    if (pid == 0) {
        close(sv[0]);
        return child(sv[1]);
    }
    close(sv[1]);
    use_primary_context();
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemGenericAllocationHandle h;
    CU(cuMemCreate(&h, 2 << 20, &prop, 0));
    int fd_allocation = -1, fd_pool = -1;
    CUmemFabricHandle fabric;
    said("parent: export the allocation", cuMemExportToShareableHandle(&fd_allocation, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    said("parent: export it as a fabric handle", cuMemExportToShareableHandle(&fabric, h, CU_MEM_HANDLE_TYPE_FABRIC, 0));
    /* as a program that exports one handle to each peer, or each step, and closes the descriptor: more times than the
     * appliance keeps exports */
    CUresult again = CUDA_SUCCESS;
    for (int i = 0; i < 1100 && again == CUDA_SUCCESS; i++) {
        int fd = -1;
        again = cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (fd >= 0)
            close(fd);
    }
    said("parent: export it again 1100 times", again);
    CUmemPoolProps pool_props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                 .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemoryPool pool;
    CU(cuMemPoolCreate(&pool, &pool_props));
    said("parent: export the pool", cuMemPoolExportToShareableHandle(&fd_pool, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    if (send_two(sv[0], fd_allocation, fd_pool) != 0)
        return 2;
    close(fd_allocation); /* as the samples do: the descriptors in flight keep what they name */
    close(fd_pool);
    char byte;
    if (read(sv[0], &byte, 1) != 1)
        return 2;
    CU(cuMemRelease(h));
    CU(cuMemPoolDestroy(pool));
    if (write(sv[0], &byte, 1) != 1)
        return 2;
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child exit: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return failures ? 1 : 0;
}

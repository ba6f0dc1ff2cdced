// Native experiment: can a POSIX-fd shareable handle (cuMem VMM allocation, or a memory pool) exported by one
// process be imported by another process of another uid, in another PID namespace, once the fd is passed over a
// Unix socket (SCM_RIGHTS)? usage: shfd export|import vmm|pool SOCKET_PATH
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_; cuGetErrorName(r_, &s_); \
    printf("%s:%d %s -> %s\n", argv[1], __LINE__, #x, s_); return 1; } } while (0)

static int send_fd(int s, int fd, const void *data, size_t n) {
    struct iovec iov = {(void *)data, n};
    char ctl[CMSG_SPACE(sizeof(int))] = {0};
    struct msghdr m = {0};
    m.msg_iov = &iov; m.msg_iovlen = 1; m.msg_control = ctl; m.msg_controllen = sizeof ctl;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET; c->cmsg_type = SCM_RIGHTS; c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(s, &m, 0) == (ssize_t)n ? 0 : -1;
}
static int recv_fd(int s, void *data, size_t n) {
    struct iovec iov = {data, n};
    char ctl[CMSG_SPACE(sizeof(int))];
    struct msghdr m = {0};
    m.msg_iov = &iov; m.msg_iovlen = 1; m.msg_control = ctl; m.msg_controllen = sizeof ctl;
    if (recvmsg(s, &m, MSG_WAITALL) != (ssize_t)n) return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
    int fd; memcpy(&fd, CMSG_DATA(c), sizeof fd); return fd;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    int exporter = !strcmp(argv[1], "export"), pool = !strcmp(argv[2], "pool");
    printf("%s %s uid %d pid %d\n", argv[1], argv[2], (int)getuid(), (int)getpid());
    CK(cuInit(0));
    CUdevice dev; CK(cuDeviceGet(&dev, 0));
    CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran; CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t size = gran;
    CUmemAccessDesc acc = {}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    unsigned words[4];
    struct sockaddr_un a = {}; a.sun_family = AF_UNIX; strncpy(a.sun_path, argv[3], sizeof a.sun_path - 1);
    if (exporter) {
        CUdeviceptr p; int fd; CUmemPoolPtrExportData pd = {};
        CUmemoryPool mp = 0; CUmemGenericAllocationHandle h = 0;
        if (pool) {
            CUmemPoolProps pp = {}; pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED; pp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
            pp.location = prop.location;
            CK(cuMemPoolCreate(&mp, &pp));
            CK(cuMemAllocFromPoolAsync(&p, size, mp, 0)); CK(cuStreamSynchronize(0));
            CK(cuMemPoolExportToShareableHandle(&fd, mp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
            CK(cuMemPoolExportPointer(&pd, p));
        } else {
            CK(cuMemCreate(&h, size, &prop, 0));
            CK(cuMemAddressReserve(&p, size, 0, 0, 0)); CK(cuMemMap(p, size, 0, h, 0)); CK(cuMemSetAccess(p, size, &acc, 1));
            CK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        }
        CK(cuMemsetD32(p, 0x1234, size / 4));
        struct stat st; fstat(fd, &st);
        printf("exported fd %d (mode %o rdev %lx)\n", fd, st.st_mode, (unsigned long)st.st_rdev);
        char lnk[256] = {0}, path[64]; snprintf(path, sizeof path, "/proc/self/fd/%d", fd); readlink(path, lnk, sizeof lnk - 1);
        printf("fd is %s\n", lnk);
        int l = socket(AF_UNIX, SOCK_STREAM, 0); unlink(argv[3]);
        if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) { perror("bind"); return 1; }
        chmod(argv[3], 0777);
        int s = accept(l, NULL, NULL);
        if (send_fd(s, fd, &pd, sizeof pd)) { perror("send"); return 1; }
        char done; if (read(s, &done, 1) != 1) { printf("no done\n"); return 1; }
        CK(cuMemcpyDtoH(words, p, sizeof words));
        printf("exporter reads %x %x %x %x after the importer wrote\n", words[0], words[1], words[2], words[3]);
        return words[0] == 0x5678 ? 0 : 1;
    }
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    for (int i = 0; i < 100 && connect(s, (struct sockaddr *)&a, sizeof a); i++) usleep(100000);
    CUmemPoolPtrExportData pd;
    int fd = recv_fd(s, &pd, sizeof pd);
    if (fd < 0) { printf("no fd\n"); return 1; }
    CUdeviceptr p;
    if (pool) {
        CUmemoryPool mp;
        CK(cuMemPoolImportFromShareableHandle(&mp, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        CK(cuMemPoolImportPointer(&p, mp, &pd));
        CUdeviceptr b = 0; size_t sz = 0; size_t rsz = 0; CUdeviceptr rb = 0;
        CUresult r1 = cuMemGetAddressRange(&b, &sz, p);
        CUresult r2 = cuPointerGetAttribute(&rb, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
        CUresult r3 = cuPointerGetAttribute(&rsz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
        printf("imported pointer: cuMemGetAddressRange %d (base==p %d, size %zu); range attributes %d %d (start==p %d, size %zu)\n",
               (int)r1, b == p, sz, (int)r2, (int)r3, rb == p, rsz);
    } else {
        CUmemGenericAllocationHandle h;
        CK(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        CK(cuMemAddressReserve(&p, size, 0, 0, 0)); CK(cuMemMap(p, size, 0, h, 0)); CK(cuMemSetAccess(p, size, &acc, 1));
    }
    CK(cuMemcpyDtoH(words, p, sizeof words));
    printf("importer reads %x %x %x %x\n", words[0], words[1], words[2], words[3]);
    CK(cuMemsetD32(p, 0x5678, size / 4)); CK(cuCtxSynchronize());
    char done = 1; write(s, &done, 1);
    return words[0] == 0x1234 ? 0 : 1;
}

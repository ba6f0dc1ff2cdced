/*
 * Shareable handles (POSIX file descriptors) between processes, as streamOrderedAllocationIPC, memMapIPCDrv and NCCL
 * use them: the parent exports a memory pool with a buffer allocated from it (runtime API) and a physical allocation
 * mapped at an address it reserved (driver API, through cudaGetDriverEntryPointByVersion), fills both, and sends the
 * two descriptors and the buffer's export data to a child process (this program again) over a Unix socket
 * (SCM_RIGHTS), then closes its own descriptors. The parent holds the physical allocation only through its mapping
 * by then: it released its handle once mapped and exported a handle retained from the address, released at once too
 * (the memory must stay importable while it is mapped). The child imports both, checks the parent's bytes, adds 1 to every
 * byte, and the parent then sees the child's writes. Through vmcuda each process has its own worker: the
 * descriptors the program holds are vmcuda's, and the driver's travel between the two workers.
 */
#include <cudaTypedefs.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmc_driver_check.h"
#include "vmc_pattern_kernels.cuh"

#define BYTES (4u << 20)

/* The driver API's virtual memory functions, as a runtime program reaches them. */
static struct {
    PFN_cuMemGetAllocationGranularity_v10020 granularity;
    PFN_cuMemCreate_v10020 create;
    PFN_cuMemRelease_v10020 release;
    PFN_cuMemExportToShareableHandle_v10020 export_handle;
    PFN_cuMemImportFromShareableHandle_v10020 import_handle;
    PFN_cuMemAddressReserve_v10020 reserve;
    PFN_cuMemAddressFree_v10020 address_free;
    PFN_cuMemMap_v10020 map;
    PFN_cuMemUnmap_v10020 unmap;
    PFN_cuMemSetAccess_v10020 set_access;
    PFN_cuMemRetainAllocationHandle_v11000 retain;
} drv;

#define ENTRY(field, name, version)                                                                             \
    do {                                                                                                          \
        drv.field = (decltype(drv.field))vmc_driver_entry(name, version);                                         \
        vmc_check(drv.field != NULL, "entry", "%s found", name);                                                  \
    } while (0)


static void driver_entry_points(void) {
    ENTRY(granularity, "cuMemGetAllocationGranularity", 10020);
    ENTRY(create, "cuMemCreate", 10020);
    ENTRY(release, "cuMemRelease", 10020);
    ENTRY(export_handle, "cuMemExportToShareableHandle", 10020);
    ENTRY(import_handle, "cuMemImportFromShareableHandle", 10020);
    ENTRY(reserve, "cuMemAddressReserve", 10020);
    ENTRY(address_free, "cuMemAddressFree", 10020);
    ENTRY(map, "cuMemMap", 10020);
    ENTRY(unmap, "cuMemUnmap", 10020);
    ENTRY(set_access, "cuMemSetAccess", 10020);
    ENTRY(retain, "cuMemRetainAllocationHandle", 11000);
}

static CUmemAllocationProp physical_props(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

/* BYTES rounded up to the granularity: the size of the physical allocation and of its mapping. */
static size_t physical_size(void) {
    CUmemAllocationProp prop = physical_props();
    size_t g = 0;
    CU(drv.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return (BYTES + g - 1) / g * g;
}

/* Maps `h` at a new address readable and writable by device 0. */
static CUdeviceptr map_physical(CUmemGenericAllocationHandle h, size_t size) {
    CUdeviceptr va = 0;
    CU(drv.reserve(&va, size, 0, 0, 0));
    CU(drv.map(va, size, 0, h, 0));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(drv.set_access(va, size, &access, 1));
    return va;
}

static void expect_bytes(const void *device, unsigned seed, int plus, const char *who, const char *what) {
    unsigned char *host = (unsigned char *)malloc(BYTES);
    CK(cudaMemcpy(host, device, BYTES, cudaMemcpyDefault)); /* an imported buffer is device memory to its process */
    size_t at = first_not_plus(host, BYTES, seed, plus);
    vmc_check(at == BYTES, who, "%s holds %s (first difference at %zu of %u)", what,
              plus ? "the pattern plus one" : "the pattern", at, BYTES);
    free(host);
}

struct message {
    cudaMemPoolPtrExportData buffer;
};

/* The message m with room for two descriptors in `control`. */
static struct msghdr with_two_descriptors(struct iovec *iov, struct message *m, char *control, size_t control_size) {
    struct msghdr h;
    memset(&h, 0, sizeof h);
    memset(control, 0, control_size);
    iov->iov_base = m;
    iov->iov_len = sizeof *m;
    h.msg_iov = iov;
    h.msg_iovlen = 1;
    h.msg_control = control;
    h.msg_controllen = control_size;
    return h;
}

static int send_descriptors(int s, int pool_fd, int physical_fd, struct message *m) {
    char control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov;
    struct msghdr h = with_two_descriptors(&iov, m, control, sizeof control);
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int fds[2] = {pool_fd, physical_fd};
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    return sendmsg(s, &h, 0) == (ssize_t)sizeof *m ? 0 : -1;
}

static int receive_descriptors(int s, int fds[2], struct message *m) {
    char control[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov;
    struct msghdr h = with_two_descriptors(&iov, m, control, sizeof control);
    struct cmsghdr *c;
    if (recvmsg(s, &h, MSG_WAITALL) != (ssize_t)sizeof *m || !(c = CMSG_FIRSTHDR(&h)) || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
        return -1;
    memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
    return 0;
}

static int child(int s) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* what it printed stays printed, however it ends */
    int fds[2];
    struct message m;
    if (receive_descriptors(s, fds, &m) != 0) {
        printf("child: no descriptors\n");
        return 1;
    }
    driver_entry_points();

    /* the pool and the buffer allocated from it */
    cudaMemPool_t pool;
    CK(cudaMemPoolImportFromShareableHandle(&pool, (void *)(uintptr_t)fds[0], cudaMemHandleTypePosixFileDescriptor, 0));
    cudaMemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = 0;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    CK(cudaMemPoolSetAccess(pool, &access, 1));
    void *buffer = NULL;
    CK(cudaMemPoolImportPointer(&buffer, pool, &m.buffer));
    expect_bytes(buffer, 1, 0, "child", "the pool's buffer");
    add_one<<<64, 256>>>((unsigned char *)buffer, BYTES);
    CK(cudaGetLastError());
    cudaPointerAttributes a;
    CK(cudaPointerGetAttributes(&a, buffer));
    vmc_check(a.type == cudaMemoryTypeDevice, "child", "the imported buffer is device memory (type %d)", (int)a.type);

    /* the physical allocation, mapped at an address of the child's */
    CUmemGenericAllocationHandle h;
    CU(drv.import_handle(&h, (void *)(uintptr_t)fds[1], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fds[0]); /* the imports hold what the descriptors named */
    close(fds[1]);
    size_t size = physical_size();
    CUdeviceptr va = map_physical(h, size);
    CU(drv.release(h)); /* the mapping keeps it */
    expect_bytes((void *)va, 2, 0, "child", "the physical allocation");
    add_one<<<64, 256>>>((unsigned char *)va, BYTES);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    CK(cudaFree(buffer)); /* an imported pointer goes before its exporter frees it */
    CU(drv.unmap(va, size));
    CU(drv.address_free(va, size));
    char done = 1;
    if (write(s, &done, 1) != 1) return 1;
    return vmc_finish("shareable (child)");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--child")) return child(atoi(argv[2]));
    driver_entry_points();

    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    unsigned char *buffer = NULL;
    CK(cudaMallocFromPoolAsync((void **)&buffer, BYTES, pool, 0));
    fill<<<64, 256>>>(buffer, BYTES, 1);
    CK(cudaGetLastError());

    size_t size = physical_size();
    CUmemAllocationProp prop = physical_props();
    CUmemGenericAllocationHandle h;
    CU(drv.create(&h, size, &prop, 0));
    CUdeviceptr va = map_physical(h, size);
    CU(drv.release(h)); /* the mapping keeps it */
    fill<<<64, 256>>>((unsigned char *)va, BYTES, 2);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(0));

    int pool_fd = -1, physical_fd = -1;
    struct message m;
    CK(cudaMemPoolExportToShareableHandle(&pool_fd, pool, cudaMemHandleTypePosixFileDescriptor, 0));
    CK(cudaMemPoolExportPointer(&m.buffer, buffer));
    CUmemGenericAllocationHandle retained;
    CU(drv.retain(&retained, (void *)va));
    CU(drv.export_handle(&physical_fd, retained, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CU(drv.release(retained)); /* the mapping still keeps it, and the export with it */
    vmc_check(pool_fd >= 0 && physical_fd >= 0, "parent", "two descriptors");

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", sv[1]);
        execl("/proc/self/exe", argv[0], "--child", fd, (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    vmc_check(send_descriptors(sv[0], pool_fd, physical_fd, &m) == 0, "parent", "descriptors sent");
    close(pool_fd); /* as the samples do: the descriptors in flight keep what they name */
    close(physical_fd);
    char done = 0;
    int got = (int)read(sv[0], &done, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    vmc_check(got == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "parent", "the child imported, checked and changed both");
    if (WIFSIGNALED(status)) printf("parent: the child was killed by signal %d\n", WTERMSIG(status));

    expect_bytes(buffer, 1, 1, "parent", "the pool's buffer");
    expect_bytes((void *)va, 2, 1, "parent", "the physical allocation");
    CK(cudaFreeAsync(buffer, 0));
    CK(cudaStreamSynchronize(0));
    CK(cudaMemPoolDestroy(pool));
    CU(drv.unmap(va, size));
    CU(drv.address_free(va, size));
    return vmc_finish("shareable");
}

/* The session's module images (worker_images.h). Looked up by SHA-256: first in this worker's memory;
 * then in the daemon's persistent, tenant-scoped cache, which lends the image as a read-only file in the
 * session directory (vmc_w_daemon_module_lookup); else the client uploads it. An uploaded image is also
 * left in the session directory, where the daemon finds it when the session ends, checks its hash and
 * caches it for the tenant's later sessions. The total a session keeps is bounded
 * (VMCUDA_MODULE_STORE_BYTES, default 4 GiB). */
#define _GNU_SOURCE
#include "worker_images.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "vmc_drv_internal.h"
#include "vmc_sha256.h"

struct entry {
    struct vmc_w_image image;
    struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static uint64_t stored_bytes;

static uint64_t budget(void) {
    const char *s = getenv("VMCUDA_MODULE_STORE_BYTES");
    unsigned long long v = s ? strtoull(s, NULL, 10) : 0;
    return v ? v : (4ull << 30);
}

/* Reserves room for `size` more bytes: 0, or -1 when the session's store would pass its budget. */
static int reserve(uint64_t size) {
    pthread_mutex_lock(&lock);
    int fits = size > 0 && size <= budget() && stored_bytes <= budget() - size;
    if (fits)
        stored_bytes += size;
    pthread_mutex_unlock(&lock);
    return fits ? 0 : -1;
}

static void unreserve(uint64_t size) {
    pthread_mutex_lock(&lock);
    stored_bytes -= size;
    pthread_mutex_unlock(&lock);
}

const struct vmc_w_image *vmc_w_image_find(const uint8_t sha[32]) {
    pthread_mutex_lock(&lock);
    struct entry *e = entries;
    while (e && memcmp(e->image.sha, sha, 32) != 0)
        e = e->next;
    pthread_mutex_unlock(&lock);
    return e ? &e->image : NULL;
}

/* Takes ownership of `bytes` (reserved already). Returns 0, or -1 (out of memory: nothing kept). */
static int keep(const uint8_t sha[32], const uint8_t *bytes, uint64_t size) {
    struct entry *e = calloc(1, sizeof *e);
    if (!e)
        return -1;
    memcpy(e->image.sha, sha, 32);
    e->image.bytes = bytes;
    e->image.size = size;
    pthread_mutex_lock(&lock);
    e->next = entries;
    entries = e;
    pthread_mutex_unlock(&lock);
    return 0;
}

static void hex(const uint8_t sha[32], char out[65]) {
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", sha[i]);
}

/* From the daemon's cache: mapped read-only from the file it lent (the daemon removes the loan with the
 * session). */
static const struct vmc_w_image *from_daemon(const uint8_t sha[32], uint64_t size) {
    char name[65], path[4200];
    hex(sha, name);
    if (!vmc_w_daemon_module_lookup(name, size))
        return NULL;
    const char *lend = getenv("VMCUDA_MODULE_LEND_DIR");
    if (!lend || snprintf(path, sizeof path, "%s/%s", lend, name) >= (int)sizeof path)
        return NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    void *map = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == size && reserve(size) == 0) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED || keep(sha, map, size) != 0) {
            if (map != MAP_FAILED)
                munmap(map, size);
            map = MAP_FAILED;
            unreserve(size);
        }
    }
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        vmc_w_log("module image %s from the appliance's cache could not be used; the client sends it", name);
        return NULL;
    }
    vmc_w_log("module image %s (%llu bytes) from the appliance's cache", name, (unsigned long long)size);
    return vmc_w_image_find(sha);
}

/* Leaves an uploaded image where the daemon looks when the session ends (best effort). */
static void offer(const uint8_t sha[32], const uint8_t *bytes, uint64_t size) {
    if (!vmc_w_daemon_linked())
        return;
    char name[65], path[128];
    hex(sha, name);
    if (mkdir(VMC_W_MODULE_OFFER_DIR, 0700) != 0 && errno != EEXIST)
        return;
    snprintf(path, sizeof path, VMC_W_MODULE_OFFER_DIR "/%s", name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    int ok = vmc_write_full(fd, bytes, (size_t)size) == 0;
    close(fd);
    if (!ok)
        unlink(path); /* a full disk: the next session uploads it again */
}

enum vmc_w_result vmc_w_image_query(struct vmc_wcall *wc) {
    struct vmc_image_args a;
    vmc_get_image_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    const struct vmc_w_image *i = vmc_w_image_find(a.sha256);
    if (!i && a.size > 0)
        i = from_daemon(a.sha256, a.size);
    vmc_w_reply_status(wc, cudaSuccess);
    vmc_put_image_held(vmc_w_reply_out(wc), &(struct vmc_image_held){.held = i && i->size == a.size});
    return VMC_W_DONE;
}

/* The bytes follow the frame (as a host-to-device copy's do) and are always consumed, so that a refused
 * upload leaves the connection in step. */
enum vmc_w_result vmc_w_image_upload(struct vmc_wcall *wc) {
    struct vmc_wconn *c = wc->conn;
    struct vmc_image_args a;
    vmc_get_image_args(&wc->in, &a);
    const uint8_t *sha = a.sha256;
    uint64_t size = a.size;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_FATAL; /* without a trustworthy size the stream cannot be resynchronised */
    CUresult st = CUDA_SUCCESS;
    int reserved = reserve(size) == 0;
    uint8_t *bytes = reserved ? malloc(size) : NULL;
    if (!bytes) {
        if (reserved)
            unreserve(size); /* room, but no memory */
        st = CUDA_ERROR_OUT_OF_MEMORY;
        vmc_w_log("module image of %llu bytes refused: the session's module store is full or out of memory",
                  (unsigned long long)size);
        uint8_t sink[1 << 16];
        for (uint64_t left = size; left;) {
            size_t take = left < sizeof sink ? (size_t)left : sizeof sink;
            if (vmc_w_read_bytes(c, sink, take) != 0)
                return VMC_W_FATAL;
            left -= take;
        }
    } else {
        if (vmc_w_read_bytes(c, bytes, (size_t)size) != 0) {
            free(bytes);
            unreserve(size);
            return VMC_W_FATAL;
        }
        uint8_t got[32];
        struct vmc_sha256 h;
        vmc_sha256_init(&h);
        vmc_sha256_update(&h, bytes, (size_t)size);
        vmc_sha256_final(&h, got);
        if (memcmp(got, sha, 32) != 0) {
            vmc_w_log("module image refused: its bytes do not match its SHA-256");
            st = CUDA_ERROR_INVALID_IMAGE;
            free(bytes);
            unreserve(size);
        } else if (vmc_w_image_find(sha)) {
            free(bytes); /* another connection of this session sent it meanwhile */
            unreserve(size);
        } else if (keep(sha, bytes, size) != 0) {
            vmc_w_log("module image refused: out of memory");
            st = CUDA_ERROR_OUT_OF_MEMORY;
            free(bytes);
            unreserve(size);
        } else {
            vmc_w_log("module image (%llu bytes) received from the client", (unsigned long long)size);
            offer(sha, bytes, size);
        }
    }
    vmc_w_reply_status(wc, (cudaError_t)st);
    return VMC_W_DONE;
}

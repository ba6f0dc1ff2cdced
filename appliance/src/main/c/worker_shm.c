/* The worker's end of the co-located fast path (PROTOCOL.md "Co-located fast path"): the client's
 * ring file is mapped and registered with the CUDA runtime, so the GPU copies straight between the
 * ring and device memory and the client pays one memcpy per byte. Slots are handed back and forth
 * with 4-byte tokens on the connection. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"

#define PREFIX "/dev/shm/vmcuda."
#define MAX_SLOTS 64
#define MIN_SLOT (64u << 10)
#define MAX_SLOT (256u << 20)
#define MAX_RING (4ull << 30)

struct vmc_wshm {
    uint8_t *base;
    size_t size, slot_size;
    uint32_t slots;
    int registered;    /* the runtime knows the ring as page-locked memory */
    unsigned epoch;    /* staging epoch of the registration: a cudaDeviceReset drops it */
};

struct registration {
    void *base;
    size_t size;
    int ok;
};

/* Registered on a helper thread so that a failure never becomes the client thread's last error. */
static void *register_ring(void *arg) {
    struct registration *r = arg;
    r->ok = cudaHostRegister(r->base, r->size, cudaHostRegisterPortable) == cudaSuccess;
    return NULL;
}

static void ensure_registered(struct vmc_wshm *shm) {
    unsigned epoch = vmc_w_staging_epoch();
    if (shm->registered && shm->epoch == epoch)
        return;
    struct registration r = {shm->base, shm->size, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, register_ring, &r) == 0)
        pthread_join(t, NULL);
    shm->registered = r.ok;
    shm->epoch = epoch;
}

void vmc_w_shm_release(struct vmc_wconn *c) {
    struct vmc_wshm *shm = c->shm;
    if (!shm)
        return;
    if (shm->registered && shm->epoch == vmc_w_staging_epoch())
        cudaHostUnregister(shm->base);
    munmap(shm->base, shm->size);
    free(shm);
    c->shm = NULL;
}

/* Only a file the client made for this purpose: under the ring prefix, a regular file, no symlink,
 * exactly the announced size. */
static int valid_name(const char *path) {
    return path && strncmp(path, PREFIX, strlen(PREFIX)) == 0 && !strchr(path + strlen(PREFIX), '/') &&
           strlen(path) < 200;
}

enum vmc_w_result vmc_w_shm_attach(struct vmc_wcall *wc) {
    const char *path = vmc_w_arg_str(wc);
    uint64_t size = vmc_in_u64(&wc->in);
    uint32_t slots = vmc_in_u32(&wc->in);
    uint64_t slot_size = vmc_in_u64(&wc->in);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    if (c->shm || !valid_name(path) || slots < 2 || slots > MAX_SLOTS || slot_size < MIN_SLOT || slot_size > MAX_SLOT ||
        slot_size % 4096 != 0 || size != slots * slot_size || size > MAX_RING) {
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
        /* Typical when the client is not on this host after all: it falls back to the socket. */
        if (fd >= 0)
            close(fd);
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    struct vmc_wshm *shm = base == MAP_FAILED ? NULL : calloc(1, sizeof *shm);
    if (!shm) {
        if (base != MAP_FAILED)
            munmap(base, size);
        vmc_w_reply_status(wc, cudaErrorMemoryAllocation);
        return VMC_W_DONE;
    }
    *shm = (struct vmc_wshm){base, size, slot_size, slots, 0, 0};
    ensure_registered(shm);
    c->shm = shm;
    vmc_w_log("shared-memory ring attached: %u slots of %zu bytes%s", slots, (size_t)slot_size,
              shm->registered ? ", registered with the runtime" : ", NOT registered (copies are pageable)");
    vmc_w_reply_status(wc, cudaSuccess);
    return VMC_W_DONE;
}

static int send_token(struct vmc_wconn *c, uint32_t k) {
    uint8_t b[4] = {(uint8_t)k, (uint8_t)(k >> 8), (uint8_t)(k >> 16), (uint8_t)(k >> 24)};
    return vmc_write_full(c->fd, b, 4);
}

static int take_token(struct vmc_wconn *c, uint32_t expect) {
    uint8_t b[4];
    if (vmc_w_read_bytes(c, b, 4) != 0)
        return -1;
    return ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) == expect ? 0 : -1;
}

struct ring_copy {
    struct vmc_device_side side;
    uint64_t count;
    cudaStream_t stream;
    unsigned mode;
    uint32_t blocks;
};

/* Reads the arguments shared by both directions. The ring must exist: the client only sends these
 * calls after a successful attach, so anything else is a broken stream. */
static enum vmc_w_result read_ring_copy(struct vmc_wcall *wc, struct ring_copy *rc) {
    uint32_t symbol = vmc_in_u32(&wc->in);
    uint64_t addr = vmc_in_u64(&wc->in);
    rc->count = vmc_in_u64(&wc->in);
    uint64_t stream = vmc_in_u64(&wc->in);
    rc->mode = vmc_in_u8(&wc->in);
    if (!vmc_w_args_ok(wc) || wc->async || !wc->conn->shm)
        return VMC_W_FATAL;
    struct vmc_wshm *shm = wc->conn->shm;
    uint64_t blocks = (rc->count + shm->slot_size - 1) / shm->slot_size;
    if (blocks > UINT32_MAX)
        return VMC_W_FATAL;
    rc->blocks = (uint32_t)blocks;
    rc->side = vmc_w_device_side(symbol, addr);
    rc->stream = vmc_w_copy_stream(stream, rc->mode);
    ensure_registered(shm);
    return VMC_W_DONE;
}

static uint8_t *slot_of(struct vmc_wshm *shm, uint32_t k) { return shm->base + (size_t)(k % shm->slots) * shm->slot_size; }

static size_t block_bytes(const struct ring_copy *rc, size_t slot_size, uint32_t k) {
    return k + 1 < rc->blocks ? slot_size : (size_t)(rc->count - (uint64_t)k * slot_size);
}

/* One block between the ring and the device, finished before its slot is handed back. */
static cudaError_t move_block(struct vmc_wshm *shm, const struct ring_copy *rc, uint32_t k, int to_device) {
    cudaError_t st = vmc_w_copy_block(&rc->side, (size_t)k * shm->slot_size, slot_of(shm, k),
                                      block_bytes(rc, shm->slot_size, k), to_device, shm->registered, rc->stream, rc->mode);
    if (st == cudaSuccess && shm->registered)
        st = cudaStreamSynchronize(rc->stream);
    return st;
}

enum vmc_w_result vmc_w_shm_host_to_device(struct vmc_wcall *wc) {
    struct ring_copy rc;
    if (read_ring_copy(wc, &rc) != VMC_W_DONE)
        return VMC_W_FATAL;
    struct vmc_wconn *c = wc->conn;
    cudaError_t st = cudaSuccess;
    for (uint32_t k = 0; k < rc.blocks; k++) {
        if (take_token(c, k) != 0)
            return VMC_W_FATAL;
        /* After an error the slots are still handed back, so the client's stream stays in step. */
        if (st == cudaSuccess)
            st = move_block(c->shm, &rc, k, 1);
        if (send_token(c, k) != 0)
            return VMC_W_FATAL;
    }
    vmc_w_count_h2d(rc.count);
    vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_shm_device_to_host(struct vmc_wcall *wc) {
    struct ring_copy rc;
    if (read_ring_copy(wc, &rc) != VMC_W_DONE)
        return VMC_W_FATAL;
    struct vmc_wconn *c = wc->conn;
    /* The first block decides the call's own status, as natively: an invalid source sends no data. */
    cudaError_t st = rc.blocks ? move_block(c->shm, &rc, 0, 0) : cudaSuccess;
    vmc_w_reply_status(wc, st);
    if (vmc_w_send_reply(c, wc->id) != 0)
        return VMC_W_FATAL;
    if (st != cudaSuccess) {
        wc->replied = 0;
        return VMC_W_DONE;
    }
    cudaError_t late = cudaSuccess;
    uint32_t freed = 0;
    for (uint32_t k = 0; k < rc.blocks; k++) {
        if (k > 0) {
            if (k >= c->shm->slots && take_token(c, freed++) != 0)
                return VMC_W_FATAL;
            if (late == cudaSuccess)
                late = move_block(c->shm, &rc, k, 0);
            if (late != cudaSuccess)
                memset(slot_of(c->shm, k), 0, block_bytes(&rc, c->shm->slot_size, k));
        }
        if (send_token(c, k) != 0)
            return VMC_W_FATAL;
    }
    while (freed < rc.blocks)
        if (take_token(c, freed++) != 0)
            return VMC_W_FATAL;
    vmc_w_count_d2h(rc.count);
    vmc_w_reply_status(wc, late); /* the trailing REPLY */
    return VMC_W_DONE;
}

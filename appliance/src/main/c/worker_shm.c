/* The worker's end of the co-located fast path (PROTOCOL.md "Co-located fast path"): the client's
 * ring is mapped and registered with the CUDA runtime, so the GPU copies straight between the ring and
 * device memory and the client pays one memcpy per byte. Slots are handed back and forth with 4-byte
 * tokens on the connection. The ring is either a file the client made for this connection in /dev/shm
 * (same OS instance) or a lane of a shared region (PROTOCOL.md "Shared regions": an ivshmem BAR between
 * two VMs, or a file on one host), which the daemon names in VMCUDA_SHM_REGIONS (paths) or the sandbox
 * hands down already open in VMCUDA_SHM_REGION_FDS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmc_internal.h"
#include "vmc_region.h"
#include "worker.h"
#include "worker_driver.h"

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
    /* A lane of a shared region (else the ring is this connection's own mapping). */
    struct region *region;
    struct vmc_region_geometry geometry;
    uint32_t lane;
    uint64_t nonce;
    /* A ring the UCX agent has registered under this id (worker_ucx.c); it is told when the ring goes. */
    uint32_t ucx_ring;
};

/* ---- shared regions: mapped once per worker, on first use ---- */

#define MAX_REGIONS 8

struct region {
    void *base;
    size_t size;
    char name[128]; /* for the log: the path (or the descriptor number) */
};

static struct region regions[MAX_REGIONS];
static int n_regions;
static pthread_once_t regions_once = PTHREAD_ONCE_INIT;

/* Lanes attached by this worker's connections, so that exiting gives back those whose connections
 * were still open (the worker exits when the client's first connection closes, maybe before the
 * others are torn down). */
#define MAX_ATTACHED 256
static struct vmc_wshm *attached[MAX_ATTACHED];
static pthread_mutex_t attached_lock = PTHREAD_MUTEX_INITIALIZER;

static void track(struct vmc_wshm *shm, int add) {
    pthread_mutex_lock(&attached_lock);
    for (int i = 0; i < MAX_ATTACHED; i++)
        if (attached[i] == (add ? NULL : shm)) {
            attached[i] = add ? shm : NULL;
            break;
        }
    pthread_mutex_unlock(&attached_lock);
}

void vmc_w_shm_release_all_lanes(void) {
    pthread_mutex_lock(&attached_lock);
    for (int i = 0; i < MAX_ATTACHED; i++)
        if (attached[i])
            vmc_region_release(attached[i]->region->base, &attached[i]->geometry, attached[i]->lane, attached[i]->nonce);
    pthread_mutex_unlock(&attached_lock); /* the lanes stay in the table: the process is about to exit */
}

static void map_region(int fd, const char *name) {
    struct stat st;
    if (n_regions == MAX_REGIONS || fstat(fd, &st) != 0 || st.st_size < (off_t)VMC_REGION_LANES_AT) {
        vmc_w_log("shared region %s: not usable (missing, or smaller than %u bytes)", name, VMC_REGION_LANES_AT);
        return;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        vmc_w_log("shared region %s: cannot map %lld bytes: %s", name, (long long)st.st_size, strerror(errno));
        return;
    }
    struct region *r = &regions[n_regions++];
    *r = (struct region){base, (size_t)st.st_size, ""};
    snprintf(r->name, sizeof r->name, "%s", name);
}

/* Descriptors from the sandbox when there are any (inside it the paths may be unreachable; it lists the
 * paths it opened in VMCUDA_SHM_REGIONS in the same order, for the log), else the paths. */
static void map_regions(void) {
    char fd_list[512], path_list[4096];
    const char *fds = getenv("VMCUDA_SHM_REGION_FDS"), *paths = getenv("VMCUDA_SHM_REGIONS");
    snprintf(fd_list, sizeof fd_list, "%s", fds ? fds : "");
    snprintf(path_list, sizeof path_list, "%s", paths ? paths : "");
    char *fd_save = NULL, *path_save = NULL;
    char *fd_item = strtok_r(fd_list, ",", &fd_save);
    for (char *path = strtok_r(path_list, ",", &path_save); path || fd_item; path = strtok_r(NULL, ",", &path_save)) {
        if (fd_item) {
            int fd = atoi(fd_item);
            map_region(fd, path ? path : fd_item);
            close(fd);
            fd_item = strtok_r(NULL, ",", &fd_save);
        } else if (!fds || !*fds) {
            int fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd < 0) {
                vmc_w_log("shared region %s: cannot open: %s", path, strerror(errno));
                continue;
            }
            map_region(fd, path);
            close(fd);
        }
    }
}

struct registration {
    void *base;
    size_t size;
    int ok;
};

/* Registered on a helper thread so that a failure never becomes the client thread's last error. A
 * PCI BAR mapping (ivshmem) is I/O memory to the runtime: plain registration fails and the IoMemory
 * flag is what makes the GPU reach it. */
static void *register_ring(void *arg) {
    struct registration *r = arg;
    int capture_mode = vmc_w_capture_relax(); /* a program's capture meanwhile must not refuse it (worker.h) */
    r->ok = cudaHostRegister(r->base, r->size, cudaHostRegisterPortable) == cudaSuccess ||
            cudaHostRegister(r->base, r->size, cudaHostRegisterPortable | cudaHostRegisterIoMemory) == cudaSuccess;
    vmc_w_capture_restore(capture_mode);
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
    if (shm->region) { /* the lane goes back even if the client never says so (it may have died) */
        track(shm, 0);
        vmc_region_release(shm->region->base, &shm->geometry, shm->lane, shm->nonce);
        vmc_w_log("shared-region lane %u given back", shm->lane);
    } else {
        if (shm->ucx_ring)
            vmc_w_ucx_detach(shm->ucx_ring);
        munmap(shm->base, shm->size);
    }
    free(shm);
    c->shm = NULL;
}

/* Only a file the client made for this purpose: under the ring prefix, a regular file, no symlink,
 * exactly the announced size. */
/* PREFIX + the client's directory suffix + '/' + 32 hex digits (shim_shm.c: the ring's directory and
 * its random name): nothing else is opened. */
static int valid_name(const char *path) {
    if (!path || strnlen(path, 200) >= 200 || strncmp(path, PREFIX, strlen(PREFIX)) != 0)
        return 0;
    const char *dir = path + strlen(PREFIX), *slash = strchr(dir, '/');
    if (!slash || slash == dir || strchr(slash + 1, '/') || strlen(slash + 1) != 32 ||
        strspn(slash + 1, "0123456789abcdef") != 32)
        return 0;
    for (const char *c = dir; c < slash; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            return 0;
    return 1;
}

int vmc_w_shm_open_file(const char *path, uint64_t size) {
    if (!valid_name(path))
        return -1;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

enum vmc_w_result vmc_w_shm_attach(struct vmc_wcall *wc) {
    struct vmc_ring_file_args a;
    vmc_get_ring_file_args(&wc->in, &a);
    const char *path = vmc_w_text(wc, a.path, a.path_bytes);
    uint64_t size = a.size, slot_size = a.slot_size;
    uint32_t slots = a.slots;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    if (c->shm || !valid_name(path) || !vmc_w_shm_ring_ok(slots, slot_size, size)) {
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    int fd = vmc_w_shm_open_file(path, size);
    if (fd < 0) {
        /* Typical when the client is not on this host after all: it falls back to the socket. */
        vmc_w_reply_status(wc, cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        vmc_w_reply_status(wc, cudaErrorMemoryAllocation);
        return VMC_W_DONE;
    }
    if (vmc_w_shm_adopt(c, base, size, slot_size, slots, 0) < 0) {
        munmap(base, size);
        vmc_w_reply_status(wc, cudaErrorMemoryAllocation);
        return VMC_W_DONE;
    }
    vmc_w_log("shared-memory ring attached: %u slots of %zu bytes%s", slots, (size_t)slot_size,
              c->shm->registered ? ", registered with the runtime" : ", NOT registered (copies are pageable)");
    vmc_w_reply_status(wc, cudaSuccess);
    return VMC_W_DONE;
}

int vmc_w_shm_ring_ok(uint32_t slots, uint64_t slot_size, uint64_t size) {
    return slots >= 2 && slots <= MAX_SLOTS && slot_size >= MIN_SLOT && slot_size <= MAX_SLOT && slot_size % 4096 == 0 &&
           size == slots * slot_size && size <= MAX_RING;
}

int vmc_w_shm_adopt(struct vmc_wconn *c, void *base, size_t size, size_t slot_size, uint32_t slots, uint32_t ucx_ring) {
    struct vmc_wshm *shm = calloc(1, sizeof *shm);
    if (!shm)
        return -1;
    *shm = (struct vmc_wshm){base, size, slot_size, slots, 0, 0, NULL, {0}, 0, 0, ucx_ring};
    ensure_registered(shm);
    c->shm = shm;
    return shm->registered;
}

/* Attaches lane `lane` of whichever shared region holds `nonce` there: only the client that claimed the
 * lane (and wrote the nonce into the region it shares with this appliance) can name it. */
enum vmc_w_result vmc_w_shm_attach_region(struct vmc_wcall *wc) {
    struct vmc_region_lane_args a;
    vmc_get_region_lane_args(&wc->in, &a);
    uint64_t nonce = a.nonce;
    uint32_t lane = a.lane;
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_wconn *c = wc->conn;
    pthread_once(&regions_once, map_regions);
    struct region *found = NULL;
    struct vmc_region_geometry g;
    for (int i = 0; i < n_regions && !found && !c->shm; i++) {
        const char *why;
        if (vmc_region_geometry(regions[i].base, regions[i].size, &g, &why) == 0 &&
            vmc_region_held(regions[i].base, &g, lane, nonce))
            found = &regions[i];
    }
    struct vmc_wshm *shm = found ? calloc(1, sizeof *shm) : NULL;
    if (!shm) {
        vmc_w_log("shared-region ring refused: %s", c->shm ? "this connection already has a ring"
                  : n_regions == 0 ? "no shared region is configured here (shm.regions)"
                  : found ? "out of memory" : "no shared region here holds that lane for that client");
        vmc_w_reply_status(wc, found ? cudaErrorMemoryAllocation : cudaErrorInvalidValue);
        return VMC_W_DONE;
    }
    *shm = (struct vmc_wshm){vmc_region_lane(found->base, &g, lane), g.lane_size, g.slot_size, g.slots, 0, 0,
                             found, g, lane, nonce, 0};
    ensure_registered(shm);
    c->shm = shm;
    track(shm, 1);
    vmc_w_log("shared-memory ring attached: lane %u of shared region %s, %u slots of %zu bytes%s", lane, found->name,
              g.slots, (size_t)g.slot_size, shm->registered ? ", registered with the runtime" : ", NOT registered (copies are pageable)");
    vmc_w_reply_status(wc, cudaSuccess);
    return VMC_W_DONE;
}

static int send_token(struct vmc_wconn *c, uint32_t k) {
    uint8_t b[VMC_TOKEN_BYTES];
    vmc_token_encode(b, k);
    return vmc_w_write(c, b, sizeof b);
}

static int take_token(struct vmc_wconn *c, uint32_t expect) {
    uint8_t b[VMC_TOKEN_BYTES];
    return vmc_w_read_bytes(c, b, sizeof b) == 0 && vmc_token_decode(b) == expect ? 0 : -1;
}

/* ---- the block protocol, for any copy cut into blocks ---- */

size_t vmc_w_ring_slot_size(struct vmc_wconn *c) {
    if (!c->shm)
        return 0;
    ensure_registered(c->shm); /* a cudaDeviceReset since the last copy dropped the registration */
    return c->shm->slot_size;
}

static uint8_t *slot_of(struct vmc_wshm *shm, uint32_t k) { return shm->base + (size_t)(k % shm->slots) * shm->slot_size; }

/* Waits for the copies started so far (`started`), even after an error: an earlier block may still be read from its
 * slot. The first error stays the call's. */
static void settled(vmc_w_block_settler settle, void *ctx, int started, cudaError_t *st) {
    cudaError_t done = settle && started ? settle(ctx) : cudaSuccess;
    if (*st == cudaSuccess)
        *st = done;
}

/* The connection ends in the middle of a copy: its ring is let go after this (unmapped, or a lane handed to another
 * client), so no DMA may still read it. */
static enum vmc_w_result broken_mid_copy(vmc_w_block_settler settle, void *ctx, int started) {
    cudaError_t ignored = cudaSuccess;
    settled(settle, ctx, started, &ignored);
    return VMC_W_FATAL;
}

enum vmc_w_result vmc_w_ring_receive(struct vmc_wcall *wc, uint32_t blocks, vmc_w_block_mover move,
                                     vmc_w_block_settler settle, void *ctx) {
    struct vmc_wconn *c = wc->conn;
    cudaError_t st = cudaSuccess;
    int started = 0; /* a block's copy was started since the last wait */
    /* blocks from here on have slots the client does not fill again in this copy */
    uint32_t last_fill_from = blocks > c->shm->slots ? blocks - c->shm->slots : 0;
    for (uint32_t k = 0; k < blocks; k++) {
        if (take_token(c, k) != 0)
            return broken_mid_copy(settle, ctx, started);
        /* After an error the slots are still handed back, so the client's stream stays in step. */
        if (st == cudaSuccess) {
            st = move(ctx, k, slot_of(c->shm, k));
            started |= st == cudaSuccess;
        }
        if (k >= last_fill_from)
            continue;
        settled(settle, ctx, started, &st); /* a slot goes back once the GPU has read it */
        started = 0;
        if (send_token(c, k) != 0)
            return VMC_W_FATAL;
    }
    settled(settle, ctx, started, &st);
    /* through the call pipe only a slot the client fills again goes back (the REPLY frees the others); over a
     * socket every one (ring_copy.c, gives_back_every_slot) */
    for (uint32_t k = last_fill_from; !c->piped && k < blocks; k++)
        if (send_token(c, k) != 0)
            return VMC_W_FATAL;
    vmc_w_reply_status(wc, st);
    return VMC_W_DONE;
}

enum vmc_w_result vmc_w_ring_send(struct vmc_wcall *wc, uint32_t blocks, vmc_w_block_mover move, void *ctx) {
    struct vmc_wconn *c = wc->conn;
    /* The first block decides the call's own status, as natively: an invalid source sends no data. */
    cudaError_t st = blocks ? move(ctx, 0, slot_of(c->shm, 0)) : cudaSuccess;
    vmc_w_reply_status(wc, st);
    if (vmc_w_send_reply(c, wc->id) != 0)
        return VMC_W_FATAL;
    if (st != cudaSuccess) {
        wc->replied = 0; /* that REPLY was the whole answer */
        return VMC_W_DONE;
    }
    cudaError_t late = cudaSuccess;
    uint32_t freed = 0;
    for (uint32_t k = 0; k < blocks; k++) {
        if (k > 0) {
            if (k >= c->shm->slots && take_token(c, freed++) != 0)
                return VMC_W_FATAL;
            if (late == cudaSuccess)
                late = move(ctx, k, slot_of(c->shm, k));
            if (late != cudaSuccess)
                memset(slot_of(c->shm, k), 0, c->shm->slot_size);
        }
        if (send_token(c, k) != 0)
            return VMC_W_FATAL;
    }
    /* Through the call pipe the client hands back only the slots filled again above: the trailing REPLY goes
     * without a wait, and the connection's next call comes once the client has drained the last slots (a client
     * that dies before is seen by serve(): its last answer unread). Over a socket it hands back every one, and a
     * client that dies while draining is seen here. */
    while (!c->piped && freed < blocks)
        if (take_token(c, freed++) != 0)
            return VMC_W_FATAL;
    vmc_w_reply_status(wc, late); /* the trailing REPLY */
    return VMC_W_DONE;
}

struct ring_copy {
    struct vmc_device_side side;
    uint64_t count;
    cudaStream_t stream;
    unsigned mode;
    size_t block; /* bytes of each block but the last (PROTOCOL.md "Co-located fast path") */
    uint32_t blocks;
};

/* Reads the arguments shared by both directions. The ring must exist: the client only sends these
 * calls after a successful attach, so anything else is a broken stream. */
static enum vmc_w_result read_ring_copy(struct vmc_wcall *wc, struct ring_copy *rc, int to_device) {
    struct vmc_copy_args a;
    vmc_get_copy_args(&wc->in, &a);
    rc->count = a.count;
    rc->mode = a.mode;
    if (!vmc_w_args_ok(wc) || wc->async || !wc->conn->shm)
        return VMC_W_FATAL;
    struct vmc_wshm *shm = wc->conn->shm;
    /* a co-located ring's uploads go in pieces, a UCX ring's do not (vmc_io.h) */
    rc->block = to_device ? vmc_ring_upload_block(rc->count, shm->slot_size, shm->slots, !shm->ucx_ring) : shm->slot_size;
    uint64_t blocks = (rc->count + rc->block - 1) / rc->block;
    if (blocks > UINT32_MAX)
        return VMC_W_FATAL;
    rc->blocks = (uint32_t)blocks;
    rc->side = vmc_w_device_side(a.symbol, a.address);
    rc->stream = vmc_w_copy_stream(a.stream, rc->mode);
    ensure_registered(shm);
    return VMC_W_DONE;
}

static size_t block_bytes(const struct ring_copy *rc, uint32_t k) {
    return k + 1 < rc->blocks ? rc->block : (size_t)(rc->count - (uint64_t)k * rc->block);
}

struct block_move {
    struct vmc_wshm *shm;
    const struct ring_copy *rc;
    int to_device;
};

/* One block between the ring and the device. From the device it is finished before the slot is handed over;
 * to the device it is only started (settle_blocks waits), so that the client fills the next block meanwhile. */
static cudaError_t move_block(void *ctx, uint32_t k, uint8_t *slot) {
    const struct block_move *m = ctx;
    cudaError_t st = vmc_w_copy_block(&m->rc->side, (size_t)k * m->rc->block, slot, block_bytes(m->rc, k),
                                      m->to_device, m->shm->registered, m->rc->stream, m->rc->mode);
    if (st == cudaSuccess && m->shm->registered && !m->to_device)
        st = vmc_w_copy_sync(m->rc->stream, m->rc->mode);
    return st;
}

/* Waits for the blocks started so far (copies from pageable memory, a ring not registered, are done already). */
static cudaError_t settle_blocks(void *ctx) {
    const struct block_move *m = ctx;
    return m->shm->registered ? vmc_w_copy_sync(m->rc->stream, m->rc->mode) : cudaSuccess;
}

/* Natively a copy that runs past its destination fails whole and writes nothing: the driver checks the range
 * first. A copy in pieces (vmc_ring_upload_block) starts a piece's DMA before the next piece has arrived, so it
 * goes that way only when the whole destination is known to be one allocation (or within its variable). */
static int destination_checked(const struct ring_copy *rc) {
    if (rc->side.is_symbol) {
        size_t size = 0;
        uint64_t offset = (uint64_t)(uintptr_t)rc->side.ptr;
        return rc->side.symbol && cudaGetSymbolSize(&size, rc->side.symbol) == cudaSuccess && offset <= size &&
               rc->count <= size - offset;
    }
    return vmc_w_drv_range_in_one_allocation((CUdeviceptr)(uintptr_t)rc->side.ptr, (size_t)rc->count);
}

/* Otherwise the pieces are taken first (each in a slot of its own: vmc_ring_upload_block makes no more pieces than
 * slots), and at the last one the copy is tried whole from slot 0 (count is within one slot, hence within the
 * registered ring): an error is the runtime's own and nothing was written, as natively; success means the range
 * was good after all (memory the driver would not describe), and the pieces then overwrite what that wrote. */
static cudaError_t collect_block(void *ctx, uint32_t k, uint8_t *slot) {
    const struct block_move *m = ctx;
    (void)slot;
    if (k + 1 < m->rc->blocks)
        return cudaSuccess;
    int pinned = m->shm->registered;
    cudaError_t st = vmc_w_copy_block(&m->rc->side, 0, slot_of(m->shm, 0), (size_t)m->rc->count, 1, pinned,
                                      m->rc->stream, m->rc->mode);
    for (uint32_t j = 0; st == cudaSuccess && j < m->rc->blocks; j++)
        st = vmc_w_copy_block(&m->rc->side, (size_t)j * m->rc->block, slot_of(m->shm, j), block_bytes(m->rc, j), 1,
                              pinned, m->rc->stream, m->rc->mode);
    return st == cudaSuccess && pinned ? vmc_w_copy_sync(m->rc->stream, m->rc->mode) : st;
}

/* A copy on a stream being captured would put a ring slot into the graph and wait for a stream that does not
 * run (which ends the capture): refused block by block, which keeps the ring in step (worker_fidelity.c says why
 * the socket's copies are refused too). */
static cudaError_t refuse_block(void *ctx, uint32_t k, uint8_t *slot) {
    (void)ctx, (void)k, (void)slot;
    return cudaErrorStreamCaptureUnsupported;
}

/* A 1-D copy through the ring, either way. */
static enum vmc_w_result ring_copy(struct vmc_wcall *wc, int to_device) {
    struct ring_copy rc;
    if (read_ring_copy(wc, &rc, to_device) != VMC_W_DONE)
        return VMC_W_FATAL;
    struct block_move m = {wc->conn->shm, &rc, to_device};
    /* nothing is started on a capturing stream, and nothing waits for it (a wait would end the capture) */
    int refused = vmc_w_stream_capturing((uint64_t)(uintptr_t)rc.stream, (rc.mode & COPY_PER_THREAD) != 0);
    int in_pieces = to_device && rc.blocks > 1 && rc.block < wc->conn->shm->slot_size;
    vmc_w_block_mover move = refused ? refuse_block : in_pieces && !destination_checked(&rc) ? collect_block : move_block;
    enum vmc_w_result r = to_device ? vmc_w_ring_receive(wc, rc.blocks, move, refused ? NULL : settle_blocks, &m)
                                    : vmc_w_ring_send(wc, rc.blocks, move, &m);
    if (r == VMC_W_DONE && to_device)
        vmc_w_count_h2d(rc.count);
    else if (r == VMC_W_DONE && wc->replied)
        vmc_w_count_d2h(rc.count);
    return r;
}

enum vmc_w_result vmc_w_shm_host_to_device(struct vmc_wcall *wc) { return ring_copy(wc, 1); }

enum vmc_w_result vmc_w_shm_device_to_host(struct vmc_wcall *wc) { return ring_copy(wc, 0); }

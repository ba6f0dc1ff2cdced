#include "shim_shm.h"
#include "shm_acl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"
#include "shim_call.h"
#include "shim_config.h"
#include "shim_copy.h"
#include "shim_session.h"
#include "vmc_api.h"
#include "vmc_region.h"

#define SLOTS 4

/* ---- is the appliance on this host? ---- */

static int local = 0;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static int same_address(const struct sockaddr *a, const struct sockaddr *b) {
    if (a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
    return 0;
}

static int is_loopback(const struct sockaddr *a) {
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &in6addr_loopback, 16) == 0;
    return 0;
}

/* The appliance's address is a loopback address or one of this host's own interfaces. */
static void detect_local(void) {
    const struct vmc_client_config *cfg = vmc_client_config();
    char host[256];
    const char *colon = strrchr(cfg->appliance, ':');
    if (!colon || (size_t)(colon - cfg->appliance) >= sizeof host)
        return;
    memcpy(host, cfg->appliance, (size_t)(colon - cfg->appliance));
    host[colon - cfg->appliance] = 0;
    if (host[0] == '[') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0)
        return;
    struct ifaddrs *ifs = NULL;
    getifaddrs(&ifs);
    for (struct addrinfo *ai = res; ai && !local; ai = ai->ai_next) {
        if (is_loopback(ai->ai_addr))
            local = 1;
        for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next)
            if (i->ifa_addr && same_address(ai->ai_addr, i->ifa_addr))
                local = 1;
    }
    freeifaddrs(ifs);
    freeaddrinfo(res);
}

/* ---- the ring ---- */

/* Ring files live in a directory of this process, /dev/shm/vmcuda.XXXXXX, mode 0711: anyone may pass
 * through it but only this user may list it, and each file's name is 128 random bits, sent only over this
 * session's connection. The worker runs as another user (its session's own uid, from its manifest), so each
 * file is mode 0600 with a POSIX ACL entry that lets that uid alone read and write it (shm_acl.c); where
 * /dev/shm has no ACLs the file falls back to 0666 and the name alone keeps others out, said once. Either
 * way the file is unlinked as soon as the worker has opened it (or failed to). */
static char ring_dir[32];
static pid_t ring_dir_pid;
static pthread_mutex_t ring_dir_lock = PTHREAD_MUTEX_INITIALIZER;

static void remove_ring_dir(void) {
    if (ring_dir[0] && ring_dir_pid == getpid())
        rmdir(ring_dir);
}

/* This process's ring directory (a forked child makes its own); 0, or -1 when /dev/shm cannot have one. */
static int ring_directory(char *out, size_t len) {
    pthread_mutex_lock(&ring_dir_lock);
    if (ring_dir_pid != getpid()) {
        char t[] = "/dev/shm/vmcuda.XXXXXX";
        ring_dir[0] = 0;
        if (mkdtemp(t) && chmod(t, 0711) == 0) {
            memcpy(ring_dir, t, sizeof t);
            if (!ring_dir_pid)
                atexit(remove_ring_dir);
            ring_dir_pid = getpid();
        } else if (t[0]) {
            rmdir(t);
        }
    }
    int ok = ring_dir[0] && snprintf(out, len, "%s", ring_dir) < (int)len;
    pthread_mutex_unlock(&ring_dir_lock);
    return ok ? 0 : -1;
}

void *vmc_shm_new_file(size_t size, int reserve, char *path, size_t path_len) {
    return vmc_shm_new_file_at(NULL, size, reserve, path, path_len);
}

void *vmc_shm_new_file_at(void *hint, size_t size, int reserve, char *path, size_t path_len) {
    char dir[32];
    unsigned char name[16];
    if (path_len < 80 || ring_directory(dir, sizeof dir) != 0 || getrandom(name, sizeof name, 0) != (ssize_t)sizeof name)
        return NULL;
    int at = snprintf(path, path_len, "%s/", dir);
    for (size_t i = 0; i < sizeof name; i++)
        at += snprintf(path + at, path_len - (size_t)at, "%02x", name[i]);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    vmc_shm_open_to_worker(fd);
    void *base = MAP_FAILED;
    /* reserved: the pages are taken now, where /dev/shm running out later would kill this process (SIGBUS)
     * at a write */
    if (ftruncate(fd, (off_t)size) == 0 && (!reserve || posix_fallocate(fd, 0, (off_t)size) == 0)) {
        /* at the hint when it is free here (never over a mapping of this process), else where the kernel likes */
        if (hint)
            base = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
        if (base == MAP_FAILED)
            base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED) {
        unlink(path);
        return NULL;
    }
    return base;
}

/* Creates the ring file, asks the worker to map and register it, and unlinks it either way. */
static void attach_file(struct vmc_conn *conn) {
    size_t slot_size = vmc_block_size();
    size_t size = slot_size * SLOTS;
    char path[128];
    void *base = vmc_shm_new_file(size, 0, path, sizeof path);
    if (!base)
        return;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_ShmAttach, 0);
    if (st == cudaSuccess) {
        vmc_arg_str(&c, path);
        vmc_arg_u64(&c, size);
        vmc_arg_u32(&c, SLOTS);
        vmc_arg_u64(&c, slot_size);
        st = vmc_call_finish(&c);
    }
    unlink(path);
    if (st != cudaSuccess) {
        munmap(base, size);
        return;
    }
    conn->shm_base = base;
    conn->shm_size = size;
    conn->shm_slot_size = slot_size;
    conn->shm_slots = SLOTS;
    conn->shm_state = 1;
}

/* ---- a lane of a shared region (client setting shm_region; PROTOCOL.md "Shared regions") ---- */

static uint8_t *region_base;
static size_t region_size;
static struct vmc_region_geometry region_geometry;
static pthread_once_t region_once = PTHREAD_ONCE_INIT;

/* Lanes this process holds, so that they go back when it exits: the first connection's thread never
 * ends before the process, and its worker may exit before it has given the others back. */
#define MAX_HELD VMC_REGION_MAX_LANES
static struct held_lane {
    uint32_t lane;
    uint64_t nonce;
} held[MAX_HELD];
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

/* One entry per lane this process has held: a lane claimed again replaces its old entry (whoever held it
 * before has given it back, or the claim could not have succeeded). */
static void note_held(uint32_t lane, uint64_t nonce) {
    pthread_mutex_lock(&held_lock);
    if (lane < MAX_HELD)
        held[lane] = (struct held_lane){lane, nonce};
    pthread_mutex_unlock(&held_lock);
}

/* A forked child holds none of its parent's lanes: its exit must not give them back. (Its lock may have
 * been taken by a parent thread at the fork.) */
static void forget_held_lanes(void) {
    memset(held, 0, sizeof held);
    pthread_mutex_init(&held_lock, NULL);
}

__attribute__((destructor)) static void release_held_lanes(void) {
    if (!region_base)
        return;
    pthread_mutex_lock(&held_lock);
    for (int i = 0; i < MAX_HELD; i++)
        if (held[i].nonce)
            vmc_region_release(region_base, &region_geometry, held[i].lane, held[i].nonce);
    pthread_mutex_unlock(&held_lock);
}

/* Maps the configured region once per process and lays it out if no client has yet. */
static void map_region(void) {
    const struct vmc_client_config *cfg = vmc_client_config();
    pthread_atfork(NULL, NULL, forget_held_lanes);
    int fd = open(cfg->shm_region, O_RDWR | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    if (fd < 0 || fstat(fd, &st) != 0) {
        why = strerror(errno);
    } else {
        void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (st.st_size <= 0 || base == MAP_FAILED) {
            why = "cannot map it";
        } else if (vmc_region_prepare(base, (size_t)st.st_size, vmc_block_size(), SLOTS, &region_geometry, &why) != 0) {
            munmap(base, (size_t)st.st_size);
        } else {
            region_base = base;
            region_size = (size_t)st.st_size;
        }
    }
    if (fd >= 0)
        close(fd);
    if (why)
        fprintf(stderr, "vmcuda: shared region %s not used (%s); bulk copies go over TCP\n", cfg->shm_region, why);
}

static uint64_t new_nonce(void) {
    uint64_t n = 0;
    while (n == 0 && getrandom(&n, sizeof n, 0) == (ssize_t)sizeof n)
        ;
    return n;
}

/* Claims a free lane and asks the worker to attach it; the lane goes back if the worker says no. */
static void attach_region(struct vmc_conn *conn) {
    pthread_once(&region_once, map_region);
    uint64_t nonce = new_nonce();
    int lane = region_base && nonce ? vmc_region_claim(region_base, &region_geometry, nonce) : -1;
    if (lane < 0)
        return; /* no region, or every lane taken: this connection uses the socket */
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_ShmAttachRegion, 0);
    if (st == cudaSuccess) {
        vmc_arg_u64(&c, nonce);
        vmc_arg_u32(&c, (uint32_t)lane);
        st = vmc_call_finish(&c);
    }
    if (st != cudaSuccess) {
        static int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "vmcuda: the appliance did not attach a lane of shared region %s (does its shm.regions name "
                            "the same memory?); bulk copies go over TCP\n", vmc_client_config()->shm_region);
        vmc_region_release(region_base, &region_geometry, (uint32_t)lane, nonce);
        return;
    }
    conn->shm_base = vmc_region_lane(region_base, &region_geometry, (uint32_t)lane);
    conn->shm_size = region_geometry.lane_size;
    conn->shm_slot_size = region_geometry.slot_size;
    conn->shm_slots = region_geometry.slots;
    conn->shm_lane = lane;
    conn->shm_nonce = nonce;
    conn->shm_state = 1;
    note_held((uint32_t)lane, nonce);
}

static void attach(struct vmc_conn *conn) {
    conn->shm_state = -1;
    if (vmc_client_config()->shm_region[0])
        attach_region(conn);
    else
        attach_file(conn);
}

void vmc_shm_forget(struct vmc_conn *conn) {
    /* A lane stays in held[]: should its worker never give it back (killed), the exit does; if the worker
     * did and the lane was claimed again, that nonce no longer matches and nothing happens. */
    if (conn->shm_lane < 0 && conn->shm_base)
        munmap(conn->shm_base, conn->shm_size);
    conn->shm_base = NULL;
    conn->shm_lane = -1;
    conn->shm_state = 0;
}

/* The configuration lets this process share memory with the appliance: transport shm, a shared region, or
 * auto with an appliance on this host. */
static int may_share(void) {
    const struct vmc_client_config *cfg = vmc_client_config();
    if (cfg->transport == VMC_TRANSPORT_TCP)
        return 0;
    /* A configured shared region says the appliance shares memory with this machine. */
    if (cfg->transport == VMC_TRANSPORT_AUTO && !cfg->shm_region[0]) {
        pthread_once(&local_once, detect_local);
        if (!local)
            return 0;
    }
    return 1;
}

int vmc_shm_colocated(void) { return may_share() && !vmc_client_config()->shm_region[0]; }

int vmc_shm_pinned_in_region(void) { return vmc_client_config()->pinned_in_region && vmc_shm_colocated(); }

int vmc_shm_ready(size_t count) {
    if (count < VMC_RING_MIN_PIPED || !may_share())
        return 0;
    cudaError_t err;
    struct vmc_conn *conn = vmc_thread_conn(&err);
    if (!conn)
        return 0;
    if (count < (conn->pipe_state == 1 ? VMC_RING_MIN_PIPED : VMC_SHM_MIN_BYTES))
        return 0;
    if (conn->shm_state == 0)
        attach(conn);
    return conn->shm_state == 1;
}

static int put_token(struct vmc_conn *conn, uint32_t k) {
    uint8_t b[4] = {(uint8_t)k, (uint8_t)(k >> 8), (uint8_t)(k >> 16), (uint8_t)(k >> 24)};
    return vmc_conn_write(conn, b, 4);
}

/* Reads the token for block `expect`; anything else means the two sides disagree about the stream. */
static int take_token(struct vmc_conn *conn, uint32_t expect) {
    uint8_t b[4];
    if (vmc_conn_read(conn, b, 4) != 0)
        return -1;
    uint32_t k = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return k == expect ? 0 : -1;
}

static uint8_t *slot(struct vmc_conn *conn, uint32_t k) { return conn->shm_base + (size_t)(k % conn->shm_slots) * conn->shm_slot_size; }

static cudaError_t begin(struct vmc_call *c, uint32_t id, uint32_t symbol, uint64_t addr, size_t count, cudaStream_t stream,
                         unsigned mode) {
    cudaError_t st = vmc_call_begin_ex(c, id, 0, !(mode & COPY_DRIVER));
    if (st != cudaSuccess)
        return st;
    vmc_arg_u32(c, symbol);
    vmc_arg_u64(c, addr);
    vmc_arg_u64(c, count);
    vmc_arg_u64(c, (uint64_t)(uintptr_t)stream);
    vmc_arg_u8(c, (uint8_t)mode);
    return vmc_call_send(c);
}

cudaError_t vmc_shm_host_to_device(uint32_t symbol, uint64_t dst, const void *src, size_t count, cudaStream_t stream,
                                   unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin(&c, VMC_API_vmc_MemcpyHostToDeviceShm, symbol, dst, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    struct vmc_conn *conn = c.conn;
    size_t ss = conn->shm_slot_size;
    uint32_t blocks = (uint32_t)((count + ss - 1) / ss), freed = 0;
    for (uint32_t k = 0; k < blocks; k++) {
        if (k >= conn->shm_slots && take_token(conn, freed++) != 0)
            return vmc_session_lost(conn, "shared-memory ring out of step");
        size_t n = k + 1 < blocks ? ss : count - (size_t)k * ss;
        vmc_copy(slot(conn, k), (const uint8_t *)src + (size_t)k * ss, n);
        if (put_token(conn, k) != 0)
            return vmc_session_lost(conn, "cannot send to the worker");
    }
    while (freed < blocks)
        if (take_token(conn, freed++) != 0)
            return vmc_session_lost(conn, "shared-memory ring out of step");
    return vmc_call_await(&c);
}

cudaError_t vmc_shm_device_to_host(void *dst, uint32_t symbol, uint64_t src, size_t count, cudaStream_t stream,
                                   unsigned mode) {
    struct vmc_call c;
    cudaError_t st = begin(&c, VMC_API_vmc_MemcpyDeviceToHostShm, symbol, src, count, stream, mode);
    if (st != cudaSuccess)
        return st;
    st = vmc_call_await(&c);
    if (!c.replied || st != cudaSuccess)
        return st;
    struct vmc_conn *conn = c.conn;
    size_t ss = conn->shm_slot_size;
    uint32_t blocks = (uint32_t)((count + ss - 1) / ss);
    for (uint32_t k = 0; k < blocks; k++) {
        if (take_token(conn, k) != 0)
            return vmc_session_lost(conn, "shared-memory ring out of step");
        size_t n = k + 1 < blocks ? ss : count - (size_t)k * ss;
        vmc_copy((uint8_t *)dst + (size_t)k * ss, slot(conn, k), n);
        if (put_token(conn, k) != 0)
            return vmc_session_lost(conn, "cannot send to the worker");
    }
    return vmc_call_await(&c);
}

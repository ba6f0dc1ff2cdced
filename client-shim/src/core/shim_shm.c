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
#include "transport.h"
#include "vmc_api.h"
#include "vmc_internal.h"
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

/* ---- the ring: slots mapped in this process, filled and drained with memcpy (transport.h) ---- */

struct shm_ring {
    struct vmc_ring ring;
    uint8_t *base;
    size_t size;
    int lane;       /* the ring is lane `lane` of the configured shared region (-1: its own file) */
};

static uint8_t *shm_slot(struct vmc_ring *r, uint32_t slot);

static int shm_fill(struct vmc_ring *r, uint32_t slot, const void *src, size_t n, size_t whole) {
    vmc_copy_for_dma(shm_slot(r, slot), src, n, whole); /* read next by the GPU's DMA alone */
    return 0;
}

static int shm_drain(struct vmc_ring *r, uint32_t slot, void *dst, size_t n) {
    vmc_copy(dst, shm_slot(r, slot), n);
    return 0;
}

/* A lane stays in held[]: should its worker never give it back (killed), the exit does; if the worker did
 * and the lane was claimed again, that nonce no longer matches and nothing happens. */
static void shm_close(struct vmc_ring *r, int forked) {
    struct shm_ring *s = (struct shm_ring *)r;
    (void)forked; /* the mapping is this process's own either way */
    if (s->lane < 0)
        munmap(s->base, s->size);
    free(s);
}

static uint8_t *shm_slot(struct vmc_ring *r, uint32_t slot) { return ((struct shm_ring *)r)->base + (size_t)slot * r->slot_size; }

static const struct vmc_ring_ops shm_ops = {"shared memory", 1, shm_fill, shm_drain, shm_slot, shm_close};

static struct vmc_ring *new_ring(uint8_t *base, size_t size, size_t slot_size, uint32_t slots, int lane) {
    struct shm_ring *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    *s = (struct shm_ring){{&shm_ops, slot_size, slots, VMC_SHM_MIN_BYTES, {0, 0}, ""}, base, size, lane};
    return &s->ring;
}

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
     * at a write; and mapped now, as a native program's page-locked memory is, so that no first write faults
     * (a call pipe faulted at every new page until it had wrapped once: H200 run 98, 16 KiB copies inline took
     * 20.9 us in a program's first 20, 10.5 us on average over 1000 after 50) */
    int populate = reserve ? MAP_POPULATE : 0;
    if (ftruncate(fd, (off_t)size) == 0 && (!reserve || posix_fallocate(fd, 0, (off_t)size) == 0)) {
        /* at the hint when it is free here (never over a mapping of this process), else where the kernel likes */
        if (hint)
            base = mmap(hint, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE | populate, fd, 0);
        if (base == MAP_FAILED)
            base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | populate, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED) {
        unlink(path);
        return NULL;
    }
    return base;
}

/* Creates the ring file, asks the worker to map and register it, and unlinks it either way. */
static struct vmc_ring *attach_file(void) {
    size_t slot_size = vmc_block_size();
    size_t size = slot_size * SLOTS;
    char path[128];
    void *base = vmc_shm_new_file(size, 0, path, sizeof path);
    if (!base)
        return NULL;
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_ShmAttach, 0);
    if (st == cudaSuccess) {
        vmc_put_ring_file_args(vmc_call_args(&c), &(struct vmc_ring_file_args){
            .path_bytes = (uint32_t)strlen(path), .path = path, .size = size, .slots = SLOTS, .slot_size = slot_size});
        st = vmc_call_finish(&c);
    }
    unlink(path);
    struct vmc_ring *ring = st == cudaSuccess ? new_ring(base, size, slot_size, SLOTS, -1) : NULL;
    if (!ring)
        munmap(base, size); /* (should the worker hold it, its copies go nowhere: this connection uses the socket) */
    return ring;
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
static struct vmc_ring *attach_region(void) {
    pthread_once(&region_once, map_region);
    uint64_t nonce = new_nonce();
    int lane = region_base && nonce ? vmc_region_claim(region_base, &region_geometry, nonce) : -1;
    if (lane < 0)
        return NULL; /* no region, or every lane taken: this connection uses the socket */
    struct vmc_call c;
    cudaError_t st = vmc_call_begin(&c, VMC_API_vmc_ShmAttachRegion, 0);
    if (st == cudaSuccess) {
        vmc_put_region_lane_args(vmc_call_args(&c), &(struct vmc_region_lane_args){.nonce = nonce, .lane = (uint32_t)lane});
        st = vmc_call_finish(&c);
    }
    if (st != cudaSuccess) {
        static int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "vmcuda: the appliance did not attach a lane of shared region %s (does its shm.regions name "
                            "the same memory?); bulk copies go over TCP\n", vmc_client_config()->shm_region);
        vmc_region_release(region_base, &region_geometry, (uint32_t)lane, nonce);
        return NULL;
    }
    note_held((uint32_t)lane, nonce); /* given back at exit even if the ring below cannot be made */
    return new_ring(vmc_region_lane(region_base, &region_geometry, (uint32_t)lane), region_geometry.lane_size,
                    region_geometry.slot_size, region_geometry.slots, lane);
}

struct vmc_ring *vmc_shm_attach(void) {
    return vmc_client_config()->shm_region[0] ? attach_region() : attach_file();
}

int vmc_shm_may_share(void) {
    const struct vmc_client_config *cfg = vmc_client_config();
    if (cfg->transport == VMC_TRANSPORT_TCP || cfg->transport == VMC_TRANSPORT_UCX)
        return 0;
    /* A configured shared region says the appliance shares memory with this machine. */
    if (cfg->transport == VMC_TRANSPORT_AUTO && !cfg->shm_region[0]) {
        pthread_once(&local_once, detect_local);
        if (!local)
            return 0;
    }
    return 1;
}

int vmc_shm_colocated(void) { return vmc_shm_may_share() && !vmc_client_config()->shm_region[0]; }

int vmc_shm_pinned_in_region(void) { return vmc_client_config()->pinned_in_region && vmc_shm_colocated(); }

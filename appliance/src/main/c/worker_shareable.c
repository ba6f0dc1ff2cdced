/* Shareable handles: cuMemExportToShareableHandle / cuMemPoolExportToShareableHandle and their imports, for POSIX
 * file descriptors (client: drv_shareable.c; PROTOCOL.md "Shareable handles").
 *
 * NVIDIA's driver exports an allocation or a pool as a descriptor of /dev/nvidiactl that carries the right to it:
 * whichever process receives that descriptor (SCM_RIGHTS) can import it, whatever its user or namespaces (measured
 * on driver 580, tests/bench/results/h200-run153-shareable-handles). A client's processes pass descriptors among
 * themselves in the client VM, where the driver's cannot go, and each process has its own worker here. So the
 * exporting worker keeps the driver's descriptor and answers with a ticket: this appliance's boot id, the name of
 * a Unix socket the worker listens on in /dev/shm, and 32 random bytes for this export (the secret). The client
 * wraps the ticket in a descriptor of its own (a sealed memfd), which the program passes around as it would the
 * driver's. An importing worker connects to the socket named in the ticket and asks for the export by its id (a
 * keyed hash of the secret) with a fresh nonce; the exporter answers with the driver's descriptor and a proof (a
 * keyed hash of the nonce under the secret), which the importer checks before its driver sees the descriptor.
 * The secret never crosses the socket: whoever binds a vanished exporter's socket name (a /dev/shm listing shows
 * the names) learns nothing it can use and cannot make an importer take its descriptor (an attack helper did so
 * to the first version, which sent the secret). The client checked that the ticket is of the kind imported; the
 * driver refuses a descriptor of the other kind anyway.
 *
 * Whoever holds the ticket holds the memory, as whoever holds the driver's descriptor does natively: the secret is
 * the capability (the socket is reachable by every worker, as /dev/shm is, and gives nothing without it). Unlike
 * CUDA IPC's guessable handles (worker_ipc.c), this needs no setting per appliance.
 *
 * Lifetime: the worker holds the descriptor until the exporter's allocation is freed (its last reference released
 * and its last mapping unmapped, worker_vmm.c) or the pool destroyed, or until its session ends (natively the
 * descriptor keeps the memory until the program closes it, which the worker cannot see). An import after that
 * fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmc_drv_internal.h"
#include "vmc_fds.h"
#include "vmc_sha256.h"
#include "vmc_drv_worker_hooks.h"
#include "vmc_wire.h"
#include "worker.h"
#include "worker_driver.h"

#define SECRET_BYTES 32
#define PEER_TIMEOUT_S 5 /* how long an importer waits for each step of the exporter's (connect, answer) */
#define REQUEST_TIMEOUT_MS 1000 /* how long the exporter waits for an importer's request: it sends it at once */
/* Importers the exporter hears at once, and how many of them one uid may be: another tenant's worker that connects
 * again and again and says nothing holds MAX_PENDING_PER_UID of them at most, and the others are answered. */
#define MAX_PENDING 64
#define MAX_PENDING_PER_UID 8
#define MAX_ANSWER_FDS 8 /* room for what a hostile peer may send, all of which is closed */

/* The exchange on an exporter's socket (both ends are this file): the importer sends the export's id and a nonce;
 * the exporter answers one byte (0: found) and the proof, with the driver's descriptor (SCM_RIGHTS) when found. */
enum { ID_BYTES = 32, NONCE_BYTES = 32, PROOF_BYTES = 32, REQUEST_BYTES = ID_BYTES + NONCE_BYTES, ANSWER_BYTES = 1 + PROOF_BYTES };
static const char ID_LABEL[] = "vmcuda shareable export id", PROOF_LABEL[] = "vmcuda shareable exporter proof";

struct shareable_export {
    uint8_t secret[SECRET_BYTES];
    uint8_t id[ID_BYTES]; /* export_id(secret) */
    uint32_t kind; /* VMC_SHAREABLE_ALLOCATION or VMC_SHAREABLE_POOL */
    uint64_t object;
    int fd;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct shareable_export exports[VMC_MAX_SHAREABLE_EXPORTS];
static int n_exports;
static int listening; /* 1: the socket is up, -1: it could not be set up */
static uint8_t socket_id[16];
static char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

/* This machine's boot id as 16 bytes (zeros where it cannot be read): two workers with the same one share /dev/shm.
 * Read once: it does not change while the machine runs. */
static uint8_t boot_id[16];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void read_boot_id(void) {
    char text[64] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (fgets(text, sizeof text, f)) {
        int n = 0;
        for (const char *p = text; *p && n < 32; p++) {
            int v = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
            if (v >= 0)
                boot_id[n / 2] = (uint8_t)(boot_id[n / 2] << 4 | v), n++;
        }
    }
    fclose(f);
}

static void host_id(uint8_t id[16]) {
    pthread_once(&boot_id_once, read_boot_id);
    memcpy(id, boot_id, sizeof boot_id);
}

static void path_for(const uint8_t id[16], char *path, size_t size) {
    int n = snprintf(path, size, "/dev/shm/vmcuda-shareable.");
    for (int i = 0; i < 16 && n + 2 < (int)size; i++)
        n += snprintf(path + n, size - (size_t)n, "%02x", id[i]);
}

static int random_bytes(void *p, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t r = getrandom((char *)p + got, n - got, 0);
        if (r < 0 && errno != EINTR)
            return -1;
        got += r > 0 ? (size_t)r : 0;
    }
    return 0;
}

static void set_timeouts(int s, int seconds) {
    struct timeval tv = {seconds, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int same_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
    uint8_t d = 0; /* every byte compared: how long it takes says nothing of how much matched */
    for (size_t i = 0; i < n; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

/* What names an export on the socket, and what proves the exporter holds its secret (keyed hashes under the secret:
 * neither tells the secret, and one cannot be made from the other). */
static void export_id(const uint8_t secret[SECRET_BYTES], uint8_t id[ID_BYTES]) {
    vmc_hmac_sha256(secret, SECRET_BYTES, ID_LABEL, sizeof ID_LABEL - 1, NULL, 0, id);
}
static void exporter_proof(const uint8_t secret[SECRET_BYTES], const uint8_t nonce[NONCE_BYTES], uint8_t proof[PROOF_BYTES]) {
    vmc_hmac_sha256(secret, SECRET_BYTES, PROOF_LABEL, sizeof PROOF_LABEL - 1, nonce, NONCE_BYTES, proof);
}

/* A duplicate of the descriptor of the export with that id (the caller closes it) and the proof for `nonce`, or -1. */
static int lookup(const uint8_t id[ID_BYTES], const uint8_t nonce[NONCE_BYTES], uint8_t proof[PROOF_BYTES]) {
    int fd = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_exports && fd < 0; i++)
        if (same_bytes(exports[i].id, id, ID_BYTES) && (fd = fcntl(exports[i].fd, F_DUPFD_CLOEXEC, 0)) >= 0)
            exporter_proof(exports[i].secret, nonce, proof);
    pthread_mutex_unlock(&lock);
    return fd;
}

/* One importer's answer to its request: the descriptor with the proof, or "not found". */
static void answer_importer(int s, const uint8_t request[REQUEST_BYTES]) {
    uint8_t answer[ANSWER_BYTES] = {1};
    int fd = lookup(request, request + ID_BYTES, answer + 1);
    answer[0] = fd >= 0 ? 0 : 1;
    static int said; /* once: a peer that hangs up at once, again and again, would fill the log */
    if (vmc_send_with_fd(s, answer, sizeof answer, fd) != 0 && !said) {
        said = 1;
        vmc_w_log("shareable handle: an importer went away before its answer (said once)");
    }
    if (fd >= 0)
        close(fd);
}

/* The uid of the peer on s; -1 where the kernel does not say. */
static long peer_uid(int s) {
    struct ucred who;
    socklen_t n = sizeof who;
    return getsockopt(s, SOL_SOCKET, SO_PEERCRED, &who, &n) == 0 && n == sizeof who ? (long)who.uid : -1;
}

/* Whether uid is a worker's: this worker's own, or of the workers' uid range the daemon gives (VMCUDA_WORKER_UIDS,
 * FIRST-LAST, where sessions have uids of their own). Anyone else that can reach the socket (a host service of the
 * workers' group, say) is hung up on at once. */
static int is_worker_uid(long uid) {
    static int parsed; /* the range, read once (only the answering thread asks) */
    static unsigned long first = 1, last = 0;
    if (!parsed) {
        const char *range = getenv("VMCUDA_WORKER_UIDS");
        if (!range || sscanf(range, "%lu-%lu", &first, &last) != 2)
            first = 1, last = 0;
        parsed = 1;
    }
    return uid >= 0 && ((uid_t)uid == geteuid() || ((unsigned long)uid >= first && (unsigned long)uid <= last));
}

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* An importer heard but not yet answered: what of its request has come, and until when it may come. */
struct pending {
    int s;
    long uid;
    size_t got;
    int64_t deadline;
    uint8_t request[REQUEST_BYTES];
};

static void drop(struct pending *p, int *n, int i) {
    close(p[i].s);
    p[i] = p[--*n];
}

/* Reads what has come of pending importer i's request and answers it once it is whole; 1 when i is done with. */
static int hear(struct pending *p, int i) {
    ssize_t r = recv(p[i].s, p[i].request + p[i].got, REQUEST_BYTES - p[i].got, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (r <= 0)
        return 1;
    p[i].got += (size_t)r;
    if (p[i].got < REQUEST_BYTES)
        return 0;
    answer_importer(p[i].s, p[i].request);
    return 1;
}

/* A new connection, if it is a worker's: answered at once when its request is already there (an importer sends it
 * right after connecting), else it joins the pending ones. Where its uid already has MAX_PENDING_PER_UID pending, or
 * all are taken, the oldest of them (of that uid, or of all) makes room: the one most likely to say nothing. */
static void admit(struct pending *p, int *n, int s) {
    long uid = peer_uid(s);
    if (!is_worker_uid(uid)) {
        close(s);
        return;
    }
    int of_uid = 0, oldest_of_uid = -1, oldest = -1;
    for (int i = 0; i < *n; i++) {
        if (p[i].uid == uid && (oldest_of_uid < 0 || p[i].deadline < p[oldest_of_uid].deadline))
            oldest_of_uid = i;
        of_uid += p[i].uid == uid;
        if (oldest < 0 || p[i].deadline < p[oldest].deadline)
            oldest = i;
    }
    p[*n] = (struct pending){s, uid, 0, now_ms() + REQUEST_TIMEOUT_MS, {0}}; /* p has room for one more */
    if (hear(p, *n)) {
        close(s);
        return;
    }
    if (of_uid >= MAX_PENDING_PER_UID || *n >= MAX_PENDING) {
        int evicted = of_uid >= MAX_PENDING_PER_UID ? oldest_of_uid : oldest;
        close(p[evicted].s);
        p[evicted] = p[*n];
        return;
    }
    (*n)++;
}

/* The exporter's socket: importers are heard side by side (poll), each for REQUEST_TIMEOUT_MS at most, so that one
 * that connects and says nothing delays no other (an attack helper held the first version's one-at-a-time loop). */
static void *serve_importers(void *arg) {
    int listener = (int)(intptr_t)arg;
    static struct pending p[MAX_PENDING + 1]; /* one more: where admit hears a newcomer */
    struct pollfd fds[MAX_PENDING + 1];
    int n = 0;
    for (;;) {
        int64_t now = now_ms(), wait = -1;
        fds[0] = (struct pollfd){.fd = listener, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            fds[i + 1] = (struct pollfd){.fd = p[i].s, .events = POLLIN};
            int64_t left = p[i].deadline > now ? p[i].deadline - now : 0;
            wait = wait < 0 || left < wait ? left : wait;
        }
        if (poll(fds, (nfds_t)n + 1, (int)wait) < 0 && errno != EINTR) {
            usleep(10000);
            continue;
        }
        now = now_ms();
        for (int i = n - 1; i >= 0; i--) /* from the end: dropping moves the last one into i */
            if ((fds[i + 1].revents && hear(p, i)) || now >= p[i].deadline)
                drop(p, &n, i);
        if (!(fds[0].revents & POLLIN))
            continue;
        for (int accepted = 0; accepted < MAX_PENDING; accepted++) {
            int s = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (s >= 0) {
                admit(p, &n, s);
                continue;
            }
            if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK) {
                vmc_w_log("shareable handle: the socket stopped accepting (%s); imports of this process's exports fail",
                          strerror(errno));
                return NULL;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                usleep(10000); /* out of descriptors or memory for now: again later, without spinning */
            break;
        }
    }
}

static void remove_socket(void) { unlink(socket_path); }

/* The socket importers connect to, set up with the first export: mode 0660 for the workers' group (every session's
 * worker uid has it), in sticky /dev/shm, where only this uid may remove it; it goes at exit, or with the session's
 * uid (UidReclaim) if the worker dies. Caller holds lock. */
static int ensure_listening(void) {
    if (listening)
        return listening > 0;
    listening = -1;
    if (random_bytes(socket_id, sizeof socket_id) != 0)
        return 0;
    path_for(socket_id, socket_path, sizeof socket_path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0); /* accepted from one poll loop */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, socket_path, strlen(socket_path) + 1);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int failed = s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || chmod(socket_path, 0660) != 0 || listen(s, MAX_PENDING) != 0
                     ? errno
                     : pthread_create(&t, &attr, serve_importers, (void *)(intptr_t)s); /* its error is its result */
    if (failed) {
        vmc_w_log("shareable handle: cannot listen on %s (%s); exports are refused", socket_path, strerror(failed));
        if (s >= 0)
            close(s);
        unlink(socket_path);
        pthread_attr_destroy(&attr);
        return 0;
    }
    pthread_attr_destroy(&attr);
    atexit(remove_socket);
    listening = 1;
    return 1;
}

/* Keeps the driver's descriptor `fd` for importers and fills the ticket; CUDA_ERROR_OUT_OF_MEMORY (fd closed) where
 * it cannot. An object exported before keeps its export and ticket (the new descriptor names the same memory and is
 * closed): natively each export's descriptor is closed by the program, which the worker cannot see, so a program
 * that exports one handle again and again (to each peer, each step) would otherwise fill the table. Caller holds
 * nothing. */
static CUresult keep(int fd, uint32_t kind, uint64_t object, struct vmc_shareable_ticket *t) {
    struct shareable_export e = {.kind = kind, .object = object, .fd = fd};
    CUresult st = CUDA_ERROR_OUT_OF_MEMORY;
    int held;
    pthread_mutex_lock(&lock);
    int at = -1;
    for (int i = 0; i < n_exports && at < 0; i++)
        if (exports[i].kind == kind && exports[i].object == object)
            at = i;
    if (at >= 0) {
        close(fd); /* the same memory's export is kept already */
        fd = -1;
        e = exports[at];
        st = CUDA_SUCCESS;
    } else if (n_exports < (int)VMC_MAX_SHAREABLE_EXPORTS && ensure_listening() &&
               random_bytes(e.secret, sizeof e.secret) == 0) {
        export_id(e.secret, e.id);
        exports[n_exports++] = e;
        st = CUDA_SUCCESS;
    }
    if (st == CUDA_SUCCESS) {
        host_id(t->host);
        memcpy(t->socket_id, socket_id, sizeof t->socket_id);
        memcpy(t->secret, e.secret, sizeof t->secret);
    }
    held = n_exports;
    pthread_mutex_unlock(&lock);
    if (st != CUDA_SUCCESS) {
        vmc_w_log("shareable handle: export refused (%d held, or no socket for importers)", held);
        close(fd);
    }
    return st;
}

/* The exporter's allocation was freed or its pool destroyed: its descriptors go (natively the memory would stay while
 * the program kept a descriptor open; here it goes once the exporter's and importers' own references are gone). */
static void forget(uint32_t kind, uint64_t object) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_exports;)
        if (exports[i].kind == kind && exports[i].object == object) {
            close(exports[i].fd);
            exports[i] = exports[--n_exports];
        } else {
            i++;
        }
    pthread_mutex_unlock(&lock);
}

void vmc_w_shareable_forget_allocation(CUmemGenericAllocationHandle handle) {
    forget(VMC_SHAREABLE_ALLOCATION, (uint64_t)handle);
}

CUresult vmc_w_hook_cuMemPoolDestroy(vmc_w_real_cuMemPoolDestroy real, CUmemoryPool pool) {
    CUresult st = real(pool);
    if (st == CUDA_SUCCESS)
        forget(VMC_SHAREABLE_POOL, (uint64_t)(uintptr_t)pool);
    return st;
}

enum vmc_w_result vmc_w_shareable_export(struct vmc_wcall *wc, uint32_t kind) {
    struct vmc_shareable_export_args a;
    vmc_get_shareable_export_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    struct vmc_shareable_ticket t;
    memset(&t, 0, sizeof t);
    int fd = -1;
    CUresult st;
    if (a.handle_type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
        st = CUDA_ERROR_NOT_SUPPORTED; /* the client refuses other types before asking */
    } else if (kind == VMC_SHAREABLE_ALLOCATION) {
        DRV(PFN_cuMemExportToShareableHandle_v10020, export_allocation, "cuMemExportToShareableHandle", 10020, 0);
        st = export_allocation ? export_allocation(&fd, (CUmemGenericAllocationHandle)a.object,
                                                   (CUmemAllocationHandleType)a.handle_type, a.flags)
                               : vmc_w_drv_missing("cuMemExportToShareableHandle");
    } else {
        DRV(PFN_cuMemPoolExportToShareableHandle_v11020, export_pool, "cuMemPoolExportToShareableHandle", 11020, 0);
        st = export_pool ? export_pool(&fd, (CUmemoryPool)(uintptr_t)a.object, (CUmemAllocationHandleType)a.handle_type,
                                       a.flags)
                         : vmc_w_drv_missing("cuMemPoolExportToShareableHandle");
    }
    if (st == CUDA_SUCCESS)
        st = keep(fd, kind, a.object, &t);
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_shareable_ticket(vmc_w_reply_out(wc), &t);
    return VMC_W_DONE;
}

/* Only a descriptor of a device goes to the driver (a peer could send any): of NVIDIA's devices where this host has
 * them (the stand-in driver of the tests exports another device's). */
static int drivers_descriptor(int fd) {
    struct stat got, control;
    if (fstat(fd, &got) != 0 || !S_ISCHR(got.st_mode))
        return 0;
    return stat("/dev/nvidiactl", &control) != 0 || major(got.st_rdev) == major(control.st_rdev);
}

/* The driver's descriptor the ticket names, from the exporting worker, once it has proved that it holds the secret:
 * CUDA_SUCCESS and *fd, or CUDA_ERROR_NOT_SUPPORTED (exported on another machine) or CUDA_ERROR_NOT_FOUND (the
 * exporter's socket or export is not there, or whatever answers there cannot prove it is the exporter), the codes
 * the client explains (PROTOCOL.md "Shareable handles"). */
static CUresult fetch(const struct vmc_shareable_ticket *t, int *fd) {
    uint8_t here[16];
    host_id(here);
    if (memcmp(here, t->host, sizeof here) != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    path_for(t->socket_id, a.sun_path, sizeof a.sun_path);
    uint8_t request[REQUEST_BYTES], answer[ANSWER_BYTES] = {1}, expected[PROOF_BYTES];
    export_id(t->secret, request);
    if (random_bytes(request + ID_BYTES, NONCE_BYTES) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    exporter_proof(t->secret, request + ID_BYTES, expected);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    set_timeouts(s, PEER_TIMEOUT_S);
    CUresult st = CUDA_ERROR_NOT_FOUND;
    char control[CMSG_SPACE(MAX_ANSWER_FDS * sizeof(int))];
    struct iovec iov = {answer, sizeof answer};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    ssize_t got = -1;
    if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 && send(s, request, sizeof request, MSG_NOSIGNAL) == (ssize_t)sizeof request)
        got = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    if (got >= 0)
        *fd = vmc_take_one_fd(&m); /* whatever came, kept only below */
    if (got == (ssize_t)sizeof answer) {
        int proved = answer[0] == 0 && same_bytes(answer + 1, expected, PROOF_BYTES);
        if (proved && *fd >= 0 && drivers_descriptor(*fd))
            st = CUDA_SUCCESS;
        else if (answer[0] == 0)
            vmc_w_log("shareable handle: %s answered without %s; refused", a.sun_path,
                      !proved ? "the exporter's proof" : "one GPU descriptor");
    }
    if (st != CUDA_SUCCESS && *fd >= 0)
        close(*fd), *fd = -1;
    close(s);
    return st;
}

enum vmc_w_result vmc_w_shareable_import(struct vmc_wcall *wc, uint32_t kind) {
    struct vmc_shareable_import_args a;
    vmc_get_shareable_import_args(&wc->in, &a);
    if (!vmc_w_args_ok(wc) || wc->async)
        return VMC_W_BAD_ARGS;
    uint64_t object = 0;
    int fd = -1;
    CUresult st = a.handle_type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? fetch(&a.ticket, &fd)
                                                                           : CUDA_ERROR_INVALID_VALUE;
    if (st == CUDA_SUCCESS && kind == VMC_SHAREABLE_ALLOCATION) {
        DRV(PFN_cuMemImportFromShareableHandle_v10020, import_allocation, "cuMemImportFromShareableHandle", 10020, 0);
        CUmemGenericAllocationHandle h = 0;
        st = import_allocation ? import_allocation(&h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
                               : vmc_w_drv_missing("cuMemImportFromShareableHandle");
        object = (uint64_t)h;
        if (st == CUDA_SUCCESS)
            vmc_w_vmm_imported(h);
    } else if (st == CUDA_SUCCESS) {
        DRV(PFN_cuMemPoolImportFromShareableHandle_v11020, import_pool, "cuMemPoolImportFromShareableHandle", 11020, 0);
        CUmemoryPool pool = NULL;
        st = import_pool ? import_pool(&pool, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, a.flags)
                         : vmc_w_drv_missing("cuMemPoolImportFromShareableHandle");
        object = (uint64_t)(uintptr_t)pool;
    }
    if (fd >= 0)
        close(fd); /* the driver holds its own reference once it has imported */
    vmc_w_reply_status(wc, (cudaError_t)st);
    vmc_put_shareable_object(vmc_w_reply_out(wc), &(struct vmc_shareable_object){.object = object});
    return VMC_W_DONE;
}

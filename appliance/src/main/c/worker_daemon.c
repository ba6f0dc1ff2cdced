/* The worker's link to the daemon (PROTOCOL.md "Worker <-> daemon"): a Unix socket over which the
 * daemon hands over client connections as file descriptors and answers module-cache questions with text
 * lines, and the worker reports its counters and asks for cached module images. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

static int daemon_fd = -1;
static pthread_mutex_t write_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t h2d_bytes, d2h_bytes, calls;
/* how long the calls took in the worker, from reading the CALL to its answer (the daemon's /metrics histogram) */
static uint64_t call_ns, call_buckets[VMC_CALL_LATENCY_BUCKETS];

void vmc_w_count_call(uint64_t nanos) {
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&call_ns, nanos, __ATOMIC_RELAXED);
    unsigned i = 0;
    for (uint64_t bound = VMC_CALL_LATENCY_FIRST_NS; i + 1 < VMC_CALL_LATENCY_BUCKETS && nanos >= bound; bound *= 4)
        i++;
    __atomic_add_fetch(&call_buckets[i], 1, __ATOMIC_RELAXED);
}
void vmc_w_count_h2d(uint64_t bytes) { __atomic_add_fetch(&h2d_bytes, bytes, __ATOMIC_RELAXED); }
void vmc_w_count_d2h(uint64_t bytes) { __atomic_add_fetch(&d2h_bytes, bytes, __ATOMIC_RELAXED); }

static int send_line(const char *line) {
    pthread_mutex_lock(&write_lock);
    int rc = vmc_write_full(daemon_fd, line, strlen(line));
    pthread_mutex_unlock(&write_lock);
    return rc;
}

int vmc_w_daemon_connect(void) {
    const char *path = getenv("VMCUDA_WORKER_SOCKET");
    const char *id = getenv("VMCUDA_SESSION_ID");
    const char *key = getenv("VMCUDA_WORKER_KEY");
    if (!path || !id || !key) {
        vmc_w_log("not started by vmcudad (VMCUDA_WORKER_SOCKET, VMCUDA_SESSION_ID or VMCUDA_WORKER_KEY unset)");
        return -1;
    }
    /* Sandboxed (vmcuda-sandbox): the launcher connected as root before dropping privileges and
     * entering the worker's namespaces, and hands the connected socket down. */
    const char *inherited = getenv("VMCUDA_WORKER_FD");
    if (inherited && *inherited) {
        char *end;
        long v = strtol(inherited, &end, 10);
        int type = 0;
        socklen_t tl = sizeof type;
        if (*end != 0 || v < 3 || v > 65535 || getsockopt((int)v, SOL_SOCKET, SO_TYPE, &type, &tl) != 0) {
            vmc_w_log("VMCUDA_WORKER_FD='%s' is not a socket of this process", inherited);
            return -1;
        }
        daemon_fd = (int)v;
        fcntl(daemon_fd, F_SETFD, FD_CLOEXEC);
        unsetenv("VMCUDA_WORKER_FD");
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (daemon_fd >= 0) {
        /* already connected */
    } else if (strlen(path) >= sizeof addr.sun_path) {
        vmc_w_log("worker socket path too long: %s", path);
        return -1;
    } else {
        strcpy(addr.sun_path, path);
        daemon_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (daemon_fd < 0 || connect(daemon_fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
            vmc_w_log("cannot connect to the daemon at %s: %s", path, strerror(errno));
            return -1;
        }
    }
    char line[256];
    snprintf(line, sizeof line, "WORKER %s %s\n", id, key);
    if (send_line(line) != 0) {
        vmc_w_log("cannot introduce myself to the daemon: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- module images from the daemon's cache (PROTOCOL.md "Worker <-> daemon") ----
 * The worker asks "MODULE? <sha256 hex> <size>"; the daemon answers "M <sha256 hex> 1" after linking the
 * image to $VMCUDA_MODULE_LEND_DIR/<sha256 hex> (its directory, bound read-only into the sandbox), or
 * "M <sha256 hex> 0". One question at a time; whichever thread reads the link (vmc_w_daemon_receive_client)
 * delivers the answers. */
#define MODULE_REPLY_TIMEOUT_S 20

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;  /* one question at a time */
static pthread_mutex_t reply_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reply_cond = PTHREAD_COND_INITIALIZER;
static char reply_sha[65];
static int reply_found = -1; /* -1: no answer yet */
static char text[160];       /* the reader's partial line */
static size_t text_len;

/* "LINK <key hex>": the TLS key of the client connection whose descriptor comes next (PROTOCOL.md
 * "Encryption"); only the thread that receives descriptors reads it. */
static uint8_t next_link_key[VMC_LINK_KEY_BYTES];
static int next_link_keyed;

static int take_link_key(const char *line) {
    const char *hex = line + 5;
    if (strncmp(line, "LINK ", 5) != 0 || strlen(hex) != 2 * VMC_LINK_KEY_BYTES)
        return 0;
    for (int i = 0; i < VMC_LINK_KEY_BYTES; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return 0;
        next_link_key[i] = (uint8_t)v;
    }
    next_link_keyed = 1;
    explicit_bzero(text, sizeof text); /* the line's copy of the key */
    return 1;
}

static void deliver_line(const char *line) {
    char sha[65];
    int found;
    if (take_link_key(line))
        return;
    if (sscanf(line, "M %64[0-9a-f] %d", sha, &found) != 2 || strlen(sha) != 64)
        return; /* a newer daemon may say more */
    pthread_mutex_lock(&reply_lock);
    memcpy(reply_sha, sha, sizeof sha);
    reply_found = found == 1;
    pthread_cond_broadcast(&reply_cond);
    pthread_mutex_unlock(&reply_lock);
}

/* Text from the daemon, in whatever pieces it arrives. */
static void take_text(const char *data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n') {
            text[text_len] = 0;
            deliver_line(text);
            text_len = 0;
        } else if (text_len + 1 < sizeof text) {
            text[text_len++] = data[i];
        }
    }
}

int vmc_w_daemon_linked(void) { return daemon_fd >= 0; }

int vmc_w_daemon_module_lookup(const char *sha_hex, uint64_t size) {
    if (daemon_fd < 0 || !getenv("VMCUDA_MODULE_LEND_DIR"))
        return 0; /* no daemon, or one without a module cache */
    pthread_mutex_lock(&module_lock);
    pthread_mutex_lock(&reply_lock);
    reply_found = -1;
    pthread_mutex_unlock(&reply_lock);
    char line[128];
    snprintf(line, sizeof line, "MODULE? %s %" PRIu64 "\n", sha_hex, size);
    int found = 0;
    if (send_line(line) == 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += MODULE_REPLY_TIMEOUT_S;
        pthread_mutex_lock(&reply_lock);
        while (!(reply_found >= 0 && strcmp(reply_sha, sha_hex) == 0))
            if (pthread_cond_timedwait(&reply_cond, &reply_lock, &deadline) == ETIMEDOUT)
                break;
        found = reply_found == 1 && strcmp(reply_sha, sha_hex) == 0;
        pthread_mutex_unlock(&reply_lock);
    }
    pthread_mutex_unlock(&module_lock);
    return found;
}

int vmc_w_daemon_receive_client(struct vmc_w_client_link *link) {
    for (;;) {
        char data[64];
        struct iovec iov = {data, sizeof data};
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int) * 4)];
        } control;
        struct msghdr msg = {0};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        ssize_t r = recvmsg(daemon_fd, &msg, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        /* A descriptor comes with one byte of its own, the last one read (the kernel ends a read after the
         * message that carries descriptors); every other byte is text. */
        int has_fd = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
            has_fd |= cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS;
        take_text(data, (size_t)r - (has_fd ? 1 : 0));
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
                int fd;
                memcpy(&fd, CMSG_DATA(cm), sizeof fd);
                /* Only one descriptor is expected per message; close any extras. */
                size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 1; i < n; i++) {
                    int extra;
                    memcpy(&extra, CMSG_DATA(cm) + i * sizeof(int), sizeof extra);
                    close(extra);
                }
                /* The daemon's event loop made the socket non-blocking, and that flag belongs to the
                 * shared file description: the worker serves it with blocking I/O. */
                int flags = fcntl(fd, F_GETFL);
                if (flags >= 0)
                    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
                link->keyed = next_link_keyed;
                memcpy(link->key, next_link_key, sizeof link->key);
                memset(next_link_key, 0, sizeof next_link_key);
                next_link_keyed = 0;
                return fd;
            }
        }
        /* text only: keep reading */
    }
}

static void *serve_joined(void *arg) {
    struct vmc_w_client_link *link = arg;
    vmc_w_serve(link, 0);
    free(link);
    return NULL;
}

/* Each client thread after the first gets its own connection and so its own worker thread, which
 * holds that thread's CUDA state (current device, last error, per-thread default stream). */
static void *listen_for_joins(void *arg) {
    (void)arg;
    for (;;) {
        struct vmc_w_client_link *link = calloc(1, sizeof *link);
        int fd = link ? vmc_w_daemon_receive_client(link) : -1;
        if (fd < 0) {
            /* The daemon closed the link: it stopped or was killed. Sessions do not outlive their
             * daemon (CONFIG.md "Stopping"): no worker is left holding GPU memory unsupervised. */
            vmc_w_release_session(VMC_ERROR_DAEMON_STOPPED, "the appliance daemon stopped; this session ended", 5);
        }
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        link->fd = fd;
        if (pthread_create(&t, &attr, serve_joined, link) != 0) {
            vmc_w_log("cannot start a thread for a joining client connection");
            close(fd);
            explicit_bzero(link, sizeof *link);
            free(link);
        }
        pthread_attr_destroy(&attr);
    }
}

/* STATS <bytes_h2d> <bytes_d2h> <calls> <call_ns> <bucket 0> ... <bucket N-1> (PROTOCOL.md "Worker <-> daemon") */
static void report_stats(void) {
    char line[128 + 21 * VMC_CALL_LATENCY_BUCKETS];
    int n = snprintf(line, sizeof line, "STATS %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64,
                     __atomic_load_n(&h2d_bytes, __ATOMIC_RELAXED), __atomic_load_n(&d2h_bytes, __ATOMIC_RELAXED),
                     __atomic_load_n(&calls, __ATOMIC_RELAXED), __atomic_load_n(&call_ns, __ATOMIC_RELAXED));
    for (unsigned i = 0; i < VMC_CALL_LATENCY_BUCKETS && n > 0 && (size_t)n < sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %" PRIu64, __atomic_load_n(&call_buckets[i], __ATOMIC_RELAXED));
    if (n > 0 && (size_t)n + 2 <= sizeof line) {
        line[n] = '\n';
        line[n + 1] = 0;
        send_line(line);
    }
}

static void *stats_reporter(void *arg) {
    (void)arg;
    uint64_t last = UINT64_MAX;
    for (;;) {
        sleep(1);
        uint64_t now = __atomic_load_n(&calls, __ATOMIC_RELAXED) + __atomic_load_n(&h2d_bytes, __ATOMIC_RELAXED) +
                       __atomic_load_n(&d2h_bytes, __ATOMIC_RELAXED);
        if (now != last) {
            report_stats();
            last = now;
        }
    }
    return NULL;
}

void vmc_w_daemon_start_threads(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, listen_for_joins, NULL) == 0)
        pthread_detach(t);
    else
        vmc_w_log("cannot start the join listener; other client threads cannot join");
    if (pthread_create(&t, NULL, stats_reporter, NULL) == 0)
        pthread_detach(t);
    vmc_w_idle_start();
}

void vmc_w_daemon_program_exit(unsigned status) {
    if (daemon_fd < 0)
        return;
    char line[32];
    snprintf(line, sizeof line, "EXIT %u\n", status);
    send_line(line);
}

void vmc_w_daemon_bye(int status) {
    if (daemon_fd < 0)
        return;
    report_stats();
    const char *why = vmc_w_abort_reason();
    if (why) {
        char abort_line[300];
        snprintf(abort_line, sizeof abort_line, "ABORT %s\n", why);
        send_line(abort_line);
    }
    char line[32];
    snprintf(line, sizeof line, "BYE %d\n", status);
    send_line(line);
}

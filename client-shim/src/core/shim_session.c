/* The appliance session (PROTOCOL.md "Session setup"): the first CUDA call of the process opens it,
 * every other thread that calls CUDA joins it with a connection of its own. */
#include "shim_exit.h"
#include "shim_session.h"
#include "shim_libraries.h"
#include "shim_shm.h"
#include "transport.h"
#include "shm_acl.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "vmc_sha256.h"
#include "vmc_tls.h"
#include "shim_call.h"
#include "shim_config.h"
#include "shim_pipe.h"
#include "shim_registry.h"
#include "pool_lookup.h"

enum session_state { SESSION_NONE, SESSION_UP, SESSION_FAILED };

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static enum session_state state = SESSION_NONE;
static cudaError_t failure_error = cudaErrorNoDevice;
static uint64_t session_id;
static uint8_t session_key[VMC_SESSION_KEY_BYTES];
static struct vmc_conn *primary;
/* In a pool: the ticket of the placement that chose the appliance, presented in the NEW HELLO. */
static uint64_t placement_ticket;

static __thread struct vmc_conn *thread_conn;
static __thread int thread_failed;
static pthread_key_t conn_key;
static pthread_once_t conn_key_once = PTHREAD_ONCE_INIT;
static int conn_key_made;

/* Every open connection of this process, whichever thread owns it: a forked child must let go of them all. */
static struct vmc_conn *all_conns;
static pthread_mutex_t all_conns_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_watch_once = PTHREAD_ONCE_INIT;

static void unlink_conn(struct vmc_conn *c) {
    pthread_mutex_lock(&all_conns_lock);
    for (struct vmc_conn **p = &all_conns; *p; p = &(*p)->next_open)
        if (*p == c) {
            *p = c->next_open;
            break;
        }
    pthread_mutex_unlock(&all_conns_lock);
}

/* In a child forked after the session began. Its connections are the parent's: a child writing into them
 * would corrupt the parent's calls (through a call pipe, bytes of both would overwrite each other), and its
 * copies of the sockets would keep the worker from seeing the parent end. So the child closes its copies and
 * unmaps its views, and its CUDA calls fail with the initialisation error, as CUDA's do in a child forked
 * after the parent used the GPU. (The child runs this on the forking thread alone; locks may have been held
 * by threads that no longer exist, so they start afresh.) */
static void child_after_fork(void) {
    pthread_mutex_init(&all_conns_lock, NULL);
    pthread_mutex_init(&session_lock, NULL);
    if (state != SESSION_UP)
        return;
    for (struct vmc_conn *c = all_conns; c; c = c->next_open) {
        vmc_io_abandon(c->fd); /* its TLS is left as it is: freeing it here could wait for a lock a parent's thread held */
        close(c->fd);
        vmc_ring_forget(c, 1);
        vmc_pipe_forget(c);
        c->broken = 1;
    }
    all_conns = NULL; /* the structures stay allocated: other threads' pointers to them died with the fork */
    primary = NULL;
    thread_conn = NULL;
    if (conn_key_made)
        pthread_setspecific(conn_key, NULL);
    thread_failed = 1;
    state = SESSION_FAILED;
    failure_error = cudaErrorInitializationError;
}

static void watch_forks(void) { pthread_atfork(NULL, NULL, child_after_fork); }

/* One line on stderr, prefixed, for the user of the application. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "vmcuda: %s\n", line);
    fflush(stderr);
}

static void close_thread_conn(void *p) {
    struct vmc_conn *c = p;
    if (c && c != primary) {
        /* a copy answered on the completion word left its REPLY unread: the worker's output before it comes out */
        if (c->owed_reply_id && !c->broken)
            (void)vmc_call_settle_owed(c);
        unlink_conn(c);
        vmc_io_close(c->fd); /* first: the worker gives a lane of a shared region back when it sees the end */
        vmc_ring_forget(c, 0);
        vmc_pipe_forget(c);
        vmc_out_free(&c->out);
        vmc_reader_free(&c->in);
        free(c->payload);
        free(c);
    }
}

static void make_conn_key(void) { conn_key_made = pthread_key_create(&conn_key, close_thread_conn) == 0; }

/* How long connecting to an appliance or an etcd may take. */
#define CONNECT_SECONDS 10

/* HOST of HOST:PORT or [V6]:PORT into host; 0, or -1 with why. */
static int endpoint_host(const char *endpoint, char *host, size_t host_len, char *why, size_t why_len) {
    const char *colon = strrchr(endpoint, ':');
    if (!colon || colon == endpoint || (size_t)(colon - endpoint) >= host_len || !colon[1]) {
        snprintf(why, why_len, "'%s' is not HOST:PORT", endpoint);
        return -1;
    }
    memcpy(host, endpoint, (size_t)(colon - endpoint));
    host[colon - endpoint] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:7070 */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    return 0;
}

int vmc_tcp_connect(const char *appliance, char *why, size_t why_len) {
    char host[256];
    if (endpoint_host(appliance, host, sizeof host, why, why_len) != 0)
        return -1;
    const char *colon = strrchr(appliance, ':');
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        snprintf(why, why_len, "cannot resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1, last_errno = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        /* an address that drops packets (a dead appliance still in the pool's list, a blackholed etcd) must not
         * hold the program's first CUDA call for the kernel's two minutes: connect honours the send timeout */
        struct timeval connect_limit = {CONNECT_SECONDS, 0}, none = {0, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &connect_limit, sizeof connect_limit);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none); /* bulk writes may take their time */
            break;
        }
        last_errno = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (last_errno == EINPROGRESS || last_errno == EAGAIN)
            snprintf(why, why_len, "no answer to connecting within %d s", CONNECT_SECONDS);
        else
            snprintf(why, why_len, "%s", strerror(last_errno));
        return -1;
    }
    /* Small calls must not wait for Nagle; bulk copies want deep buffers. */
    int one = 1, buf = 8 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    return fd;
}

/* How long the daemon may take to send its challenge (it sends it at once), and to finish TLS's handshake. */
#define CHALLENGE_SECONDS 10

/* A connection to a daemon: TCP, then TLS when the client has the appliance's certificate authority
 * (tls_ca; PROTOCOL.md "Encryption"). The descriptor, or -1 with the reason in why. */
static int appliance_connect(const char *endpoint, char *why, size_t why_len) {
    const struct vmc_client_config *cfg = vmc_client_config();
    int fd = vmc_tcp_connect(endpoint, why, why_len);
    if (fd < 0 || !cfg->tls_ca[0])
        return fd;
    char host[256];
    struct timeval deadline = {CHALLENGE_SECONDS, 0}, none = {0, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    if (endpoint_host(endpoint, host, sizeof host, why, why_len) != 0 ||
        vmc_tls_connect_daemon(fd, cfg->tls_ca, host, cfg->tls_verify_name, why, why_len) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    return fd;
}

static int hash_executable(uint8_t digest[32], uint64_t *size) {
    return vmc_file_sha256("/proc/self/exe", size, digest);
}

/* The executable's base name, for the appliance's logs, /status and progress lines. */
static const char *exe_name(void) {
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    return strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
}

/* Large uploads say how they progress: on a terminal as one redrawn line, otherwise a line per 10 %. */
#define PROGRESS_FROM_BYTES (64ull << 20)

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void upload_progress(const char *name, uint64_t sent, uint64_t size, int *last_decile, double started) {
    if (size < PROGRESS_FROM_BYTES)
        return;
    int tty = isatty(2), decile = (int)(sent * 10 / size);
    if (sent < size && decile == *last_decile)
        return;
    *last_decile = decile;
    if (sent < size) {
        fprintf(stderr, "%svmcuda: uploading %s (%llu MiB) to %s: %d%%%s", tty ? "\r" : "", name,
                (unsigned long long)(size >> 20), vmc_client_config()->appliance, decile * 10, tty ? "" : "\n");
    } else {
        double secs = seconds_now() - started;
        fprintf(stderr, "%svmcuda: uploaded %s (%llu MiB) in %.1f s (%.0f MB/s); the appliance now rewrites it and starts the worker\n",
                tty ? "\r" : "", name, (unsigned long long)(size >> 20), secs, secs > 0 ? size / secs / 1e6 : 0.0);
    }
    fflush(stderr);
}

/* Sends `size` bytes of the file at `path` as BINARY_CHUNK frames (the executable, or a library of it). */
static int upload_file(int sock, const char *path, uint64_t size, const char *name) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    static uint8_t chunk[VMC_MAX_BINARY_CHUNK];
    uint64_t sent = 0;
    int rc = 0, decile = -1;
    double started = seconds_now();
    while (sent < size && rc == 0) {
        size_t want = size - sent < sizeof chunk ? (size_t)(size - sent) : sizeof chunk;
        if (vmc_read_full(fd, chunk, want) != 0) {
            rc = -1;
            break;
        }
        uint8_t h[VMC_HEADER_BYTES];
        vmc_encode_header(h, VMC_BINARY_CHUNK, 0, 0, (uint32_t)want);
        rc = vmc_write_full(sock, h, sizeof h) || vmc_write_full(sock, chunk, want) ? -1 : 0;
        sent += want;
        if (rc == 0)
            upload_progress(name, sent, size, &decile, started);
    }
    close(fd);
    return rc;
}

static int upload_executable(int sock, uint64_t size, const char *name) {
    return upload_file(sock, "/proc/self/exe", size, name);
}

static int read_hello_reply(struct vmc_conn *c, char *msg, size_t msg_len, uint32_t *gpu_count);

/* NEED_LIBRARIES (`msg`: the names, one per line): the LIBRARIES frame says what each is, and the bytes of those
 * the appliance then asks for (SEND_LIBRARIES) follow, each in chunks of its own. Returns the next HELLO_REPLY
 * status, or -1 with msg saying why (PROTOCOL.md "Client libraries"). */
static int ship_libraries(struct vmc_conn *c, char *msg, size_t msg_len, uint32_t *gpu_count) {
    static struct vmc_client_library libs[VMC_MAX_CLIENT_LIBRARIES];
    char why[512];
    int n = vmc_find_libraries(msg, libs, VMC_MAX_CLIENT_LIBRARIES, why, sizeof why);
    if (n < 0) {
        snprintf(msg, msg_len, "%s", why);
        return -1;
    }
    vmc_out_begin_frame(&c->out);
    vmc_out_u16(&c->out, (uint16_t)n);
    for (int i = 0; i < n; i++) {
        vmc_out_u16(&c->out, (uint16_t)strlen(libs[i].name));
        vmc_out_bytes(&c->out, libs[i].name, strlen(libs[i].name));
        vmc_out_u64(&c->out, libs[i].size);
        vmc_out_bytes(&c->out, libs[i].sha256, VMC_SHA256_BYTES);
    }
    vmc_out_finish_frame(&c->out, VMC_LIBRARIES, 0, 0);
    if (c->out.broken || vmc_write_full(c->fd, c->out.data, c->out.len) != 0) {
        snprintf(msg, msg_len, "cannot send the list of libraries to the appliance");
        return -1;
    }
    int status = read_hello_reply(c, msg, msg_len, gpu_count);
    if (status != VMC_SEND_LIBRARIES)
        return status;
    char wanted[16384];
    snprintf(wanted, sizeof wanted, "%s", msg);
    for (char *name = strtok(wanted, "\n"); name; name = strtok(NULL, "\n")) {
        const struct vmc_client_library *l = vmc_library_named(libs, n, name);
        if (!l || !l->size || upload_file(c->fd, l->path, l->size, l->name) != 0) {
            snprintf(msg, msg_len, "cannot send %s to the appliance", name);
            return -1;
        }
    }
    return read_hello_reply(c, msg, msg_len, gpu_count);
}

static struct vmc_conn *new_conn(int fd) {
    struct vmc_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->fd = fd;
    pthread_once(&fork_watch_once, watch_forks);
    pthread_mutex_lock(&all_conns_lock);
    c->next_open = all_conns;
    all_conns = c;
    pthread_mutex_unlock(&all_conns_lock);
    return c;
}

#define IN_BUFFER_BYTES (64u << 10)

/* The rate at which a copy's answer is expected and the longest a copy makes a reader poll (wire.spec
 * COPY_POLL_*). Page-locked copies of 4 MiB in the region, H200 run 107: 0.91-0.92 of native polling the default
 * 50 us, 0.97-0.99 polling 300 us. */
void vmc_conn_expect_copy(struct vmc_conn *c, size_t bytes) {
    size_t ns = bytes / VMC_COPY_POLL_BYTES_PER_NS;
    c->copy_poll_ns = ns > (size_t)VMC_COPY_POLL_MAX_NS ? (long)VMC_COPY_POLL_MAX_NS : (long)ns;
}

long vmc_conn_poll_ns(const struct vmc_conn *c) {
    /* no polling at all (VMCUDA_POLL_US=0, or one CPU that the worker may need) stays none */
    long poll = vmc_poll_ns();
    return poll > 0 && c->copy_poll_ns > poll ? c->copy_poll_ns : poll;
}

int vmc_conn_read(struct vmc_conn *c, void *dst, size_t n) {
    if (c->owed_reply_id) {
        /* a frame read first, whole: where this read stands (a frame's start or not) is as it was */
        int at_frame_start = c->at_frame_start;
        int rc = vmc_call_settle_owed(c);
        c->at_frame_start = at_frame_start;
        if (rc != 0)
            return -1;
    }
    if (c->pipe_state == 1) {
        int rc = vmc_pipe_read(&c->pipe, dst, n, vmc_conn_poll_ns(c));
        if (rc <= 0)
            return rc;
        /* The worker has said its last word on the socket (ending the session, and why): read it there, from
         * a frame's start; in the middle of one the worker's frame was cut short, and the stream is lost. */
        vmc_pipe_forget(c);
        if (!c->at_frame_start) {
            errno = EPROTO;
            return -1;
        }
    }
    c->in.cap = IN_BUFFER_BYTES;
    return vmc_reader_read(&c->in, c->fd, dst, n);
}

int vmc_conn_write(struct vmc_conn *c, const void *src, size_t n) {
    return c->pipe_state == 1 ? vmc_pipe_write(&c->pipe, src, n) : vmc_write_full(c->fd, src, n);
}

int vmc_conn_read_frame(struct vmc_conn *c, struct vmc_frame_header *h) {
    for (;;) {
        const char *why;
        uint8_t raw[VMC_HEADER_BYTES];
        c->at_frame_start = 1;
        int rc = vmc_conn_read(c, raw, sizeof raw);
        c->at_frame_start = 0;
        if (rc != 0 || vmc_parse_header(raw, h, &why) != 0)
            return -1;
        if (h->len > c->payload_cap) {
            uint8_t *p = realloc(c->payload, h->len);
            if (!p)
                return -1;
            c->payload = p;
            c->payload_cap = h->len;
        }
        if (h->len && vmc_conn_read(c, c->payload, h->len) != 0)
            return -1;
        if (h->type != VMC_OUTPUT)
            return 0;
        /* What the worker's process printed (device printf, runtime messages) goes through this
         * process's own stdio, so it interleaves with the application's output as natively. */
        if (h->len >= 1) {
            FILE *to = c->payload[0] == 2 ? stderr : stdout;
            fwrite(c->payload + 1, 1, h->len - 1, to);
            if (to == stderr)
                fflush(stderr);
        }
    }
}

/* Reads HELLO_REPLY. Returns its status or -1; msg receives the daemon's message. */
static int read_hello_reply(struct vmc_conn *c, char *msg, size_t msg_len, uint32_t *gpu_count) {
    struct vmc_frame_header h;
    msg[0] = 0;
    if (vmc_conn_read_frame(c, &h) != 0) {
        snprintf(msg, msg_len, errno == EAGAIN || errno == EWOULDBLOCK
                                   ? "no answer to the handshake within the deadline (is this vmcudad's port?)"
                                   : "the appliance closed the connection during the handshake");
        return -1;
    }
    struct vmc_in in;
    vmc_in_init(&in, c->payload, h.len);
    if (h.type == VMC_ERROR) {
        (void)vmc_in_u32(&in);
        uint16_t n = vmc_in_u16(&in);
        const uint8_t *text = vmc_in_view(&in, n);
        snprintf(msg, msg_len, "%.*s", text ? (int)n : 0, text ? (const char *)text : "");
        return -1;
    }
    if (h.type != VMC_HELLO_REPLY) {
        snprintf(msg, msg_len, "unexpected frame type %u during the handshake", h.type);
        return -1;
    }
    uint32_t status = vmc_in_u32(&in);
    uint64_t id = vmc_in_u64(&in);
    uint8_t key[VMC_SESSION_KEY_BYTES];
    vmc_in_bytes(&in, key, sizeof key);
    *gpu_count = vmc_in_u32(&in);
    uint16_t n = vmc_in_u16(&in);
    const uint8_t *text = vmc_in_view(&in, n);
    if (in.bad) {
        snprintf(msg, msg_len, "malformed HELLO_REPLY");
        return -1;
    }
    snprintf(msg, msg_len, "%.*s", (int)n, (const char *)text);
    /* READY on a TLS connection ends with the key of the connection's link to its worker */
    c->link_keyed = status == VMC_READY && in.len - in.pos == VMC_LINK_KEY_BYTES;
    if (c->link_keyed)
        vmc_in_bytes(&in, c->link_key, sizeof c->link_key);
    if (status == VMC_PLACED)
        placement_ticket = id;
    if (status == VMC_READY && state == SESSION_NONE) {
        session_id = id;
        memcpy(session_key, key, sizeof key);
    }
    return (int)status;
}

/* The worker's MANIFEST must list what this process registered, in the same order: both sides ran
 * the same executable's constructors. A mismatch means the appliance runs a different binary. */
static int check_manifest(struct vmc_conn *c, char *why, size_t why_len) {
    struct vmc_frame_header h;
    if (vmc_conn_read_frame(c, &h) != 0) {
        snprintf(why, why_len, "the worker closed the connection before its manifest");
        return -1;
    }
    if (h.type != VMC_MANIFEST) {
        snprintf(why, why_len, "expected the worker's manifest, got frame type %u", h.type);
        return -1;
    }
    struct vmc_in in;
    vmc_in_init(&in, c->payload, h.len);
    uint32_t nf = vmc_in_u32(&in);
    if (nf != vmc_kernel_count()) {
        snprintf(why, why_len, "the worker registered %u kernels, this process %u", nf, vmc_kernel_count());
        return -1;
    }
    for (uint32_t i = 0; i < nf; i++) {
        uint16_t n = vmc_in_u16(&in);
        const uint8_t *name = vmc_in_view(&in, n);
        const struct vmc_kernel *k = vmc_kernel_at(i);
        if (in.bad || !k || strlen(k->device_name) != n || memcmp(k->device_name, name, n) != 0) {
            snprintf(why, why_len, "kernel %u differs between this process and the worker", i);
            return -1;
        }
    }
    uint32_t nv = vmc_in_u32(&in);
    if (nv != vmc_var_count()) {
        snprintf(why, why_len, "the worker registered %u variables, this process %u", nv, vmc_var_count());
        return -1;
    }
    for (uint32_t i = 0; i < nv; i++) {
        uint16_t n = vmc_in_u16(&in);
        const uint8_t *name = vmc_in_view(&in, n);
        (void)vmc_in_u64(&in);
        const struct vmc_var *v = vmc_var_at(i);
        if (in.bad || !v || strlen(v->device_name) != n || memcmp(v->device_name, name, n) != 0) {
            snprintf(why, why_len, "variable %u differs between this process and the worker", i);
            return -1;
        }
    }
    uint32_t worker_uid = vmc_in_u32(&in);
    if (in.bad) {
        snprintf(why, why_len, "the worker's manifest ends early");
        return -1;
    }
    vmc_shm_set_worker_uid(worker_uid);
    return 0;
}

#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)
/* Placements one session start may take in a pool before it gives up (see vmc_thread_conn). */
#define POOL_ATTEMPTS 3

/* Reads the daemon's CHALLENGE (its first frame). Returns 0, or -1 with the reason in msg. */
static int read_challenge(struct vmc_conn *c, uint8_t nonce[VMC_CHALLENGE_BYTES], char *msg, size_t msg_len) {
    struct vmc_frame_header h;
    if (vmc_conn_read_frame(c, &h) != 0) {
        snprintf(msg, msg_len, errno == EAGAIN || errno == EWOULDBLOCK
                                   ? "no challenge within " TEXT(CHALLENGE_SECONDS) " seconds: this is not vmcudad's client port (its "
                                     "admin port, which speaks HTTP, stays silent like this), or the appliance wants TLS (set tls_ca "
                                     "in client.conf)"
                                   : vmc_client_config()->tls_ca[0]
                                         ? "the appliance closed the connection before the handshake"
                                         : "the appliance closed the connection before the handshake (one that wants TLS does "
                                           "this: set tls_ca in client.conf to its certificate)");
        return -1;
    }
    if (h.type == VMC_ERROR) {
        struct vmc_in in;
        vmc_in_init(&in, c->payload, h.len);
        (void)vmc_in_u32(&in);
        uint16_t n = vmc_in_u16(&in);
        const uint8_t *text = vmc_in_view(&in, n);
        snprintf(msg, msg_len, "%.*s", text ? (int)n : 0, text ? (const char *)text : "");
        return -1;
    }
    if (h.type != VMC_CHALLENGE || h.len != VMC_CHALLENGE_BYTES) {
        snprintf(msg, msg_len, "the appliance did not open with a challenge (frame type %u): an older vmcudad?", h.type);
        return -1;
    }
    memcpy(nonce, c->payload, VMC_CHALLENGE_BYTES);
    return 0;
}

/* HELLO, ending in its proof: HMAC-SHA256(SHA-256(token), nonce || the payload before the proof), or 32
 * zero bytes without a token. The token itself never leaves this process (PROTOCOL.md "Session setup"). */
static void put_hello(struct vmc_out *o, uint32_t role, uint64_t size, const uint8_t digest[32],
                      const struct vmc_client_config *cfg, const uint8_t nonce[VMC_CHALLENGE_BYTES], const char *name) {
    size_t name_len = strlen(name) > 1024 ? 1024 : strlen(name);
    vmc_out_begin_frame(o);
    size_t payload_at = o->len;
    vmc_out_u32(o, VMC_PROTO_VERSION);
    vmc_out_u32(o, role);
    vmc_out_u64(o, size);
    vmc_out_bytes(o, digest, VMC_SHA256_BYTES);
    vmc_out_u32(o, cfg->gpus);
    vmc_out_u64(o, role == VMC_ROLE_JOIN ? session_id : role == VMC_ROLE_NEW ? placement_ticket : 0);
    if (role == VMC_ROLE_JOIN) {
        vmc_out_bytes(o, session_key, VMC_SESSION_KEY_BYTES);
    } else {
        uint8_t zero[VMC_SESSION_KEY_BYTES] = {0};
        vmc_out_bytes(o, zero, sizeof zero);
    }
    vmc_out_u16(o, (uint16_t)name_len);
    vmc_out_bytes(o, name, name_len);
    /* The program's CUDA_VISIBLE_DEVICES selects among the session's GPUs, applied by the appliance as the
     * driver applies it on a machine (JOIN connections belong to a session whose GPUs are chosen). */
    const char *visible = role == VMC_ROLE_NEW ? getenv("CUDA_VISIBLE_DEVICES") : NULL;
    size_t visible_len = visible ? strlen(visible) : 0;
    if (visible && visible_len <= VMC_VISIBLE_MAX_BYTES) {
        vmc_out_u16(o, (uint16_t)visible_len);
        vmc_out_bytes(o, visible, visible_len);
    } else {
        vmc_out_u16(o, (uint16_t)VMC_VISIBLE_UNSET);
    }
    uint8_t proof[VMC_PROOF_BYTES] = {0};
    if (cfg->token[0] && !o->broken) {
        uint8_t key[32];
        struct vmc_sha256 s;
        vmc_sha256_init(&s);
        vmc_sha256_update(&s, cfg->token, strlen(cfg->token));
        vmc_sha256_final(&s, key);
        vmc_hmac_sha256(key, sizeof key, nonce, VMC_CHALLENGE_BYTES, o->data + payload_at, o->len - payload_at, proof);
    }
    vmc_out_bytes(o, proof, sizeof proof);
    vmc_out_finish_frame(o, VMC_HELLO, 0, 0);
}

/* After READY on a TLS connection: the daemon has handed the socket to the worker, which opens the link's
 * own TLS, keyed by what READY carried (PROTOCOL.md "Encryption"). 0, or -1 with why. */
static int switch_to_worker_link(struct vmc_conn *c, char *why, size_t why_len) {
    if (!c->link_keyed) {
        snprintf(why, why_len, "the appliance's READY carries no key for TLS to the worker: it does not encrypt "
                               "the session (a vmcudad without TLS behind a TLS proxy?)");
        return -1;
    }
    int rc = vmc_tls_link(c->fd, c->link_key, 0, why, why_len);
    /* the key's copies: this connection's, the READY frame's and the reader's buffer of it (all consumed) */
    explicit_bzero(c->link_key, sizeof c->link_key);
    explicit_bzero(c->payload, c->payload_cap);
    if (c->in.buf)
        explicit_bzero(c->in.buf, c->in.cap);
    return rc;
}

/* Opens a connection in the given role. On failure prints nothing; fills why. */
static struct vmc_conn *handshake(uint32_t role, char *why, size_t why_len, uint32_t *gpu_count, char *msg, size_t msg_len) {
    const struct vmc_client_config *cfg = vmc_client_config();
    static uint8_t digest[32];
    static uint64_t size;
    /* A program that registered kernels or variables through the runtime front end needs its own
     * executable on the appliance (its constructors register them with NVIDIA's runtime there); any
     * other (static cudart, CUDA libraries, the driver API, frameworks) gets a plain worker, to which
     * modules travel by content: binary size 0 (PROTOCOL.md "Session setup"). */
    if (role == VMC_ROLE_NEW && vmc_session_ships_binary() && hash_executable(digest, &size) != 0) {
        snprintf(why, why_len, "cannot read /proc/self/exe: %s", strerror(errno));
        return NULL;
    }
    int fd = appliance_connect(cfg->appliance, why, why_len);
    if (fd < 0)
        return NULL;
    struct vmc_conn *c = new_conn(fd);
    if (!c) {
        vmc_io_close(fd);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    /* Something that is not vmcudad (a wrong port) must not hang the program: every read of the handshake
     * has a deadline. It is generous because the appliance may queue the session for a free GPU. */
    struct timeval deadline = {cfg->handshake_timeout_s, 0};
    /* vmcudad sends its challenge the moment it accepts: a port that stays silent longer is something else
     * (typically the admin port, whose HTTP server waits for a request), told in seconds, not minutes */
    struct timeval challenge_deadline = {cfg->handshake_timeout_s < CHALLENGE_SECONDS ? cfg->handshake_timeout_s
                                                                                       : CHALLENGE_SECONDS, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &challenge_deadline, sizeof challenge_deadline);
    uint8_t nonce[VMC_CHALLENGE_BYTES];
    int status = -1;
    int challenged = read_challenge(c, nonce, msg, msg_len) == 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    if (challenged) {
        put_hello(&c->out, role, size, digest, cfg, nonce, exe_name());
        status = vmc_write_full(fd, c->out.data, c->out.len) == 0 ? read_hello_reply(c, msg, msg_len, gpu_count) : -1;
    }
    if (status == VMC_SEND_BINARY && role == VMC_ROLE_NEW) {
        if (upload_executable(fd, size, exe_name()) != 0)
            status = -1;
        else
            status = read_hello_reply(c, msg, msg_len, gpu_count);
    }
    /* libraries only this client has; their own needs come in further rounds (bounded by the appliance) */
    for (int round = 0; status == VMC_NEED_LIBRARIES && role == VMC_ROLE_NEW && round < 16; round++)
        status = ship_libraries(c, msg, msg_len, gpu_count);
    if (status == VMC_READY && cfg->tls_ca[0] && switch_to_worker_link(c, why, why_len) != 0) {
        close_thread_conn(c);
        return NULL;
    }
    if (status == VMC_READY && check_manifest(c, why, why_len) == 0) {
        /* From here on a read may legitimately wait as long as the GPU works (cudaDeviceSynchronize). */
        struct timeval forever = {0, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
        return c;
    }
    if (status == VMC_REFUSED)
        snprintf(why, why_len, "appliance refused: %s", msg);
    else if (status != VMC_READY)
        snprintf(why, why_len, "%s", msg[0] ? msg : "handshake failed");
    close_thread_conn(c);
    return NULL;
}

/* In a pool: asks its appliances where this process's session goes (PROTOCOL.md "Placement in a pool"),
 * starting at a random one so that the question's work spreads, and the next when one cannot answer.
 * Returns 0 with the chosen appliance made the one to use and placement_ticket set, or -1 with why. */
static int place_in_pool(char *why, size_t why_len) {
    const struct vmc_client_config *cfg = vmc_client_config();
    static char entries[VMC_POOL_MAX_ENTRIES][VMC_POOL_ENDPOINT_MAX];
    int n = vmc_pool_entries(cfg->cluster, cfg->cluster_prefix, entries, VMC_POOL_MAX_ENTRIES, why, why_len);
    if (n < 0)
        return -1;
    if (n == 0) {
        snprintf(why, why_len, "no live appliance is registered in etcd %s under %s", cfg->cluster, cfg->cluster_prefix);
        return -1;
    }
    char question[1024];
    int q = snprintf(question, sizeof question, "program=%s;host=%s", exe_name(), cfg->host_id);
    if (cfg->gpu_model[0] && q > 0 && (size_t)q < sizeof question)
        q += snprintf(question + q, sizeof question - (size_t)q, ";gpu_model=%s", cfg->gpu_model);
    if (cfg->gpu_memory && q > 0 && (size_t)q < sizeof question)
        snprintf(question + q, sizeof question - (size_t)q, ";gpu_memory=%llu", (unsigned long long)cfg->gpu_memory);
    unsigned start = (unsigned)getpid() % (unsigned)n;
    for (int i = 0; i < n; i++) {
        const char *entry = entries[(start + (unsigned)i) % (unsigned)n];
        char msg[1024] = "";
        int fd = appliance_connect(entry, msg, sizeof msg);
        int status = -1;
        if (fd >= 0) {
            struct vmc_conn *c = new_conn(fd);
            if (!c) {
                vmc_io_close(fd);
                snprintf(why, why_len, "out of memory");
                return -1;
            }
            struct timeval challenge_deadline = {CHALLENGE_SECONDS, 0}, deadline = {cfg->handshake_timeout_s, 0};
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &challenge_deadline, sizeof challenge_deadline);
            uint8_t nonce[VMC_CHALLENGE_BYTES];
            static const uint8_t no_binary[VMC_SHA256_BYTES];
            uint32_t gpus = 0;
            if (read_challenge(c, nonce, msg, sizeof msg) == 0) {
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
                put_hello(&c->out, VMC_ROLE_PLACE, 0, no_binary, cfg, nonce, question);
                status = vmc_write_full(fd, c->out.data, c->out.len) == 0 ? read_hello_reply(c, msg, sizeof msg, &gpus) : -1;
            }
            close_thread_conn(c);
        }
        if (status == VMC_PLACED && msg[0]) {
            vmc_client_config_use_appliance(msg);
            return 0;
        }
        /* the last appliance's answer is the one reported; a refusal ("no free slot") is the pool's, not its own */
        snprintf(why, why_len, "%s: %s", entry, msg[0] ? msg : "no placement answer");
    }
    return -1;
}

int vmc_appliance_view(char *out, size_t out_len) {
    const struct vmc_client_config *cfg = vmc_client_config();
    if (!cfg->appliance[0] && cfg->cluster[0] && place_in_pool(out, out_len) != 0)
        return -1; /* in a pool: the view of the appliance this client would be placed on */
    if (!vmc_client_config()->appliance[0]) {
        snprintf(out, out_len, "no appliance configured: set VMCUDA_APPLIANCE=HOST:PORT or 'appliance' in %s",
                 cfg->config_path);
        return -1;
    }
    char why[512];
    int fd = appliance_connect(cfg->appliance, why, sizeof why);
    if (fd < 0) {
        snprintf(out, out_len, "cannot reach appliance %s: %s", cfg->appliance, why);
        return -1;
    }
    struct vmc_conn *c = new_conn(fd);
    if (!c) {
        vmc_io_close(fd);
        snprintf(out, out_len, "out of memory");
        return -1;
    }
    struct timeval deadline = {CHALLENGE_SECONDS, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, sizeof deadline);
    uint8_t nonce[VMC_CHALLENGE_BYTES];
    static const uint8_t no_binary[VMC_SHA256_BYTES];
    uint32_t gpus = 0;
    int status = -1;
    if (read_challenge(c, nonce, out, out_len) == 0) {
        put_hello(&c->out, VMC_ROLE_INFO, 0, no_binary, cfg, nonce, exe_name());
        status = vmc_write_full(fd, c->out.data, c->out.len) == 0 ? read_hello_reply(c, out, out_len, &gpus) : -1;
    }
    close_thread_conn(c);
    if (status == VMC_REFUSED) {
        snprintf(why, sizeof why, "%s", out);
        snprintf(out, out_len, "appliance %s refused: %s", cfg->appliance, why);
    }
    return status == VMC_INFO ? 0 : -1;
}

int vmc_session_ships_binary(void) { return vmc_kernel_count() > 0 || vmc_var_count() > 0; }

/* GPUs bound to the session (HELLO_REPLY's gpu_count). */
static uint32_t session_gpus;

static void bind_to_thread(struct vmc_conn *c) {
    pthread_once(&conn_key_once, make_conn_key);
    thread_conn = c;
    pthread_setspecific(conn_key, c);
}

int vmc_thread_has_conn(void) { return thread_conn && !thread_conn->broken; }

int vmc_thread_piped(void) { return vmc_thread_has_conn() && thread_conn->pipe_state == 1; }

struct vmc_conn *vmc_thread_conn(cudaError_t *err) {
    if (thread_conn && !thread_conn->broken)
        return thread_conn;
    if (thread_conn || thread_failed) {
        *err = failure_error;
        return NULL;
    }
    const struct vmc_client_config *cfg = vmc_client_config();
    char why[1024] = "", msg[16384] = ""; /* msg: also the names of NEED_LIBRARIES */
    uint32_t gpu_count = 0;
    pthread_mutex_lock(&session_lock);
    if (state == SESSION_NONE) {
        if (!cfg->appliance[0] && cfg->config_unreadable == EACCES) {
            /* the packaged client.conf holds the tenant token: root and group vmcuda only (0640) */
            say("cannot read %s: %s; it holds the appliance's token for members of group vmcuda: "
                "sudo usermod -aG vmcuda %s, then log in again",
                cfg->config_path, strerror(EACCES), getenv("USER") ? getenv("USER") : "$USER");
            state = SESSION_FAILED;
        } else if (!cfg->appliance[0] && !cfg->cluster[0]) {
            say("no appliance configured: set VMCUDA_APPLIANCE=HOST:PORT (or VMCUDA_CLUSTER=http://ETCD:2379 for a pool "
                "of appliances), or 'appliance' in %s", cfg->config_path);
            state = SESSION_FAILED;
        } else {
            struct vmc_conn *c = NULL;
            int unplaced = 0;
            /* In a pool, an appliance that cannot take the session after all (it died since its last
             * registration, or its queue filled) sends the question back to the pool, a few times. */
            for (int attempt = 0; attempt < (cfg->cluster[0] ? POOL_ATTEMPTS : 1) && !c; attempt++) {
                if (cfg->cluster[0] && (unplaced = place_in_pool(why, sizeof why)) != 0)
                    break;
                c = handshake(VMC_ROLE_NEW, why, sizeof why, &gpu_count, msg, sizeof msg);
            }
            if (c) {
                __atomic_store_n(&session_gpus, gpu_count, __ATOMIC_RELEASE);
                primary = c;
                state = SESSION_UP;
                /* The daemon's message already says "appliance has no usable GPU: <why>". */
                if (gpu_count == 0)
                    say("%s: %s", cfg->appliance, msg[0] ? msg : "appliance has no usable GPU");
                if (getenv("VMCUDA_VERBOSE") && strcmp(getenv("VMCUDA_VERBOSE"), "0") != 0)
                    say("session %llu on %s, %u GPU(s): %s", (unsigned long long)session_id, cfg->appliance, gpu_count,
                        vmc_session_ships_binary()
                            ? "runtime front end (libcudart.so.13): this executable runs on the appliance"
                            : "driver front end (libcuda.so.1): modules go to the appliance by content");
                pthread_mutex_unlock(&session_lock);
                bind_to_thread(c);
                vmc_exit_report_arm();
                return c;
            }
            if (unplaced)
                say("no place in the pool of appliances (etcd %s): %s", cfg->cluster, why);
            else
                say("cannot use appliance %s: %s", cfg->appliance, why);
            state = SESSION_FAILED;
        }
    }
    enum session_state s = state;
    pthread_mutex_unlock(&session_lock);
    if (s == SESSION_UP) {
        struct vmc_conn *c = handshake(VMC_ROLE_JOIN, why, sizeof why, &gpu_count, msg, sizeof msg);
        if (c) {
            bind_to_thread(c);
            return c;
        }
        say("cannot join the appliance session from a new thread: %s", why);
    }
    thread_failed = 1;
    *err = failure_error;
    return NULL;
}

cudaError_t vmc_session_lost(struct vmc_conn *c, const char *why) {
    if (!c->broken) {
        c->broken = 1;
        say("lost the appliance session (%s); CUDA calls now fail with cudaErrorDevicesUnavailable", why);
        /* this connection is over: its worker thread must see that, not wait in the middle of a copy (a ring's
         * token) for a client that will not send on it again (the descriptor stays open until the thread ends;
         * the program's other threads keep their own connections) */
        shutdown(c->fd, SHUT_RDWR);
    }
    failure_error = cudaErrorDevicesUnavailable;
    return cudaErrorDevicesUnavailable;
}

uint32_t vmc_session_gpu_count(void) { return __atomic_load_n(&session_gpus, __ATOMIC_ACQUIRE); }

size_t vmc_block_size(void) { return vmc_client_config()->block_size; }

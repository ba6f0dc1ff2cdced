/* One TCP connection per application thread, or one connection per process shared by all of them
 * (multiplexed)? Which is faster for vmcuda's traffic, measured without a GPU.
 *
 *   conn_mux loopback [--threads T,T,...] [--calls N] [--bulk SIZE] [--transfers K] [--reps R]
 *       server and client in one process over 127.0.0.1 (an ephemeral port).
 *   conn_mux server HOST PORT
 *       the worker's side alone: serves every connection on its own thread (until killed).
 *   conn_mux client HOST PORT [options as for loopback]
 *       the shim's side alone, against a `conn_mux server` elsewhere.
 * Defaults: threads 1,2,4,8,16; calls 20000 per thread up to 4 threads, then 80000/T per thread (every
 * point does at most 80000 calls, so the default run stays near a minute on 2 cores; an explicit
 * --calls is used as given); bulk 64M (K/M/G suffixes: KiB/MiB/GiB), 2 transfers per thread; best of 3.
 *
 * The two designs, for T application threads:
 *   per-thread (vmcuda today): each thread has its own connection; the server serves each connection
 *     on its own thread (as the worker does). A call is: write the CALL, read the REPLY.
 *   mux: the T threads share ONE connection. A thread writes its CALL under a send mutex (one send of
 *     the whole frame; for a bulk transfer the raw bytes too, since they cannot interleave with other
 *     frames), then sleeps on its own condition variable; one reader thread reads every REPLY and hands
 *     it to the thread its id names. The server is ONE thread serving that connection, calls in order
 *     (what a worker thread serving one connection does).
 * vmcuda's header id is the CUDA API id; a multiplexed protocol needs a per-call tag to route REPLYs.
 * Here the id field carries that tag (slot in the low 16 bits, a sequence number above) and the API is
 * the CALL's first argument, so both designs put the same bytes on the wire.
 *
 * The wire, as vmcuda (protocol/PROTOCOL.md): 16-byte header (u32 magic "VMC1", u16 type, u16 flags,
 * u32 id, u32 len; little-endian), CALL payload 29 bytes (u32 symbol, u64 address, u64 count, u64 stream,
 * u8 mode), REPLY payload 8 bytes (i32 status, i32 async_error: 24 bytes with the header). Both ends
 * TCP_NODELAY with 8 MiB SO_SNDBUF/SO_RCVBUF; both read through a buffer as vmc_reader_read does (the
 * worker's 256 KiB, the shim's 64 KiB; reads of half the buffer or more go straight to the destination).
 *   small call: CALL -> REPLY.
 *   bulk (host -> device): CALL with count = SIZE, then SIZE raw bytes written in one go from the
 *     application's buffer; the server reads them in 4 MiB pieces alternately into two staging buffers
 *     (the worker's default block) and answers the REPLY after the last byte.
 * Timing: all T threads start together (a barrier), the clock runs until the last one is done.
 *   small: aggregate calls/s = T*N / wall time; mean latency = the mean over threads of (own time / N).
 *   bulk: aggregate GB/s (1e9 bytes/s) = T*K*SIZE / wall time.
 * Each point is the best (shortest wall time) of R repetitions; the designs alternate within a
 * repetition so that drift on a shared machine hits both alike.
 * Output: "metric<TAB>value<TAB>unit" lines {perthread,mux}_T<tt>_small_calls_per_s (calls/s),
 * ..._small_call_us (us), ..._bulk (GB/s), then a "#" summary table with the per-thread/mux ratios. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "bench_wire.h"

#define SYM_SMALL 1 /* a small synchronous call: nothing but the REPLY */
#define SYM_H2D 2   /* a host -> device copy: `count` raw bytes follow the CALL */
#define REPLY_BYTES 24
#define BLOCK (4u << 20)           /* the worker's default block (VMCUDA_BLOCK_SIZE) */
#define SERVER_IN (256u << 10)     /* the worker's read buffer (worker_serve.c IN_BUFFER_BYTES) */
#define CLIENT_IN (64u << 10)      /* the shim's read buffer (shim_session.c IN_BUFFER_BYTES) */
#define REPLY_TIMEOUT_S 60         /* a client read that waits longer than this is an error, not a hang */
#define MAX_THREADS 1024
#define MAX_POINTS 32

/* errno 0 means the peer closed the connection (reads set it so), EAGAIN that SO_RCVTIMEO ran out */
static void die(const char *what) {
    if (errno == 0) fprintf(stderr, "conn_mux: %s: connection closed by the peer\n", what);
    else if (errno == EAGAIN || errno == EWOULDBLOCK)
        fprintf(stderr, "conn_mux: %s: timed out (no data for %d s)\n", what, REPLY_TIMEOUT_S);
    else fprintf(stderr, "conn_mux: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fail(const char *msg) {
    fprintf(stderr, "conn_mux: %s\n", msg);
    exit(1);
}

static int send_full(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t r = send(fd, c, n, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int recv_full(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0;
        if (r <= 0) return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* A buffered reader like vmc_reader_read: small frames come out of one recv() that may hold several
 * of them (which matters for the multiplexed design: one recv can carry many threads' frames). */
struct reader {
    int fd;
    uint8_t *buf;
    size_t cap, pos, len;
};

static void reader_init(struct reader *r, int fd, size_t cap) {
    r->fd = fd, r->cap = cap, r->pos = r->len = 0;
    if (!(r->buf = malloc(cap))) fail("out of memory (read buffer)");
}

static int reader_read(struct reader *r, void *dst, size_t n) {
    uint8_t *out = dst;
    size_t take = r->len - r->pos < n ? r->len - r->pos : n;
    memcpy(out, r->buf + r->pos, take);
    r->pos += take, out += take, n -= take;
    if (n == 0) return 0;
    if (n >= r->cap / 2) return recv_full(r->fd, out, n); /* bulk: no extra copy */
    r->pos = r->len = 0;
    while (r->len < n) {
        ssize_t got = recv(r->fd, r->buf + r->len, r->cap - r->len, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) errno = 0;
        if (got <= 0) return -1;
        r->len += (size_t)got;
    }
    memcpy(out, r->buf, n);
    r->pos = n;
    return 0;
}

/* ---- the worker's side: one thread per connection, calls in order ---- */

static atomic_int live_connections; /* loopback waits for the server threads of a point to end */

static int send_reply(int fd, uint32_t id) {
    uint8_t r[REPLY_BYTES] = {0};
    header(r, T_REPLY, id, 8);
    return send_full(fd, r, sizeof r);
}

/* Reads `count` bytes in block-size pieces alternately into the two staging buffers (no GPU here) */
static int drain(struct reader *in, char **staging, uint64_t count) {
    for (int k = 0; count; k++) {
        size_t n = count < BLOCK ? (size_t)count : BLOCK;
        if (reader_read(in, staging[k & 1], n)) return -1;
        count -= n;
    }
    return 0;
}

static void serve(int fd) {
    struct reader in;
    reader_init(&in, fd, SERVER_IN);
    char *staging[2] = {NULL, NULL}; /* allocated on the first bulk call, so small-call points stay small */
    uint8_t h[16], payload[CALL_ARGS];
    while (reader_read(&in, h, 16) == 0) {
        uint32_t id = get32(h + 8), len = get32(h + 12);
        if (get32(h) != MAGIC || (h[4] | h[5] << 8) != T_CALL || len != CALL_ARGS) {
            fprintf(stderr, "conn_mux: server: unexpected frame (type %u, len %u)\n", h[4] | h[5] << 8, len);
            break;
        }
        if (reader_read(&in, payload, len)) break;
        uint32_t sym = get32(payload);
        if (sym == SYM_H2D) {
            for (int i = 0; i < 2 && !staging[i]; i++) {
                if (!(staging[i] = malloc(BLOCK))) fail("out of memory (staging buffer)");
                memset(staging[i], 7, BLOCK); /* the worker's staging buffers are pinned: resident */
            }
            if (drain(&in, staging, get64(payload + 12))) break;
        } else if (sym != SYM_SMALL) {
            fprintf(stderr, "conn_mux: server: unknown call symbol %u\n", sym);
            break;
        }
        if (send_reply(fd, id)) break;
    }
    free(staging[0]);
    free(staging[1]);
    free(in.buf);
    close(fd);
}

static void *serve_thread(void *arg) {
    serve((int)(intptr_t)arg);
    atomic_fetch_sub(&live_connections, 1);
    return NULL;
}

static void *accept_loop(void *arg) {
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            die("accept");
        }
        tune(fd);
        atomic_fetch_add(&live_connections, 1);
        pthread_t t;
        if (pthread_create(&t, NULL, serve_thread, (void *)(intptr_t)fd)) fail("cannot start a server thread");
        pthread_detach(t);
    }
    return NULL;
}

static int listen_on(const char *host, const char *port, char *bound_port, size_t len) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    if (getaddrinfo(host, port, &hints, &res)) { fprintf(stderr, "conn_mux: cannot resolve %s\n", host); exit(1); }
    int ls = socket(res->ai_family, SOCK_STREAM, 0), one = 1;
    if (ls < 0) die("socket");
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* a full backlog drops SYNs and costs a 1 s retransmission: let all T connections queue */
    if (bind(ls, res->ai_addr, res->ai_addrlen) || listen(ls, SOMAXCONN)) die("listen");
    freeaddrinfo(res);
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &alen);
    snprintf(bound_port, len, "%u",
             ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port : ((struct sockaddr_in *)&a)->sin_port));
    return ls;
}

/* ---- the shim's side ---- */

/* One call's CALL frame, written with one send (45 bytes), then its raw bytes if any */
static int send_call(int fd, uint32_t id, uint32_t sym, const char *data, uint64_t count) {
    uint8_t f[16 + CALL_ARGS] = {0};
    header(f, T_CALL, id, CALL_ARGS);
    put32(f + 16, sym);
    put64(f + 16 + 12, count); /* symbol (u32), address (u64), count (u64), stream (u64), mode (u8) */
    return send_full(fd, f, sizeof f) || (count && send_full(fd, data, count)) ? -1 : 0;
}

static int check_reply(const uint8_t *r, uint32_t id) {
    return get32(r) != MAGIC || (r[4] | r[5] << 8) != T_REPLY || get32(r + 12) != 8 || get32(r + 8) != id ||
                   get32(r + 16) != 0
               ? -1
               : 0;
}

/* The multiplexed connection: a send mutex, one slot per application thread, one reader thread */
struct slot {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    int done;
    uint32_t got; /* the id of the REPLY handed over; the waiting thread checks it is its own */
};

struct mux {
    int fd;
    pthread_mutex_t send_lock;
    struct slot *slots;
    int nslots;
    atomic_int closing; /* set before the client shuts the connection down: EOF is then expected */
    pthread_t reader;
};

static void *mux_reader(void *arg) {
    struct mux *m = arg;
    struct reader in;
    reader_init(&in, m->fd, CLIENT_IN);
    uint8_t r[REPLY_BYTES];
    for (;;) {
        if (reader_read(&in, r, sizeof r)) {
            if (atomic_load(&m->closing) && errno == 0) break;
            die("multiplexed reader");
        }
        uint32_t id = get32(r + 8);
        if ((id & 0xFFFF) >= (uint32_t)m->nslots || check_reply(r, id))
            fail("multiplexed reader: a REPLY for no waiting thread or with a bad status");
        struct slot *s = &m->slots[id & 0xFFFF];
        pthread_mutex_lock(&s->lock);
        s->got = id, s->done = 1;
        pthread_mutex_unlock(&s->lock);
        pthread_cond_signal(&s->ready); /* after the unlock: the woken thread need not block on the mutex */
    }
    free(in.buf);
    return NULL;
}

static int mux_call(struct mux *m, int slot, uint32_t seq, uint32_t sym, const char *data, uint64_t count) {
    struct slot *s = &m->slots[slot];
    uint32_t id = seq << 16 | (uint32_t)slot;
    pthread_mutex_lock(&m->send_lock);
    int rc = send_call(m->fd, id, sym, data, count); /* CALL and its bytes together: frames cannot interleave */
    pthread_mutex_unlock(&m->send_lock);
    if (rc) return -1;
    pthread_mutex_lock(&s->lock);
    while (!s->done) pthread_cond_wait(&s->ready, &s->lock);
    s->done = 0;
    uint32_t got = s->got;
    pthread_mutex_unlock(&s->lock);
    if (got != id) fail("multiplexed call: the REPLY handed over is another call's");
    return 0;
}

static struct mux *mux_open(int fd, int nslots) {
    struct mux *m = calloc(1, sizeof *m);
    if (!m || !(m->slots = calloc((size_t)nslots, sizeof *m->slots))) fail("out of memory");
    m->fd = fd, m->nslots = nslots;
    pthread_mutex_init(&m->send_lock, NULL);
    for (int i = 0; i < nslots; i++) {
        pthread_mutex_init(&m->slots[i].lock, NULL);
        pthread_cond_init(&m->slots[i].ready, NULL);
    }
    if (pthread_create(&m->reader, NULL, mux_reader, m)) fail("cannot start the reader thread");
    return m;
}

/* Half-close: the server reads EOF and closes its end, which ends the reader's recv with EOF */
static void mux_close(struct mux *m) {
    atomic_store(&m->closing, 1);
    shutdown(m->fd, SHUT_WR);
    pthread_join(m->reader, NULL);
    close(m->fd);
    for (int i = 0; i < m->nslots; i++) {
        pthread_mutex_destroy(&m->slots[i].lock);
        pthread_cond_destroy(&m->slots[i].ready);
    }
    pthread_mutex_destroy(&m->send_lock);
    free(m->slots);
    free(m);
}

/* One measurement: T threads, one design, small calls or bulk transfers */
struct run {
    int mux, bulk;
    long n;            /* calls (small) or transfers (bulk) per thread */
    uint64_t size;     /* bytes per transfer (bulk) */
    const char *data;  /* the application buffer the transfers send from (read-only, shared) */
    struct mux *m;
    pthread_barrier_t start;
};

struct worker {
    struct run *run;
    int index, fd;
    double elapsed;
    pthread_t tid;
};

/* The per-thread design's call: own connection, so no lock and the REPLY is read by the caller */
static int direct_call(int fd, struct reader *in, uint32_t id, uint32_t sym, const char *data, uint64_t count) {
    uint8_t r[REPLY_BYTES];
    if (send_call(fd, id, sym, data, count) || reader_read(in, r, sizeof r)) return -1;
    if (check_reply(r, id)) fail("a REPLY with an unexpected id or a bad status");
    return 0;
}

static void *client_thread(void *arg) {
    struct worker *w = arg;
    struct run *run = w->run;
    struct reader in = {0};
    if (!run->mux) reader_init(&in, w->fd, CLIENT_IN);
    uint32_t sym = run->bulk ? SYM_H2D : SYM_SMALL;
    uint64_t count = run->bulk ? run->size : 0;
    pthread_barrier_wait(&run->start);
    double t0 = now();
    for (long i = 0; i < run->n; i++) {
        int rc = run->mux ? mux_call(run->m, w->index, (uint32_t)i, sym, run->data, count)
                          : direct_call(w->fd, &in, (uint32_t)i, sym, run->data, count);
        if (rc) die(run->bulk ? "host-to-device transfer" : "small call");
    }
    w->elapsed = now() - t0;
    free(in.buf);
    return NULL;
}

struct sample {
    double wall, mean_thread; /* seconds */
};

static struct sample measure(const char *host, const char *port, int loop, int threads, int mux, int bulk, long n,
                             uint64_t size, const char *data) {
    struct run run = {.mux = mux, .bulk = bulk, .n = n, .size = size, .data = data};
    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w) fail("out of memory");
    int shared = mux ? connect_to("conn_mux", host, port, REPLY_TIMEOUT_S) : -1;
    if (mux) run.m = mux_open(shared, threads);
    pthread_barrier_init(&run.start, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++) {
        w[i].run = &run, w[i].index = i;
        w[i].fd = mux ? shared : connect_to("conn_mux", host, port, REPLY_TIMEOUT_S);
        if (pthread_create(&w[i].tid, NULL, client_thread, &w[i])) fail("cannot start a client thread");
    }
    pthread_barrier_wait(&run.start);
    double t0 = now();
    for (int i = 0; i < threads; i++) pthread_join(w[i].tid, NULL);
    struct sample s = {.wall = now() - t0};
    for (int i = 0; i < threads; i++) s.mean_thread += w[i].elapsed / threads;
    if (mux) mux_close(run.m);
    else
        for (int i = 0; i < threads; i++) close(w[i].fd);
    pthread_barrier_destroy(&run.start);
    free(w);
    /* in one process the next point must not share the CPUs with this one's closing server threads */
    if (loop)
        for (int waited = 0; atomic_load(&live_connections) > 0; waited++) {
            if (waited > 10000) fail("server threads did not end after their connections closed");
            usleep(1000);
        }
    return s;
}

/* ---- command line, the sweep, the report ---- */

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) {
        size_t v = parse_size("conn_mux", t);
        if (v > MAX_THREADS) { fprintf(stderr, "conn_mux: at most %d threads\n", MAX_THREADS); exit(2); }
        out[n++] = (int)v;
    }
    free(copy);
    return n;
}

struct point {
    int threads;
    long calls;
    double calls_per_s[2], call_us[2], gbps[2]; /* [0] per-thread, [1] mux */
};

static void usage(void) {
    fprintf(stderr, "usage: conn_mux loopback [--threads T,..] [--calls N] [--bulk SIZE] [--transfers K] [--reps R]\n"
                    "       conn_mux server HOST PORT\n"
                    "       conn_mux client HOST PORT [same options as loopback]\n");
    exit(2);
}

static void report(const char *design, int t, const char *metric, double v, const char *unit) {
    printf("%s_T%02d_%s\t%.*f\t%s\n", design, t, metric, !strcmp(unit, "GB/s") ? 3 : !strcmp(unit, "us") ? 2 : 0, v, unit);
    fflush(stdout);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) usage();
    if (strcmp(argv[1], "server") == 0) {
        if (argc != 4) usage();
        char bound[16];
        int ls = listen_on(argv[2], argv[3], bound, sizeof bound);
        fprintf(stderr, "conn_mux: serving on %s:%s\n", argv[2], bound);
        accept_loop((void *)(intptr_t)ls);
        return 0;
    }
    int loop = strcmp(argv[1], "loopback") == 0, i = 2;
    if (!loop && (strcmp(argv[1], "client") || argc < 4)) usage();
    const char *host = loop ? "127.0.0.1" : argv[2];
    char port[16];
    snprintf(port, sizeof port, "%s", loop ? "0" : argv[3]);
    if (!loop) i = 4;
    int threads[MAX_POINTS], nt = parse_list("1,2,4,8,16", threads, MAX_POINTS), reps = 3;
    long calls = 0, transfers = 2; /* calls 0: the scaled default */
    uint64_t size = 64u << 20;
    for (; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--threads")) nt = parse_list(argv[++i], threads, MAX_POINTS);
        else if (!strcmp(argv[i], "--calls")) calls = (long)parse_size("conn_mux", argv[++i]);
        else if (!strcmp(argv[i], "--bulk")) size = parse_size("conn_mux", argv[++i]);
        else if (!strcmp(argv[i], "--transfers")) transfers = (long)parse_size("conn_mux", argv[++i]);
        else if (!strcmp(argv[i], "--reps")) reps = (int)parse_size("conn_mux", argv[++i]);
        else usage();
    }
    if (nt < 1) usage();
    for (int k = 0; k < nt; k++)
        if (threads[k] < 1) usage();
    if (loop) {
        int ls = listen_on(host, "0", port, sizeof port);
        pthread_t acceptor;
        if (pthread_create(&acceptor, NULL, accept_loop, (void *)(intptr_t)ls)) fail("cannot start the acceptor");
        pthread_detach(acceptor); /* blocked in accept() until the process exits */
    }
    char *data = malloc(size);
    if (!data) fail("out of memory (bulk buffer)");
    memset(data, 1, size); /* resident, like an application's filled buffer */
    printf("# conn_mux %s %s:%s, %ld online CPUs; bulk %llu MiB x %ld per thread; best of %d\n", loop ? "loopback" : "client",
           host, port, sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)(size >> 20), transfers, reps);
    fflush(stdout);
    static const char *names[2] = {"perthread", "mux"};
    struct point pts[MAX_POINTS];
    for (int k = 0; k < nt; k++) {
        struct point *p = &pts[k];
        int t = threads[k];
        p->threads = t;
        p->calls = calls ? calls : t <= 4 ? 20000 : 80000 / t;
        struct sample best_small[2] = {{1e30, 0}, {1e30, 0}}, best_bulk[2] = {{1e30, 0}, {1e30, 0}};
        for (int r = 0; r < reps; r++)
            for (int d = 0; d < 2; d++) {
                struct sample s = measure(host, port, loop, t, d, 0, p->calls, 0, data);
                if (s.wall < best_small[d].wall) best_small[d] = s;
                s = measure(host, port, loop, t, d, 1, transfers, size, data);
                if (s.wall < best_bulk[d].wall) best_bulk[d] = s;
            }
        for (int d = 0; d < 2; d++) {
            p->calls_per_s[d] = (double)t * p->calls / best_small[d].wall;
            p->call_us[d] = best_small[d].mean_thread / p->calls * 1e6;
            p->gbps[d] = (double)t * transfers * size / best_bulk[d].wall / 1e9;
            report(names[d], t, "small_calls_per_s", p->calls_per_s[d], "calls/s");
            report(names[d], t, "small_call_us", p->call_us[d], "us");
            report(names[d], t, "bulk", p->gbps[d], "GB/s");
        }
    }
    printf("# threads calls/thread | small calls/s: per-thread mux ratio | call us: per-thread mux | bulk GB/s: per-thread mux ratio\n");
    for (int k = 0; k < nt; k++) {
        struct point *p = &pts[k];
        printf("# %7d %12ld | %10.0f %10.0f %5.2f | %8.2f %8.2f | %7.3f %7.3f %5.2f\n", p->threads, p->calls,
               p->calls_per_s[0], p->calls_per_s[1], p->calls_per_s[0] / p->calls_per_s[1], p->call_us[0], p->call_us[1],
               p->gbps[0], p->gbps[1], p->gbps[0] / p->gbps[1]);
    }
    free(data);
    return 0;
}

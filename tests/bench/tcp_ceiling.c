/* The loopback TCP ceiling of this host, measured the way vmcuda's socket path moves data: one
 * connection, TCP_NODELAY, 8 MiB socket buffers, 4 MiB writes; and the round trip of a 64-byte
 * message. Prints "metric<TAB>value<TAB>unit" lines like vmcuda_bench.
 *
 *   tcp_ceiling [--sockbuf BYTES|auto] [--streams K] [--shapes]
 *     --sockbuf  SO_SNDBUF/SO_RCVBUF on both ends (default 8388608, what vmcuda sets); "auto" leaves
 *                them to the kernel's autotuning
 *     --streams  K connections at once, each with its own sending and receiving thread, each moving
 *                1/K of the bytes (and of the big buffer) - the ceiling for a copy that vmcuda stripes
 *                over K connections (client setting tcp_streams); metric names get a _K<k> suffix
 *     --shapes   also the two stream shapes of a real 1 GiB copy (below)
 *
 * loopback_tcp_stream: 4 GiB written from one 4 MiB buffer and read into one 4 MiB buffer. Both stay
 * in the CPU caches, so this is the best any TCP transfer on this host can do.
 * With --shapes, the same 4 GiB moved the way vmcuda's copies touch memory:
 *   loopback_tcp_stream_h2d_shape: written from a 1 GiB buffer walked front to back (the
 *     application's buffer), read alternately into two 4 MiB buffers (the worker's staging buffers);
 *   loopback_tcp_stream_d2h_shape: the mirror image, written from two 4 MiB buffers into a 1 GiB one.
 * The 1 GiB buffer comes from memory, not the caches: the gap between these and the hot stream is
 * what the memory system costs TCP, which no transport on top of it can win back. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (4u << 20)
#define TOTAL (4ull << 30)
#define BIG (1ull << 30)
#define ROUND_TRIPS 20000

#define MAX_STREAMS 8

static int sockbuf = 8 << 20; /* 0: kernel autotuning */
static int streams = 1;       /* connections at once */

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (sockbuf) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
    }
}

static int full(int fd, void *p, size_t n, int wr) {
    char *c = p;
    while (n) {
        ssize_t r = wr ? write(fd, c, n) : read(fd, c, n);
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* A buffer of `size` bytes, every page touched, so that no page fault is timed. */
static char *buffer(size_t size) {
    char *b = malloc(size);
    if (!b) {
        fprintf(stderr, "tcp_ceiling: cannot allocate %zu bytes\n", size);
        exit(1);
    }
    memset(b, 1, size);
    return b;
}

struct side {
    int fd;
    char *buf;
    size_t span; /* bytes of buf walked through, BLOCK at a time */
    int round_trips;
};

/* The receiving end: TOTAL bytes into its buffer, then echoes the round-trip messages. */
static void *sink(void *arg) {
    struct side *s = arg;
    char *buf = s->buf;
    size_t at = 0;
    for (unsigned long long got = 0; got < TOTAL / streams; got += BLOCK, at = (at + BLOCK) % s->span)
        if (full(s->fd, buf + at, BLOCK, 0))
            break;
    char msg[64];
    for (int i = 0; i < s->round_trips; i++)
        if (full(s->fd, msg, 64, 0) || full(s->fd, msg, 64, 1))
            break;
    return NULL;
}

/* One connection over 127.0.0.1; returns the sender's end and fills in the receiver's. */
static int connect_pair(int *receiver) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &len)) {
        perror("tcp_ceiling: listen");
        exit(1);
    }
    int c = socket(AF_INET, SOCK_STREAM, 0);
    tune(c);
    if (connect(c, (struct sockaddr *)&a, sizeof a)) {
        perror("tcp_ceiling: connect");
        exit(1);
    }
    *receiver = accept(ls, NULL, NULL);
    close(ls);
    tune(*receiver);
    return c;
}

/* One sender: `bytes` written BLOCK at a time from its buffer, walked front to back. */
static void *source(void *arg) {
    struct side *s = arg;
    size_t at = 0;
    for (unsigned long long sent = 0; sent < TOTAL / streams; sent += BLOCK, at = (at + BLOCK) % s->span)
        if (full(s->fd, s->buf + at, BLOCK, 1)) {
            fprintf(stderr, "tcp_ceiling: write failed\n");
            exit(1);
        }
    return NULL;
}

static size_t per_stream(size_t span) { return span / streams < BLOCK ? BLOCK : span / streams / BLOCK * BLOCK; }

/* TOTAL bytes over `streams` connections at once; each sender walks its share of `send_span` bytes,
 * each receiver its share of `recv_span` bytes. Returns GB/s. */
static double stream(size_t send_span, size_t recv_span, const char *round_trip_metric) {
    struct side rx[MAX_STREAMS], tx[MAX_STREAMS];
    pthread_t rt[MAX_STREAMS], st[MAX_STREAMS];
    for (int k = 0; k < streams; k++) {
        /* Every buffer exists, every page touched, before the clock starts. */
        rx[k] = (struct side){.buf = buffer(per_stream(recv_span)), .span = per_stream(recv_span),
                              .round_trips = round_trip_metric && k == 0 ? ROUND_TRIPS : 0};
        tx[k] = (struct side){.fd = connect_pair(&rx[k].fd), .buf = buffer(per_stream(send_span)),
                              .span = per_stream(send_span)};
    }
    for (int k = 0; k < streams; k++)
        pthread_create(&rt[k], NULL, sink, &rx[k]);
    double t0 = now();
    for (int k = 0; k < streams; k++)
        pthread_create(&st[k], NULL, source, &tx[k]);
    for (int k = 0; k < streams; k++)
        pthread_join(st[k], NULL);
    double gbs = (double)(TOTAL / streams * streams) / (now() - t0) / 1e9;
    if (round_trip_metric) {
        char msg[64] = {0};
        t0 = now();
        for (int i = 0; i < ROUND_TRIPS; i++)
            if (full(tx[0].fd, msg, 64, 1) || full(tx[0].fd, msg, 64, 0))
                break;
        printf("%s\t%.3f\tus\n", round_trip_metric, (now() - t0) / ROUND_TRIPS * 1e6);
    }
    for (int k = 0; k < streams; k++) {
        pthread_join(rt[k], NULL);
        close(tx[k].fd);
        close(rx[k].fd);
        free(tx[k].buf);
        free(rx[k].buf);
    }
    return gbs;
}

int main(int argc, char **argv) {
    int shapes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--shapes") == 0)
            shapes = 1;
        else if (strcmp(argv[i], "--sockbuf") == 0 && i + 1 < argc) {
            i++;
            sockbuf = strcmp(argv[i], "auto") == 0 ? 0 : atoi(argv[i]);
        } else if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc) {
            streams = atoi(argv[++i]);
            if (streams < 1 || streams > MAX_STREAMS) {
                fprintf(stderr, "tcp_ceiling: --streams must be 1..%d\n", MAX_STREAMS);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: tcp_ceiling [--sockbuf BYTES|auto] [--streams K] [--shapes]\n");
            return 2;
        }
    }
    /* The hot stream prints its round trip first, then its bandwidth (the round trip reuses its connection). */
    char suffix[16] = "";
    if (streams > 1)
        snprintf(suffix, sizeof suffix, "_K%d", streams);
    double hot = stream(BLOCK, BLOCK, streams == 1 ? "loopback_tcp_64B_round_trip" : NULL);
    printf("loopback_tcp_stream%s\t%.3f\tGB/s\n", suffix, hot);
    if (shapes) {
        printf("loopback_tcp_stream_h2d_shape%s\t%.3f\tGB/s\n", suffix, stream(BIG, 2 * BLOCK * streams, NULL));
        printf("loopback_tcp_stream_d2h_shape%s\t%.3f\tGB/s\n", suffix, stream(2 * BLOCK * streams, BIG, NULL));
    }
    return 0;
}

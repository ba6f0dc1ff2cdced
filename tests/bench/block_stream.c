/* The bulk-data stream of vmcuda's socket path without a GPU: how fast can the transport itself
 * (loopback, a veth pair, a NIC) carry memcpy data framed and blocked the way the client shim and the
 * worker move it (protocol/PROTOCOL.md "Bulk data")? Used by tests/bench/transport-veth.sh.
 *
 *   block_stream server HOST PORT
 *       the worker's side: accepts connections one after the other (until killed) and serves them.
 *   block_stream client HOST PORT [--label L] [--blocks B,B,...] [--sizes S,S,...] [--reps N]
 *       the shim's side: for each block size, each transfer size and each direction, best of N.
 *   block_stream loopback [--label L] [--blocks ...] [--sizes ...] [--reps N]
 *       both in one process over 127.0.0.1 (an ephemeral port).
 * Sizes take K/M/G suffixes (KiB/MiB/GiB). Defaults: blocks 128K,512K,1M,4M,16M,64M,128M (the
 * study's sweep), sizes 32M,128M,624M, 3 repetitions.
 *
 * On the wire, exactly as vmcuda (16-byte frame header: u32 magic "VMC1", u16 type, u16 flags,
 * u32 id, u32 len; little-endian; both sockets TCP_NODELAY with 8 MiB SO_SNDBUF/SO_RCVBUF):
 *   host -> device: CALL (29-byte payload: u32 symbol, u64 address, u64 count, u64 stream, u8 mode),
 *     then `count` raw bytes written in one go from the application's buffer (as the shim does); the
 *     server reads them in block-size pieces alternately into two staging buffers (as the worker
 *     does; there is no GPU copy to overlap with) and answers a REPLY (i32 status, i32 async_error).
 *   device -> host: CALL; the server answers REPLY, writes `count` raw bytes in block-size pieces from
 *     its two staging buffers, then the trailing REPLY; the client reads the bytes straight into its
 *     buffer.
 *   The block size is the worker's setting (worker.block_size), not the client's: the client tells
 *     this server with a benchmark-only CALL (id 0xFFF0, payload u64 block size) before each sweep.
 *   Also measured: the round trip of a small synchronous CALL (the 29-byte payload, 24-byte REPLY).
 * Output: "metric<TAB>value<TAB>unit" lines: L_{h2d,d2h}_blk<B>_<S> GB/s (1e9 bytes/s),
 * L_call_round_trip us. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_wire.h"

#define ID_H2D 101
#define ID_D2H 102
#define ID_PING 103
#define ID_SET_BLOCK 0xFFF0u
#define MAX_BLOCKS 16
#define MAX_SIZES 16

static void die(const char *what) {
    fprintf(stderr, "block_stream: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int io_full(int fd, void *p, size_t n, int wr) {
    char *c = p;
    while (n) {
        ssize_t r = wr ? send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int send_reply(int fd, uint32_t id) {
    uint8_t r[24] = {0};
    header(r, T_REPLY, id, 8);
    return io_full(fd, r, sizeof r, 1);
}

static int read_reply(int fd, uint32_t id) {
    uint8_t r[24];
    if (io_full(fd, r, sizeof r, 0) || get32(r) != MAGIC || get32(r + 8) != id || get32(r + 16) != 0) return -1;
    return 0;
}

/* ---- the worker's side ---- */

static void serve(int fd) {
    size_t block = 4u << 20;
    char *staging[2] = {malloc(block), malloc(block)};
    uint8_t h[16], payload[64];
    for (;;) {
        if (io_full(fd, h, 16, 0)) break;
        uint32_t id = get32(h + 8), len = get32(h + 12);
        if (get32(h) != MAGIC || len > sizeof payload || io_full(fd, payload, len, 0)) break;
        if (id == ID_SET_BLOCK && len == 8) {
            block = get64(payload);
            for (int i = 0; i < 2; i++) {
                free(staging[i]);
                staging[i] = malloc(block);
                if (!staging[i]) die("staging buffer");
                memset(staging[i], 7, block); /* the worker's staging buffers are pinned: resident */
            }
            if (send_reply(fd, id)) break;
        } else if (id == ID_H2D && len == CALL_ARGS) {
            uint64_t count = get64(payload + 12), done = 0;
            for (int k = 0; done < count; k++) {
                size_t n = count - done < block ? (size_t)(count - done) : block;
                if (io_full(fd, staging[k & 1], n, 0)) goto out;
                done += n;
            }
            if (send_reply(fd, id)) break;
        } else if (id == ID_D2H && len == CALL_ARGS) {
            uint64_t count = get64(payload + 12), done = 0;
            if (send_reply(fd, id)) break;
            for (int k = 0; done < count; k++) {
                size_t n = count - done < block ? (size_t)(count - done) : block;
                if (io_full(fd, staging[k & 1], n, 1)) goto out;
                done += n;
            }
            if (send_reply(fd, id)) break; /* the trailing REPLY */
        } else if (id == ID_PING) {
            if (send_reply(fd, id)) break;
        } else {
            fprintf(stderr, "block_stream: unexpected frame id %u len %u\n", id, len);
            break;
        }
    }
out:
    free(staging[0]);
    free(staging[1]);
    close(fd);
}

static int listen_on(const char *host, const char *port, struct sockaddr_storage *bound, socklen_t *blen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    if (getaddrinfo(host, port, &hints, &res)) { fprintf(stderr, "block_stream: cannot resolve %s\n", host); exit(1); }
    int ls = socket(res->ai_family, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ls < 0 || bind(ls, res->ai_addr, res->ai_addrlen) || listen(ls, 4)) die("listen");
    freeaddrinfo(res);
    if (bound) {
        *blen = sizeof *bound;
        getsockname(ls, (struct sockaddr *)bound, blen);
    }
    return ls;
}

static void *serve_thread(void *arg) {
    int ls = (int)(intptr_t)arg;
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) die("accept");
    tune(fd);
    serve(fd);
    return NULL;
}

/* ---- the shim's side ---- */

static int parse_list(const char *s, size_t *out, int max) {
    int n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save)) out[n++] = parse_size("block_stream", t);
    free(copy);
    return n;
}

static const char *size_name(size_t b, char *buf, size_t len) {
    if (b % (1u << 20) == 0) snprintf(buf, len, "%zuMiB", b >> 20);
    else snprintf(buf, len, "%zuKiB", b >> 10);
    return buf;
}

static int call(int fd, uint32_t id, uint64_t count) {
    uint8_t f[16 + CALL_ARGS] = {0};
    header(f, T_CALL, id, CALL_ARGS);
    put64(f + 16 + 12, count); /* symbol (u32), address (u64), count (u64), stream (u64), mode (u8) */
    return io_full(fd, f, sizeof f, 1);
}

static void run_client(int fd, const char *label, size_t *blocks, int nb, size_t *sizes, int ns, int reps) {
    size_t max = 0;
    for (int i = 0; i < ns; i++) max = sizes[i] > max ? sizes[i] : max;
    char *buf = malloc(max);
    if (!buf) die("client buffer");
    memset(buf, 1, max);
    char a[32], b[32];
    for (int bi = 0; bi < nb; bi++) {
        uint8_t f[24];
        header(f, T_CALL, ID_SET_BLOCK, 8);
        put64(f + 16, blocks[bi]);
        if (io_full(fd, f, sizeof f, 1) || read_reply(fd, ID_SET_BLOCK)) die("set block size");
        for (int si = 0; si < ns; si++) {
            for (int dir = 0; dir < 2; dir++) {
                double best = 1e30;
                for (int r = 0; r < reps; r++) {
                    double t0 = now();
                    if (dir == 0) {
                        if (call(fd, ID_H2D, sizes[si]) || io_full(fd, buf, sizes[si], 1) || read_reply(fd, ID_H2D))
                            die("host-to-device stream");
                    } else {
                        if (call(fd, ID_D2H, sizes[si]) || read_reply(fd, ID_D2H) || io_full(fd, buf, sizes[si], 0) ||
                            read_reply(fd, ID_D2H))
                            die("device-to-host stream");
                    }
                    double t = now() - t0;
                    best = t < best ? t : best;
                }
                printf("%s_%s_blk%s_%s\t%.3f\tGB/s\n", label, dir ? "d2h" : "h2d", size_name(blocks[bi], a, sizeof a),
                       size_name(sizes[si], b, sizeof b), sizes[si] / best / 1e9);
                fflush(stdout);
            }
        }
    }
    const int pings = 20000;
    double t0 = now();
    for (int i = 0; i < pings; i++)
        if (call(fd, ID_PING, 0) || read_reply(fd, ID_PING)) die("round trip");
    printf("%s_call_round_trip\t%.3f\tus\n", label, (now() - t0) / pings * 1e6);
    free(buf);
}

static void usage(void) {
    fprintf(stderr, "usage: block_stream server HOST PORT\n"
                    "       block_stream client HOST PORT [--label L] [--blocks B,..] [--sizes S,..] [--reps N]\n"
                    "       block_stream loopback [--label L] [--blocks B,..] [--sizes S,..] [--reps N]\n");
    exit(2);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) usage();
    if (strcmp(argv[1], "server") == 0) {
        if (argc != 4) usage();
        int ls = listen_on(argv[2], argv[3], NULL, NULL);
        fprintf(stderr, "block_stream: serving on %s:%s\n", argv[2], argv[3]);
        for (;;) {
            int fd = accept(ls, NULL, NULL);
            if (fd < 0) {
                if (errno == EINTR) continue;
                die("accept");
            }
            tune(fd);
            serve(fd);
        }
    }
    int loop = strcmp(argv[1], "loopback") == 0, i = 2;
    if (!loop && (strcmp(argv[1], "client") || argc < 4)) usage();
    const char *host = loop ? "127.0.0.1" : argv[2], *port = loop ? "0" : argv[3];
    if (!loop) i = 4;
    const char *label = loop ? "loopback" : "stream";
    size_t blocks[MAX_BLOCKS], sizes[MAX_SIZES];
    int nb = parse_list("128K,512K,1M,4M,16M,64M,128M", blocks, MAX_BLOCKS);
    int ns = parse_list("32M,128M,624M", sizes, MAX_SIZES), reps = 3;
    for (; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--label")) label = argv[++i];
        else if (!strcmp(argv[i], "--blocks")) nb = parse_list(argv[++i], blocks, MAX_BLOCKS);
        else if (!strcmp(argv[i], "--sizes")) ns = parse_list(argv[++i], sizes, MAX_SIZES);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else usage();
    }
    if (nb < 1 || ns < 1 || reps < 1) usage();
    for (int k = 0; k < nb; k++)
        if (blocks[k] < (64u << 10) || blocks[k] > (256u << 20)) {
            fprintf(stderr, "block_stream: block sizes must be 64 KiB..256 MiB (as VMCUDA_BLOCK_SIZE)\n");
            return 2;
        }
    int fd;
    pthread_t server;
    if (loop) {
        struct sockaddr_storage a;
        socklen_t alen;
        int ls = listen_on(host, port, &a, &alen);
        char p[16];
        snprintf(p, sizeof p, "%u", ntohs(((struct sockaddr_in *)&a)->sin_port));
        pthread_create(&server, NULL, serve_thread, (void *)(intptr_t)ls);
        fd = connect_to("block_stream", host, p, 0);
    } else {
        fd = connect_to("block_stream", host, port, 0);
    }
    run_client(fd, label, blocks, nb, sizes, ns, reps);
    close(fd);
    if (loop) pthread_join(server, NULL);
    return 0;
}

/* vmcuda's wire format and socket set-up as the GPU-less transport benchmarks (block_stream.c,
 * conn_mux.c) use it: the 16-byte frame header of protocol/PROTOCOL.md (u32 magic "VMC1", u16 type,
 * u16 flags, u32 id, u32 len; little-endian) and the socket options the shim and the worker set. */
#ifndef BENCH_WIRE_H
#define BENCH_WIRE_H

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x31434D56u
#define T_CALL 5
#define T_REPLY 6
#define CALL_ARGS 29 /* a copy CALL's arguments: u32 symbol, u64 address, u64 count, u64 stream, u8 mode */

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static inline void tune(int fd) { /* what the shim (shim_session.c) and the worker (worker_serve.c) set */
    int one = 1, buf = 8 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

static inline void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static inline void header(uint8_t *h, uint16_t type, uint32_t id, uint32_t len) {
    put32(h, MAGIC);
    h[4] = (uint8_t)type, h[5] = (uint8_t)(type >> 8), h[6] = h[7] = 0;
    put32(h + 8, id);
    put32(h + 12, len);
}

/* A byte count with an optional K/M/G suffix (KiB/MiB/GiB); anything else ends `program` with exit 2. */
static inline size_t parse_size(const char *program, const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'k' || *end == 'K') v <<= 10, end++;
    else if (*end == 'm' || *end == 'M') v <<= 20, end++;
    else if (*end == 'g' || *end == 'G') v <<= 30, end++;
    if (!v || *end) { fprintf(stderr, "%s: bad size '%s'\n", program, s); exit(2); }
    return (size_t)v;
}

/* A tuned connection to HOST:PORT; reads time out after `read_timeout_s` (0: never). The server may
 * still be starting (another namespace, started just before): retries for 10 s, then ends `program`. */
static inline int connect_to(const char *program, const char *host, const char *port, int read_timeout_s) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, port, &hints, &res)) { fprintf(stderr, "%s: cannot resolve %s\n", program, host); exit(1); }
    for (int attempt = 0; attempt < 200; attempt++) {
        int fd = socket(res->ai_family, SOCK_STREAM, 0);
        if (fd < 0) break;
        tune(fd);
        struct timeval tv = {.tv_sec = read_timeout_s};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
            freeaddrinfo(res);
            return fd;
        }
        close(fd);
        usleep(50000);
    }
    fprintf(stderr, "%s: cannot connect to %s:%s: %s\n", program, host, port, strerror(errno));
    exit(1);
}

#endif

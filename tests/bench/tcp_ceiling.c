/* The loopback TCP ceiling of this host, measured the way vmcuda's socket path moves data: one
 * connection, TCP_NODELAY, 8 MiB socket buffers, 4 MiB writes; and the round trip of a 64-byte
 * message. Prints "metric<TAB>value<TAB>unit" lines like vmcuda_bench. */
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

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void tune(int fd) {
    int one = 1, buf = 8 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

static int full(int fd, void *p, size_t n, int wr) {
    char *c = p;
    while (n) {
        ssize_t r = wr ? write(fd, c, n) : read(fd, c, n);
        if (r <= 0) return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static void *sink(void *arg) {
    int fd = *(int *)arg;
    char *buf = malloc(BLOCK);
    for (unsigned long long got = 0; got < TOTAL; got += BLOCK)
        if (full(fd, buf, BLOCK, 0)) break;
    char msg[64];
    for (int i = 0; i < 20000; i++) {
        if (full(fd, msg, 64, 0) || full(fd, msg, 64, 1)) break;
    }
    free(buf);
    return NULL;
}

int main(void) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &len)) return 1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    tune(c);
    if (connect(c, (struct sockaddr *)&a, sizeof a)) return 1;
    int s = accept(ls, NULL, NULL);
    tune(s);
    pthread_t t;
    pthread_create(&t, NULL, sink, &s);
    char *buf = malloc(BLOCK);
    memset(buf, 1, BLOCK);
    double t0 = now();
    for (unsigned long long sent = 0; sent < TOTAL; sent += BLOCK) full(c, buf, BLOCK, 1);
    double secs = now() - t0;
    printf("loopback_tcp_stream\t%.3f\tGB/s\n", TOTAL / secs / 1e9);
    char msg[64] = {0};
    t0 = now();
    for (int i = 0; i < 20000; i++) { full(c, msg, 64, 1); full(c, msg, 64, 0); }
    printf("loopback_tcp_64B_round_trip\t%.3f\tus\n", (now() - t0) / 20000 * 1e6);
    pthread_join(t, NULL);
    return 0;
}

/* The TLS link between a client and its worker (protocol/src/main/c/vmc_tls.c) over a real loopback TCP
 * connection, a thread on each end as the client and the worker: frames both ways through the buffered reader
 * and whole writes of up to 8 MiB arrive intact; bytes on the wire are not the bytes written; keys that differ
 * fail both handshakes with a reason instead of passing data; a peer that shows a certificate instead of the key
 * is refused; a peer that closes ends reads as a clean end of stream; a peer that never answers fails the
 * handshake at the socket's deadline, not never. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "check.h"
#include "vmc_io.h"
#include "vmc_tls.h"

#define BIG (8u << 20)

/* A connected loopback TCP pair: [0] the client's end, [1] the worker's. */
static void tcp_pair(int fds[2]) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(ls, (struct sockaddr *)&a, sizeof a);
    listen(ls, 1);
    getsockname(ls, (struct sockaddr *)&a, &al);
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    connect(fds[0], (struct sockaddr *)&a, sizeof a);
    fds[1] = accept(ls, NULL, NULL);
    close(ls);
    int one = 1;
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void deadline(int fd, int seconds) {
    struct timeval tv = {seconds, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static uint8_t pattern(size_t i) { return (uint8_t)(i * 131 + (i >> 13)); }

struct worker {
    int fd;
    uint8_t key[VMC_LINK_KEY_BYTES];
    int linked;
    char why[256];
    int echo; /* answer each frame with its length, then echo small ones */
};

/* The worker's side: initiates the link, then reads "u32 n, n bytes" frames and answers each. */
static void *worker_side(void *arg) {
    struct worker *w = arg;
    w->linked = vmc_tls_link(w->fd, w->key, 1, w->why, sizeof w->why) == 0;
    if (!w->linked || !w->echo)
        return NULL;
    struct vmc_reader in = {.cap = 64u << 10};
    uint8_t *buf = malloc(BIG);
    for (;;) {
        uint32_t n;
        if (vmc_reader_read(&in, w->fd, &n, sizeof n) != 0 || n > BIG || vmc_reader_read(&in, w->fd, buf, n) != 0)
            break;
        int intact = 1;
        for (uint32_t i = 0; i < n; i++)
            intact &= buf[i] == pattern(i);
        uint32_t answer = intact ? n : 0xFFFFFFFFu;
        if (vmc_write_full(w->fd, &answer, sizeof answer) != 0 || (n <= 64 && vmc_write_full(w->fd, buf, n) != 0))
            break;
    }
    free(buf);
    vmc_reader_free(&in);
    return NULL;
}

static void frames_cross_intact_and_encrypted(void) {
    int fds[2];
    tcp_pair(fds);
    struct worker w = {.fd = fds[1], .echo = 1};
    memset(w.key, 7, sizeof w.key);
    pthread_t t;
    pthread_create(&t, NULL, worker_side, &w);
    char why[256] = "";
    int linked = vmc_tls_link(fds[0], w.key, 0, why, sizeof why) == 0;
    CHECK(linked, "the client's side of the link: %s", why);
    if (linked) {
        uint8_t *big = malloc(BIG);
        for (size_t i = 0; i < BIG; i++)
            big[i] = pattern(i);
        static const uint32_t sizes[] = {1, 4, 64, 4096, 16383, 16384, 16385, 1u << 20, BIG};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            uint32_t n = sizes[s], answer = 0;
            int sent = vmc_write_full(fds[0], &n, sizeof n) == 0 && vmc_write_full(fds[0], big, n) == 0;
            CHECK(sent && vmc_read_full(fds[0], &answer, sizeof answer) == 0 && answer == n,
                  "a %u-byte frame: the worker read %u", n, answer);
            if (n <= 64) {
                uint8_t back[64];
                CHECK(vmc_read_full(fds[0], back, n) == 0 && memcmp(back, big, n) == 0, "the %u bytes echoed", n);
            }
        }
        free(big);
        uint32_t stop = UINT32_MAX; /* over BIG: the worker's loop ends */
        vmc_write_full(fds[0], &stop, sizeof stop);
        pthread_join(t, NULL);
        /* what the socket itself carries is records, not the plaintext: a plain reader of the worker's end sees
         * a TLS application-data record header (type 23, version 3.3), never the frame's bytes */
        vmc_io_detach(fds[1]); /* the worker thread is done: its end is read plainly from here */
        uint32_t n = 4;
        uint8_t marker[4] = {0xA5, 0x5A, 0xA5, 0x5A}, raw[64];
        vmc_write_full(fds[0], &n, sizeof n);
        vmc_write_full(fds[0], marker, sizeof marker);
        deadline(fds[1], 5);
        ssize_t got = recv(fds[1], raw, sizeof raw, 0);
        CHECK(got >= 5 && raw[0] == 23 && raw[1] == 3 && raw[2] == 3, "a record header on the wire (got %zd bytes)", got);
        CHECK(got < 8 || !memmem(raw, (size_t)got, marker, sizeof marker), "the plaintext is not on the wire");
    } else {
        shutdown(fds[0], SHUT_RDWR); /* the worker's handshake or reader sees the end */
        pthread_join(t, NULL);
    }
    CHECK(w.linked, "the worker's side of the link: %s", w.why);
    vmc_io_close(fds[0]);
    vmc_io_close(fds[1]);
}

static void different_keys_fail_both_sides_with_a_reason(void) {
    int fds[2];
    tcp_pair(fds);
    deadline(fds[0], 10);
    deadline(fds[1], 10);
    struct worker w = {.fd = fds[1]};
    memset(w.key, 1, sizeof w.key);
    pthread_t t;
    pthread_create(&t, NULL, worker_side, &w);
    uint8_t other[VMC_LINK_KEY_BYTES];
    memset(other, 2, sizeof other);
    char why[256] = "";
    int linked = vmc_tls_link(fds[0], other, 0, why, sizeof why) == 0;
    CHECK(!linked, "a link with the wrong key was accepted");
    CHECK(strstr(why, "TLS with the session's worker failed") != NULL, "the client's reason: '%s'", why);
    close(fds[0]); /* the worker may be waiting for an alert that never comes */
    pthread_join(t, NULL);
    CHECK(!w.linked, "the worker linked with a client that has another key");
    CHECK(strstr(w.why, "TLS with the client failed") != NULL, "the worker's reason: '%s'", w.why);
    CHECK(vmc_io_channel(fds[0]) == NULL && vmc_io_channel(fds[1]) == NULL, "a failed link left a channel behind");
    close(fds[1]);
}

static void a_closed_peer_is_a_clean_end_of_stream(void) {
    int fds[2];
    tcp_pair(fds);
    struct worker w = {.fd = fds[1]};
    memset(w.key, 3, sizeof w.key);
    pthread_t t;
    pthread_create(&t, NULL, worker_side, &w);
    char why[256] = "";
    int linked = vmc_tls_link(fds[0], w.key, 0, why, sizeof why) == 0;
    pthread_join(t, NULL);
    CHECK(linked && w.linked, "link: '%s' / '%s'", why, w.why);
    vmc_io_close(fds[1]); /* no close_notify: the worker's process simply ends */
    uint8_t b;
    errno = EINVAL;
    CHECK(vmc_read_full(fds[0], &b, 1) == -1 && errno == 0, "end of stream reads as errno 0, got %d", errno);
    vmc_io_close(fds[0]);
}

static void a_silent_peer_fails_the_handshake_at_the_deadline(void) {
    int fds[2];
    tcp_pair(fds);
    deadline(fds[1], 1);
    uint8_t key[VMC_LINK_KEY_BYTES] = {0};
    char why[256] = "";
    int rc = vmc_tls_link(fds[1], key, 1, why, sizeof why); /* the client end never answers */
    CHECK(rc == -1 && strstr(why, "no answer within the handshake's deadline"), "a silent client: rc %d, '%s'", rc, why);
    close(fds[0]);
    close(fds[1]);
}

/* An impostor on the client's side of a link: a TLS server that ignores the pre-shared key and shows a
 * certificate of its own instead (anyone can make one). */
struct impostor {
    int fd;
    int accepted;
};

static void *impostor_side(void *arg) {
    struct impostor *im = arg;
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC, (const unsigned char *)"impostor", -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    X509_sign(cert, key, EVP_sha256());
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx, cert);
    SSL_CTX_use_PrivateKey(ctx, key);
    SSL *ssl = SSL_new(ctx);
    SSL_set_fd(ssl, im->fd);
    im->accepted = SSL_accept(ssl) == 1;
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    return NULL;
}

static void a_peer_without_the_key_cannot_pose_as_the_client(void) {
    int fds[2];
    tcp_pair(fds);
    deadline(fds[0], 10);
    deadline(fds[1], 10);
    struct impostor im = {.fd = fds[0]};
    pthread_t t;
    pthread_create(&t, NULL, impostor_side, &im);
    uint8_t key[VMC_LINK_KEY_BYTES];
    memset(key, 9, sizeof key);
    char why[256] = "";
    int rc = vmc_tls_link(fds[1], key, 1, why, sizeof why);
    CHECK(rc == -1, "the worker linked with a certificate instead of its key");
    CHECK(strstr(why, "TLS with the client failed") != NULL, "the worker's reason: '%s'", why);
    CHECK(vmc_io_channel(fds[1]) == NULL, "a refused link left a channel");
    shutdown(fds[1], SHUT_RDWR);
    pthread_join(t, NULL);
    close(fds[0]);
    close(fds[1]);
}

int main(void) {
    frames_cross_intact_and_encrypted();
    different_keys_fail_both_sides_with_a_reason();
    a_closed_peer_is_a_clean_end_of_stream();
    a_silent_peer_fails_the_handshake_at_the_deadline();
    a_peer_without_the_key_cannot_pose_as_the_client();
    return check_summary("test_tls");
}

#include "vmc_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "vmc_io.h"

/* The link's PSK identity: both ends know the key already, so the name only has to agree. */
static const char LINK_IDENTITY[] = "vmcuda-link";
/* TLS_AES_128_GCM_SHA256, the suite the link's session is made for (RFC 8446 B.4) */
static const unsigned char LINK_SUITE[2] = {0x13, 0x01};
/* What one read(2) of a link may bring in, and one send(2) of any connection take out: several 16 KiB records */
#define LINK_READ_BUFFER (256u << 10)
#define WRITE_BUFFER (256 << 10)

/* A connection's TLS, as vmc_io's secure channel. errno is kept here by the socket BIO: OpenSSL's own calls
 * may overwrite it before SSL_read returns, and the callers tell a reset peer from a timeout by it. */
struct tls_channel {
    struct vmc_channel base;
    SSL *ssl;
    int fd;
    int last_errno;
    int at_end; /* the socket's last read returned 0 */
    /* One writer at a time: a worker ending its session writes its last ERROR from the thread that ends it,
     * while the connection's own thread may be in the middle of a reply */
    pthread_mutex_t write_lock;
    uint8_t key[VMC_LINK_KEY_BYTES];
    char trusted[200]; /* the daemon's handshake: the client's tls_ca, for the reason of a refusal */
};

/* ---- a BIO over the socket: reads poll briefly like every other reader (vmc_socket_read), writes never
 * raise SIGPIPE (OpenSSL's socket BIO uses write(2), which would kill the program when the peer is gone) */
static int bio_write(BIO *b, const char *p, int n) {
    struct tls_channel *t = BIO_get_data(b);
    if (vmc_socket_write_all(t->fd, p, (size_t)n) != 0) {
        t->last_errno = errno;
        return -1;
    }
    return n;
}

static int bio_read(BIO *b, char *p, int n) {
    struct tls_channel *t = BIO_get_data(b);
    for (;;) {
        ssize_t r = vmc_socket_read(t->fd, p, (size_t)n);
        t->at_end = r == 0;
        if (r >= 0)
            return (int)r;
        if (errno != EINTR) {
            t->last_errno = errno;
            return -1;
        }
    }
}

/* OpenSSL asks whether a read of 0 bytes was the end of the stream (a peer that exits sends no close_notify:
 * with SSL_OP_IGNORE_UNEXPECTED_EOF that reads as the end rather than an error). */
static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)num, (void)ptr;
    struct tls_channel *t = BIO_get_data(b);
    return cmd == BIO_CTRL_FLUSH ? 1 : cmd == BIO_CTRL_EOF ? t->at_end : 0;
}

static BIO_METHOD *socket_method;
static void make_socket_method(void) {
    socket_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "vmcuda socket");
    if (socket_method && (!BIO_meth_set_write(socket_method, bio_write) || !BIO_meth_set_read(socket_method, bio_read) ||
                          !BIO_meth_set_ctrl(socket_method, bio_ctrl))) {
        BIO_meth_free(socket_method);
        socket_method = NULL;
    }
}

/* ---- the channel ---- */
static int failed(struct tls_channel *t) {
    errno = t->last_errno ? t->last_errno : EPROTO;
    return -1;
}

static ssize_t channel_read(struct vmc_channel *ch, void *p, size_t cap) {
    struct tls_channel *t = (struct tls_channel *)ch;
    size_t got = 0;
    t->last_errno = 0;
    if (SSL_read_ex(t->ssl, p, cap, &got) == 1)
        return (ssize_t)got;
    int e = SSL_get_error(t->ssl, 0);
    ERR_clear_error();
    if (e == SSL_ERROR_ZERO_RETURN) /* the peer's close (with SSL_OP_IGNORE_UNEXPECTED_EOF also a bare one) */
        return 0;
    return failed(t);
}

/* A connection has one thread at a time, with one exception: a worker ending its session sends its last ERROR
 * from the thread that ends it (under a one-second send timeout, so an unfinished write of the connection's own
 * thread ends soon). Writes are serialised; that last one may still overlap a read, once, before the exit. */
static int channel_write_all(struct vmc_channel *ch, const void *p, size_t n) {
    struct tls_channel *t = (struct tls_channel *)ch;
    size_t written = 0;
    pthread_mutex_lock(&t->write_lock);
    t->last_errno = 0;
    int ok = n == 0 || (SSL_write_ex(t->ssl, p, n, &written) == 1 && BIO_flush(SSL_get_wbio(t->ssl)) == 1);
    int rc = ok ? 0 : failed(t);
    if (!ok)
        ERR_clear_error();
    pthread_mutex_unlock(&t->write_lock);
    return rc;
}

static void channel_forget(struct vmc_channel *ch) {
    struct tls_channel *t = (struct tls_channel *)ch;
    SSL_free(t->ssl); /* no SSL_shutdown: nothing may be written to a socket this side has let go */
    OPENSSL_cleanse(t->key, sizeof t->key);
    pthread_mutex_destroy(&t->write_lock);
    free(t);
}

static void say_error(const char *what, char *why, size_t why_len) {
    unsigned long e = ERR_get_error();
    char text[256] = "";
    if (e)
        ERR_error_string_n(e, text, sizeof text);
    snprintf(why, why_len, "%s%s%s", what, text[0] ? ": " : "", text);
    ERR_clear_error();
}

/* A channel for fd with ctx's settings, not attached yet. */
static struct tls_channel *new_channel(SSL_CTX *ctx, int fd, char *why, size_t why_len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_socket_method);
    struct tls_channel *t = calloc(1, sizeof *t);
    BIO *bio = socket_method ? BIO_new(socket_method) : NULL;
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    if (!t || !bio || !ssl) {
        free(t);
        BIO_free(bio);
        SSL_free(ssl);
        say_error("cannot set up TLS", why, why_len);
        return NULL;
    }
    t->base = (struct vmc_channel){channel_read, channel_write_all, channel_forget};
    pthread_mutex_init(&t->write_lock, NULL);
    t->ssl = ssl;
    t->fd = fd;
    BIO_set_data(bio, t);
    BIO_set_init(bio, 1);
    /* Records (16 KiB at most) are written through a buffer, so that a large write leaves in a few large
     * send(2)s rather than one per record; every write ends in a flush (channel_write_all), and OpenSSL flushes
     * each handshake flight itself. */
    BIO *out = BIO_new(BIO_f_buffer());
    if (out && BIO_set_write_buffer_size(out, WRITE_BUFFER) == 1 && BIO_up_ref(bio)) {
        SSL_set_bio(ssl, bio, BIO_push(out, bio));
    } else {
        BIO_free(out);
        SSL_set_bio(ssl, bio, bio);
    }
    SSL_set_app_data(ssl, t);
    return t;
}

/* Runs the handshake and attaches the channel to fd; frees it on failure. `keyed`: a link, which must have been
 * authenticated by its key (a peer that answered with a certificate instead knows nothing). */
static int shake_and_attach(struct tls_channel *t, int initiate, int keyed, const char *who, char *why, size_t why_len) {
    t->last_errno = 0;
    int ok = initiate ? SSL_connect(t->ssl) : SSL_accept(t->ssl);
    OPENSSL_cleanse(t->key, sizeof t->key); /* used up: the session's own keys are derived */
    if (ok == 1 && keyed && !SSL_session_reused(t->ssl)) {
        snprintf(why, why_len, "TLS with %s failed: the peer did not use the connection's key", who);
        channel_forget(&t->base);
        return -1;
    }
    if (ok != 1) {
        long verify = SSL_get_verify_result(t->ssl);
        if (verify != X509_V_OK) {
            snprintf(why, why_len, "TLS with %s failed: its certificate: %s (trusted: tls_ca %s; tls_verify_name)", who,
                     X509_verify_cert_error_string(verify), t->trusted);
        } else if (t->last_errno) {
            snprintf(why, why_len, "TLS with %s failed: %s", who, t->last_errno == EAGAIN || t->last_errno == EWOULDBLOCK
                                                                    ? "no answer within the handshake's deadline"
                                                                    : strerror(t->last_errno));
        } else if (ERR_peek_error()) {
            char what[96];
            snprintf(what, sizeof what, "TLS with %s failed", who);
            say_error(what, why, why_len);
        } else {
            snprintf(why, why_len, "TLS with %s failed: the connection closed during the handshake", who);
        }
        ERR_clear_error();
        channel_forget(&t->base);
        return -1;
    }
    if (vmc_io_attach(t->fd, &t->base) != 0) {
        snprintf(why, why_len, "cannot attach TLS to descriptor %d", t->fd);
        channel_forget(&t->base);
        return -1;
    }
    return 0;
}

/* ---- the daemon's handshake (client side) ---- */
static pthread_mutex_t daemon_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *daemon_ctx;
static char daemon_ctx_ca[4096];

static SSL_CTX *daemon_context(const char *ca_file, char *why, size_t why_len) {
    pthread_mutex_lock(&daemon_ctx_lock);
    if (daemon_ctx && strcmp(daemon_ctx_ca, ca_file) != 0) {
        SSL_CTX_free(daemon_ctx); /* a pool may point a process at another appliance's CA: never in flight here */
        daemon_ctx = NULL;
    }
    if (!daemon_ctx) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION)) {
            say_error("cannot set up TLS", why, why_len);
        } else if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
            char what[4200];
            snprintf(what, sizeof what, "cannot read the appliance's certificate authority %s (tls_ca)", ca_file);
            say_error(what, why, why_len);
        } else {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
            SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
            daemon_ctx = ctx;
            snprintf(daemon_ctx_ca, sizeof daemon_ctx_ca, "%s", ca_file);
            ctx = NULL;
        }
        SSL_CTX_free(ctx);
    }
    SSL_CTX *ctx = daemon_ctx;
    if (ctx)
        SSL_CTX_up_ref(ctx);
    pthread_mutex_unlock(&daemon_ctx_lock);
    return ctx;
}

int vmc_tls_connect_daemon(int fd, const char *ca_file, const char *host, int verify_name, char *why, size_t why_len) {
    if (!ca_file || !ca_file[0]) {
        snprintf(why, why_len, "TLS needs the appliance's certificate authority: set tls_ca");
        return -1;
    }
    SSL_CTX *ctx = daemon_context(ca_file, why, why_len);
    if (!ctx)
        return -1;
    struct tls_channel *t = new_channel(ctx, fd, why, why_len);
    SSL_CTX_free(ctx); /* the SSL holds its own reference */
    if (!t)
        return -1;
    unsigned char addr[16];
    int literal = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    if (!literal)
        SSL_set_tlsext_host_name(t->ssl, host);
    if (verify_name) {
        X509_VERIFY_PARAM *p = SSL_get0_param(t->ssl);
        if (!(literal ? X509_VERIFY_PARAM_set1_ip_asc(p, host) : X509_VERIFY_PARAM_set1_host(p, host, 0))) {
            snprintf(why, why_len, "cannot check the appliance's certificate against the name %s", host);
            channel_forget(&t->base);
            return -1;
        }
    }
    char who[300];
    snprintf(who, sizeof who, "the appliance %s", host);
    snprintf(t->trusted, sizeof t->trusted, "%s", ca_file);
    return shake_and_attach(t, 1, 0, who, why, why_len);
}

/* ---- the link between client and worker: TLS 1.3 with an external pre-shared key ---- */
static SSL_SESSION *link_session(SSL *ssl) {
    struct tls_channel *t = SSL_get_app_data(ssl);
    const SSL_CIPHER *suite = SSL_CIPHER_find(ssl, LINK_SUITE);
    SSL_SESSION *s = suite ? SSL_SESSION_new() : NULL;
    if (s && SSL_SESSION_set1_master_key(s, t->key, sizeof t->key) && SSL_SESSION_set_cipher(s, suite) &&
        SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION))
        return s;
    SSL_SESSION_free(s);
    return NULL;
}

static int use_link_key(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *id_len, SSL_SESSION **session) {
    SSL_SESSION *s = link_session(ssl);
    if (s && md && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s))) {
        SSL_SESSION_free(s); /* the suite offered in a retry does not fit the key: offer none */
        s = NULL;
    }
    *id = (const unsigned char *)LINK_IDENTITY;
    *id_len = sizeof LINK_IDENTITY - 1;
    *session = s;
    return 1;
}

static int find_link_key(SSL *ssl, const unsigned char *id, size_t id_len, SSL_SESSION **session) {
    *session = id_len == sizeof LINK_IDENTITY - 1 && memcmp(id, LINK_IDENTITY, id_len) == 0 ? link_session(ssl) : NULL;
    return 1;
}

static SSL_CTX *link_contexts[2];
static void make_link_contexts(void) {
    for (int initiate = 0; initiate < 2; initiate++) {
        SSL_CTX *ctx = SSL_CTX_new(initiate ? TLS_client_method() : TLS_server_method());
        if (!ctx)
            continue;
        if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
            !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256")) {
            SSL_CTX_free(ctx);
            continue;
        }
        SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
        /* A link lasts as long as its connection and carries the bulk copies: read ahead, many records per
         * read(2), rather than a header and a body each. (Never on the daemon's session: reading ahead there could
         * swallow the worker's first bytes, which follow READY on the same socket.) */
        SSL_CTX_set_read_ahead(ctx, 1);
        SSL_CTX_set_default_read_buffer_len(ctx, LINK_READ_BUFFER);
        if (initiate) {
            SSL_CTX_set_psk_use_session_callback(ctx, use_link_key);
            /* with no certificate trusted, a server that ignores the key and shows a certificate is refused */
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        } else {
            SSL_CTX_set_psk_find_session_callback(ctx, find_link_key);
            SSL_CTX_set_num_tickets(ctx, 0); /* a link is never resumed: its key is used once */
        }
        link_contexts[initiate] = ctx;
    }
}

int vmc_tls_link(int fd, const uint8_t key[VMC_LINK_KEY_BYTES], int initiate, char *why, size_t why_len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_link_contexts);
    vmc_io_detach(fd);
    struct tls_channel *t = new_channel(link_contexts[initiate ? 1 : 0], fd, why, why_len);
    if (!t)
        return -1;
    memcpy(t->key, key, sizeof t->key);
    return shake_and_attach(t, initiate, 1, initiate ? "the client" : "the session's worker", why, why_len);
}

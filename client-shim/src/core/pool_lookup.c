/* The client's only contact with etcd: a list of the keys under <prefix>entry/ through etcd's JSON gateway
 * (POST /v3/kv/range with keys_only), one HTTP/1.0 request per etcd URL until one answers. The keys name
 * the endpoints of the pool's live appliances (each key lives under its appliance's lease); any of them
 * answers the placement question itself (shim_session.c), so no etcd client library is needed in C.
 * HTTP/1.0 makes etcd close the connection after a plain (never chunked) body. */
#include "pool_lookup.h"
#include "shim_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* etcd answers at once or not at all: an unreachable URL must not hold the program's first CUDA call
 * (connecting is limited by vmc_tcp_connect, 10 s). */
#define ETCD_TIMEOUT_S 5
/* Keys only: far below this even for a pool of hundreds of appliances. */
#define MAX_RESPONSE (1u << 20)

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void vmc_base64_encode(const unsigned char *src, size_t n, char *dst) {
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)src[i] << 16 | (i + 1 < n ? (unsigned)src[i + 1] << 8 : 0) | (i + 2 < n ? src[i + 2] : 0);
        dst[o++] = B64[v >> 18 & 63];
        dst[o++] = B64[v >> 12 & 63];
        dst[o++] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        dst[o++] = i + 2 < n ? B64[v & 63] : '=';
    }
    dst[o] = 0;
}

long vmc_base64_decode(const char *src, size_t n, unsigned char *dst, size_t dst_cap) {
    unsigned v = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n && src[i] != '='; i++) {
        const char *p = strchr(B64, src[i]);
        if (!p || !src[i])
            return -1;
        v = v << 6 | (unsigned)(p - B64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= dst_cap)
                return -1;
            dst[o++] = (unsigned char)(v >> bits & 0xff);
        }
    }
    return (long)o;
}

/* "http://HOST:PORT[/...]" -> "HOST:PORT". */
static int url_host_port(const char *url, char *out, size_t out_len, char *why, size_t why_len) {
    const char *p = url;
    if (strncmp(p, "http://", 7) == 0) {
        p += 7;
    } else {
        snprintf(why, why_len, "etcd URL '%s' is not http://HOST:PORT (the client speaks plain HTTP to etcd)", url);
        return -1;
    }
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= out_len || !memchr(p, ':', n)) {
        snprintf(why, why_len, "etcd URL '%s' is not http://HOST:PORT", url);
        return -1;
    }
    memcpy(out, p, n);
    out[n] = 0;
    return 0;
}

/* The whole answer of one request (HTTP/1.0: until the server closes). Returns its length or -1. */
static long http_post(const char *host_port, const char *path, const char *body, char **response, char *why,
                      size_t why_len) {
    int fd = vmc_tcp_connect(host_port, why, why_len);
    if (fd < 0)
        return -1;
    struct timeval t = {ETCD_TIMEOUT_S, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
    char request[1024];
    int len = snprintf(request, sizeof request,
                       "POST %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                       path, host_port, strlen(body), body);
    if (len < 0 || (size_t)len >= sizeof request || vmc_write_full(fd, request, (size_t)len) != 0) {
        snprintf(why, why_len, "cannot send the request: %s", len < 0 || (size_t)len >= sizeof request ? "too long" : strerror(errno));
        close(fd);
        return -1;
    }
    size_t cap = 64 << 10, got = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            snprintf(why, why_len, "out of memory");
            close(fd);
            return -1;
        }
        if (got == cap) {
            if (cap >= MAX_RESPONSE) {
                snprintf(why, why_len, "answer larger than %u bytes", MAX_RESPONSE);
                free(buf);
                close(fd);
                return -1;
            }
            cap *= 2;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger)
                free(buf);
            buf = bigger;
            continue;
        }
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(why, why_len, "%s", errno == EAGAIN ? "no answer within 5 s" : strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    *response = buf;
    return (long)got;
}

/* The keys of a range answer: every "key":"<base64>" (the header has no such field; base64 has no '"'). */
static int parse_keys(const char *body, size_t prefix_len, char out[][VMC_POOL_ENDPOINT_MAX], int max) {
    int n = 0;
    for (const char *p = strstr(body, "\"key\":\""); p && n < max; p = strstr(p, "\"key\":\"")) {
        p += 7;
        const char *end = strchr(p, '"');
        if (!end)
            break;
        unsigned char key[512];
        long k = vmc_base64_decode(p, (size_t)(end - p), key, sizeof key - 1);
        p = end + 1;
        if (k <= (long)prefix_len || k - (long)prefix_len >= VMC_POOL_ENDPOINT_MAX)
            continue;
        memcpy(out[n], key + prefix_len, (size_t)k - prefix_len);
        out[n][k - prefix_len] = 0;
        n++;
    }
    return n;
}

int vmc_pool_entries(const char *etcd_urls, const char *prefix, char out[][VMC_POOL_ENDPOINT_MAX], int max,
                     char *why, size_t why_len) {
    char dir[300], end[300];
    int dir_len = snprintf(dir, sizeof dir, "%sentry/", prefix);
    if (dir_len <= 0 || (size_t)dir_len >= sizeof dir) {
        snprintf(why, why_len, "cluster prefix '%s' is too long", prefix);
        return -1;
    }
    /* the range [dir, dir with its last byte + 1) is every key that starts with dir */
    memcpy(end, dir, (size_t)dir_len + 1);
    end[dir_len - 1]++;
    char key64[420], end64[420], body[1024];
    vmc_base64_encode((const unsigned char *)dir, (size_t)dir_len, key64);
    vmc_base64_encode((const unsigned char *)end, (size_t)dir_len, end64);
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"range_end\":\"%s\",\"keys_only\":true}", key64, end64);

    char urls[1024];
    snprintf(urls, sizeof urls, "%s", etcd_urls);
    char *save = NULL;
    why[0] = 0;
    for (char *url = strtok_r(urls, ",", &save); url; url = strtok_r(NULL, ",", &save)) {
        while (*url == ' ')
            url++;
        char host_port[256], err[256] = "";
        char *response = NULL;
        if (url_host_port(url, host_port, sizeof host_port, err, sizeof err) == 0 &&
            http_post(host_port, "/v3/kv/range", body, &response, err, sizeof err) >= 0) {
            const char *status = strchr(response, ' ');
            const char *payload = strstr(response, "\r\n\r\n");
            if (status && strncmp(status + 1, "200", 3) == 0 && payload) {
                int n = parse_keys(payload + 4, (size_t)dir_len, out, max);
                free(response);
                return n;
            }
            snprintf(err, sizeof err, "HTTP answer '%.*s'", (int)strcspn(response, "\r\n"), response);
            free(response);
        }
        snprintf(why, why_len, "etcd %s: %s", url, err);
    }
    if (!why[0])
        snprintf(why, why_len, "no etcd URL in '%s'", etcd_urls);
    return -1;
}

/* The client's etcd lookup (pool_lookup.c) against a stand-in for etcd's JSON gateway that answers one
 * canned response per connection: base64 as etcd carries keys, the keys-only range request it sends, the
 * endpoints it takes from the answer, and its errors (refused connection, HTTP error, https, no URL).
 * PoolTest runs the same code against a real etcd. */
#include "pool_lookup.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_fd;
static const char *canned;
static char last_request[4096];

static void *serve_once(void *arg) {
    (void)arg;
    int c = accept(listen_fd, NULL, NULL);
    if (c < 0)
        return NULL;
    size_t got = 0;
    ssize_t r;
    /* the request is small: read until its body (after the blank line) is in */
    while ((r = read(c, last_request + got, sizeof last_request - 1 - got)) > 0) {
        got += (size_t)r;
        last_request[got] = 0;
        char *body = strstr(last_request, "\r\n\r\n");
        if (body && strstr(body, "}"))
            break;
    }
    (void)!write(c, canned, strlen(canned));
    close(c);
    return NULL;
}

static int start_server(void) {
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert(bind(listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
    assert(listen(listen_fd, 4) == 0);
    socklen_t n = sizeof a;
    getsockname(listen_fd, (struct sockaddr *)&a, &n);
    return ntohs(a.sin_port);
}

static int lookup(int port, const char *response, char out[][VMC_POOL_ENDPOINT_MAX], char *why) {
    canned = response;
    pthread_t t;
    pthread_create(&t, NULL, serve_once, NULL);
    char urls[128];
    snprintf(urls, sizeof urls, "http://127.0.0.1:%d", port);
    int n = vmc_pool_entries(urls, "/vmcuda/", out, VMC_POOL_MAX_ENTRIES, why, 512);
    pthread_join(t, NULL);
    return n;
}

static void base64(void) {
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char enc[16];
        unsigned char dec[16];
        vmc_base64_encode((const unsigned char *)plain[i], strlen(plain[i]), enc);
        assert(strcmp(enc, coded[i]) == 0);
        long n = vmc_base64_decode(coded[i], strlen(coded[i]), dec, sizeof dec);
        assert(n == (long)strlen(plain[i]) && memcmp(dec, plain[i], (size_t)n) == 0);
    }
    unsigned char small[2];
    assert(vmc_base64_decode("Zm9v", 4, small, sizeof small) == -1); /* 3 bytes into 2 */
    assert(vmc_base64_decode("Zm\"v", 4, small, sizeof small) == -1); /* outside the alphabet */
}

int main(void) {
    base64();
    int port = start_server();
    static char out[VMC_POOL_MAX_ENTRIES][VMC_POOL_ENDPOINT_MAX];
    char why[512] = "";

    /* two registered endpoints ("/vmcuda/entry/10.0.0.5:7070", "/vmcuda/entry/[fd00::2]:7070") and one key
     * that is only the directory itself, which names nothing */
    const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
                     "{\"header\":{\"cluster_id\":\"1\",\"revision\":\"9\"},\"kvs\":["
                     "{\"key\":\"L3ZtY3VkYS9lbnRyeS8xMC4wLjAuNTo3MDcw\",\"create_revision\":\"3\"},"
                     "{\"key\":\"L3ZtY3VkYS9lbnRyeS9bZmQwMDo6Ml06NzA3MA==\",\"mod_revision\":\"4\"},"
                     "{\"key\":\"L3ZtY3VkYS9lbnRyeS8=\"}],\"count\":\"3\"}";
    int n = lookup(port, ok, out, why);
    assert(n == 2);
    assert(strcmp(out[0], "10.0.0.5:7070") == 0 && strcmp(out[1], "[fd00::2]:7070") == 0);
    /* a keys-only range over exactly the entry directory: [/vmcuda/entry/, /vmcuda/entry0) */
    assert(strncmp(last_request, "POST /v3/kv/range HTTP/1.0\r\n", 28) == 0);
    assert(strstr(last_request, "\"key\":\"L3ZtY3VkYS9lbnRyeS8=\""));
    assert(strstr(last_request, "\"range_end\":\"L3ZtY3VkYS9lbnRyeTA=\""));
    assert(strstr(last_request, "\"keys_only\":true"));

    /* an empty pool is an answer, not an error */
    assert(lookup(port, "HTTP/1.1 200 OK\r\n\r\n{\"header\":{\"revision\":\"9\"}}", out, why) == 0);

    /* an HTTP error says which URL answered what */
    assert(lookup(port, "HTTP/1.1 404 Not Found\r\n\r\n404 page not found\n", out, why) == -1);
    assert(strstr(why, "HTTP answer 'HTTP/1.1 404 Not Found'") && strstr(why, "etcd http://127.0.0.1:"));

    /* the next URL is tried when one cannot be reached; a refused one reports its reason */
    int serving = listen_fd;
    int dead = start_server();
    close(listen_fd); /* nothing listens on `dead` any more */
    listen_fd = serving;
    canned = ok;
    pthread_t t;
    pthread_create(&t, NULL, serve_once, NULL);
    char urls[160];
    snprintf(urls, sizeof urls, "http://127.0.0.1:%d, http://127.0.0.1:%d/", dead, port);
    assert(vmc_pool_entries(urls, "/vmcuda/", out, VMC_POOL_MAX_ENTRIES, why, sizeof why) == 2);
    pthread_join(t, NULL);
    snprintf(urls, sizeof urls, "http://127.0.0.1:%d", dead);
    assert(vmc_pool_entries(urls, "/vmcuda/", out, VMC_POOL_MAX_ENTRIES, why, sizeof why) == -1);
    assert(strstr(why, "Connection refused"));

    assert(vmc_pool_entries("https://etcd:2379", "/vmcuda/", out, VMC_POOL_MAX_ENTRIES, why, sizeof why) == -1);
    assert(strstr(why, "is not http://HOST:PORT"));
    assert(vmc_pool_entries(" , ", "/vmcuda/", out, VMC_POOL_MAX_ENTRIES, why, sizeof why) == -1);
    printf("test_pool_lookup: ok\n");
    return 0;
}

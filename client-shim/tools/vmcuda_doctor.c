/* vmcuda-doctor: checks a client's vmcuda set-up end to end and says in plain words what is wrong.
 *
 * Linked against the client shim (libcudart.so.13), so every CUDA call below takes the path an
 * application's calls take: the shim opens a session (HELLO with the protocol version and token), the
 * appliance rewrites and starts this very program as the worker (it imports __libc_start_main like
 * any program), and the calls run there. Run it as `vmcuda doctor` (which puts the shim first in
 * LD_LIBRARY_PATH) or directly (/usr/lib/vmcuda/vmcuda-doctor, RUNPATH $ORIGIN).
 *
 * Steps: 1 which libcudart was loaded and which libcuda.so.1 the loader finds; 2 the configuration the shim will use and where each value
 * comes from (same rules as client-shim/src/core/shim_config.c: file, then environment); 3 a TCP connect
 * to the appliance; 4 the session (authentication, protocol version, GPUs) through cudaGetDeviceCount,
 * with the shim's own explanation captured from stderr; 5 each GPU's properties; 6 the round trip
 * (200 cudaDeviceGetAttribute calls) and a 64 MiB cudaMemcpy host-to-device and back.
 *
 * Exit status: 0 everything works, 1 a problem was found (the last lines say which and what to do),
 * 2 bad usage. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "vmc_wire.h" /* VMC_PROTO_VERSION: what this shim speaks */
#include "doctor_program.h"
#include "pool_lookup.h"
#include "shim_session.h" /* vmc_appliance_view */

#ifndef VMCUDA_VERSION
#define VMCUDA_VERSION "unknown"
#endif

#define RT_CALLS 200
#define COPY_BYTES ((size_t)64 << 20)
#define CONNECT_TIMEOUT_MS 5000

/* ---- output ---------------------------------------------------------------------------------- */

static int problems;
static char verdict[4096]; /* the first problem's advice, repeated at the end */

static void section(const char *title) { printf("\n%s\n", title); }

static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

/* A problem: printed where it is found, and the first one is the verdict. */
static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...) {
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("  PROBLEM: %s\n", text);
    fflush(stdout);
    if (problems++ == 0)
        snprintf(verdict, sizeof verdict, "%s", text);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *err_text(cudaError_t e) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s (%d): %s", cudaGetErrorName(e), (int)e, cudaGetErrorString(e));
    return buf;
}

/* ---- 1. which runtime ------------------------------------------------------------------------ */

/* The shim and NVIDIA's runtime export the same symbols; the shim's file contains its own messages. */
static int file_contains(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = strlen(needle), cap = 1 << 20, have = 0;
    char *buf = malloc(cap + n);
    int found = 0;
    if (!buf) {
        fclose(f);
        return -1;
    }
    for (;;) {
        size_t r = fread(buf + have, 1, cap, f);
        if (r == 0)
            break;
        if (memmem(buf, have + r, needle, n)) {
            found = 1;
            break;
        }
        /* keep the last n-1 bytes: a match may straddle two reads */
        size_t keep = have + r < n - 1 ? have + r : n - 1;
        memmove(buf, buf + have + r - keep, keep);
        have = keep;
    }
    free(buf);
    fclose(f);
    return found;
}

/* Ours when the file links vmcuda's core library (NVIDIA's files never name it). */
static int is_vmcuda_front_end(const char *path) { return file_contains(path, "libvmcuda-client.so") == 1; }

static const char *real_path(const char *file, char *buf) { return realpath(file, buf) ? buf : file; }

static int check_runtime(void) {
    section("1. CUDA runtime and driver this program loads");
    Dl_info info;
    if (!dladdr((void *)cudaGetDeviceCount, &info) || !info.dli_fname) {
        line("libcudart: cannot tell which file (dladdr failed)");
        return 0;
    }
    char real[4096];
    const char *path = real_path(info.dli_fname, real);
    int rc = 0;
    if (is_vmcuda_front_end(path)) {
        line("libcudart.so.13: %s (vmcuda's runtime front end, protocol version %u)", path, VMC_PROTO_VERSION);
    } else {
        line("libcudart.so.13: %s", path);
        problem("this program loaded %s, which is not vmcuda's runtime front end (NVIDIA's own runtime?): run "
                "`vmcuda doctor`, or put /usr/lib/vmcuda first in LD_LIBRARY_PATH", path);
        rc = -1;
    }
    /* Programs built with nvcc's default static runtime, the math libraries and the frameworks reach the
     * GPU through libcuda.so.1 instead: the one the dynamic loader finds must be vmcuda's too. */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    void *cu_init = driver ? dlsym(driver, "cuInit") : NULL;
    if (!cu_init || !dladdr(cu_init, &info) || !info.dli_fname) {
        line("libcuda.so.1: not found (%s)", driver ? "it has no cuInit" : dlerror());
        problem("no libcuda.so.1 is found: programs linked with the static CUDA runtime, the CUDA math libraries "
                "and frameworks (PyTorch, CuPy) will not run; put /usr/lib/vmcuda first in LD_LIBRARY_PATH");
        return -1;
    }
    path = real_path(info.dli_fname, real);
    if (is_vmcuda_front_end(path)) {
        line("libcuda.so.1: %s (vmcuda's driver front end)", path);
    } else {
        line("libcuda.so.1: %s", path);
        problem("libcuda.so.1 resolves to %s, which is not vmcuda's driver front end (an NVIDIA driver installed in "
                "this VM?): programs linked with the static runtime and the math libraries would use it; put "
                "/usr/lib/vmcuda first in LD_LIBRARY_PATH", path);
        rc = -1;
    }
    return rc;
}

/* ---- 2. configuration (the shim's rules, client-shim/src/core/shim_config.c) ----------------------- */

struct setting {
    const char *key, *env;
    char value[512];
    char source[600];
};
static struct setting settings[] = {
    {"appliance", "VMCUDA_APPLIANCE", "", "not set"},
    {"token", "VMCUDA_TOKEN", "", "not set"},
    {"block_size", "VMCUDA_BLOCK_SIZE", "4194304", "default"},
    {"gpus", "VMCUDA_GPUS", "1", "default"},
    {"transport", "VMCUDA_TRANSPORT", "auto", "default"},
    {"cluster", "VMCUDA_CLUSTER", "", "not set"},
    {"cluster_prefix", "VMCUDA_CLUSTER_PREFIX", "/vmcuda/", "default"},
    {"tls_ca", "VMCUDA_TLS_CA", "", "not set: no TLS"},
    {"tls_verify_name", "VMCUDA_TLS_VERIFY_NAME", "true", "default"},
};
enum { S_APPLIANCE, S_TOKEN, S_BLOCK, S_GPUS, S_TRANSPORT, S_CLUSTER, S_PREFIX, S_TLS_CA, S_TLS_VERIFY_NAME, S_COUNT };
static char config_path[512];

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

static void check_config(void) {
    section("2. Configuration (environment overrides the file)");
    const char *env_path = getenv("VMCUDA_CONFIG");
    snprintf(config_path, sizeof config_path, "%s", env_path && *env_path ? env_path : "/etc/vmcuda/client.conf");
    FILE *f = fopen(config_path, "re");
    if (f) {
        line("config file: %s%s", config_path, env_path && *env_path ? " (from VMCUDA_CONFIG)" : "");
        char buf[1024];
        int lineno = 0;
        while (fgets(buf, sizeof buf, f)) {
            lineno++;
            char *s = trim(buf);
            if (!*s || *s == '#')
                continue;
            char *eq = strchr(s, '=');
            if (!eq) {
                line("  %s:%d: ignored, not KEY = VALUE: %s", config_path, lineno, s);
                continue;
            }
            *eq = 0;
            char *k = trim(s), *v = trim(eq + 1);
            int known = 0;
            for (int i = 0; i < S_COUNT; i++) {
                if (strcmp(k, settings[i].key) == 0) {
                    snprintf(settings[i].value, sizeof settings[i].value, "%s", v);
                    snprintf(settings[i].source, sizeof settings[i].source, "%s line %d", config_path, lineno);
                    known = 1;
                }
            }
            if (!known)
                line("  %s:%d: key '%s' is not used by this version (ignored)", config_path, lineno, k);
        }
        fclose(f);
    } else {
        line("config file: %s: %s%s", config_path, strerror(errno),
             env_path && *env_path ? " (path from VMCUDA_CONFIG)" : "");
    }
    for (int i = 0; i < S_COUNT; i++) {
        const char *v = getenv(settings[i].env);
        if (v && *v) {
            snprintf(settings[i].value, sizeof settings[i].value, "%s", v);
            snprintf(settings[i].source, sizeof settings[i].source, "environment %s", settings[i].env);
        }
    }
    struct setting *a = &settings[S_APPLIANCE], *t = &settings[S_TOKEN], *b = &settings[S_BLOCK], *g = &settings[S_GPUS];
    struct setting *c = &settings[S_CLUSTER];
    /* as the shim: an appliance named in the environment overrides a pool from the file */
    if (c->value[0] && strncmp(c->source, "environment", 11) != 0 && strncmp(a->source, "environment", 11) == 0) {
        line("cluster    = %-24s (%s; not used: VMCUDA_APPLIANCE overrides it)", c->value, c->source);
        c->value[0] = 0;
    }
    if (c->value[0]) {
        line("cluster    = %-24s (%s): a pool of appliances places this client%s", c->value, c->source,
             a->value[0] ? "; 'appliance' is not used" : "");
        line("cluster_prefix = %-20s (%s)", settings[S_PREFIX].value, settings[S_PREFIX].source);
    } else {
        line("appliance  = %-24s (%s)", a->value[0] ? a->value : "(none)", a->source);
    }
    if (t->value[0])
        line("token      = %.4s... (%zu characters)   (%s)", t->value, strlen(t->value), t->source);
    else
        line("token      = %-24s (%s)", "(none)", t->source);
    struct setting *ca = &settings[S_TLS_CA];
    if (ca->value[0])
        line("tls_ca     = %-24s (%s): TLS, the appliance must prove this certificate%s", ca->value, ca->source,
             access(ca->value, R_OK) == 0 ? "" : " -- PROBLEM: this file cannot be read");
    else
        line("tls_ca     = %-24s (%s)", "(none)", ca->source);
    char *end;
    unsigned long long bs = strtoull(b->value, &end, 10);
    if (*end == 'k' || *end == 'K') bs <<= 10;
    else if (*end == 'm' || *end == 'M') bs <<= 20;
    if (bs < (64u << 10) || bs > (256u << 20)) {
        line("block_size = %-24s (%s)", b->value, b->source);
        line("  outside 65536..268435456 bytes: the shim uses 4194304 instead");
    } else {
        line("block_size = %-24llu (%s)", bs, b->source);
    }
    line("gpus       = %-24s (%s)", g->value, g->source);
    line("transport  = %-24s (%s)", settings[S_TRANSPORT].value, settings[S_TRANSPORT].source);
    if (!a->value[0] && !c->value[0])
        problem("no appliance configured: set 'appliance = HOST:PORT' in %s, or VMCUDA_APPLIANCE=HOST:PORT, "
                "or use `vmcuda doctor --appliance HOST:PORT` (or 'cluster = http://ETCD:2379' for a pool)", config_path);
}

/* ---- 3. network ------------------------------------------------------------------------------ */

static int split_host_port(const char *hp, char *host, size_t host_len, char *port, size_t port_len) {
    const char *colon = strrchr(hp, ':');
    if (!colon || colon == hp || !colon[1] || (size_t)(colon - hp) >= host_len)
        return -1;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    snprintf(port, port_len, "%s", colon + 1);
    return 0;
}

/* Non-blocking connect with a timeout; returns 0 and the time, or an errno. */
static int try_connect(const struct addrinfo *ai, double *ms) {
    *ms = 0;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return errno;
    double t0 = now_s();
    int err = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            err = errno;
        } else {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int r = poll(&p, 1, CONNECT_TIMEOUT_MS);
            if (r == 0) {
                err = ETIMEDOUT;
            } else if (r < 0) {
                err = errno;
            } else {
                socklen_t len = sizeof err;
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            }
        }
    }
    *ms = (now_s() - t0) * 1e3;
    close(fd);
    return err;
}

static int check_appliance_port(const char *ap);

/* A pool: etcd answers with the live appliances' endpoints, and each accepts TCP connections. */
static int check_pool(void) {
    const char *cluster = settings[S_CLUSTER].value;
    static char entries[VMC_POOL_MAX_ENTRIES][VMC_POOL_ENDPOINT_MAX];
    char why[512];
    int n = vmc_pool_entries(cluster, settings[S_PREFIX].value, entries, VMC_POOL_MAX_ENTRIES, why, sizeof why);
    if (n < 0) {
        problem("cannot read the pool from etcd: %s. Check the URL (http://HOST:2379), that etcd runs, and that this VM "
                "reaches it (curl %s/health)", why, cluster);
        return -1;
    }
    line("pool: etcd lists %d live appliance(s) under %sentry/", n, settings[S_PREFIX].value);
    if (n == 0) {
        problem("no appliance is registered in the pool: start vmcudad with cluster.etcd = %s (or --etcd) on the "
                "appliances, with cluster.prefix = %s", cluster, settings[S_PREFIX].value);
        return -1;
    }
    int reachable = 0;
    for (int i = 0; i < n; i++) {
        char host[256], port[64];
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_socktype = SOCK_STREAM;
        if (split_host_port(entries[i], host, sizeof host, port, sizeof port) != 0 ||
            getaddrinfo(host, port, &hints, &res) != 0) {
            line("appliance %s: cannot resolve it", entries[i]);
            continue;
        }
        double ms;
        int err = try_connect(res, &ms);
        freeaddrinfo(res);
        if (err == 0) {
            line("appliance %s: TCP connect ok (%.2f ms)", entries[i], ms);
            reachable++;
        } else {
            line("appliance %s: %s (after %.0f ms)", entries[i], strerror(err), ms);
        }
    }
    if (!reachable) {
        problem("no appliance of the pool accepts connections from this VM: check the network between them");
        return -1;
    }
    return 0;
}

static int check_network(void) {
    section("3. Network");
    if (settings[S_CLUSTER].value[0])
        return check_pool();
    return check_appliance_port(settings[S_APPLIANCE].value);
}

static int check_appliance_port(const char *ap) {
    if (!ap[0]) {
        line("skipped: no appliance configured");
        return -1;
    }

    char host[256], port[64];
    if (split_host_port(ap, host, sizeof host, port, sizeof port) != 0) {
        problem("appliance '%s' is not HOST:PORT (e.g. 192.168.50.10:7070)", ap);
        return -1;
    }
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        problem("cannot resolve '%s': %s. Use the appliance's IP address, or fix DNS / /etc/hosts", host, gai_strerror(gai));
        return -1;
    }
    int ok = 0, last = 0;
    for (struct addrinfo *ai = res; ai && !ok; ai = ai->ai_next) {
        char addr[128] = "?";
        getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr, NULL, 0, NI_NUMERICHOST);
        double ms;
        int err = try_connect(ai, &ms);
        if (err == 0) {
            line("TCP connect to %s port %s: ok (%.2f ms)", addr, port, ms);
            ok = 1;
        } else {
            line("TCP connect to %s port %s: %s (after %.0f ms)", addr, port, strerror(err), ms);
            last = err;
        }
    }
    freeaddrinfo(res);
    if (ok)
        return 0;
    if (last == ECONNREFUSED)
        problem("nothing accepts connections on %s: is vmcudad running on the appliance (systemctl status vmcudad) "
                "and listening on that address and port (--listen 0.0.0.0:7070)?", ap);
    else if (last == ETIMEDOUT)
        problem("no answer from %s within %d s: a firewall drops the packets, or the address is not on the client "
                "network (check the IP, the port group / bridge, and `ip route get %s`)", ap, CONNECT_TIMEOUT_MS / 1000, host);
    else if (last == EHOSTUNREACH || last == ENETUNREACH)
        problem("no route to %s: this VM is not on the appliance's network (check its NIC, port group / bridge, IP)", host);
    else
        problem("cannot connect to %s: %s", ap, strerror(last));
    return -1;
}

/* ---- 4. session through the shim ------------------------------------------------------------- */

/* The shim waits for the appliance's answer without a time limit; a peer that is not vmcudad (e.g. the
 * admin HTTP port) may never answer. The doctor gives up after HANDSHAKE_LIMIT_S and says so. */
#define HANDSHAKE_LIMIT_S 90
static int watchdog_fd = -1;
static void handshake_timeout(int sig) {
    (void)sig;
    static const char msg[] =
        "  PROBLEM: no answer to the session request within 90 s: the address is not vmcudad's client port (7070; "
        "7071 is the admin HTTP), or the appliance is overloaded (journalctl -u vmcudad on the appliance)\n"
        "\nRESULT: NOT WORKING. no answer from the appliance to the session request within 90 s\n";
    if (write(watchdog_fd >= 0 ? watchdog_fd : 1, msg, sizeof msg - 1) < 0) {
    }
    _exit(1);
}

/* Runs cudaGetDeviceCount with stderr captured: the shim explains a failed or GPU-less session there. */
static cudaError_t open_session(int *count, char *said, size_t said_len) {
    said[0] = 0;
    fflush(stdout);
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = dup(2);
    if (tmp && saved >= 0)
        dup2(fileno(tmp), 2);
    watchdog_fd = 1;
    signal(SIGALRM, handshake_timeout);
    alarm(HANDSHAKE_LIMIT_S);
    cudaError_t e = cudaGetDeviceCount(count);
    alarm(0);
    fflush(stderr);
    if (tmp && saved >= 0) {
        dup2(saved, 2);
        close(saved);
        rewind(tmp);
        size_t n = fread(said, 1, said_len - 1, tmp);
        said[n] = 0;
    }
    if (tmp)
        fclose(tmp);
    return e;
}

static int gpus_found;
static int session_up;

static void check_session(int network_ok) {
    section("4. Session (authentication, protocol version, GPUs)");
    int count = 0;
    char said[8192];
    double t0 = now_s();
    cudaError_t e = open_session(&count, said, sizeof said);
    double ms = (now_s() - t0) * 1e3;
    /* What the shim printed, verbatim. */
    for (char *s = said, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
        nl = strchr(s, '\n');
        line("shim says: %.*s", nl ? (int)(nl - s) : (int)strlen(s), s);
    }
    const char *ap = settings[S_APPLIANCE].value;
    int no_config = strstr(said, "no appliance configured") != NULL;
    const char *cannot = strstr(said, "cannot use appliance");
    const char *refused = strstr(said, "appliance refused: ");
    const char *unplaced = strstr(said, "no place in the pool of appliances");
    const char *no_gpu = strstr(said, "appliance has no usable GPU");
    session_up = !no_config && !cannot && !unplaced;
    if (session_up)
        line("session: opened in %.0f ms (protocol version %u accepted%s; this program was uploaded, rewritten "
             "and started as the worker unless the appliance had it cached)",
             ms, VMC_PROTO_VERSION, settings[S_TOKEN].value[0] ? ", token accepted" : "");
    if (e == cudaSuccess) {
        gpus_found = count;
        line("GPUs: %d", count);
        if (count == 0)
            problem("the appliance reports no GPU: %s", no_gpu ? no_gpu : "see the lines above");
        return;
    }
    line("GPUs: 0 (cudaGetDeviceCount: %s)", err_text(e));
    if (no_config) {
        if (!problems)
            problem("no appliance configured: see the line above");
    } else if (unplaced) {
        char why[1024];
        snprintf(why, sizeof why, "%s", unplaced);
        why[strcspn(why, "\n")] = 0;
        if (!problems)
            problem("the pool could not place this client (%s): see docs/pool.md \"Failures\"", why);
    } else if (refused) {
        char why[1024];
        snprintf(why, sizeof why, "%s", refused + strlen("appliance refused: "));
        why[strcspn(why, "\n")] = 0;
        if (strstr(why, "protocol version"))
            problem("the appliance refused the session because client and appliance speak different protocol versions "
                    "(%s; this client speaks %u): install the same vmcuda version on both", why, VMC_PROTO_VERSION);
        else if (strstr(why, "token"))
            problem("the appliance refused the token (%s): set 'token' in %s (or VMCUDA_TOKEN) to the token the appliance "
                    "operator gave you", why, config_path);
        else if (strstr(why, "worker failed to start"))
            problem("the appliance could not start this program as its worker (%s): look at the worker log it names, "
                    "on the appliance (journalctl -u vmcudad; /var/lib/vmcuda/sessions/<id>/worker.log)", why);
        else if (strstr(why, "no GPU free"))
            problem("every GPU of the appliance is busy (%s): retry later, or raise scheduler.max_sessions_per_gpu / "
                    "scheduler.queue_timeout_s on the appliance", why);
        else
            problem("the appliance refused the session: %s", why);
    } else if (cannot) {
        char why[1024];
        snprintf(why, sizeof why, "%s", cannot);
        why[strcspn(why, "\n")] = 0;
        if (network_ok)
            problem("the appliance accepted the TCP connection but the session failed (%s): check that %s is vmcudad's "
                    "client port (7070), not the admin port, and look at the appliance's log (journalctl -u vmcudad)", why, ap);
        else if (!problems)
            problem("no appliance reachable: see the line above (%s)", why);
    } else if (e == cudaErrorInsufficientDriver) {
        char why[512] = "";
        if (no_gpu) {
            const char *r = no_gpu + strlen("appliance has no usable GPU");
            r += strspn(r, ": ");
            snprintf(why, sizeof why, " (%.*s)", (int)strcspn(r, "\n"), r);
        }
        problem("the appliance has no working NVIDIA driver%s: install NVIDIA's driver (R580 or newer for CUDA 13) "
                "in the appliance VM; its console and /opt/vmcuda/libexec/vmcuda-gpu-check say how", why);
    } else if (e == cudaErrorNoDevice) {
        problem("the appliance's driver sees no GPU: check the GPU passthrough (DirectPath I/O on ESXi, vfio-pci on "
                "KVM) and `nvidia-smi` in the appliance");
    } else if (e == cudaErrorDevicesUnavailable) {
        problem("the appliance's GPUs are unavailable (busy in exclusive mode, or the session was lost): see the lines "
                "above and `vmcuda status --admin APPLIANCE:7071`");
    } else if (e == cudaErrorSystemDriverMismatch || e == cudaErrorCompatNotSupportedOnDevice) {
        problem("the appliance's NVIDIA driver does not match its CUDA runtime (%s): reinstall the driver "
                "(R580 or newer for CUDA 13)", cudaGetErrorName(e));
    } else {
        problem("the appliance cannot use its GPUs: %s", err_text(e));
    }
}

/* ---- 5. GPUs --------------------------------------------------------------------------------- */

static void check_gpus(void) {
    section("5. GPUs");
    int drv = 0;
    cudaError_t e = cudaDriverGetVersion(&drv);
    if (e != cudaSuccess)
        line("appliance NVIDIA driver: unknown (cudaDriverGetVersion: %s)", err_text(e));
    else if (drv)
        line("appliance NVIDIA driver: supports CUDA %d.%d", drv / 1000, (drv % 1000) / 10);
    else
        line("appliance NVIDIA driver: none installed (cudaDriverGetVersion = 0)");
    if (!gpus_found) {
        line("none");
        return;
    }
    for (int d = 0; d < gpus_found; d++) {
        struct cudaDeviceProp p;
        memset(&p, 0, sizeof p);
        e = cudaGetDeviceProperties(&p, d);
        if (e != cudaSuccess) {
            problem("cudaGetDeviceProperties(%d): %s", d, err_text(e));
            continue;
        }
        line("GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, PCI %04x:%02x:%02x", d, p.name, p.major, p.minor,
             p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30), p.pciDomainID, p.pciBusID, p.pciDeviceID);
    }
}

/* ---- 6. performance -------------------------------------------------------------------------- */

static void check_performance(void) {
    section("6. Round trip and bandwidth");
    if (!session_up) {
        line("skipped: no session");
        return;
    }
    /* With GPUs the brief's call; without, a call that needs no GPU still measures the network and worker. */
    double best = 1e9, total = 0;
    int failed = 0;
    cudaError_t first_err = cudaSuccess;
    for (int i = 0; i < RT_CALLS; i++) {
        int v = 0;
        double t0 = now_s();
        cudaError_t e = gpus_found ? cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) : cudaDriverGetVersion(&v);
        double dt = now_s() - t0;
        if (e != cudaSuccess && !failed++)
            first_err = e;
        total += dt;
        if (dt < best)
            best = dt;
    }
    line("round trip: %d x %s: average %.1f us, best %.1f us%s", RT_CALLS,
         gpus_found ? "cudaDeviceGetAttribute" : "cudaDriverGetVersion", total / RT_CALLS * 1e6, best * 1e6,
         failed ? " (calls failed)" : "");
    if (failed)
        problem("the round-trip calls failed: %s", err_text(first_err));
    if (!gpus_found) {
        line("64 MiB copy: skipped (no GPU)");
        return;
    }
    unsigned char *src = malloc(COPY_BYTES), *back = malloc(COPY_BYTES);
    void *dev = NULL;
    if (!src || !back) {
        line("64 MiB copy: skipped (out of host memory)");
        free(src);
        free(back);
        return;
    }
    for (size_t i = 0; i < COPY_BYTES; i++)
        src[i] = (unsigned char)(i * 131u + (i >> 20));
    memset(back, 0, COPY_BYTES);
    cudaError_t e = cudaMalloc(&dev, COPY_BYTES);
    if (e != cudaSuccess) {
        problem("cudaMalloc(64 MiB) on the appliance failed: %s", err_text(e));
        goto out;
    }
    double t0 = now_s();
    e = cudaMemcpy(dev, src, COPY_BYTES, cudaMemcpyHostToDevice);
    double h2d = now_s() - t0;
    if (e != cudaSuccess) {
        problem("cudaMemcpy host-to-device (64 MiB) failed: %s", err_text(e));
        goto out;
    }
    t0 = now_s();
    e = cudaMemcpy(back, dev, COPY_BYTES, cudaMemcpyDeviceToHost);
    double d2h = now_s() - t0;
    if (e != cudaSuccess) {
        problem("cudaMemcpy device-to-host (64 MiB) failed: %s", err_text(e));
        goto out;
    }
    int same = memcmp(src, back, COPY_BYTES) == 0;
    line("64 MiB host-to-device: %.0f MB/s (%.1f ms)", COPY_BYTES / h2d / 1e6, h2d * 1e3);
    line("64 MiB device-to-host: %.0f MB/s (%.1f ms)%s", COPY_BYTES / d2h / 1e6, d2h * 1e3,
         same ? ", data verified" : "");
    if (!same)
        problem("the 64 MiB copied to the GPU and back differ from what was sent: report this as a bug, with "
                "the appliance's log");
    else if (COPY_BYTES / h2d < 100e6 || COPY_BYTES / d2h < 100e6)
        line("note: under 100 MB/s: check the client network (MTU 9000 on a private port group / bridge, "
             "see docs/troubleshooting.md)");
out:
    if (dev)
        cudaFree(dev);
    free(src);
    free(back);
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *to) {
    fprintf(to,
            "Usage: vmcuda-doctor [--appliance HOST:PORT] [--config FILE] [--smi | PROGRAM]\n"
            "  Checks this client's vmcuda set-up: the shim, the configuration, the network path to the\n"
            "  appliance, the session (token, protocol version), the GPUs, the round trip and a 64 MiB copy.\n"
            "  --appliance  overrides the configured appliance (sets VMCUDA_APPLIANCE)\n"
            "  --config     reads FILE instead of /etc/vmcuda/client.conf (sets VMCUDA_CONFIG)\n"
            "  --smi        prints the appliance's GPUs (memory, utilisation, temperature, power, sessions) and this\n"
            "               tenant's sessions instead, as `vmcuda smi` does (opens no session)\n"
            "  PROGRAM      also says which front end serves PROGRAM (read from its file, not run)\n"
            "  Exit status: 0 all good, 1 a problem was found (the last lines say what to do), 2 bad usage.\n");
}

/* `vmcuda smi`: the appliance's GPUs and this tenant's sessions, as the appliance tells them. */
static int print_appliance_view(void) {
    static char view[65536];
    if (vmc_appliance_view(view, sizeof view) != 0) {
        fprintf(stderr, "vmcuda smi: %s\n", view);
        return 1;
    }
    fputs(view, stdout);
    if (view[0] && view[strlen(view) - 1] != '\n')
        putchar('\n');
    return 0;
}

int main(int argc, char **argv) {
    const char *program = NULL;
    int smi = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--smi")) {
            smi = 1;
        } else if (!strcmp(a, "--version")) {
            printf("vmcuda-doctor %s (protocol version %u)\n", VMCUDA_VERSION, VMC_PROTO_VERSION);
            return 0;
        } else if ((!strcmp(a, "--appliance") || !strcmp(a, "--config")) && i + 1 < argc) {
            setenv(!strcmp(a, "--appliance") ? "VMCUDA_APPLIANCE" : "VMCUDA_CONFIG", argv[++i], 1);
        } else if (!strncmp(a, "--appliance=", 12)) {
            setenv("VMCUDA_APPLIANCE", a + 12, 1);
        } else if (!strncmp(a, "--config=", 9)) {
            setenv("VMCUDA_CONFIG", a + 9, 1);
        } else if (a[0] != '-' && !program) {
            program = a;
        } else {
            fprintf(stderr, "vmcuda-doctor: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (smi)
        return print_appliance_view();
    printf("vmcuda doctor %s\n", VMCUDA_VERSION);
    if (program && doctor_explain_program(program) != 0)
        problem("%s cannot be served as it is (section 0 says why)", program);
    if (check_runtime() != 0)
        goto verdict;
    check_config();
    int network_ok = check_network() == 0;
    check_session(network_ok);
    if (session_up)
        check_gpus();
    check_performance();
verdict:
    printf("\n");
    if (problems) {
        printf("RESULT: NOT WORKING. %s\n", verdict);
        if (problems > 1)
            printf("(%d problems in all; the first one is the one to fix first)\n", problems);
        return 1;
    }
    printf("RESULT: OK: %d GPU(s) on %s are usable from this VM.\n", gpus_found, settings[S_APPLIANCE].value);
    return 0;
}

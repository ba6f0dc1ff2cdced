/* Reading an appliance's UCX worker address and packed rkey safely. UCX's readers of both trust their input:
 * damaged ones make UCX 1.13 fail an assertion and abort, or fault (client-shim/tools/vmcuda_ucx_check.c says
 * where). The client's process is the user's program, so UCX first reads them in vmcuda-ucx-check, a process of
 * its own, and the client hands them to its own UCX only when that one lived (transport_ucx.c). */
#define _GNU_SOURCE
#include "ucx_blob_check.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define CHECKER "vmcuda-ucx-check"

uint8_t *vmc_ucx_padded_copy(const uint8_t *bytes, uint32_t n) {
    uint8_t *b = calloc(1, (size_t)n + VMC_UCX_BLOB_PAD);
    if (b)
        memcpy(b, bytes, n);
    return b;
}

/* The checker lies next to libvmcuda-client.so once installed (/usr/lib/vmcuda, the bundle's client/), and in
 * ../bin of it in the build tree (client-shim/target), as vmcuda-doctor does. */
static int find_checker(char *path, size_t len) {
    Dl_info info;
    snprintf(path, len, "%s (next to libvmcuda-client.so)", CHECKER);
    if (!dladdr((void *)vmc_ucx_check_blobs, &info) || !info.dli_fname)
        return -1;
    char lib[4096];
    snprintf(lib, sizeof lib, "%s", info.dli_fname);
    const char *dir = dirname(lib);
    static const char *const where[] = {"%s/" CHECKER, "%s/../bin/" CHECKER};
    for (size_t i = 0; i < sizeof where / sizeof *where; i++) {
        snprintf(path, len, where[i], dir);
        if (access(path, X_OK) == 0)
            return 0;
    }
    snprintf(path, len, "%s/" CHECKER, dir);
    return -1;
}

/* This process's environment without LD_PRELOAD: the checker must not load the program's preloaded libraries
 * (vmcuda's own among them), only UCX. */
static char **checker_environment(void) {
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 1, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    return env;
}

static int send_all(int fd, const void *buf, size_t n) {
    for (size_t sent = 0; sent < n;) {
        ssize_t w = send(fd, (const char *)buf + sent, n - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        sent += (size_t)w;
    }
    return 0;
}

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Whether `text` holds the checker's answer: its last line, "ok" or "vmcuda-ucx-check: WHY", complete. */
static int has_answer(const char *text) {
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if ((strncmp(line, "ok\n", 3) == 0 || strncmp(line, CHECKER ": ", sizeof CHECKER + 1) == 0) && strchr(line, '\n'))
            return 1;
    return 0;
}

/* Reads the checker's output until its answer is in, it has exited (`pidfd`, when the kernel has them) or closed
 * its end, or the time is up; keeps the last part. Not only the end of the stream: a fork() in another thread of the
 * program between the spawn and the close of the checker's end keeps a copy of that end open as long as the forked
 * child lives (a DataLoader worker, say), and the end of the stream would not come. 1 when the time ran out. */
static int read_answer(int fd, int pidfd, int timeout_ms, char *out, size_t out_len) {
    size_t have = 0;
    int exited = 0;
    out[0] = 0;
    int64_t deadline = now_ms() + timeout_ms;
    while (!has_answer(out)) {
        int64_t left = deadline - now_ms();
        struct pollfd p[2] = {{fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
        int r = exited ? 1 : left > 0 ? poll(p, pidfd >= 0 ? 2 : 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 1;
        if (have + 1 >= out_len) { /* keep the later half: the answer is the last line */
            memmove(out, out + have / 2, have - have / 2);
            have -= have / 2;
        }
        exited |= pidfd >= 0 && (p[1].revents & POLLIN);
        /* once it has exited, only what it wrote before: never wait for the stream's end */
        ssize_t got = recv(fd, out + have, out_len - 1 - have, exited ? MSG_DONTWAIT : 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
        out[have] = 0;
    }
    return 0;
}

/* Whether `text` has the line `want`. */
static int has_line(const char *text, const char *want) {
    size_t n = strlen(want);
    for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, want, n) == 0 && (line[n] == '\n' || line[n] == 0))
            return 1;
    return 0;
}

/* The rest of the first line that starts with `prefix`, copied into why; 1 when there is one. */
static int line_starting(const char *text, const char *prefix, char *why, size_t why_len) {
    size_t n = strlen(prefix);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, prefix, n) == 0) {
            snprintf(why, why_len, "%.*s", (int)strcspn(line + n, "\n"), line + n);
            return 1;
        }
    return 0;
}

int vmc_ucx_check_blobs(const uint8_t *rkey, uint32_t rkey_len, const uint8_t *address, uint32_t address_len,
                        int peer_mode, int timeout_ms, char *why, size_t why_len) {
    char path[4200];
    if (find_checker(path, sizeof path) != 0) {
        snprintf(why, why_len, "%s is missing, which reads the appliance's UCX address in a process of its own first", path);
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(why, why_len, "cannot run %s: %s", CHECKER, strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    /* its stdin, stdout and stderr are one end of the pair (UCX's complaints stay out of the program's stderr);
     * none of the program's other descriptors (its sockets to the appliance) */
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    /* and none of the program's signal mask or handlers */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char **env = checker_environment();
    /* half the time for UCX's first contact with the agent, the rest for UCX's start and its close */
    char contact[16];
    snprintf(contact, sizeof contact, "%d", timeout_ms / 2 > 0 ? timeout_ms / 2 : 1);
    char *argv[] = {CHECKER, contact, peer_mode ? "peer" : "plain", NULL};
    pid_t pid = -1;
    int rc = env ? posix_spawn(&pid, path, &fa, &attr, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(env);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        snprintf(why, why_len, "cannot run %s: %s", path, strerror(rc));
        return -1;
    }
    /* the checker as a descriptor: its exit is seen even when the stream's end is not, and a signal reaches it and
     * no other process that took its pid (a program that reaps its children itself); -1 on kernels before 5.3 */
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    uint32_t lens[2] = {rkey_len, address_len};
    /* a checker that died early makes these fail; its status says why */
    if (send_all(sv[0], lens, sizeof lens) == 0 && send_all(sv[0], rkey, rkey_len) == 0)
        send_all(sv[0], address, address_len);
    shutdown(sv[0], SHUT_WR);
    char out[4096];
    int timed_out = read_answer(sv[0], pidfd, timeout_ms, out, sizeof out);
    close(sv[0]);
    if (timed_out) {
        if (pidfd >= 0)
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        else if (waitpid(pid, NULL, WNOHANG) == 0) /* still ours and running */
            kill(pid, SIGKILL);
    }
    if (pidfd >= 0)
        close(pidfd);
    int status = 0;
    pid_t waited;
    while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    /* a program that ignores SIGCHLD, or reaps every child itself, leaves no status: the answer line decides */
    int known = waited == pid;
    int said_ok = !timed_out && has_line(out, "ok");
    if (said_ok && (!known || (WIFEXITED(status) && WEXITSTATUS(status) == 0)))
        return 0;
    if (timed_out)
        snprintf(why, why_len, "%s took more than %d ms to read the appliance's UCX address and rkey", CHECKER, timeout_ms);
    else if (known && WIFSIGNALED(status))
        snprintf(why, why_len, "the appliance's UCX address or rkey killed %s (signal %d: %s)", CHECKER,
                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (!line_starting(out, CHECKER ": ", why, why_len))
        snprintf(why, why_len, "%s gave no answer", CHECKER);
    return -1;
}

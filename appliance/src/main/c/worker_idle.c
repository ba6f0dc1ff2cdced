/* How a session ends when its client does not end it: the idle-release watchdog
 * (VMCUDA_IDLE_RELEASE_MINUTES, from the daemon's session.idle_release_minutes), the loss of the daemon
 * link, and the abort reason the daemon records. A release writes an ERROR frame (code + one-line message)
 * on every client connection the worker serves, so the client shim can say why at its next call, then
 * tells the daemon (ABORT + BYE) and exits; exiting releases every device allocation of the process. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

#define MAX_CONNS 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int conns[MAX_CONNS];
static int n_conns;
static char abort_reason[256];
static int abort_set; /* written once, under lock; read without it */
/* atomics, not under the lock: every call passes here */
static int in_flight;
static int64_t last_activity_ns;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The idle clock starts with the first connection or the watchdog, whichever comes first. */
static void start_idle_clock(void) {
    int64_t never = 0;
    __atomic_compare_exchange_n(&last_activity_ns, &never, now_ns(), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void vmc_w_activity_begin(void) { __atomic_add_fetch(&in_flight, 1, __ATOMIC_RELAXED); }

void vmc_w_activity_end(void) {
    __atomic_store_n(&last_activity_ns, now_ns(), __ATOMIC_RELAXED);
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELEASE);
}

void vmc_w_conn_opened(int fd) {
    pthread_mutex_lock(&lock);
    if (n_conns < MAX_CONNS)
        conns[n_conns++] = fd;
    pthread_mutex_unlock(&lock);
    start_idle_clock();
}

/* Called before the fd is closed, so a release never writes to a descriptor number that was reused. */
void vmc_w_conn_closing(int fd) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_conns; i++) {
        if (conns[i] == fd) {
            conns[i] = conns[--n_conns];
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

void vmc_w_note_abort(const char *why) {
    pthread_mutex_lock(&lock);
    if (!__atomic_load_n(&abort_set, __ATOMIC_ACQUIRE)) {
        snprintf(abort_reason, sizeof abort_reason, "%s", why);
        for (char *p = abort_reason; *p; p++)
            if ((unsigned char)*p < 0x20)
                *p = ' ';
        __atomic_store_n(&abort_set, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
}

const char *vmc_w_abort_reason(void) {
    return __atomic_load_n(&abort_set, __ATOMIC_ACQUIRE) ? abort_reason : NULL;
}

void vmc_w_release_session(uint32_t code, const char *msg, int exit_status) {
    vmc_w_log("releasing the session: %s", msg);
    vmc_w_note_abort(msg);
    pthread_mutex_lock(&lock); /* held until exit: no connection closes (and no fd is reused) meanwhile */
    struct timeval tv = {1, 0};
    for (int i = 0; i < n_conns; i++) {
        /* a client that stopped reading must not keep the worker from exiting */
        setsockopt(conns[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        vmc_send_error(conns[i], code, msg);
        shutdown(conns[i], SHUT_WR);
    }
    vmc_w_daemon_bye(exit_status);
    vmc_w_shm_release_all_lanes(); /* as late as possible: other connection threads may still be finishing */
    _exit(exit_status);
}

static double idle_minutes;
static char idle_text[32];

static void *watchdog(void *arg) {
    (void)arg;
    int64_t limit = (int64_t)(idle_minutes * 60e9);
    int64_t tick = limit / 4 < 1000000000 ? limit / 4 : 1000000000;
    if (tick < 10000000)
        tick = 10000000;
    for (;;) {
        struct timespec ts = {tick / 1000000000, tick % 1000000000};
        nanosleep(&ts, NULL);
        /* in_flight first: a call that ended since stored its time before it counted itself out */
        int busy = __atomic_load_n(&in_flight, __ATOMIC_ACQUIRE);
        int64_t last = __atomic_load_n(&last_activity_ns, __ATOMIC_RELAXED);
        int idle = !busy && last && now_ns() - last >= limit;
        if (idle) {
            char msg[160];
            snprintf(msg, sizeof msg, "session released after %s minutes without CUDA calls", idle_text);
            vmc_w_release_session(VMC_ERROR_IDLE_RELEASED, msg, 0);
        }
    }
    return NULL;
}

void vmc_w_idle_start(void) {
    const char *s = getenv("VMCUDA_IDLE_RELEASE_MINUTES");
    if (!s || !*s)
        return;
    char *end;
    double m = strtod(s, &end);
    if (*end != 0 || !(m > 0) || m > 1e6) {
        if (!(m == 0 && *end == 0))
            vmc_w_log("ignoring VMCUDA_IDLE_RELEASE_MINUTES='%s'", s);
        return;
    }
    idle_minutes = m;
    snprintf(idle_text, sizeof idle_text, "%s", s);
    start_idle_clock();
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) == 0)
        pthread_detach(t);
    else
        vmc_w_log("cannot start the idle-release watchdog");
}

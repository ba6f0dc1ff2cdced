#include "shim_copy.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 8
#define SPLIT_MIN (1u << 20) /* below this one thread is as fast as several */

struct part {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
};

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER; /* one parallel copy at a time */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static struct part parts[MAX_THREADS];
static unsigned generation, pending, helpers;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *helper(void *arg) {
    unsigned me = (unsigned)(uintptr_t)arg, seen = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (generation == seen)
            pthread_cond_wait(&work, &lock);
        seen = generation;
        struct part p = parts[me];
        pthread_mutex_unlock(&lock);
        if (p.n)
            memcpy(p.dst, p.src, p.n);
        pthread_mutex_lock(&lock);
        if (--pending == 0)
            pthread_cond_signal(&done);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* Helpers: VMCUDA_COPY_THREADS - 1, by default up to 3 more than the caller, never more than the
 * machine has cores. The threads are daemons of the process, idle except during large copies. */
/* A forked child has none of the parent's helper threads: it copies alone. */
static void forget_helpers(void) { helpers = 0; }

static void start_helpers(void) {
    pthread_atfork(NULL, NULL, forget_helpers);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("VMCUDA_COPY_THREADS");
    long want = env && *env ? strtol(env, NULL, 10) : 4;
    if (want > cores)
        want = cores;
    if (want > MAX_THREADS)
        want = MAX_THREADS;
    for (long i = 1; i < want; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, helper, (void *)(uintptr_t)helpers) == 0)
            helpers++;
        pthread_attr_destroy(&attr);
    }
}

void vmc_copy(void *dst, const void *src, size_t n) {
    if (n >= SPLIT_MIN)
        pthread_once(&once, start_helpers);
    if (n < SPLIT_MIN || helpers == 0 || pthread_mutex_trylock(&busy) != 0) {
        memcpy(dst, src, n);
        return;
    }
    unsigned ways = helpers + 1;
    size_t share = (n / ways + 4095) & ~(size_t)4095; /* page-aligned pieces */
    size_t off = 0;
    pthread_mutex_lock(&lock);
    pending = 0;
    for (unsigned i = 0; i < helpers && off + share < n; i++, off += share) {
        parts[i] = (struct part){(uint8_t *)dst + off, (const uint8_t *)src + off, share};
        pending++;
    }
    for (unsigned i = pending; i < helpers; i++)
        parts[i] = (struct part){NULL, NULL, 0};
    pending = helpers; /* every helper wakes and reports, also those with nothing to do */
    generation++;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&lock);
    memcpy((uint8_t *)dst + off, (const uint8_t *)src + off, n - off);
    pthread_mutex_lock(&lock);
    while (pending)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&busy);
}

#include "shim_parallel.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 8

static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER; /* one caller's work at a time */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static void (*job_fn)(void *, unsigned, unsigned);
static void *job_arg;
static unsigned job_ways, generation, pending, helpers;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Helper `me` runs part me + 1 of each job that has that many ways, and reports back either way. */
static void *helper(void *arg) {
    unsigned me = (unsigned)(uintptr_t)arg, seen = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (generation == seen)
            pthread_cond_wait(&work, &lock);
        seen = generation;
        void (*fn)(void *, unsigned, unsigned) = job_fn;
        void *a = job_arg;
        unsigned ways = job_ways;
        pthread_mutex_unlock(&lock);
        if (me + 1 < ways)
            fn(a, me + 1, ways);
        pthread_mutex_lock(&lock);
        if (--pending == 0)
            pthread_cond_signal(&done);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* A forked child has none of the parent's helper threads: it works alone. */
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

unsigned vmc_parallel_capacity(void) {
    pthread_once(&once, start_helpers);
    return helpers + 1;
}

unsigned vmc_parallel(unsigned want, void (*fn)(void *arg, unsigned part, unsigned ways), void *arg) {
    unsigned ways = want > 1 ? vmc_parallel_capacity() : 1;
    if (ways > want)
        ways = want;
    if (ways <= 1 || pthread_mutex_trylock(&busy) != 0) {
        fn(arg, 0, 1);
        return 1;
    }
    pthread_mutex_lock(&lock);
    job_fn = fn;
    job_arg = arg;
    job_ways = ways;
    pending = helpers; /* every helper wakes and reports, also those with no part in this job */
    generation++;
    pthread_cond_broadcast(&work);
    pthread_mutex_unlock(&lock);
    fn(arg, 0, ways);
    pthread_mutex_lock(&lock);
    while (pending)
        pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&busy);
    return ways;
}

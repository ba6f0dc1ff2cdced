/* The order of a client process's calls across its connections (PROTOCOL.md "Calls from several threads"):
 * each worker thread dispatches a call only once every call its client numbered before it has been. The
 * common case, one thread or calls already in order, costs an atomic load, a compare-and-swap and an
 * uncontended lock. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "worker.h"

#define STILL_RUNNING_WAIT_S 60 /* how long a call that is being dispatched may hold the others back */

static uint64_t next_number = 1; /* the lowest number not yet dispatched */
static uint64_t holding;         /* an asynchronous call being dispatched, which holds the order meanwhile */
static int waiters;              /* changed under lock; read without it by vmc_w_order_done */
static long gap_wait_ms = 2000;  /* how long a number that has not arrived holds the others back */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* a clock step is no timeout */
    pthread_cond_init(&moved, &a);
    pthread_condattr_destroy(&a);
}

void vmc_w_order_set_gap_ms(long ms) { gap_wait_ms = ms; }

static struct timespec after_ms(long ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

void vmc_w_order_wait(uint64_t number) {
    pthread_once(&once, init);
    if (__atomic_load_n(&next_number, __ATOMIC_ACQUIRE) >= number)
        return;
    struct timespec deadline = after_ms(gap_wait_ms);
    long running_waited_s = 0;
    pthread_mutex_lock(&lock);
    __atomic_add_fetch(&waiters, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        uint64_t next = __atomic_load_n(&next_number, __ATOMIC_SEQ_CST);
        if (next >= number)
            break;
        if (pthread_cond_timedwait(&moved, &lock, &deadline) != ETIMEDOUT)
            continue;
        next = __atomic_load_n(&next_number, __ATOMIC_ACQUIRE);
        if (next >= number)
            break;
        /* the call awaited is being dispatched (a long copy): wait on, within reason */
        if (__atomic_load_n(&holding, __ATOMIC_ACQUIRE) == next && running_waited_s < STILL_RUNNING_WAIT_S) {
            running_waited_s++;
            deadline = after_ms(1000);
            continue;
        }
        /* never sent (a client thread that died mid-send), or running and blocked on what only a later call
         * can give (a stream waiting for a value another thread writes): go on */
        vmc_w_log("call %llu waited for call %llu of another thread of the client (%s); going on",
                  (unsigned long long)number, (unsigned long long)next,
                  __atomic_load_n(&holding, __ATOMIC_ACQUIRE) == next ? "still running after 60 s" : "not arrived");
        __atomic_store_n(&next_number, number, __ATOMIC_RELEASE);
        break;
    }
    __atomic_sub_fetch(&waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&lock);
}

void vmc_w_order_holding(uint64_t number) { __atomic_store_n(&holding, number, __ATOMIC_RELEASE); }

void vmc_w_order_done(uint64_t number) {
    pthread_once(&once, init);
    uint64_t held = number;
    __atomic_compare_exchange_n(&holding, &held, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    uint64_t next = __atomic_load_n(&next_number, __ATOMIC_ACQUIRE);
    /* only the dispatcher of `next` moves it, except after a gap: take the larger */
    while (next <= number && !__atomic_compare_exchange_n(&next_number, &next, number + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
    /* No lost wake-up, and no lock on the common path (nobody waiting): a waiter counts itself, then reads the
     * number; this side moved the number, then reads the count (all sequentially consistent), so either the
     * waiter sees the new number or this side sees the waiter. The waiter holds the lock from its count until it
     * sleeps, so a broadcast under the lock comes after that. */
    if (__atomic_load_n(&waiters, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&moved);
        pthread_mutex_unlock(&lock);
    }
}

/* The order of a client process's calls across its connections (PROTOCOL.md "Calls from several threads"):
 * each worker thread dispatches a call only once every call its client numbered before it has been. The
 * common case, one thread or calls already in order, costs an atomic load, a compare-and-swap and an
 * uncontended lock. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "worker.h"

#define GAP_WAIT_NS 2000000000ll /* how long a missing number holds the others back */

static uint64_t next_number = 1; /* the lowest number not yet dispatched */
static int waiters;              /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;

void vmc_w_order_wait(uint64_t number) {
    if (__atomic_load_n(&next_number, __ATOMIC_ACQUIRE) >= number)
        return;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += GAP_WAIT_NS / 1000000000ll;
    pthread_mutex_lock(&lock);
    waiters++;
    int timed_out = 0;
    while (__atomic_load_n(&next_number, __ATOMIC_ACQUIRE) < number && !timed_out)
        timed_out = pthread_cond_timedwait(&moved, &lock, &deadline) == ETIMEDOUT;
    waiters--;
    if (timed_out && __atomic_load_n(&next_number, __ATOMIC_ACQUIRE) < number) {
        /* never sent (a client thread that died mid-send), or still being dispatched and blocked on what
         * only a later call can give (a stream waiting for a value another thread writes): go on */
        vmc_w_log("call %llu waited 2 s for call %llu of another thread of the client (not arrived, or still "
                  "running); going on", (unsigned long long)number,
                  (unsigned long long)__atomic_load_n(&next_number, __ATOMIC_ACQUIRE));
        __atomic_store_n(&next_number, number, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&lock);
}

void vmc_w_order_done(uint64_t number) {
    uint64_t next = __atomic_load_n(&next_number, __ATOMIC_ACQUIRE);
    /* only the dispatcher of `next` moves it, except after a gap: take the larger */
    while (next <= number && !__atomic_compare_exchange_n(&next_number, &next, number + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    /* under the lock: a waiter checks the number under it before it sleeps, so it either sees the new
     * number or is asleep when the broadcast comes (no lost wake-up) */
    pthread_mutex_lock(&lock);
    if (waiters)
        pthread_cond_broadcast(&moved);
    pthread_mutex_unlock(&lock);
}

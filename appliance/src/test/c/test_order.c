/* worker_order.c under ASan/UBSan with real threads: eight dispatcher threads
 * get the numbers 1..N dealt round-robin (as eight client connections would), each waits its turn and
 * records the order it ran in, which must be 1..N exactly however the threads are scheduled, without
 * waiting out the gap time (a lost wake-up would); a number that
 * never comes holds the others back for the gap time only, and numbers below the next one pass at once. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "worker.h"

static int failures;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "test_order:%d: ", __LINE__); fprintf(stderr, __VA_ARGS__); \
                                       fprintf(stderr, "\n"); failures++; } } while (0)

void vmc_w_log(const char *fmt, ...) { (void)fmt; }

#define THREADS 8
#define PER_THREAD 5000
#define N (THREADS * PER_THREAD)

static uint64_t ran[N];
static unsigned ran_count;

static void *dispatcher(void *arg) {
    uint64_t first = (uint64_t)(uintptr_t)arg;
    for (uint64_t n = first; n <= N; n += THREADS) {
        vmc_w_order_wait(n);
        ran[__atomic_fetch_add(&ran_count, 1, __ATOMIC_SEQ_CST)] = n;
        if (n % 3 == 0)
            sched_yield(); /* a dispatch that takes a while */
        vmc_w_order_done(n);
    }
    return NULL;
}

static int later_ran;

static void *wait_for_next_two(void *arg) {
    (void)arg;
    vmc_w_order_wait(N + 2);
    __atomic_store_n(&later_ran, 1, __ATOMIC_RELEASE);
    vmc_w_order_done(N + 2);
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
    vmc_w_order_set_gap_ms(30000); /* a dispatcher descheduled for seconds on a loaded machine is no gap */
    double start = now();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, dispatcher, (void *)(uintptr_t)(THREADS - i)); /* started in the wrong order */
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int in_order = ran_count == N;
    for (unsigned k = 0; k < ran_count && in_order; k++)
        in_order = ran[k] == k + 1;
    CHECK(in_order, "%u calls ran, not in the order 1..%d", ran_count, N);
    /* a lost wake-up would show as waits that end by the gap timeout (30 s here), not as disorder */
    CHECK(now() - start < 20, "%d calls in order took %.1f s: wake-ups were lost", N, now() - start);

    /* an asynchronous call being dispatched (a long copy) holds the others beyond the gap time */
    vmc_w_order_set_gap_ms(200);
    vmc_w_order_wait(N + 1);
    vmc_w_order_holding(N + 1);
    pthread_t later;
    double t1 = now();
    pthread_create(&later, NULL, wait_for_next_two, NULL);
    struct timespec nap = {0, 700 * 1000000L};
    nanosleep(&nap, NULL); /* longer than the gap time */
    CHECK(!__atomic_load_n(&later_ran, __ATOMIC_ACQUIRE), "a call ran while the one before it was still being dispatched");
    vmc_w_order_done(N + 1);
    pthread_join(later, NULL);
    CHECK(__atomic_load_n(&later_ran, __ATOMIC_ACQUIRE) && now() - t1 < 5, "the next call did not run once the running one was done");

    /* N + 3 never comes: N + 4 goes on after the gap time, and then N + 3 itself would not wait */
    vmc_w_order_set_gap_ms(300);
    double t0 = now();
    vmc_w_order_wait(N + 4);
    double waited = now() - t0;
    CHECK(waited > 0.25 && waited < 10, "a missing number held the next one back %.2f s (0.3 s expected)", waited);
    vmc_w_order_done(N + 4);
    t0 = now();
    vmc_w_order_wait(N + 3);
    CHECK(now() - t0 < 0.5, "a number below the next one waited");
    printf("test_order: %d calls of %d threads in order; a missing number held the next back %.1f s; %d failures\n",
           N, THREADS, waited, failures);
    return failures ? 1 : 0;
}

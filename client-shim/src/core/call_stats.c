#include "call_stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"

#define IDS 4096 /* wire ids are below this (runtime 1.., driver 2000.., internal operations 3000..) */

static uint64_t counts[2][IDS];
static int enabled = -1;

static void print_stats(void) {
    uint64_t total[2] = {0, 0};
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < IDS; i++)
            total[a] += counts[a][i];
    fprintf(stderr, "vmcuda stats: %llu synchronous calls (round trips), %llu asynchronous\n",
            (unsigned long long)total[0], (unsigned long long)total[1]);
    /* every (function, kind) pair, the most frequent first */
    static int done[2][IDS];
    for (;;) {
        int best_a = -1, best_i = -1;
        for (int a = 0; a < 2; a++)
            for (int i = 0; i < IDS; i++)
                if (!done[a][i] && counts[a][i] && (best_a < 0 || counts[a][i] > counts[best_a][best_i])) {
                    best_a = a;
                    best_i = i;
                }
        if (best_a < 0)
            break;
        done[best_a][best_i] = 1;
        const char *name = best_i >= VMC_DRV_FIRST_ID ? vmc_drv_api_name((uint32_t)best_i) : vmc_api_name((uint32_t)best_i);
        fprintf(stderr, "vmcuda stats: %10llu %-5s %s\n", (unsigned long long)counts[best_a][best_i],
                best_a ? "async" : "sync", name ? name : "?");
    }
}

static void decide(void) {
    const char *v = getenv("VMCUDA_STATS");
    enabled = v && *v && strcmp(v, "0") != 0;
    if (enabled)
        atexit(print_stats);
}

void vmc_call_stats_count(uint32_t id, int async) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (enabled < 0)
        pthread_once(&once, decide);
    if (enabled && id < IDS)
        __atomic_add_fetch(&counts[async != 0][id], 1, __ATOMIC_RELAXED);
}

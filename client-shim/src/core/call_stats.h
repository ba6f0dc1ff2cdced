/* VMCUDA_STATS=1: at exit, how many calls this process sent to its worker, synchronous (a round trip
 * each) and asynchronous, by function; for finding the round trips that make a program slower through
 * vmcuda than natively. Off by default, and then one branch per call. */
#ifndef VMC_CALL_STATS_H
#define VMC_CALL_STATS_H

#include <stdint.h>

void vmc_call_stats_count(uint32_t id, int async);

#endif

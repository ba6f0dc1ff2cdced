/* worker_shareable.c's vmc_w_shareable_forget_allocation, recorded for the tests of what calls it (test_quota,
 * test_vmm): the handle whose exports went last, and how many times exports went. */
#ifndef FORGET_RECORDER_H
#define FORGET_RECORDER_H

#include <cuda.h>

static CUmemGenericAllocationHandle forgotten;
static int forgets;
void vmc_w_shareable_forget_allocation(CUmemGenericAllocationHandle h) {
    forgotten = h;
    forgets++;
}

#endif

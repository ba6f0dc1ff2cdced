/* The quota's accounting (worker_quota.c) for the other allocators it serves (worker_quota_arrays.c,
 * worker_vmm.c). The allocators themselves are the hooks of vmc_worker_hooks.h / vmc_drv_worker_hooks.h. */
#ifndef WORKER_QUOTA_H
#define WORKER_QUOTA_H

#include <stdint.h>
#include "worker.h"

/* Keys of array handles (not device pointers): top bit set, apart from every device address. */
#define VMC_QUOTA_HANDLE_TAG ((uintptr_t)1 << 63)

/* 1 when the session has a quota (VMCUDA_MEMORY_QUOTA): without one every hook only calls the real function. */
int vmc_w_quota_on(void);
/* 1 when `bytes` more fit in the quota (they are then reserved), else 0. */
int vmc_w_quota_reserve(uint64_t bytes);
/* After the call: a success becomes an allocation known by `key`, a failure gives the reservation back. */
void vmc_w_quota_settle(int allocated, uintptr_t key, uint64_t bytes);
/* The allocation known by `key` is gone: its bytes no longer count. */
void vmc_w_quota_release(uintptr_t key);
/* A driver allocation refused: one log line, and the driver's own CUDA_ERROR_OUT_OF_MEMORY (the driver API keeps
 * no last-error state to leave behind). */
CUresult vmc_w_quota_refuse_driver(const char *call, uint64_t bytes);
/* A runtime allocation refused: fails as the GPU does when full (the thread's last error included). */
cudaError_t vmc_w_quota_refuse(const char *call, uint64_t bytes);
/* A pitched allocation made (st) after `want` bytes were reserved: it counts `got` (the pitch times the
 * rows) if that still fits, else it is freed and refused; returns the call's status. */
cudaError_t vmc_w_quota_settle_pitched(const char *call, cudaError_t st, void **ptr, uint64_t want, uint64_t got);

/* The body of an allocator's hook: `alloc` (the real call) is made only when `bytes` fit the quota, and the
 * allocation is then known by *(out) | tag; `refusal` is what a call the quota refuses returns, `ok` the call's
 * success code. Without a quota: `alloc` alone. */
#define VMC_W_QUOTA_ALLOC(bytes, out, tag, ok, refusal, alloc)                                                         \
    do {                                                                                                               \
        if (!vmc_w_quota_on())                                                                                         \
            return (alloc);                                                                                            \
        uint64_t bytes_ = (bytes);                                                                                     \
        if (!vmc_w_quota_reserve(bytes_))                                                                              \
            return (refusal);                                                                                          \
        __typeof__(alloc) st_ = (alloc);                                                                               \
        int made_ = st_ == (ok) && (out) && *(out);                                                                    \
        vmc_w_quota_settle(made_, made_ ? (uintptr_t) * (out) | (tag) : 0, bytes_);                                    \
        return st_;                                                                                                    \
    } while (0)

#endif

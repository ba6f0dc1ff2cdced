/* The quota's accounting (worker_quota.c) for the other allocators it serves (worker_quota_arrays.c). */
#ifndef WORKER_QUOTA_H
#define WORKER_QUOTA_H

#include <stdint.h>
#include "worker.h"

/* Keys of array handles (not device pointers): top bit set, apart from every device address. */
#define VMC_QUOTA_HANDLE_TAG ((uintptr_t)1 << 63)

/* 1 when `bytes` more fit in the quota (they are then reserved), else 0. */
int vmc_w_quota_reserve(uint64_t bytes);
/* After the call: a success becomes an allocation known by `key`, a failure gives the reservation back. */
void vmc_w_quota_settle(int allocated, uintptr_t key, uint64_t bytes);
/* The allocation known by `key` is gone: its bytes no longer count. */
void vmc_w_quota_release(uintptr_t key);
/* A runtime allocation refused: fails as the GPU does when full (the thread's last error included). */
cudaError_t vmc_w_quota_refuse(const char *call, uint64_t bytes);
/* A pitched allocation made (st) after `want` bytes were reserved: it counts `got` (the pitch times the
 * rows) if that still fits, else it is freed and refused; returns the call's status. */
cudaError_t vmc_w_quota_settle_pitched(const char *call, cudaError_t st, void **ptr, uint64_t want, uint64_t got);
/* CUDA arrays, mipmapped arrays and cudaMalloc3D (worker_quota_arrays.c): 1 when served. */
int vmc_w_quota_intercept_arrays(struct vmc_wcall *wc, enum vmc_w_result *r);
/* cuMemCreate / cuMemRelease (worker_quota_vmm.c). */
int vmc_w_quota_intercept_vmm(struct vmc_wcall *wc, enum vmc_w_result *r);

#endif

/* worker_vmm.c without a quota: when an allocation of the virtual memory API is freed (its last reference released
 * and its last mapping unmapped), and only then, its shareable exports go (worker_shareable.c's forget, recorded
 * here). References come from cuMemCreate, an import and cuMemRetainAllocationHandle (which gives the same handle
 * value again); the driver is a stand-in that hands out handle values. Under ASan/UBSan. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmc_drv_worker_hooks.h"
#include "worker.h"
#include "worker_driver.h"
#include "worker_quota.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "test_vmm:%d: CHECK(%s) failed\n", __LINE__, #c); failures++; } } while (0)

/* ---- the stand-in driver ---- */
static CUmemGenericAllocationHandle next_handle = 0x1000, mapped_at_retain;
static CUresult drv_create(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop, unsigned long long f) {
    (void)n; (void)prop; (void)f;
    *h = next_handle++;
    return CUDA_SUCCESS;
}
static CUresult drv_release(CUmemGenericAllocationHandle h) { return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static CUresult drv_map(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f) {
    (void)p; (void)n; (void)off; (void)h; (void)f;
    return CUDA_SUCCESS;
}
static CUresult drv_unmap(CUdeviceptr p, size_t n) { (void)p; (void)n; return CUDA_SUCCESS; }
static CUresult drv_retain(CUmemGenericAllocationHandle *h, void *addr) {
    if (!addr) return CUDA_ERROR_INVALID_VALUE;
    *h = mapped_at_retain;
    return CUDA_SUCCESS;
}

/* worker_quota.c's: no quota in this session, so nothing may be counted */
int vmc_w_quota_on(void) { return 0; }
int vmc_w_quota_reserve(uint64_t bytes) { (void)bytes; abort(); }
void vmc_w_quota_settle(int allocated, uintptr_t key, uint64_t bytes) { (void)allocated; (void)key; (void)bytes; abort(); }
void vmc_w_quota_release(uintptr_t key) { (void)key; abort(); }
CUresult vmc_w_quota_refuse_driver(const char *call, uint64_t bytes) { (void)call; (void)bytes; abort(); }
void vmc_w_log(const char *fmt, ...) { (void)fmt; }

/* worker_shareable.c's: the exports of a freed allocation go */
#include "forget_recorder.h"

#define VA 0x7e0000000000ull
#define SIZE (2u << 20)

int main(void) {
    CUmemGenericAllocationHandle h = 0, r = 0;
    /* created and released, never mapped: freed at the release */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 1 && forgotten == h);
    /* created, mapped, released at once (the usual pattern): lives on until the mapping goes */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 1);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 2 && forgotten == h);
    /* retained while mapped (NCCL's and PyTorch's way to find a handle to export), the retained reference released
     * at once: the creation's reference and the mapping keep it; then unmapped first, released last */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
    mapped_at_retain = h;
    CHECK(vmc_w_hook_cuMemRetainAllocationHandle(drv_retain, &r, (void *)(uintptr_t)VA) == CUDA_SUCCESS && r == h);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, r) == CUDA_SUCCESS && forgets == 2);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 2);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 3 && forgotten == h);
    /* a failed retain adds nothing */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRetainAllocationHandle(drv_retain, &r, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 4 && forgotten == h);
    /* a release the driver refuses takes no reference */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, 0) == CUDA_ERROR_INVALID_VALUE && forgets == 4);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 5);
    /* an imported handle (exported again by this process) is followed the same way */
    CUmemGenericAllocationHandle imported = 0x9000;
    vmc_w_vmm_imported(imported);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, imported, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, imported) == CUDA_SUCCESS && forgets == 5);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 6 && forgotten == imported);
    /* an import that gives the handle this process already holds for that memory is one reference more */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
    vmc_w_vmm_imported(h);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 6);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 7 && forgotten == h);
    /* a value the driver gives again while an entry is still under it (memory gone by a way not followed): the old
     * entry's exports go, and the new allocation starts afresh */
    CUmemGenericAllocationHandle stale = 0xa000;
    vmc_w_vmm_imported(stale);
    next_handle = stale;
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS && h == stale && forgets == 8);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 9 && forgotten == stale);
    next_handle = 0x2000;
    /* two mappings of one handle, unmapped one range at a time; an unmap of another range touches neither */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA + 2 * SIZE, SIZE, 0, h, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA + 8 * SIZE, SIZE) == CUDA_SUCCESS && forgets == 9);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 9);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA + 2 * SIZE, SIZE) == CUDA_SUCCESS && forgets == 10 && forgotten == h);
    /* thousands in and out leave the table empty: the same handle value made again starts afresh */
    for (int i = 0; i < 70000; i++) {
        CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
        CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
        CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS);
        CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS);
    }
    CHECK(forgets == 10 + 70000);
    next_handle = h; /* the driver reuses the last value */
    CHECK(vmc_w_hook_cuMemCreate(drv_create, &h, SIZE, NULL, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemMap(drv_map, VA, SIZE, 0, h, 0) == CUDA_SUCCESS);
    CHECK(vmc_w_hook_cuMemRelease(drv_release, h) == CUDA_SUCCESS && forgets == 10 + 70000);
    CHECK(vmc_w_hook_cuMemUnmap(drv_unmap, VA, SIZE) == CUDA_SUCCESS && forgets == 10 + 70001);
    if (failures) {
        fprintf(stderr, "test_vmm: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_vmm: ok\n");
    return 0;
}

// Memory: allocation, every memcpy direction at several sizes with patterns,
// memset, async copies on a stream, pinned host memory, memory info.
#include "vmc_check.h"
#include <string.h>

// Sizes chosen to hit: a single byte, one page, a non-multiple of the 4 MiB
// transfer block, and many blocks.
static const size_t kSizes[] = {1, 4096, (4u << 20) + 3, 64u << 20};

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = vmc_pattern(i, seed);
}

static void check_pattern(const char *what, size_t n, const unsigned char *p, unsigned seed)
{
    size_t bad = vmc_first_mismatch(p, n, seed);
    char name[96];
    snprintf(name, sizeof name, "%s %zu B", what, n);
    if (bad == n)
        vmc_check(1, name, "pattern matches");
    else
        vmc_check(0, name, "first mismatch at byte %zu", bad);
}

static void check_value(const char *what, size_t n, const unsigned char *p, unsigned char v)
{
    size_t i = 0;
    while (i < n && p[i] == v) i++;
    char name[96];
    snprintf(name, sizeof name, "%s %zu B", what, n);
    if (i == n)
        vmc_check(1, name, "all bytes 0x%02x", v);
    else
        vmc_check(0, name, "byte %zu is 0x%02x, expected 0x%02x", i, p[i], v);
}

static void sync_copies(size_t n, unsigned char *host, unsigned char *back)
{
    unsigned char *a = NULL, *b = NULL;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    fill_pattern(host, n, 1);
    CK(cudaMemcpy(a, host, n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    memset(back, 0, n);
    CK(cudaMemcpy(back, b, n, cudaMemcpyDeviceToHost));
    check_pattern("H2D+D2D+D2H", n, back, 1);

    // cudaMemcpyDefault infers the direction from the pointers (unified addressing).
    fill_pattern(host, n, 2);
    CK(cudaMemcpy(a, host, n, cudaMemcpyDefault));
    CK(cudaMemcpy(b, a, n, cudaMemcpyDefault));
    memset(back, 0, n);
    CK(cudaMemcpy(back, b, n, cudaMemcpyDefault));
    check_pattern("cudaMemcpyDefault", n, back, 2);

    CK(cudaMemset(a, 0xA5, n));
    memset(back, 0, n);
    CK(cudaMemcpy(back, a, n, cudaMemcpyDeviceToHost));
    check_value("cudaMemset", n, back, 0xA5);
    CK(cudaFree(a));
    CK(cudaFree(b));
}

// Async copies between pinned buffers and the device on a non-default stream.
static void async_copies(size_t n, cudaStream_t s, unsigned char *pinned_in, unsigned char *pinned_out)
{
    unsigned char *a = NULL;
    CK(cudaMalloc(&a, n));
    fill_pattern(pinned_in, n, 3);
    memset(pinned_out, 0, n);
    CK(cudaMemcpyAsync(a, pinned_in, n, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(pinned_out, a, n, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    check_pattern("cudaMemcpyAsync round trip", n, pinned_out, 3);

    CK(cudaMemsetAsync(a, 0x3C, n, s));
    CK(cudaMemcpyAsync(pinned_out, a, n, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    check_value("cudaMemsetAsync", n, pinned_out, 0x3C);
    CK(cudaFree(a));
}

int main()
{
    const size_t max = kSizes[sizeof kSizes / sizeof kSizes[0] - 1];
    unsigned char *host = (unsigned char *)malloc(max);
    unsigned char *back = (unsigned char *)malloc(max);
    if (!host || !back) {
        printf("FAIL host malloc\n");
        return VMC_EXIT_CHECK_FAILED;
    }

    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    vmc_check(free_b <= total_b && total_b > 0, "cudaMemGetInfo", "0 < free <= total: %s",
              free_b <= total_b && total_b > 0 ? "yes" : "no");

    for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; i++) sync_copies(kSizes[i], host, back);

    // Pinned memory from both allocators (the shim must track it as host memory).
    unsigned char *pinned_in = NULL, *pinned_out = NULL;
    CK(cudaMallocHost(&pinned_in, max));
    CK(cudaHostAlloc(&pinned_out, max, cudaHostAllocDefault));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    for (size_t i = 0; i < sizeof kSizes / sizeof kSizes[0]; i++) async_copies(kSizes[i], s, pinned_in, pinned_out);
    CK(cudaStreamDestroy(s));

    unsigned int hflags = 0;
    CK(cudaHostGetFlags(&hflags, pinned_out));
    vmc_check((hflags & cudaHostAllocPortable) == 0, "cudaHostGetFlags", "not portable: %s",
              (hflags & cudaHostAllocPortable) == 0 ? "yes" : "no");
    CK(cudaFreeHost(pinned_in));
    CK(cudaFreeHost(pinned_out));

    // Allocation and free of many small buffers must leave memory balanced.
    void *ptrs[64];
    for (int i = 0; i < 64; i++) CK(cudaMalloc(&ptrs[i], 1000 + i));
    for (int i = 0; i < 64; i++) CK(cudaFree(ptrs[i]));
    CK(cudaFree(NULL)); // freeing NULL is allowed
    vmc_check(1, "64 small cudaMalloc/cudaFree", "done");

    free(host);
    free(back);
    CK(cudaDeviceSynchronize());
    return vmc_finish("memory");
}

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <chrono>
#include <cuda_runtime.h>
#include <immintrin.h>
#include <stdint.h>
static void copy_nt_sse(void *dst, const void *src, size_t n) {
    char *d = (char *)dst; const char *s = (const char *)src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15; if (head > n) head = n;
    memcpy(d, s, head); d += head; s += head; n -= head;
    size_t m = n & ~(size_t)63;
    for (size_t i = 0; i < m; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a); _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c); _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    _mm_sfence();
    memcpy(d + m, s + m, n - m);
}
__attribute__((target("avx2"))) static void copy_nt_avx(void *dst, const void *src, size_t n) {
    char *d = (char *)dst; const char *s = (const char *)src;
    size_t head = (32 - ((uintptr_t)d & 31)) & 31; if (head > n) head = n;
    memcpy(d, s, head); d += head; s += head; n -= head;
    size_t m = n & ~(size_t)127;
    for (size_t i = 0; i < m; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i)), b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64)), e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        _mm256_stream_si256((__m256i *)(d + i), a); _mm256_stream_si256((__m256i *)(d + i + 32), b);
        _mm256_stream_si256((__m256i *)(d + i + 64), c); _mm256_stream_si256((__m256i *)(d + i + 96), e);
    }
    _mm_sfence();
    memcpy(d + m, s + m, n - m);
}
typedef void (*copier)(void *, const void *, size_t);
static void *plain(void *d, const void *s, size_t n) { return memcpy(d, s, n); }
static void copy_plain(void *d, const void *s, size_t n) { plain(d, s, n); }

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
int main() {
    char *src = (char *)malloc(16 << 20); memset(src, 1, 16 << 20);
    char *pin; CK(cudaHostAlloc(&pin, 64 << 20, 0));
    char *dev; CK(cudaMalloc(&dev, 16 << 20));
    const char *names[] = {"memcpy", "nt-sse", "nt-avx2"};
    copier cs[] = {copy_plain, copy_nt_sse, copy_nt_avx};
    for (size_t N : {(size_t)64 << 10, (size_t)256 << 10, (size_t)1 << 20, (size_t)4 << 20}) {
        int R = N >= (1 << 20) ? 500 : 3000;
        for (int c = 0; c < 3; c++) {
            double t0 = now();
            for (int r = 0; r < R; r++) cs[c](pin, src, N);
            double tc = (now() - t0) / R * 1e6;
            for (int pieces : {1, 4}) {
                size_t p = N / pieces;
                t0 = now();
                for (int r = 0; r < R; r++) {
                    for (int k = 0; k < pieces; k++) {
                        cs[c](pin + (size_t)k * (16 << 20) % (64 << 20), src + k * p, p);
                        CK(cudaMemcpyAsync(dev + k * p, pin + (size_t)k * (16 << 20) % (64 << 20), p, cudaMemcpyHostToDevice, 0));
                    }
                    CK(cudaStreamSynchronize(0));
                }
                printf("%5zu KiB %-8s copy alone %7.2f us; copy+dma in %d piece(s): %7.2f us\n", N >> 10, names[c], tc, pieces, (now() - t0) / R * 1e6);
            }
        }
        double t0 = now();
        for (int r = 0; r < R; r++) CK(cudaMemcpy(dev, src, N, cudaMemcpyHostToDevice));
        printf("%5zu KiB native pageable cudaMemcpy: %.2f us\n", N >> 10, (now() - t0) / R * 1e6);
        t0 = now();
        for (int r = 0; r < R; r++) CK(cudaMemcpy(dev, pin, N, cudaMemcpyHostToDevice));
        printf("%5zu KiB native pinned cudaMemcpy (not in cache): %.2f us\n", N >> 10, (now() - t0) / R * 1e6);
    }
    return 0;
}

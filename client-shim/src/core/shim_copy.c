#include "shim_copy.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "shim_parallel.h"

#define SPLIT_MIN (1u << 20) /* below this one thread is as fast as several */

struct copy_job {
    uint8_t *dst;
    const uint8_t *src;
    size_t n;
    void (*copy)(void *dst, const void *src, size_t n);
};

static void plain_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

/* memcpy with non-temporal stores where the CPU has them (SSE2: every x86-64), whole 64-byte lines at a time once
 * the destination is 16-byte aligned; the ends by memcpy. No fence: vmc_copy_for_dma_fence. */
void vmc_copy_for_dma_unfenced(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t lines = n & ~(size_t)63;
    for (size_t i = 0; i < lines; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + lines, s + lines, n - lines);
#else
    memcpy(dst, src, n);
#endif
}

void vmc_copy_for_dma_fence(void) {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

/* The fence orders the streaming stores before whatever tells the worker that the slot is full. */
static void streaming_copy(void *dst, const void *src, size_t n) {
    vmc_copy_for_dma_unfenced(dst, src, n);
    vmc_copy_for_dma_fence();
}

/* Part `part` of `ways` page-aligned pieces; the last one takes the remainder. */
static void copy_part(void *arg, unsigned part, unsigned ways) {
    struct copy_job *j = arg;
    size_t share = (j->n / ways + 4095) & ~(size_t)4095;
    size_t off = (size_t)part * share;
    if (off >= j->n)
        return;
    size_t len = part + 1 == ways || off + share > j->n ? j->n - off : share;
    j->copy(j->dst + off, j->src + off, len);
}

static void copy_with(void (*copy)(void *, const void *, size_t), void *dst, const void *src, size_t n) {
    struct copy_job j = {dst, src, n, copy};
    if (n < SPLIT_MIN) {
        copy(dst, src, n);
        return;
    }
    vmc_parallel(~0u, copy_part, &j);
}

void vmc_copy(void *dst, const void *src, size_t n) { copy_with(plain_copy, dst, src, n); }

void vmc_copy_for_dma(void *dst, const void *src, size_t n, size_t whole) {
    copy_with(whole <= VMC_COPY_FOR_DMA_STREAMING_MAX ? streaming_copy : plain_copy, dst, src, n);
}

/* The shim's parallel copies (plain, and with streaming stores for ring slots) must equal memcpy for every size
 * and alignment, including sizes that do not divide evenly among the threads and copies from several threads at
 * once. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "shim_copy.h"

static void one_with(void (*copy)(void *, const void *, size_t), size_t n, size_t src_off, size_t dst_off) {
    uint8_t *src = malloc(n + 64), *dst = malloc(n + 64);
    for (size_t i = 0; i < n + 64; i++) {
        src[i] = (uint8_t)(i * 131 + 7);
        dst[i] = 0xee;
    }
    copy(dst + dst_off, src + src_off, n);
    CHECK(memcmp(dst + dst_off, src + src_off, n) == 0, "copy of %zu bytes (offsets %zu/%zu) differs", n, src_off, dst_off);
    CHECK(dst[dst_off + n] == 0xee && (dst_off == 0 || dst[dst_off - 1] == 0xee), "copy of %zu bytes wrote outside", n);
    free(src);
    free(dst);
}

/* vmc_copy_for_dma as for a copy small enough for streaming stores, and as for one too large */
static void copy_for_dma_streaming(void *dst, const void *src, size_t n) { vmc_copy_for_dma(dst, src, n, n); }
static void copy_for_dma_plain(void *dst, const void *src, size_t n) {
    vmc_copy_for_dma(dst, src, n, (size_t)VMC_COPY_FOR_DMA_STREAMING_MAX + 1);
}

static void one(size_t n, size_t src_off, size_t dst_off) {
    one_with(vmc_copy, n, src_off, dst_off);
    one_with(copy_for_dma_streaming, n, src_off, dst_off);
    one_with(copy_for_dma_plain, n, src_off, dst_off);
}

static void *concurrent(void *arg) {
    (void)arg;
    for (int i = 0; i < 8; i++)
        one((3u << 20) + 17 * (size_t)i, (size_t)i, 3);
    return NULL;
}

int main(void) {
    const size_t sizes[] = {0, 1, 15, 16, 63, 64, 65, 127, 4095, 1u << 20, (1u << 20) + 1, (4u << 20) - 3, 4u << 20,
                            (16u << 20) + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        one(sizes[i], 0, 0);
        one(sizes[i], 1, 7);
        one(sizes[i], 9, 1);
    }
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, concurrent, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    return check_summary("test_copy");
}

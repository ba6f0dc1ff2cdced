/* Bulk copies of many shapes through whichever transport the client is configured for (tcp, shm, ucx):
 * sizes below, at and across the ring's slot size and past its four slots, at odd device offsets, and one
 * large enough to be striped over several connections; then 2-D and 3-D copies between pitched host rows
 * and pitched device memory, with rows wider than a ring slot too; each compared byte for byte after a
 * round trip.
 * `drv_bulk loop` copies 48 MiB each way until it is killed (the transports' fault tests), printing
 * "copying" once the first round trip is done; `drv_bulk rounds N` makes N such round trips and prints their
 * rate (a quick measurement on machines without a GPU, against CI's stand-in driver). */
#include <time.h>
#define DRV_CHECK_NO_KERNELS
#include "drv_check.h"
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 12));
}

/* host rows of `width` bytes at `host_pitch`, `height` rows a slice, `depth` slices, through pitched device memory
 * and back into rows at another pitch: what arrives must be what left, and the padding between rows untouched */
static void box_round_trip(size_t width, size_t height, size_t depth, const char *what) {
    size_t out_pitch = width + 100, in_pitch = width + 37, rows = height * depth;
    unsigned char *out = malloc(out_pitch * rows), *in = malloc(in_pitch * rows);
    fill(out, out_pitch * rows, (unsigned)width);
    memset(in, 0xEE, in_pitch * rows);
    CUdeviceptr d;
    size_t pitch;
    CU(cuMemAllocPitch_v2(&d, &pitch, width, rows, 4));
    CUDA_MEMCPY3D up = {0}, down = {0};
    up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = out, up.srcPitch = out_pitch, up.srcHeight = height;
    up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = d, up.dstPitch = pitch, up.dstHeight = height;
    up.WidthInBytes = width, up.Height = height, up.Depth = depth;
    down.srcMemoryType = CU_MEMORYTYPE_DEVICE, down.srcDevice = d, down.srcPitch = pitch, down.srcHeight = height;
    down.dstMemoryType = CU_MEMORYTYPE_HOST, down.dstHost = in, down.dstPitch = in_pitch, down.dstHeight = height;
    down.WidthInBytes = width, down.Height = height, down.Depth = depth;
    if (depth == 1) {
        CUDA_MEMCPY2D up2 = {0}, down2 = {0};
        up2.srcMemoryType = CU_MEMORYTYPE_HOST, up2.srcHost = out, up2.srcPitch = out_pitch;
        up2.dstMemoryType = CU_MEMORYTYPE_DEVICE, up2.dstDevice = d, up2.dstPitch = pitch;
        up2.WidthInBytes = width, up2.Height = height;
        down2.srcMemoryType = CU_MEMORYTYPE_DEVICE, down2.srcDevice = d, down2.srcPitch = pitch;
        down2.dstMemoryType = CU_MEMORYTYPE_HOST, down2.dstHost = in, down2.dstPitch = in_pitch;
        down2.WidthInBytes = width, down2.Height = height;
        CU(cuMemcpy2D_v2(&up2));
        CU(cuMemcpy2D_v2(&down2));
    } else {
        CU(cuMemcpy3D_v2(&up));
        CU(cuMemcpy3D_v2(&down));
    }
    int same = 1;
    for (size_t r = 0; r < rows && same; r++) {
        same = memcmp(in + r * in_pitch, out + r * out_pitch, width) == 0;
        for (size_t b = width; b < in_pitch && same; b++)
            same = in[r * in_pitch + b] == 0xEE;
    }
    check(same, what);
    CU(cuMemFree_v2(d));
    free(out);
    free(in);
}

/* a 2-D copy of zero-width rows succeeds and moves nothing, as natively */
static void empty_box(void) {
    CUdeviceptr d;
    size_t pitch;
    unsigned char host[64];
    CU(cuMemAllocPitch_v2(&d, &pitch, 64, 8, 4));
    CUDA_MEMCPY2D up = {0};
    up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = host, up.srcPitch = sizeof host;
    up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = d, up.dstPitch = pitch;
    up.WidthInBytes = 0, up.Height = 8;
    CUresult r = cuMemcpy2D_v2(&up);
    check(r == CUDA_SUCCESS, "2-D copy of 8 empty rows");
    CU(cuMemFree_v2(d));
}

static void check_boxes(void) {
    empty_box();
    box_round_trip(3000, 700, 1, "2-D round trip of 700 rows of 3000 bytes");
    box_round_trip(1000, 300, 40, "3-D round trip of 40 slices of 300 rows of 1000 bytes");
    box_round_trip((5 << 20) + 11, 3, 1, "2-D round trip of 3 rows of 5 MiB + 11 bytes (wider than a ring slot)");
}

int main(int argc, char **argv) {
    enum { MAX = 48 << 20, ROOM = MAX + (1 << 20) };
    unsigned char *out = malloc(ROOM), *in = malloc(ROOM);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent_v2(ctx));
    CU(cuMemAlloc_v2(&d, ROOM));
    if (argc > 2 && strcmp(argv[1], "rounds") == 0) {
        int rounds = atoi(argv[2]);
        struct timespec t0, t1;
        fill(out, MAX, 1);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int round = 0; round < rounds; round++) {
            CU(cuMemcpyHtoD_v2(d, out, MAX));
            CU(cuMemcpyDtoH_v2(in, d, MAX));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        printf("%d round trips of 48 MiB: %.2f GB/s each way\n", rounds, 2.0 * rounds * MAX / s / 2 / 1e9);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "loop") == 0) {
        fill(out, MAX, 1);
        for (int round = 0;; round++) {
            CU(cuMemcpyHtoD_v2(d, out, MAX));
            CU(cuMemcpyDtoH_v2(in, d, MAX));
            if (round == 0) {
                printf("copying\n");
                fflush(stdout);
            }
        }
    }
    static const struct { size_t size, offset; const char *what; } cases[] = {
        {300 << 10, 0, "300 KiB"},
        {(4 << 20) + 3, 1, "4 MiB + 3 bytes at offset 1"},
        {(17 << 20) + 1, 4093, "17 MiB + 1 byte at offset 4093 (past the ring's four slots)"},
        {MAX, 0, "48 MiB (large enough to be striped)"},
    };
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fill(out, cases[c].size, c + 1);
        memset(in, 0, cases[c].size);
        CU(cuMemcpyHtoD_v2(d + cases[c].offset, out, cases[c].size));
        CU(cuMemcpyDtoH_v2(in, d + cases[c].offset, cases[c].size));
        char what[160];
        snprintf(what, sizeof what, "round trip of %s", cases[c].what);
        check(memcmp(in, out, cases[c].size) == 0, what);
    }
    CU(cuMemFree_v2(d));
    check_boxes();
    return failures ? 1 : 0;
}

/* Run inside a KVM guest by ivshmem-guest.sh: bulk copies between this guest and the appliance's (stand-in)
 * GPU through a lane of an ivshmem region shared with the host, the mechanism vmcuda uses between two VMs
 * on one KVM host. 8 MiB each way, twice, compared byte for byte. */
#define DRV_CHECK_NO_KERNELS
#include "drv_check.h"
#include <stdlib.h>
#include <string.h>

int main(void) {
    enum { N = 8 << 20 };
    unsigned char *out = malloc(N), *in = malloc(N);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxPushCurrent_v2(ctx));
    CU(cuMemAlloc_v2(&d, N));
    int same = 1;
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++)
            out[i] = (unsigned char)(i * 131 + r * 7 + (i >> 12));
        CU(cuMemcpyHtoD_v2(d, out, N));
        memset(in, 0, N);
        CU(cuMemcpyDtoH_v2(in, d, N));
        same &= memcmp(in, out, N) == 0;
    }
    CU(cuMemFree_v2(d));
    check(same, "region_copy: 2 x 8 MiB each way identical");
    return failures ? 1 : 0;
}

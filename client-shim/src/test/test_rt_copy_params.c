/* The runtime's copy parameters as the driver's (src/runtime/rt_copy_params.c), as a graph copy node built through
 * the runtime front end sends them: each kind gives each side its memory type and pointer field, positions,
 * pitches, heights and the extent carry over in bytes, and what the driver front end cannot be given is refused. */
#include <string.h>

#include "check.h"
#include "rt_copy_params.h"

static struct cudaMemcpy3DParms params(enum cudaMemcpyKind kind) {
    struct cudaMemcpy3DParms p;
    memset(&p, 0, sizeof p);
    p.srcPtr = (struct cudaPitchedPtr){(void *)0x1000, 512, 300, 20};
    p.dstPtr = (struct cudaPitchedPtr){(void *)0x9000, 1024, 600, 40};
    p.srcPos = (struct cudaPos){3, 4, 5};
    p.dstPos = (struct cudaPos){6, 7, 8};
    p.extent = (struct cudaExtent){256, 10, 2};
    p.kind = kind;
    return p;
}

static void kind_gives(enum cudaMemcpyKind kind, CUmemorytype src, CUmemorytype dst) {
    struct cudaMemcpy3DParms p = params(kind);
    CUDA_MEMCPY3D c;
    memset(&c, 0xab, sizeof c);
    CHECK(vmc_rt_copy_to_driver(&p, &c) == cudaSuccess, "kind %d converts", (int)kind);
    CHECK(c.srcMemoryType == src && c.dstMemoryType == dst, "kind %d: memory types %d, %d", (int)kind,
          (int)c.srcMemoryType, (int)c.dstMemoryType);
    CHECK(src == CU_MEMORYTYPE_HOST ? c.srcHost == (void *)0x1000 && c.srcDevice == 0
                                    : c.srcDevice == 0x1000 && c.srcHost == NULL,
          "kind %d: the source in its field", (int)kind);
    CHECK(dst == CU_MEMORYTYPE_HOST ? c.dstHost == (void *)0x9000 && c.dstDevice == 0
                                    : c.dstDevice == 0x9000 && c.dstHost == NULL,
          "kind %d: the destination in its field", (int)kind);
    CHECK(c.srcXInBytes == 3 && c.srcY == 4 && c.srcZ == 5 && c.dstXInBytes == 6 && c.dstY == 7 && c.dstZ == 8,
          "kind %d: positions", (int)kind);
    CHECK(c.srcPitch == 512 && c.srcHeight == 20 && c.dstPitch == 1024 && c.dstHeight == 40, "kind %d: pitches and heights",
          (int)kind);
    CHECK(c.WidthInBytes == 256 && c.Height == 10 && c.Depth == 2, "kind %d: extent", (int)kind);
    CHECK(c.srcArray == NULL && c.dstArray == NULL && c.srcLOD == 0 && c.dstLOD == 0 && c.reserved0 == NULL && c.reserved1 == NULL,
          "kind %d: nothing else set", (int)kind);
}

int main(void) {
    kind_gives(cudaMemcpyHostToHost, CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST);
    kind_gives(cudaMemcpyHostToDevice, CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_DEVICE);
    kind_gives(cudaMemcpyDeviceToHost, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST);
    kind_gives(cudaMemcpyDeviceToDevice, CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE);
    kind_gives(cudaMemcpyDefault, CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED);

    CUDA_MEMCPY3D c;
    struct cudaMemcpy3DParms p = params((enum cudaMemcpyKind)7);
    CHECK(vmc_rt_copy_to_driver(&p, &c) == cudaErrorInvalidMemcpyDirection, "an unknown kind is refused");
    p = params(cudaMemcpyHostToDevice);
    p.dstArray = (cudaArray_t)0x77;
    CHECK(vmc_rt_copy_to_driver(&p, &c) == cudaErrorNotSupported, "an array side is refused");
    return check_summary("test_rt_copy_params");
}

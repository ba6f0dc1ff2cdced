/* drv_capture_query: cuStreamIsCapturing as PyTorch asks it, before and after a capture begins. Natively and
 * through vmcuda it prints the same; through vmcuda the queries on the default stream before any capture are
 * answered by the client (DriverFrontEndTest counts the ones that reach the worker with VMCUDA_STATS). */
#include <string.h>
#include "drv_check.h"

static const char *status_name(CUstreamCaptureStatus s) {
    return s == CU_STREAM_CAPTURE_STATUS_NONE ? "none" : s == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active" : "invalidated";
}

int main(void) {
    CUstream stream;
    CUstreamCaptureStatus s = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    use_primary_context();
    int none = 0;
    for (int i = 0; i < 50; i++) {
        s = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        CU(cuStreamIsCapturing(NULL, &s));
        none += s == CU_STREAM_CAPTURE_STATUS_NONE;
        CU(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &s));
        none += s == CU_STREAM_CAPTURE_STATUS_NONE;
    }
    printf("before any capture: %d of 100 queries of the default streams say none\n", none);
    printf("a NULL status pointer: %s\n", cuStreamIsCapturing(NULL, NULL) == CUDA_ERROR_INVALID_VALUE ? "invalid value" : "other");
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU(cuStreamIsCapturing(stream, &s));
    printf("a stream of its own: %s\n", status_name(s));
    /* a capture on that stream: from here on every query goes to the driver (the stand-in driver of CI does
     * not capture and refuses; a GPU's driver captures) */
    CUresult begun = cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    CU(cuStreamIsCapturing(stream, &s));
    printf("capturing stream after the begin: %s\n", begun == CUDA_SUCCESS ? status_name(s) : "(no capture)");
    for (int i = 0; i < 10; i++)
        CU(cuStreamIsCapturing(NULL, &s));
    printf("default stream during the capture: %s\n", status_name(s));
    if (begun == CUDA_SUCCESS) {
        CUgraph g;
        CU(cuStreamEndCapture(stream, &g));
        CU(cuGraphDestroy(g));
    }
    CU(cuStreamDestroy(stream));
    return 0;
}

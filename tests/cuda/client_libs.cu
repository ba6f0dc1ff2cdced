// A program linked against shared libraries of its own that exist only where it was built (the client):
// libvmctest_outer.so, which needs libvmctest_inner.so, both in client_libs.d/ next to the program (run path
// $ORIGIN/client_libs.d). Its worker on the appliance needs them too; vmcuda ships them (PROTOCOL.md "Client
// libraries"). The answer from the libraries goes through a kernel.
#include "vmc_check.h"

extern "C" int vmctest_outer_value(void);

__global__ void add_one(int *p) { *p += 1; }

int main()
{
    int value = vmctest_outer_value(), *d = NULL, back = 0;
    vmc_check(value == 42, "vmctest_outer_value", "%d", value);
    CK(cudaMalloc(&d, sizeof value));
    CK(cudaMemcpy(d, &value, sizeof value, cudaMemcpyHostToDevice));
    add_one<<<1, 1>>>(d);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&back, d, sizeof back, cudaMemcpyDeviceToHost));
    vmc_check(back == 43, "kernel result", "%d", back);
    CK(cudaFree(d));
    printf("client libraries: %d, through a kernel %d\n", value, back);
    return vmc_finish("client_libs");
}

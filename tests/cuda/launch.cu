// Kernel launches: parameter types, 1D/2D/3D grids, dynamic shared memory,
// cudaLaunchKernel, cudaLaunchKernelExC / cudaLaunchKernelEx, a kernel with
// no parameters, and 10,000 asynchronous launches.
#include "vmc_check.h"
#include <string.h>

struct Mixed {
    char c;      // padding after this member must survive marshalling
    double d;
    int i;
    float f[3];
    short s;
};

__device__ unsigned long long launches;

__global__ void no_params() { atomicAdd(&launches, 1ull); }

// Scalars of every width, written back so the host can compare bit for bit.
__global__ void scalars(int i, float f, double d, long long ll, unsigned char u8, short s16,
                        double *out)
{
    out[0] = i;
    out[1] = f;
    out[2] = d;
    out[3] = (double)ll;
    out[4] = u8;
    out[5] = s16;
}

__global__ void by_value(Mixed m, double *out)
{
    out[0] = m.c;
    out[1] = m.d;
    out[2] = m.i;
    out[3] = m.f[0] + m.f[1] * 10 + m.f[2] * 100;
    out[4] = m.s;
}

// Each thread writes its flattened global coordinates.
__global__ void coords(int *out, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    out[(z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z;
}

// Reverses blocks of n ints through dynamic shared memory.
__global__ void reverse(const int *in, int *out, int n)
{
    extern __shared__ int tile[];
    int t = threadIdx.x, base = blockIdx.x * n;
    tile[t] = in[base + t];
    __syncthreads();
    out[base + t] = tile[n - 1 - t];
}

__global__ void axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static void check_grid(const char *name, dim3 grid, dim3 block)
{
    int nx = grid.x * block.x, ny = grid.y * block.y, nz = grid.z * block.z, total = nx * ny * nz;
    int *d = NULL;
    int *h = (int *)malloc(total * sizeof(int));
    CK(cudaMalloc(&d, total * sizeof(int)));
    CK(cudaMemset(d, 0xff, total * sizeof(int)));
    coords<<<grid, block>>>(d, nx, ny);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, d, total * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = -1;
    for (int z = 0; z < nz && bad < 0; z++)
        for (int y = 0; y < ny && bad < 0; y++)
            for (int x = 0; x < nx && bad < 0; x++)
                if (h[(z * ny + y) * nx + x] != x + 1000 * y + 1000000 * z) bad = (z * ny + y) * nx + x;
    vmc_check(bad < 0, name, "%d threads, first bad %d", total, bad);
    CK(cudaFree(d));
    free(h);
}

int main()
{
    double *d_out = NULL, out[6];
    CK(cudaMalloc(&d_out, sizeof out));

    scalars<<<1, 1>>>(-123456, 3.25f, 2.718281828459045, -(1ll << 40), 200, -32000, d_out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    printf("scalars: %.0f %.2f %.15f %.0f %.0f %.0f\n", out[0], out[1], out[2], out[3], out[4], out[5]);
    vmc_check(out[0] == -123456 && out[1] == 3.25 && out[2] == 2.718281828459045 &&
                  out[3] == -(double)(1ll << 40) && out[4] == 200 && out[5] == -32000,
              "scalar parameters", "int float double long long uchar short");

    Mixed m;
    memset(&m, 0, sizeof m);
    m.c = 'Q';
    m.d = -0.125;
    m.i = 77;
    m.f[0] = 1;
    m.f[1] = 2;
    m.f[2] = 3;
    m.s = -5;
    by_value<<<1, 1>>>(m, d_out);
    CK(cudaGetLastError());
    CK(cudaMemcpy(out, d_out, 5 * sizeof(double), cudaMemcpyDeviceToHost));
    printf("struct by value (%zu bytes): %.0f %.3f %.0f %.0f %.0f\n", sizeof m, out[0], out[1], out[2], out[3], out[4]);
    vmc_check(out[0] == 'Q' && out[1] == -0.125 && out[2] == 77 && out[3] == 321 && out[4] == -5,
              "struct parameter", "all members");

    check_grid("1D grid", dim3(40), dim3(128));
    check_grid("2D grid", dim3(7, 5), dim3(16, 8));
    check_grid("3D grid", dim3(3, 4, 5), dim3(8, 4, 2));

    // Dynamic shared memory: 8 blocks of 512 ints each.
    const int n = 512, blocks = 8;
    int hin[n * blocks], hres[n * blocks];
    for (int i = 0; i < n * blocks; i++) hin[i] = i;
    int *din = NULL, *dres = NULL;
    CK(cudaMalloc(&din, sizeof hin));
    CK(cudaMalloc(&dres, sizeof hres));
    CK(cudaMemcpy(din, hin, sizeof hin, cudaMemcpyHostToDevice));
    reverse<<<blocks, n, n * sizeof(int)>>>(din, dres, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hres, dres, sizeof hres, cudaMemcpyDeviceToHost));
    vmc_check(hres[0] == n - 1 && hres[n - 1] == 0 && hres[n] == 2 * n - 1 && hres[n * blocks - 1] == n * (blocks - 1),
              "dynamic shared memory", "%d %d %d", hres[0], hres[n], hres[n * blocks - 1]);

    // cudaLaunchKernel with an argument array, on a stream.
    const int len = 1000;
    float hx[len], hy[len];
    for (int i = 0; i < len; i++) {
        hx[i] = (float)i;
        hy[i] = 1.0f;
    }
    float *dx = NULL, *dy = NULL;
    CK(cudaMalloc(&dx, sizeof hx));
    CK(cudaMalloc(&dy, sizeof hy));
    CK(cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, hy, sizeof hy, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float a = 2.0f;
    int count = len;
    void *args[] = {&a, &dx, &dy, &count};
    CK(cudaLaunchKernel((const void *)axpy, dim3((len + 255) / 256), dim3(256), args, 0, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost));
    vmc_check(hy[0] == 1.0f && hy[999] == 1999.0f, "cudaLaunchKernel", "%.1f %.1f", hy[0], hy[999]);

    // cudaLaunchKernelExC with a config and one launch attribute.
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributePriority;
    attr.val.priority = 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((len + 127) / 128);
    cfg.blockDim = dim3(128);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    a = -2.0f;
    CK(cudaLaunchKernelExC(&cfg, (const void *)axpy, args)); // y = (2x + 1) - 2x = 1
    // The C++ template form packs the arguments itself.
    CK(cudaLaunchKernelEx(&cfg, axpy, 0.5f, (const float *)dx, dy, len)); // y = 1 + x / 2
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost));
    vmc_check(hy[0] == 1.0f && hy[10] == 6.0f && hy[999] == 500.5f, "cudaLaunchKernelExC + cudaLaunchKernelEx",
              "%.1f %.1f %.1f", hy[0], hy[10], hy[999]);

    // 10,000 asynchronous launches of a kernel without parameters, then one sync.
    unsigned long long zero = 0, total = 0;
    CK(cudaMemcpyToSymbol(launches, &zero, sizeof zero));
    for (int i = 0; i < 10000; i++) {
        no_params<<<1, 1, 0, s>>>();
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpyFromSymbol(&total, launches, sizeof total));
    vmc_check(total == 10000, "10000 async launches", "%llu", total);

    CK(cudaStreamDestroy(s));
    CK(cudaFree(d_out));
    CK(cudaFree(din));
    CK(cudaFree(dres));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaDeviceSynchronize());
    return vmc_finish("launch");
}

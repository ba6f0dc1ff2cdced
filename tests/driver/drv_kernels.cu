// Kernels of the driver-API test program (drv_api.c), built into a cubin, PTX and a fat binary that
// the program loads at run time, as driver-API programs do. extern "C": names without C++ mangling.
struct Triple {
    char c;
    double d;
    short s;
};

extern "C" __global__ void add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Every kind of parameter: widths 1..8 bytes, a float and a double, a struct by value (with padding
// inside), a pointer. The kernel writes what it received so the host can check each one.
extern "C" __global__ void params(char c, short s, int i, long long l, float f, double d, struct Triple t,
                                  unsigned long long *out) {
    out[0] = (unsigned long long)(long long)c;
    out[1] = (unsigned long long)(long long)s;
    out[2] = (unsigned long long)(long long)i;
    out[3] = (unsigned long long)l;
    out[4] = (unsigned long long)(f * 1000.0f);
    out[5] = (unsigned long long)(d * 1000000.0);
    out[6] = (unsigned long long)(long long)t.c;
    out[7] = (unsigned long long)(t.d * 10.0);
    out[8] = (unsigned long long)(long long)t.s;
}

// Pitched 2-D data: every element scaled.
extern "C" __global__ void scale2d(float *p, size_t pitch, int w, int h, float k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) ((float *)((char *)p + y * pitch))[x] *= k;
}

// A module variable the host sets and reads through cuModuleGetGlobal.
__device__ int counter;
extern "C" __global__ void bump(int by) { atomicAdd(&counter, by); }

// Writes v + i into p[i] (mapped host memory in drv_hostmap.c).
extern "C" __global__ void fill(float *p, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + (float)i;
}

// One thread: log[1 + log[0]++] = v; the launches' order is the log's (drv_threads.c).
extern "C" __global__ void append(int *log, int v) {
    int at = log[0]++;
    log[1 + at] = v;
}

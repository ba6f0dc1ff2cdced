// The second translation unit of tests/cuda/rdc.cu (built with -rdc=true).
__device__ int rdc_offset;

__device__ int rdc_twice(int x) { return 2 * x; }

__global__ void other_unit(int *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = rdc_twice(rdc_twice(i)) + rdc_offset;
}

void rdc_launch_other(int *v, int n) { other_unit<<<(n + 127) / 128, 128>>>(v, n); }

// A program whose kernels cannot print (test_printf_scan.c).
__global__ void store_one(int *p) { *p = 1; }

int main() {
    store_one<<<1, 1>>>(nullptr);
    return 0;
}

// A program with a kernel that prints (test_printf_scan.c).
#include <cstdio>

__global__ void say(int x) { printf("value %d\n", x); }
__global__ void store_one(int *p) { *p = 1; }

int main() {
    say<<<1, 1>>>(1);
    return 0;
}

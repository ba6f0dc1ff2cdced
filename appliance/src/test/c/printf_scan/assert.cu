// A program with a kernel that asserts: the driver prints a failed assertion's message as it prints printf's
// (test_printf_scan.c).
#include <cassert>

__global__ void check_one(const int *p) { assert(*p == 1); }

int main() {
    check_one<<<1, 1>>>(nullptr);
    return 0;
}

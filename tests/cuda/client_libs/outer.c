/* A shared library that exists only on the client; it needs libvmctest_inner.so, also only there. */
int vmctest_inner_value(void);

int vmctest_outer_value(void) {
    return vmctest_inner_value() + 1;
}

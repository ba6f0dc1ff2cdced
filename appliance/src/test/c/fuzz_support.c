/* What the fuzzer needs from worker_entry.c, which it cannot link (that file defines the process
 * entry point and interposes the CUDA registration functions): a registry with nothing registered,
 * and the log. */
#include <stdarg.h>
#include <stdio.h>

#include "worker.h"

uint32_t vmc_w_kernel_count(void) { return 0; }
uint32_t vmc_w_var_count(void) { return 0; }
const void *vmc_w_kernel_host_fun(uint32_t index) { (void)index; return NULL; }
const char *vmc_w_kernel_name(uint32_t index) { (void)index; return NULL; }
const void *vmc_w_var_host_var(uint32_t index) { (void)index; return NULL; }
const char *vmc_w_var_name(uint32_t index) { (void)index; return NULL; }
size_t vmc_w_var_size(uint32_t index) { (void)index; return 0; }

void vmc_w_log(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

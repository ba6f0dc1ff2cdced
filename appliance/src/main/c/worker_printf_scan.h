/* Whether a program's kernels can print (device printf, or assert, whose message the driver prints the same way):
 * what decides if a synchronous copy after a kernel launch may be answered on the completion word
 * (worker_completion.c "device printf"). The answer comes from the module images themselves: a kernel that can print
 * calls vprintf or __assertfail, whose names are in its cubin's symbol table and its PTX. */
#ifndef VMC_WORKER_PRINTF_SCAN_H
#define VMC_WORKER_PRINTF_SCAN_H

#include <stddef.h>

/* 0 when no kernel of the image can print; 1 when one can, or when that cannot be told (an image of a kind not read
 * here, compression other than zstd or no libzstd.so.1, an entry beyond the decompression budget, a malformed
 * image). The image is a fat binary (one container or several back to back, as in an .nv_fatbin section), a cubin
 * (ELF) or PTX text. */
int vmc_w_image_may_print(const void *image, size_t size);

/* The same for a fat-binary wrapper as a program's constructors register it (__cudaRegisterFatBinary's argument,
 * crt/host_runtime.h's __fatBinC_Wrapper_t): version 1's `data` is the fat binary; version 2 (relocatable device
 * code) also names a NULL-terminated list of each file's prelinked fat binary, which the runtime links at load time
 * (with only virtual architectures given, `data` is an empty container and every kernel is in that list: review of
 * 2026-11-27). *bytes: the bytes of the fat binaries read, for the log. */
int vmc_w_wrapper_may_print(const void *wrapper, size_t *bytes);

#endif

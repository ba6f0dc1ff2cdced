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

#endif

/* Every file of the driver front end sees cuda.h as NVIDIA's own build does (__CUDA_API_VERSION_INTERNAL):
 * each exported name declared exactly as exported, legacy ABIs included, and no macro renaming cuMemAlloc
 * to cuMemAlloc_v2 behind our back. So the compiler checks each definition against NVIDIA's declaration,
 * and code here always names the versioned function it means. */
#ifndef DRV_H
#define DRV_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#endif

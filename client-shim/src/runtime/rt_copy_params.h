/* A runtime copy's parameters (cudaMemcpy3DParms) as the driver's (CUDA_MEMCPY3D), as NVIDIA's runtime converts
 * them for the graph nodes it builds: positions, pitches and widths in bytes, each side's memory type from the
 * copy's kind (cudaMemcpyDefault: unified, which the driver front end resolves). Pure, so unit-tested
 * (src/test/test_rt_copy_params.c). */
#ifndef RT_COPY_PARAMS_H
#define RT_COPY_PARAMS_H

#include <cuda.h>
#include <cuda_runtime_api.h>

/* cudaErrorInvalidMemcpyDirection for an unknown kind; cudaErrorNotSupported when a side is a CUDA array (whose
 * positions and width count elements of a format this process does not know). */
cudaError_t vmc_rt_copy_to_driver(const struct cudaMemcpy3DParms *p, CUDA_MEMCPY3D *c);

#endif

// big_copies.cu built with --default-stream per-thread (tests/cuda/Makefile: *_ptds.cu): the copies
// and kernels use the calling thread's own default stream, and a striped copy must still wait for it.
#define PROGRAM_NAME "big_copies_ptds"
#include "big_copies.cu"

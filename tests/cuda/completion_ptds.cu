// completion.cu built with --default-stream per-thread (tests/cuda/Makefile: *_ptds.cu): each copy and its kernel use
// the calling thread's own default stream, where the worker has the GPU write the completion word.
#include "completion.cu"

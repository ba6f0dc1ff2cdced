// completion.cu without its one kernel that prints (COMPLETION_QUIET): no kernel of this program can print, so vmcuda
// answers synchronous copies after kernel launches on the completion word too (worker_completion.c "device printf");
// each copy must still see everything the kernels before it wrote.
#define COMPLETION_QUIET
#include "completion.cu"

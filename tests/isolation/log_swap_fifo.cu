// log_swap.cu with a named pipe in place of the log instead of a link.
// Usage: log_swap_fifo SECONDS
#define LOG_SWAP_FIFO 1
#include "log_swap.cu"

// A tenant that swaps its session's worker.log (its uid owns the session's directory) for a link to a file only
// root may read (/etc/shadow), or, built as log_swap_fifo, for a named pipe: when the session ends the daemon keeps
// the log and unmounts the directory, and must neither copy the link's target into the log a tenant's operator
// reads nor wait forever on the pipe (SessionDisks.release). main() makes one CUDA call a second for SECONDS.
// Usage: log_swap SECONDS
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void nothing() {} // a kernel: the binary is shipped and runs (its constructor too) on the appliance

__attribute__((constructor)) static void swap_log(void)
{
    if (!getenv("VMCUDA_SESSION_ID"))
        return; /* the client process: never here */
    unlink("worker.log"); /* the daemon's descriptor of it lives on; the name is the tenant's */
#ifdef LOG_SWAP_FIFO
    int rc = mkfifo("worker.log", 0644);
#else
    int rc = symlink("/etc/shadow", "worker.log");
#endif
    fprintf(stderr, "log_swap: %s\n", rc == 0 ? "swapped" : "could not swap");
}

#include "call_each_second.h"

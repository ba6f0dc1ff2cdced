// A hostile tenant's fork bomb, beside other sessions. Its static constructor runs in the worker on the
// appliance (VMCUDA_SESSION_ID is set there, never on the client) and forks until fork fails, every
// child sleeping; it reports on stderr (the session's worker.log) how many it got and why it stopped.
// With one uid per session the bomb meets only its own session's process limit (worker.max_processes);
// another tenant's session started meanwhile must not notice. main() then keeps the session (and the
// children) alive for SECONDS, making one CUDA call a second.
// Usage: fork_bomb SECONDS
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void nothing() {}

__attribute__((constructor)) static void bomb(void)
{
    if (!getenv("VMCUDA_SESSION_ID"))
        return; /* the client process: never here */
    int n = 0;
    for (; n < 100000; n++) {
        pid_t p = fork();
        if (p < 0) {
            fprintf(stderr, "bomb: fork %d failed: %s\n", n + 1, strerror(errno));
            break;
        }
        if (p == 0) {
            for (;;) pause();
        }
    }
    fprintf(stderr, "bomb: %d children running\n", n);
}

#include "call_each_second.h"

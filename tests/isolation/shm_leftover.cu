// A tenant that leaves things in /dev/shm, where every uid may write and which outlives its session: a file
// holding a secret, and a directory nested far deeper than a recursive walk goes (200 levels, 1 MiB at the
// bottom). When the session ends, or at the next daemon's start if this daemon was killed first, the daemon
// must delete both (UidReclaim), or the uid's next session, another tenant's, finds them. The entries are named
// vmcuda-leftover-{flat,deep}-SESSION. main() makes one CUDA call a second for SECONDS.
// Usage: shm_leftover SECONDS
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void nothing() {} // a kernel: the binary is shipped and runs (its constructor too) on the appliance

__attribute__((constructor)) static void leave_things(void)
{
    const char *session = getenv("VMCUDA_SESSION_ID");
    if (!session)
        return; /* the client process: never here */
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/vmcuda-leftover-flat-%s", session);
    FILE *f = fopen(path, "w");
    int ok = f && fputs("a secret of this session\n", f) >= 0;
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "/dev/shm/vmcuda-leftover-deep-%s", session);
    int dir = mkdir(path, 0700) == 0 ? open(path, O_RDONLY | O_DIRECTORY) : -1;
    for (int depth = 0; dir >= 0 && depth < 200; depth++) {
        int next = mkdirat(dir, "d", 0700) == 0 ? openat(dir, "d", O_RDONLY | O_DIRECTORY) : -1;
        close(dir);
        dir = next;
    }
    int big = dir >= 0 ? openat(dir, "big", O_WRONLY | O_CREAT, 0600) : -1;
    ok = ok && big >= 0 && ftruncate(big, 1 << 20) == 0;
    if (big >= 0)
        close(big);
    if (dir >= 0)
        close(dir);
    fprintf(stderr, "shm_leftover: %s\n", ok ? "left a file and a tree 200 deep" : "could not leave them");
}

#include "call_each_second.h"

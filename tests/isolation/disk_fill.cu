// A tenant that fills the appliance's disk: its static constructor runs in the worker (VMCUDA_SESSION_ID is set
// there, never on the client) and writes 16 MiB files into its working directory, the session's directory, until
// a write fails or 4 GiB are written, reporting on stderr (the session's worker.log, in that same directory) how
// it stopped. With worker.disk_max the directory is a tmpfs of that size: the writes stop there with ENOSPC, the
// session goes on, and the state disk (other tenants' uploads, the daemon's records) never sees the bytes.
// main() makes one CUDA call a second for SECONDS.
// Usage: disk_fill SECONDS
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void nothing() {} // a kernel: the binary is shipped and runs (its constructor too) on the appliance

static const size_t FILE_BYTES = 16u << 20, MAX_BYTES = 4ull << 30;

/* 0, or -1 with errno: a write that fills the file system short comes back short first, then with ENOSPC */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

__attribute__((constructor)) static void fill(void)
{
    if (!getenv("VMCUDA_SESSION_ID"))
        return; /* the client process: never here */
    static char block[1 << 20];
    memset(block, 0x5a, sizeof block);
    size_t written = 0;
    for (int n = 0; written < MAX_BYTES; n++) {
        char name[32];
        snprintf(name, sizeof name, "fill.%d", n);
        int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        if (fd < 0) {
            fprintf(stderr, "fill: stopped after %zu MiB: open: %s\n", written >> 20, strerror(errno));
            return;
        }
        for (size_t in_file = 0; in_file < FILE_BYTES; in_file += sizeof block) {
            if (write_all(fd, block, sizeof block) != 0) {
                int why = errno;
                close(fd);
                /* room for the log's lines first (the log is in the same directory, now full): this file and the
                 * one before go */
                unlink(name);
                if (n > 0) {
                    snprintf(name, sizeof name, "fill.%d", n - 1);
                    unlink(name);
                }
                fprintf(stderr, "fill: stopped after %zu MiB: %s\n", written >> 20, strerror(why));
                return;
            }
            written += sizeof block;
        }
        close(fd);
    }
    fprintf(stderr, "fill: stopped at %zu MiB: nothing stopped it\n", written >> 20);
}

#include "call_each_second.h"

// A hostile (or careless) tenant that takes host memory on the appliance until something stops it. Its
// static constructor runs in the worker (VMCUDA_SESSION_ID is set there, never on the client) and touches
// 16 MiB blocks of anonymous memory, or, built as memory_bomb_shm.cu, grows a file in /dev/shm (tmpfs: RAM
// that no process owns). It stops by itself at 4 GiB; it reports on stderr (the session's
// worker.log) each 64 MiB it holds. With session cgroups (worker.memory_max) the kernel stops the whole
// session at the limit; the appliance, the daemon and other sessions go on. main() makes one CUDA call a
// second for SECONDS.
// Usage: memory_bomb SECONDS
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void nothing() {} // a kernel: the binary is shipped and runs (its constructor too) on the appliance

static const size_t BLOCK = 16u << 20, MAX_BYTES = 4ull << 30;

#ifndef BOMB_IN_SHM
static void take_anonymous(void)
{
    for (size_t held = 0; held < MAX_BYTES; held += BLOCK) {
        char *p = (char *)mmap(NULL, BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "bomb: mmap after %zu MiB: %s\n", held >> 20, strerror(errno));
            return;
        }
        memset(p, 0x5a, BLOCK);
        if ((held + BLOCK) % (64u << 20) == 0)
            fprintf(stderr, "bomb: %zu MiB held\n", (held + BLOCK) >> 20);
    }
    fprintf(stderr, "bomb: stopped at %zu MiB: nothing stopped it\n", MAX_BYTES >> 20);
}

#else
static void take_shm(void)
{
    char name[64];
    snprintf(name, sizeof name, "/dev/shm/vmcuda-memory-bomb.%d", (int)getpid());
    int fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0) {
        fprintf(stderr, "bomb: open %s: %s\n", name, strerror(errno));
        return;
    }
    unlink(name); /* RAM held by a file that has no name: only the descriptor (and the kernel) know it */
    static char block[1 << 20];
    memset(block, 0x5a, sizeof block);
    for (size_t held = 0; held < MAX_BYTES; held += sizeof block) {
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) {
            fprintf(stderr, "bomb: /dev/shm write after %zu MiB: %s\n", held >> 20, strerror(errno));
            return;
        }
        if ((held + sizeof block) % (64u << 20) == 0)
            fprintf(stderr, "bomb: %zu MiB held in /dev/shm\n", (held + sizeof block) >> 20);
    }
    fprintf(stderr, "bomb: stopped at %zu MiB in /dev/shm: nothing stopped it\n", MAX_BYTES >> 20);
}

#endif

__attribute__((constructor)) static void bomb(void)
{
    if (!getenv("VMCUDA_SESSION_ID"))
        return; /* the client process: never here */
#ifdef BOMB_IN_SHM
    take_shm();
#else
    take_anonymous();
#endif
}

#include "call_each_second.h"

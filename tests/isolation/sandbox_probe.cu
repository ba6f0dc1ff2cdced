// The worker sandbox, seen from the application: its static constructor (which runs in the worker on
// the appliance, before any CUDA call) tries to reach the network and to leave a file in /tmp, and says
// what happened on stderr (natively the terminal, on the appliance the session's worker.log). main()
// then uses CUDA as usual, so through vmcuda the program still gets the same results as natively.
// Usage: sandbox_probe MARKER   (the /tmp file is /tmp/vmcuda-probe-MARKER; the worker sees argv[0] only,
// so the marker is compiled into the constructor from the program's own name: see probe_name()).
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void add_one(int *p) { *p += 1; }

__attribute__((constructor)) static void probe(void)
{
    // TCP to the loopback's discard port and to a public address: the sandbox's system-call filter refuses
    // the socket itself ("Operation not permitted"), and its network namespace has no usable interface.
    const char *targets[] = {"127.0.0.1", "1.1.1.1"};
    for (int i = 0; i < 2; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons(i == 0 ? 9 : 53);
        inet_pton(AF_INET, targets[i], &a.sin_addr);
        int rc = s < 0 ? -1 : connect(s, (struct sockaddr *)&a, sizeof a);
        fprintf(stderr, "probe: tcp connect %s: %s\n", targets[i], rc == 0 ? "connected" : strerror(errno));
        if (s >= 0) close(s);
    }
    // /tmp: the sandbox's own tmpfs; the appliance's /tmp never sees the file. The client process runs
    // this constructor too (same binary), so the name carries the process id to tell the two apart.
    char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/vmcuda-isolation-probe.%d", (int)getpid());
    FILE *f = fopen(tmp, "w");
    fprintf(stderr, "probe: write %s: %s\n", tmp, f ? "written" : strerror(errno));
    if (f) { fputs("written by sandbox_probe\n", f); fclose(f); }
    // outside the session directory and /tmp everything is read-only
    f = fopen("/var/tmp/vmcuda-isolation-probe", "w");
    fprintf(stderr, "probe: write /var/tmp/vmcuda-isolation-probe: %s\n", f ? "written" : strerror(errno));
    if (f) { fclose(f); unlink("/var/tmp/vmcuda-isolation-probe"); }
    fprintf(stderr, "probe: uid %d\n", (int)getuid());
    // the daemon's state directory (the worker runs in STATE/sessions/ID): other sessions' directories,
    // the session records and the binary cache must be out of sight
    f = fopen("../../sessions.jsonl", "r");
    fprintf(stderr, "probe: read the session records: %s\n", f ? "readable" : strerror(errno));
    if (f) fclose(f);
    DIR *cache = opendir("../../cache");
    fprintf(stderr, "probe: open the binary cache: %s\n", cache ? "readable" : strerror(errno));
    if (cache) closedir(cache);
    int others = 0;
    char self[4096] = "";
    if (getcwd(self, sizeof self)) {
        const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
        DIR *d = opendir("..");
        for (struct dirent *e; d && (e = readdir(d)) != NULL;)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, base)) others++;
        if (d) closedir(d);
    }
    fprintf(stderr, "probe: other session directories visible: %d\n", others);
    // the largest file the worker may write (worker.max_file_bytes): 2 MiB into its own directory
    {
        char big[64];
        snprintf(big, sizeof big, "vmcuda-isolation-big.%d", (int)getpid());
        FILE *b = fopen(big, "w");
        static char chunk[1 << 16];
        int ok = b != NULL;
        for (int i = 0; ok && i < 32; i++)
            ok = fwrite(chunk, 1, sizeof chunk, b) == sizeof chunk;
        ok = b && fflush(b) == 0 && ok;
        fprintf(stderr, "probe: write 2 MiB: %s\n", ok ? "written" : strerror(errno));
        if (b) fclose(b);
        unlink(big);
    }
    // the session's memory limit (worker.memory_max) is out of the tenant's reach: try to lift it. Only in a
    // worker (natively, as root, this would lift the test runner's own limit).
    if (getenv("VMCUDA_SESSION_ID")) {
        char line[512], file[1024] = "";
        FILE *cg = fopen("/proc/self/cgroup", "r");
        while (cg && fgets(line, sizeof line, cg)) { // "0::/path" (v2) or "N:memory:/path" (v1, preferred)
            line[strcspn(line, "\n")] = 0;
            char *path = strchr(line, '/');
            if (path && strstr(line, ":memory:")) {
                snprintf(file, sizeof file, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", path);
                break;
            }
            if (path && strncmp(line, "0::", 3) == 0)
                snprintf(file, sizeof file, "/sys/fs/cgroup%s/memory.max", path);
        }
        if (cg) fclose(cg);
        FILE *limit = file[0] ? fopen(file, "w") : NULL;
        int lifted = limit && fputs("max\n", limit) >= 0 && fflush(limit) == 0;
        fprintf(stderr, "probe: lift the session's memory limit: %s\n", lifted ? "done" : file[0] ? strerror(errno) : "no cgroup");
        if (limit) fclose(limit);
    }
    // the OOM killer's choice: a session before the daemon (vmcuda-sandbox raises every session's score)
    {
        FILE *adj = fopen("/proc/self/oom_score_adj", "r");
        int score = -1001;
        if (adj && fscanf(adj, "%d", &score) != 1) score = -1001;
        if (adj) fclose(adj);
        fprintf(stderr, "probe: oom_score_adj %d\n", score);
    }
    // the system-call filter: no user namespace (the usual first step of a kernel exploit), no ptrace.
    // Tried in a child, so that a native run (where both may succeed) goes on unchanged.
    pid_t child = fork();
    if (child == 0) {
        fprintf(stderr, "probe: unshare a user namespace: %s\n", unshare(CLONE_NEWUSER) == 0 ? "done" : strerror(errno));
        fprintf(stderr, "probe: ptrace(PTRACE_TRACEME): %s\n",
                ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? "done" : strerror(errno));
        _exit(0);
    }
    if (child > 0)
        waitpid(child, NULL, 0);
}

int main()
{
    int count = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    printf("cudaGetDeviceCount: %s\n", cudaGetErrorName(e));
    int *d = NULL;
    e = cudaMalloc(&d, sizeof(int));
    printf("cudaMalloc: %s\n", cudaGetErrorName(e));
    if (e == cudaSuccess) {
        cudaMemset(d, 0, sizeof(int));
        add_one<<<1, 1>>>(d);
        int h = 0;
        e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
        printf("kernel result: %d (%s)\n", h, cudaGetErrorName(e));
        cudaFree(d);
    }
    return e == cudaSuccess ? 0 : 2;
}

// Host<->device copy bandwidth for the sizes named on the command line. The same binary runs
// natively and through vmcuda (tests/bench/gpu-suite.sh: the block-size sweep and the concurrent
// clients). Output: one "metric<TAB>value<TAB>unit" line per measurement, nothing else on stdout.
//
//   bench_transfer [--reps N] [--dir h2d|d2h|both] [--pinned] [--barrier DIR] SIZE...
//     SIZE      bytes, or with a K/M/G suffix (KiB/MiB/GiB): 32M 128M 624M
//     --reps    timed copies per (direction, size); the best one is reported (default 3)
//     --dir     which directions (default both)
//     --pinned  host buffer from cudaMallocHost instead of malloc (pageable, the default)
//     --barrier concurrent-client mode: after set-up create DIR/ready.PID, wait for DIR/go, then do
//               all copies back to back and also report copy_seconds, copy_start, copy_end
//               (CLOCK_REALTIME seconds) and bytes_moved, so that a harness can compute the
//               aggregate bandwidth of N clients over the same window.
// Metrics: {h2d,d2h}_{pageable,pinned}_<size> GB/s (1e9 bytes/s, best of --reps).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>
#include <vector>
#include "bench_common.h"



static double wall_s() {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static size_t parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    case '\0': break;
    default: fprintf(stderr, "bench_transfer: bad size '%s'\n", s); exit(2);
    }
    if (v == 0) { fprintf(stderr, "bench_transfer: bad size '%s'\n", s); exit(2); }
    return (size_t)v;
}

static std::string size_name(size_t b) {
    char buf[64];
    if (b % (1u << 20) == 0) snprintf(buf, sizeof buf, "%zuMiB", b >> 20);
    else snprintf(buf, sizeof buf, "%zuKiB", b >> 10);
    return buf;
}

int main(int argc, char **argv) {
    int reps = 3;
    bool h2d = true, d2h = true, pinned = false;
    const char *barrier = nullptr;
    std::vector<size_t> sizes;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--reps" && i + 1 < argc) reps = atoi(argv[++i]);
        else if (a == "--dir" && i + 1 < argc) {
            std::string d = argv[++i];
            h2d = d == "h2d" || d == "both";
            d2h = d == "d2h" || d == "both";
        } else if (a == "--pinned") pinned = true;
        else if (a == "--barrier" && i + 1 < argc) barrier = argv[++i];
        else sizes.push_back(parse_size(argv[i]));
    }
    if (sizes.empty() || reps < 1 || !(h2d || d2h)) {
        fprintf(stderr, "usage: bench_transfer [--reps N] [--dir h2d|d2h|both] [--pinned] [--barrier DIR] SIZE...\n");
        return 2;
    }
    size_t max_bytes = 0;
    for (size_t s : sizes) max_bytes = s > max_bytes ? s : max_bytes;

    CK(cudaSetDevice(0));
    CK(cudaFree(nullptr));
    char *dev, *host;
    CK(cudaMalloc(&dev, max_bytes));
    CK(cudaMemset(dev, 3, max_bytes));
    if (pinned) CK(cudaMallocHost(&host, max_bytes));
    else if (!(host = (char *)malloc(max_bytes))) { fprintf(stderr, "out of host memory\n"); return 1; }
    memset(host, 1, max_bytes); // fault every page in before anything is timed
    // Untimed warm-up in each direction: first-copy costs (staging buffers, the shared-memory ring's
    // attach and registration) are not what this program measures.
    size_t warm = max_bytes < (64u << 20) ? max_bytes : (64u << 20);
    CK(cudaMemcpy(dev, host, warm, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(host, dev, warm, cudaMemcpyDeviceToHost));
    CK(cudaDeviceSynchronize());

    if (barrier) {
        std::string ready = std::string(barrier) + "/ready." + std::to_string(getpid());
        FILE *f = fopen(ready.c_str(), "w");
        if (f) fclose(f);
        std::string go = std::string(barrier) + "/go";
        double give_up = now_s() + 120;
        while (access(go.c_str(), F_OK) != 0 && now_s() < give_up) usleep(500);
    }

    const char *kind = pinned ? "pinned" : "pageable";
    double start = wall_s(), t_all = now_s();
    unsigned long long moved = 0;
    std::vector<std::string> lines;
    for (size_t bytes : sizes) {
        for (int dir = 0; dir < 2; dir++) {
            if ((dir == 0 && !h2d) || (dir == 1 && !d2h)) continue;
            double best = 1e30;
            for (int r = 0; r < reps; r++) {
                double t0 = now_s();
                if (dir == 0) CK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
                else CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
                double t = now_s() - t0;
                best = t < best ? t : best;
                moved += bytes;
            }
            char line[160];
            snprintf(line, sizeof line, "%s_%s_%s\t%.3f\tGB/s", dir == 0 ? "h2d" : "d2h", kind,
                     size_name(bytes).c_str(), bytes / best / 1e9);
            if (barrier) lines.push_back(line); // printed after the window, so stdout costs nothing inside it
            else printf("%s\n", line), fflush(stdout);
        }
    }
    double secs = now_s() - t_all, end = wall_s();
    for (auto &l : lines) printf("%s\n", l.c_str());
    if (barrier) {
        printf("copy_seconds\t%.6f\ts\n", secs);
        printf("copy_start\t%.6f\ts\n", start);
        printf("copy_end\t%.6f\ts\n", end);
        printf("bytes_moved\t%llu\tB\n", moved);
    }
    if (pinned) CK(cudaFreeHost(host));
    else free(host);
    CK(cudaFree(dev));
    return 0;
}

/* Discovery tool (run on the GPU machine against NVIDIA's real libcuda.so.1): which exported symbol
 * cuGetProcAddress_v2 returns for every (name, ABI version, stream flag) that cudaTypedefs.h declares.
 * The answers are the `proc` keys of protocol/cuda-driver.spec.
 *   procmap LIBCUDA pfn-keys.txt libcuda-exports.txt > procmap.tsv
 * pfn-keys.txt: "NAME VERSION [_ptsz|_ptds]" per line (from cudaTypedefs.h's PFN_ typedefs).
 * Output: NAME VERSION FLAGS STATUS SYMBOL_STATUS EXPORTED-SYMBOL(S) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*get_proc_v2_t)(const char *, void **, int, unsigned long long, int *);

struct sym { const char *name; void *addr; };

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: procmap LIBCUDA KEYS EXPORTS\n"); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    get_proc_v2_t gp = (get_proc_v2_t)dlsym(h, "cuGetProcAddress_v2");
    int (*drv_version)(int *) = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
    if (!gp || !drv_version) { fprintf(stderr, "no cuGetProcAddress_v2\n"); return 1; }
    int v = 0;
    drv_version(&v);
    printf("# driver version %d\n", v);
    struct sym syms[1024];
    int n = 0;
    char line[512];
    FILE *ex = fopen(argv[3], "r");
    while (ex && fgets(line, sizeof line, ex) && n < 1024) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        syms[n].name = strdup(line);
        syms[n].addr = dlsym(h, line);
        n++;
    }
    FILE *keys = fopen(argv[2], "r");
    if (!keys) { perror("keys"); return 1; }
    /* every key at its own version, plus the flag variants the runtimes use */
    while (fgets(line, sizeof line, keys)) {
        char name[256], suffix[16] = "";
        int version;
        if (sscanf(line, "%255s %d %15s", name, &version, suffix) < 2) continue;
        unsigned long long flag_sets[3] = {0, 1, 2};
        for (int f = 0; f < 3; f++) {
            unsigned long long flags = flag_sets[f];
            for (int probe = 0; probe < 2; probe++) {
                int ver = probe == 0 ? version : version - 1;
                void *fn = NULL;
                int st_sym = -1;
                int st = gp(name, &fn, ver, flags, &st_sym);
                printf("%s\t%d\t%llu\t%d\t%d\t", name, ver, flags, st, st_sym);
                int found = 0;
                for (int i = 0; i < n; i++)
                    if (fn && syms[i].addr == fn) { printf("%s%s", found ? "," : "", syms[i].name); found = 1; }
                if (fn && !found) {
                    Dl_info info;
                    printf("?%s", dladdr(fn, &info) && info.dli_sname ? info.dli_sname : "unknown");
                }
                printf("\t%s\n", suffix);
            }
        }
    }
    /* each exported name asked by its own name at 13000 (do exact versioned names resolve?) */
    for (int i = 0; i < n; i++) {
        void *fn = NULL;
        int st_sym = -1;
        int st = gp(syms[i].name, &fn, 13000, 0, &st_sym);
        printf("EXPORT\t%s\t%d\t%d\t%s\n", syms[i].name, st, st_sym, fn == syms[i].addr ? "self" : fn ? "other" : "null");
    }
    /* the empty-name probe the runtimes make */
    void *fn = (void *)1;
    int st_sym = -1;
    int st = gp("", &fn, 13000, 0, &st_sym);
    printf("EMPTY\t%d\t%d\t%p\n", st, st_sym, fn);
    return 0;
}

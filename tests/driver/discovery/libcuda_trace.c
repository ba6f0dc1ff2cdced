/* Discovery tracer: a libcuda.so.1 that passes every call through to NVIDIA's real driver and records
 * how a program uses it: which names, ABI versions and flags it asks cuGetProcAddress for, which private
 * tables it asks cuGetExportTable for and which of their slots it calls (with the argument registers),
 * and how often each function is called. Run on the GPU machine only, natively:
 *   VMCUDA_REAL_LIBCUDA=/usr/lib/x86_64-linux-gnu/libcuda.so.1 VMCUDA_TRACE_FILE=trace.txt \
 *   LD_LIBRARY_PATH=DIR_OF_THIS:$LD_LIBRARY_PATH program
 * What it found shaped protocol/cuda-driver.spec and client-shim/src/drv_tables.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ENTRIES 16384
#define ARG_LOGS_PER_SLOT 6

enum kind { EXPORTED, PROC, SLOT };
struct entry {
    void *real;
    char label[96];
    enum kind kind;
    uint64_t count;
};
static struct entry entries[MAX_ENTRIES];
static int n_entries;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *real_handle;
static FILE *out;
static uint8_t *stub_page;
static size_t stub_used;

extern char trace_common[];
#include "export_names.h" /* static const char *export_names[]; N_EXPORTS */

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&lock);
    if (out) {
        fprintf(out, "[%d] ", (int)getpid());
        vfprintf(out, fmt, ap);
        fputc('\n', out);
        fflush(out);
    }
    pthread_mutex_unlock(&lock);
    va_end(ap);
}

__attribute__((visibility("hidden"))) void *trace_called(uint64_t index, uint64_t *regs) {
    struct entry *e = &entries[index];
    uint64_t n = __atomic_add_fetch(&e->count, 1, __ATOMIC_RELAXED);
    if (e->kind == SLOT && n <= ARG_LOGS_PER_SLOT)
        say("SLOTCALL %s #%llu args %#llx %#llx %#llx %#llx %#llx %#llx", e->label, (unsigned long long)n,
            (unsigned long long)regs[0], (unsigned long long)regs[1], (unsigned long long)regs[2],
            (unsigned long long)regs[3], (unsigned long long)regs[4], (unsigned long long)regs[5]);
    if (!e->real) {
        say("CALL of unresolved %s", e->label);
        return NULL;
    }
    return e->real;
}

/* A stub that enters trace_common with %r11 = index: mov r11, imm64; mov r10, imm64; jmp r10. */
static void *make_stub(uint64_t index) {
    if (!stub_page || stub_used + 23 > (1u << 20))
        return NULL;
    uint8_t *p = stub_page + stub_used;
    p[0] = 0x49; p[1] = 0xBB; memcpy(p + 2, &index, 8);
    uint64_t target = (uint64_t)(uintptr_t)trace_common;
    p[10] = 0x49; p[11] = 0xBA; memcpy(p + 12, &target, 8);
    p[20] = 0x41; p[21] = 0xFF; p[22] = 0xE2;
    stub_used += 24;
    return p;
}

static int new_entry(void *real, enum kind kind, const char *fmt, ...) {
    pthread_mutex_lock(&lock);
    int i = n_entries < MAX_ENTRIES ? n_entries++ : -1;
    pthread_mutex_unlock(&lock);
    if (i < 0)
        return -1;
    entries[i].real = real;
    entries[i].kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(entries[i].label, sizeof entries[i].label, fmt, ap);
    va_end(ap);
    return i;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("VMCUDA_REAL_LIBCUDA");
    const char *file = getenv("VMCUDA_TRACE_FILE");
    out = file ? fopen(file, "a") : stderr;
    real_handle = dlopen(path ? path : "/usr/lib/x86_64-linux-gnu/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!real_handle) {
        say("cannot open the real libcuda: %s", dlerror());
    }
    stub_page = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stub_page == MAP_FAILED)
        stub_page = NULL;
    for (int i = 0; i < N_EXPORTS; i++)
        new_entry(real_handle ? dlsym(real_handle, export_names[i]) : NULL, EXPORTED, "%s", export_names[i]);
    char exe[512] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    say("START %s", exe);
}

__attribute__((destructor)) static void stop(void) {
    for (int i = 0; i < n_entries; i++)
        if (entries[i].count)
            say("COUNT %s %llu", entries[i].label, (unsigned long long)entries[i].count);
    say("END");
}

typedef int (*get_proc_v2_t)(const char *, void **, int, unsigned long long, int *);
typedef int (*get_proc_t)(const char *, void **, int, unsigned long long);

static const char *symbol_of(void *fn) {
    for (int i = 0; i < N_EXPORTS; i++)
        if (entries[i].real == fn && fn)
            return export_names[i];
    return "?";
}

static void *wrap_proc(const char *name, void *fn, int version, unsigned long long flags) {
    if (!fn)
        return fn;
    int i = new_entry(fn, PROC, "%s@%d/%llu=%s", name, version, flags, symbol_of(fn));
    void *stub = i >= 0 ? make_stub((uint64_t)i) : NULL;
    return stub ? stub : fn;
}

__attribute__((visibility("default"))) int cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                                               unsigned long long flags, int *status) {
    static get_proc_v2_t real;
    if (!real)
        real = (get_proc_v2_t)dlsym(real_handle, "cuGetProcAddress_v2");
    int st = real(symbol, pfn, version, flags, status);
    say("PROC %s %d %llu -> %d/%d %s", symbol ? symbol : "(null)", version, flags, st, status ? *status : -9,
        st == 0 && pfn && *pfn ? symbol_of(*pfn) : "-");
    if (st == 0 && pfn && *pfn && symbol) {
        if (!strcmp(symbol, "cuGetProcAddress") || !strcmp(symbol, "cuGetExportTable"))
            *pfn = dlsym(RTLD_DEFAULT, symbol); /* ours */
        else
            *pfn = wrap_proc(symbol, *pfn, version, flags);
    }
    return st;
}

__attribute__((visibility("default"))) int cuGetProcAddress(const char *symbol, void **pfn, int version,
                                                            unsigned long long flags) {
    static get_proc_t real;
    if (!real)
        real = (get_proc_t)dlsym(real_handle, "cuGetProcAddress");
    int st = real(symbol, pfn, version, flags);
    say("PROC1 %s %d %llu -> %d %s", symbol ? symbol : "(null)", version, flags, st,
        st == 0 && pfn && *pfn ? symbol_of(*pfn) : "-");
    if (st == 0 && pfn && *pfn && symbol) {
        if (!strcmp(symbol, "cuGetProcAddress_v2") || !strcmp(symbol, "cuGetExportTable"))
            *pfn = dlsym(RTLD_DEFAULT, symbol);
        else
            *pfn = wrap_proc(symbol, *pfn, version, flags);
    }
    return st;
}

static const uint8_t RUNTIME_INTERFACE[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                              0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};
static const uint8_t INTEGRITY[16] = {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
                                      0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2};

struct wrapped { uint8_t uuid[16]; const void *real, *ours; };
static struct wrapped wrapped_tables[64];
static int n_wrapped;

/* ---- a closer look at two private slots cuFFT needs (6e163fbe[7] with its callback, 21318c60[4]):
 * arguments, what the pointed-to memory holds before and after, the callback's calls, results ---- */
#include <sys/uio.h>

typedef uint64_t (*fn6_t)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
static fn6_t real_iterate, real_flag, real_callback;

static void peek(const char *what, uint64_t p) {
    unsigned char b[48];
    struct iovec local = {b, sizeof b}, remote = {(void *)(uintptr_t)p, sizeof b};
    if (!p || process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof b)
        return;
    char hex[200] = "", text[64] = "";
    for (int i = 0; i < 48; i++) {
        sprintf(hex + 3 * i, "%02x ", b[i]);
        text[i] = b[i] >= 32 && b[i] < 127 ? (char)b[i] : '.';
    }
    say("  %s @%#llx: %s| %s", what, (unsigned long long)p, hex, text);
}

static void peek_args(const char *who, const uint64_t a[6]) {
    char name[64];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "%s arg%d", who, i + 1);
        peek(name, a[i]);
    }
}

static uint64_t callback_wrapper(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
    uint64_t v[6] = {a, b, c, d, e, f};
    say("CALLBACK args %#llx %#llx %#llx %#llx %#llx %#llx", (unsigned long long)a, (unsigned long long)b,
        (unsigned long long)c, (unsigned long long)d, (unsigned long long)e, (unsigned long long)f);
    peek_args("callback", v);
    uint64_t r = real_callback(a, b, c, d, e, f);
    say("CALLBACK -> %#llx", (unsigned long long)r);
    return r;
}

static uint64_t iterate_wrapper(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
    uint64_t v[6] = {a, b, c, d, e, f};
    say("ITERATE 6e163fbe[7] args %#llx %#llx %#llx %#llx %#llx %#llx", (unsigned long long)a, (unsigned long long)b,
        (unsigned long long)c, (unsigned long long)d, (unsigned long long)e, (unsigned long long)f);
    peek_args("before", v);
    real_callback = (fn6_t)(uintptr_t)c;
    uint64_t r = real_iterate(a, b, (uint64_t)(uintptr_t)callback_wrapper, d, e, f);
    say("ITERATE -> %#llx", (unsigned long long)r);
    peek_args("after", v);
    return r;
}

static uint64_t flag_wrapper(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
    uint64_t v[6] = {a, b, c, d, e, f};
    uint64_t r = real_flag(a, b, c, d, e, f);
    say("FLAG 21318c60[4] args %#llx %#llx %#llx %#llx %#llx %#llx -> %#llx", (unsigned long long)a, (unsigned long long)b,
        (unsigned long long)c, (unsigned long long)d, (unsigned long long)e, (unsigned long long)f, (unsigned long long)r);
    peek_args("flag after", v);
    return r;
}

__attribute__((visibility("default"))) int cuGetExportTable(const void **table, const uint8_t *uuid) {
    static int (*real)(const void **, const uint8_t *);
    if (!real)
        real = (int (*)(const void **, const uint8_t *))dlsym(real_handle, "cuGetExportTable");
    int st = real(table, uuid);
    char hex[33] = "";
    for (int i = 0; uuid && i < 16; i++)
        sprintf(hex + 2 * i, "%02x", uuid[i]);
    if (st != 0 || !table || !*table) {
        say("TABLE %s -> %d", hex, st);
        return st;
    }
    const uint64_t *t = *table;
    uint64_t first = t[0];
    int sized = first > 0 && first < 8192 && first % 8 == 0;
    int n = sized ? (int)(first / 8) : 8;
    char words[2048] = "";
    size_t w = 0;
    for (int i = 0; i < n && i < 128 && w < sizeof words - 40; i++) {
        Dl_info info;
        int code = t[i] && dladdr((void *)(uintptr_t)t[i], &info) && info.dli_fbase && strstr(info.dli_fname, "libcuda");
        w += (size_t)snprintf(words + w, sizeof words - w, " %d:%s%#llx", i, code ? "fn" : "", (unsigned long long)t[i]);
    }
    say("TABLE %s -> %d size %s %llu words%s", hex, st, sized ? "word0" : "unsized", (unsigned long long)n, words);
    /* the runtime hashes the addresses of these two: hand them out unchanged */
    if (!memcmp(uuid, RUNTIME_INTERFACE, 16) || !memcmp(uuid, INTEGRITY, 16))
        return st;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_wrapped; i++)
        if (!memcmp(wrapped_tables[i].uuid, uuid, 16) && wrapped_tables[i].real == *table) {
            *table = wrapped_tables[i].ours;
            pthread_mutex_unlock(&lock);
            return st;
        }
    pthread_mutex_unlock(&lock);
    uint64_t *copy = calloc((size_t)n + 8, 8);
    if (!copy)
        return st;
    for (int i = 0; i < n + 8; i++) {
        copy[i] = t[i];
        Dl_info info;
        /* NVIDIA's driver is stripped: its private functions have no symbol, so any word that points into
         * its code is taken for a function (a size or a data pointer does not) */
        if (i < n && t[i] && dladdr((void *)(uintptr_t)t[i], &info) && info.dli_fname && strstr(info.dli_fname, "libcuda")) {
            if (!strncmp(hex, "6e163fbe", 8) && i == 7) {
                real_iterate = (fn6_t)(uintptr_t)t[i];
                copy[i] = (uint64_t)(uintptr_t)iterate_wrapper;
                continue;
            }
            if (!strncmp(hex, "21318c60", 8) && i == 4) {
                real_flag = (fn6_t)(uintptr_t)t[i];
                copy[i] = (uint64_t)(uintptr_t)flag_wrapper;
                continue;
            }
            int e = new_entry((void *)(uintptr_t)t[i], SLOT, "%.8s[%d]", hex, i);
            void *stub = e >= 0 ? make_stub((uint64_t)e) : NULL;
            if (stub)
                copy[i] = (uint64_t)(uintptr_t)stub;
        }
    }
    pthread_mutex_lock(&lock);
    if (n_wrapped < 64) {
        memcpy(wrapped_tables[n_wrapped].uuid, uuid, 16);
        wrapped_tables[n_wrapped].real = *table;
        wrapped_tables[n_wrapped].ours = copy;
        n_wrapped++;
    }
    pthread_mutex_unlock(&lock);
    *table = copy;
    return st;
}

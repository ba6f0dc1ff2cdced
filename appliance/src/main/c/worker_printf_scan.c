/* Can a module image's kernels print? (worker_printf_scan.h) A kernel that prints calls vprintf (printf,
 * cuda::std::print) or __assertfail (assert), and both names are in the cubin's symbol table and in the PTX, as
 * plain bytes. A fat binary holds several entries (a cubin per architecture, PTX), each maybe compressed: nvcc 13
 * compresses PTX entries with zstd by default, and every entry with -Xfatbin -compress-all (flag 0x8000, zstd's own
 * frame inside). Those are decompressed with libzstd, loaded when first needed; any other compression, entry kind
 * or malformed header counts as "may print", which only costs the completion word its use after launches.
 *
 * The fat binary layout (as the CUDA toolkit writes it; not documented by NVIDIA, read from nvcc 13's output and
 * matching what other CUDA forwarders parse): a container header {u32 magic 0xBA55ED50, u16 version, u16
 * header size, u64 size of the entries}, then entries {u16 kind (1 PTX, 2 cubin), u16, u32 header size, u64
 * payload size, u32 compressed size, ..., u64 flags at +40, u64 decompressed size at +56}, each followed by its
 * payload. An .nv_fatbin section holds such containers back to back, 8-byte aligned. */
#define _GNU_SOURCE
#include "worker_printf_scan.h"

#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_MAGIC 0xBA55ED50u
#define ENTRY_PTX 1
#define ENTRY_CUBIN 2
#define ENTRY_MIN_HEADER 64
#define FLAG_COMPRESSED_ZSTD 0x8000u
#define FLAG_COMPRESSED_OTHER 0x2000u /* the toolkits' older compression (and nvcc 13's --compress-mode=speed): not read */
/* The entry flags nvcc 13 writes (64-bit, debug, Linux, the two compressions, LTO, sm_XXa, sm_XXf, sm_100 and later
 * cubins; the review of 2026-11-27 listed them): any other bit may mean a layout or compression not known here. */
#define FLAGS_KNOWN (0x1u | 0x2u | 0x10u | FLAG_COMPRESSED_OTHER | FLAG_COMPRESSED_ZSTD | 0x10000u | 0x100000u | \
                     0x200000u | 0x1000000u)
/* Decompressing is the only costly part: an entry larger than this decompressed, or a process that has already
 * decompressed this much (the CUDA libraries' images run to hundreds of MiB), counts as "may print" rather than
 * delay a module load further (zstd decompresses about 1 GB/s). */
#define ENTRY_BUDGET (32u << 20)
#define PROCESS_BUDGET (256ull << 20)

static uint64_t decompressed_so_far;

static uint16_t u16_at(const uint8_t *p) { uint16_t v; memcpy(&v, p, sizeof v); return v; }
static uint32_t u32_at(const uint8_t *p) { uint32_t v; memcpy(&v, p, sizeof v); return v; }
static uint64_t u64_at(const uint8_t *p) { uint64_t v; memcpy(&v, p, sizeof v); return v; }

static int names_a_printer(const void *bytes, size_t n) {
    return memmem(bytes, n, "vprintf", 7) != NULL || memmem(bytes, n, "__assertfail", 12) != NULL;
}

/* ---- libzstd, loaded on first use ---- */

static size_t (*zstd_decompress)(void *dst, size_t capacity, const void *src, size_t n);
static unsigned (*zstd_is_error)(size_t code);
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;

static void load_zstd(void) {
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    zstd_decompress = (size_t (*)(void *, size_t, const void *, size_t))dlsym(h, "ZSTD_decompress");
    zstd_is_error = (unsigned (*)(size_t))dlsym(h, "ZSTD_isError");
    if (!zstd_decompress || !zstd_is_error)
        zstd_decompress = NULL;
}

/* 0 or 1 as vmc_w_image_may_print, for a zstd-compressed entry payload of `n` bytes that says it decompresses to
 * `size`. */
static int zstd_entry_may_print(const uint8_t *payload, size_t n, uint64_t size) {
    pthread_once(&zstd_once, load_zstd);
    if (!zstd_decompress || size == 0 || size > ENTRY_BUDGET ||
        __atomic_add_fetch(&decompressed_so_far, size, __ATOMIC_RELAXED) > PROCESS_BUDGET)
        return 1;
    void *plain = malloc(size);
    if (!plain)
        return 1;
    size_t got = zstd_decompress(plain, size, payload, n);
    int may = zstd_is_error(got) || names_a_printer(plain, got);
    free(plain);
    return may;
}

/* ---- fat binaries ---- */

static int entry_may_print(const uint8_t *entry, size_t header, uint64_t payload_size) {
    unsigned kind = u16_at(entry);
    uint64_t flags = u64_at(entry + 40), decompressed = u64_at(entry + 56);
    uint32_t compressed = u32_at(entry + 16);
    const uint8_t *payload = entry + header;
    if (kind != ENTRY_PTX && kind != ENTRY_CUBIN)
        return 1; /* LTO IR and the like: not read here */
    if ((flags & ~(uint64_t)FLAGS_KNOWN) || (flags & FLAG_COMPRESSED_OTHER))
        return 1;
    if (flags & FLAG_COMPRESSED_ZSTD)
        return compressed == 0 || compressed > payload_size ? 1 : zstd_entry_may_print(payload, compressed, decompressed);
    return names_a_printer(payload, payload_size);
}

/* One container at `p` of `n` bytes (n >= 16): its length through *used, 1 when it may print (or is malformed). */
static int container_may_print(const uint8_t *p, size_t n, size_t *used) {
    uint16_t header = u16_at(p + 6);
    uint64_t entries = u64_at(p + 8);
    if (u32_at(p) != FATBIN_MAGIC || header < 16 || header > n || entries > n - header)
        return 1;
    *used = header + entries;
    for (uint64_t at = header, end = header + entries; at < end;) {
        if (end - at < ENTRY_MIN_HEADER)
            return 1;
        const uint8_t *e = p + at;
        uint32_t entry_header = u32_at(e + 4);
        uint64_t payload = u64_at(e + 8);
        if (entry_header < ENTRY_MIN_HEADER || entry_header > end - at || payload > end - at - entry_header)
            return 1;
        if (entry_may_print(e, entry_header, payload))
            return 1;
        at += entry_header + payload;
    }
    return 0;
}

static int containers_may_print(const uint8_t *p, size_t n) {
    size_t at = 0;
    while (at < n) {
        if (n - at < 16)
            return p[at] != 0 || memcmp(p + at, p + at + 1, n - at - 1) != 0; /* trailing padding: zeros only */
        if (u64_at(p + at) == 0) { /* alignment padding between containers */
            at += 8;
            continue;
        }
        size_t used = 0;
        if (container_may_print(p + at, n - at, &used))
            return 1;
        at += used;
    }
    return 0;
}

static int looks_like_ptx(const uint8_t *p, size_t n) {
    size_t head = n < 4096 ? n : 4096;
    return memmem(p, head, ".version", 8) && memmem(p, head, ".target", 7);
}

/* The length of the fat-binary container at p (header and entries), or 0 when p holds none. */
static size_t container_length(const uint8_t *p) {
    if (!p || u32_at(p) != FATBIN_MAGIC)
        return 0;
    uint16_t header = u16_at(p + 6);
    uint64_t entries = u64_at(p + 8);
    return header >= 16 && entries < (1ull << 40) ? header + entries : 0;
}

#define WRAPPER_MAGIC 0x466243b1
#define MAX_PRELINKED 65536

int vmc_w_wrapper_may_print(const void *wrapper, size_t *bytes) {
    const struct {
        int magic;
        int version;
        const uint8_t *data;
        const void *filename_or_fatbins;
    } *w = wrapper;
    *bytes = 0;
    if (!w || w->magic != WRAPPER_MAGIC || (w->version != 1 && w->version != 2))
        return 1;
    size_t n = container_length(w->data);
    *bytes += n;
    if (!n || vmc_w_image_may_print(w->data, n))
        return 1;
    if (w->version == 1 || !w->filename_or_fatbins)
        return 0;
    const uint8_t *const *list = w->filename_or_fatbins;
    for (unsigned i = 0; list[i]; i++) {
        n = container_length(list[i]);
        *bytes += n;
        if (i == MAX_PRELINKED || !n || vmc_w_image_may_print(list[i], n))
            return 1;
    }
    return 0;
}

int vmc_w_image_may_print(const void *image, size_t size) {
    const uint8_t *p = image;
    if (!p || size < 16)
        return 1;
    if (u32_at(p) == FATBIN_MAGIC)
        return containers_may_print(p, size);
    if (memcmp(p, ELFMAG, SELFMAG) == 0)
        return names_a_printer(p, size);
    if (looks_like_ptx(p, size))
        return names_a_printer(p, size);
    return 1;
}

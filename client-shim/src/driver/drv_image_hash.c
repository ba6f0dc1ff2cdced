/* The SHA-256 of a module image, remembered by the identity of the file it is mapped from. The CUDA
 * libraries hand the driver their fat binaries where the dynamic linker mapped them, read-only, from
 * libcublasLt.so and the like: the same bytes on every start (29 MB for cuBLAS's first SGEMM, 56 MB for a
 * PyTorch step), which would cost a fresh hash each time (about 100 ms). An image lying wholly in one
 * read-only private mapping of a regular file is known by (device, inode, size and mtime of the file,
 * offset, length); its hash is kept in $XDG_CACHE_HOME/vmcuda/module-sha256 (else ~/.cache/...), one
 * line per image, mode 0600 in a 0700 directory. Anything else (heap copies, PTX text, a file replaced
 * since it was mapped) is hashed as before. The file is the user's own: a wrong line in it can only make
 * this user's uploads fail, and the caller then hashes again and corrects the line
 * (vmc_drv_image_sha256_refresh). Without a writable home the cache is simply not used. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drv_image_hash.h"
#include "vmc_sha256.h"

#define MAX_ENTRIES 65536

struct identity {
    uint64_t dev, ino, file_size;
    int64_t mtime_s, mtime_ns;
    uint64_t offset, length;
};

struct entry {
    struct identity id;
    uint8_t sha[32];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static size_t n_entries, cap_entries;
static int loaded;
static char path[4096];

static void hash_bytes(const void *bytes, size_t size, uint8_t sha[32]) {
    struct vmc_sha256 h;
    vmc_sha256_init(&h);
    vmc_sha256_update(&h, bytes, size);
    vmc_sha256_final(&h, sha);
}

/* The identity of the file whose read-only mapping holds all of [p, p + n); 0 when there is none.
 * /proc/self/maps is read for every image: a mapping seen before may have been unmapped (dlclose) and its
 * addresses reused by other bytes, and reading it (a millisecond or two in a large process) is still far
 * cheaper than hashing the image. */
static int identity_of(const void *p, size_t n, struct identity *id) {
    uintptr_t a = (uintptr_t)p;
    char line[4352], perms[8], file[4096];
    unsigned long long offset = 0, inode = 0;
    int ok = 0;
    FILE *maps = fopen("/proc/self/maps", "re");
    while (maps && fgets(line, sizeof line, maps)) {
        uintptr_t start, end;
        unsigned long long map_offset;
        unsigned dev_major, dev_minor;
        file[0] = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %x:%x %llu %4095s", &start, &end, perms, &map_offset,
                   &dev_major, &dev_minor, &inode, file) < 7 ||
            a < start || a >= end)
            continue;
        /* the image must lie in this one mapping of a file, which must be private and not writable */
        ok = n <= end - a && perms[1] == '-' && perms[3] == 'p' && inode != 0 && file[0] == '/';
        offset = map_offset + (a - start);
        break;
    }
    if (maps)
        fclose(maps);
    struct stat st;
    if (!ok || stat(file, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_ino != inode)
        return 0; /* no file, or replaced since it was mapped: its bytes on disk are not the ones in memory.
                   * (The mapping's device is not compared: on overlay file systems it names the layer below,
                   * stat the overlay; the path and the inode together are what identify the file.) */
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    id->file_size = (uint64_t)st.st_size;
    id->mtime_s = (int64_t)st.st_mtim.tv_sec;
    id->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
    id->offset = offset;
    id->length = n;
    return 1;
}

static int cache_path(void) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(path, sizeof path, "%s/vmcuda", xdg);
    else if (home && home[0] == '/')
        n = snprintf(path, sizeof path, "%s/.cache/vmcuda", home);
    else
        return -1;
    if (n <= 0 || (size_t)n + sizeof "/module-sha256" > sizeof path)
        return -1;
    /* the directory (and its parent, ~/.cache) may not exist yet */
    char *slash = strrchr(path, '/');
    *slash = 0;
    mkdir(path, 0700);
    *slash = '/';
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    strcat(path, "/module-sha256");
    return 0;
}

static int same(const struct identity *a, const struct identity *b) {
    return a->dev == b->dev && a->ino == b->ino && a->file_size == b->file_size && a->mtime_s == b->mtime_s &&
           a->mtime_ns == b->mtime_ns && a->offset == b->offset && a->length == b->length;
}

static int parse_hex(const char *hex, uint8_t out[32]) {
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

/* lock held */
static void remember(const struct identity *id, const uint8_t sha[32]) {
    for (size_t i = 0; i < n_entries; i++)
        if (same(&entries[i].id, id)) {
            memcpy(entries[i].sha, sha, 32); /* a corrected line: the later one wins when read back */
            return;
        }
    if (n_entries == cap_entries) {
        size_t cap = cap_entries ? cap_entries * 2 : 64;
        struct entry *e = cap <= MAX_ENTRIES ? realloc(entries, cap * sizeof *e) : NULL;
        if (!e)
            return;
        entries = e;
        cap_entries = cap;
    }
    entries[n_entries].id = *id;
    memcpy(entries[n_entries].sha, sha, 32);
    n_entries++;
}

/* lock held */
static void load(void) {
    loaded = 1;
    if (cache_path() != 0) {
        path[0] = 0;
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char line[256], hex[65];
    struct identity id;
    uint8_t sha[32];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNu64 " %64s", &id.dev,
                   &id.ino, &id.file_size, &id.mtime_s, &id.mtime_ns, &id.offset, &id.length, hex) == 8 &&
            strlen(hex) == 64 && parse_hex(hex, sha) == 0)
            remember(&id, sha);
    fclose(f);
}

/* lock held */
static void store(const struct identity *id, const uint8_t sha[32]) {
    remember(id, sha);
    if (!path[0] || n_entries >= MAX_ENTRIES)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " ",
                     id->dev, id->ino, id->file_size, id->mtime_s, id->mtime_ns, id->offset, id->length);
    for (int i = 0; i < 32; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%02x", sha[i]);
    line[n++] = '\n';
    /* one short write with O_APPEND: lines of processes writing at once do not interleave */
    if (write(fd, line, (size_t)n) != n) {
        /* a full disk: the line is lost, the answer is still right */
    }
    close(fd);
}

static int lookup(const struct identity *id, uint8_t sha[32]) {
    for (size_t i = 0; i < n_entries; i++)
        if (same(&entries[i].id, id)) {
            memcpy(sha, entries[i].sha, 32);
            return 1;
        }
    return 0;
}

int vmc_drv_image_sha256(const void *bytes, size_t size, uint8_t sha[32]) {
    struct identity id;
    if (!identity_of(bytes, size, &id)) {
        hash_bytes(bytes, size, sha);
        return 0;
    }
    pthread_mutex_lock(&lock);
    if (!loaded)
        load();
    int hit = lookup(&id, sha);
    pthread_mutex_unlock(&lock);
    if (hit)
        return 1;
    hash_bytes(bytes, size, sha);
    pthread_mutex_lock(&lock);
    store(&id, sha);
    pthread_mutex_unlock(&lock);
    return 0;
}

void vmc_drv_image_sha256_refresh(const void *bytes, size_t size, uint8_t sha[32]) {
    hash_bytes(bytes, size, sha);
    struct identity id;
    if (!identity_of(bytes, size, &id))
        return;
    pthread_mutex_lock(&lock);
    if (!loaded)
        load();
    store(&id, sha);
    pthread_mutex_unlock(&lock);
}

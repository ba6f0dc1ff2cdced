/* Shared libraries of the shipped program that only this client has (PROTOCOL.md "Client libraries"): the
 * appliance names them as the program's DT_NEEDED entries name them; the process has them loaded, so the dynamic
 * linker's own list of loaded objects says which file each one is. A name is matched against the base name of the
 * path the linker opened (the search directory joined with the NEEDED name) and, for a link, of its target. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim_libraries.h"
#include "vmc_sha256.h"

struct search {
    const char *name;
    char path[4096];
};

static const char *base(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int match(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct search *s = arg;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0; /* the executable itself, the vDSO */
    char real[PATH_MAX];
    if (strcmp(base(info->dlpi_name), s->name) == 0 ||
        (realpath(info->dlpi_name, real) && strcmp(base(real), s->name) == 0)) {
        snprintf(s->path, sizeof s->path, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

int vmc_file_sha256(const char *path, uint64_t *size, uint8_t sha[32]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct vmc_sha256 h;
    vmc_sha256_init(&h);
    enum { CHUNK = 1 << 16 };
    uint8_t *chunk = malloc(CHUNK); /* not static thread-local: every thread of the program would carry it */
    if (!chunk) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, chunk, CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            free(chunk);
            close(fd);
            errno = saved;
            return -1;
        }
        if (r == 0)
            break;
        vmc_sha256_update(&h, chunk, (size_t)r);
        total += (uint64_t)r;
    }
    free(chunk);
    close(fd);
    vmc_sha256_final(&h, sha);
    *size = total;
    return 0;
}

int vmc_find_libraries(const char *names, struct vmc_client_library *out, int max, char *why, size_t why_len) {
    int n = 0;
    for (const char *line = names; *line;) {
        size_t len = strcspn(line, "\n");
        if (len > 0) {
            if (n == max || len >= sizeof out[0].name) {
                snprintf(why, why_len, "the appliance asked for more libraries than %d, or a name longer than %zu bytes",
                         max, sizeof out[0].name - 1);
                return -1;
            }
            struct vmc_client_library *l = &out[n++];
            memset(l, 0, sizeof *l);
            memcpy(l->name, line, len);
            struct search s = {.name = l->name};
            if (strchr(l->name, '/') == NULL && dl_iterate_phdr(match, &s) == 1) {
                snprintf(l->path, sizeof l->path, "%s", s.path);
                if (vmc_file_sha256(l->path, &l->size, l->sha256) != 0) {
                    snprintf(why, why_len, "cannot read %s: %s", l->path, strerror(errno));
                    return -1;
                }
            }
        }
        line += len;
        if (*line == '\n')
            line++;
    }
    return n;
}

const struct vmc_client_library *vmc_library_named(const struct vmc_client_library *libs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(libs[i].name, name) == 0)
            return &libs[i];
    return NULL;
}

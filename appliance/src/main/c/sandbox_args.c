/* Argument handling of vmcuda-sandbox (see sandbox.h). Everything is checked before anything is done. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static int fail(char *err, size_t len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

static int good_path(const char *p) {
    size_t n = strnlen(p, PATH_MAX);
    if (p[0] != '/' || n == 0 || n >= PATH_MAX)
        return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20)
            return 0;
    /* no ".." component: the path is used as a mount point */
    for (const char *c = p; (c = strstr(c, "/..")) != NULL; c += 3)
        if (c[3] == 0 || c[3] == '/')
            return 0;
    return 1;
}

/* a --region path: opened, never mounted on, so '..' does no harm; no control characters, and no comma
 * (the worker gets the paths as a comma-separated list) */
static int good_region(const char *p) {
    size_t n = strnlen(p, PATH_MAX);
    if (p[0] != '/' || n >= PATH_MAX)
        return 0;
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == ',')
            return 0;
    return 1;
}

static int number(const char *s, unsigned long min, unsigned long max, unsigned long *out) {
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int good_size(const char *s) {
    size_t n = strnlen(s, 24);
    if (n == 0 || n >= 24)
        return 0;
    size_t digits = strspn(s, "0123456789");
    if (digits == 0)
        return 0;
    return digits == n || (digits == n - 1 && strchr("kmgKMG", s[n - 1]) != NULL);
}

int sandbox_parse(int argc, char **argv, struct sandbox_opts *o, char *err, size_t err_len) {
    memset(o, 0, sizeof *o);
    o->user = "nobody";
    o->nproc = 4096;
    o->nofile = 4096;
    o->tmp_size = "512m";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!a)
            return fail(err, err_len, "null argument");
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "--probe") == 0) {
            o->probe = 1;
            continue;
        }
        if (a[0] != '-' || a[1] != '-')
            return fail(err, err_len, "unexpected argument '%.64s' (options end with --)", a);
        if (i + 1 >= argc || !argv[i + 1])
            return fail(err, err_len, "option %.32s needs a value", a);
        const char *v = argv[++i];
        if (strcmp(a, "--user") == 0) {
            size_t n = strnlen(v, 64);
            if (n == 0 || n >= 64 || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n ||
                v[0] == '-')
                return fail(err, err_len, "--user '%.64s' is not a user name", v);
            o->user = v;
        } else if (strcmp(a, "--uid") == 0) {
            if (number(v, SANDBOX_MIN_UID, SANDBOX_MAX_UID, &o->uid) != 0)
                return fail(err, err_len, "--uid must be a number from %lu to %lu", SANDBOX_MIN_UID, SANDBOX_MAX_UID);
        } else if (strcmp(a, "--hide") == 0) {
            if (!good_path(v) || strcmp(v, "/") == 0)
                return fail(err, err_len, "--hide must be an absolute path below / without '..'");
            o->hide = v;
        } else if (strcmp(a, "--lend") == 0) {
            if (!good_path(v) || strcmp(v, "/") == 0)
                return fail(err, err_len, "--lend must be an absolute path below / without '..'");
            o->lend = v;
        } else if (strcmp(a, "--workdir") == 0) {
            if (!good_path(v) || strcmp(v, "/") == 0)
                return fail(err, err_len, "--workdir must be an absolute path below / without '..'");
            o->workdir = v;
        } else if (strcmp(a, "--keep") == 0) {
            if (!good_path(v))
                return fail(err, err_len, "--keep must be an absolute path without '..'");
            if (o->n_keep == SANDBOX_MAX_KEEP)
                return fail(err, err_len, "more than %d --keep paths", SANDBOX_MAX_KEEP);
            o->keep[o->n_keep++] = v;
        } else if (strcmp(a, "--region") == 0) {
            if (!good_region(v))
                return fail(err, err_len, "--region must be an absolute path without control characters or commas");
            if (o->n_region == SANDBOX_MAX_REGIONS)
                return fail(err, err_len, "more than %d --region paths", SANDBOX_MAX_REGIONS);
            o->region[o->n_region++] = v;
        } else if (strcmp(a, "--cgroup") == 0) {
            if (!good_path(v) || strncmp(v, "/sys/fs/cgroup/", 15) != 0)
                return fail(err, err_len, "--cgroup must be a directory below /sys/fs/cgroup without '..'");
            if (o->n_cgroup == SANDBOX_MAX_CGROUPS)
                return fail(err, err_len, "more than %d --cgroup directories", SANDBOX_MAX_CGROUPS);
            o->cgroup[o->n_cgroup++] = v;
        } else if (strcmp(a, "--ucx-agent") == 0) {
            if (!good_path(v))
                return fail(err, err_len, "--ucx-agent must be an absolute path without '..'");
            o->ucx_agent = v;
        } else if (strcmp(a, "--nproc") == 0) {
            if (number(v, 16, 1ul << 22, &o->nproc) != 0)
                return fail(err, err_len, "--nproc must be a number from 16 to %lu", 1ul << 22);
        } else if (strcmp(a, "--nofile") == 0) {
            if (number(v, 64, 1ul << 20, &o->nofile) != 0)
                return fail(err, err_len, "--nofile must be a number from 64 to %lu", 1ul << 20);
        } else if (strcmp(a, "--fsize") == 0) {
            if (number(v, 1ul << 20, 1ul << 50, &o->fsize) != 0)
                return fail(err, err_len, "--fsize must be a number of bytes from %lu to %lu", 1ul << 20, 1ul << 50);
        } else if (strcmp(a, "--tmp-size") == 0) {
            if (!good_size(v))
                return fail(err, err_len, "--tmp-size must be a size such as 512m");
            o->tmp_size = v;
        } else {
            return fail(err, err_len, "unknown option %.32s", a);
        }
    }
    if (o->probe)
        return i >= argc ? 0 : fail(err, err_len, "--probe takes no program");
    if (!o->workdir)
        return fail(err, err_len, "--workdir is required");
    if (o->hide) { /* the workdir must lie strictly below the hidden directory, to be bound back into it */
        size_t n = strlen(o->hide);
        if (strncmp(o->workdir, o->hide, n) != 0 || o->workdir[n] != '/')
            return fail(err, err_len, "--workdir must lie below --hide");
    }
    if (o->lend) { /* bound back read-only below the hidden directory */
        size_t n = o->hide ? strlen(o->hide) : 0;
        if (!o->hide || strncmp(o->lend, o->hide, n) != 0 || o->lend[n] != '/')
            return fail(err, err_len, "--lend must lie below --hide");
    }
    if (i + 2 > argc || !argv[i] || !argv[i + 1])
        return fail(err, err_len, "expected EXECUTABLE ARGV0 after --");
    if (!good_path(argv[i]))
        return fail(err, err_len, "EXECUTABLE must be an absolute path");
    o->exe = argv[i];
    o->argv = &argv[i + 1];
    return 0;
}

/* vmcuda-sandbox's argument handling under ASan/UBSan: every valid form, every bad one, and random
 * argument vectors (which must be accepted or refused with a reason, never crash or read out of bounds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "test_sandbox_args:%d: CHECK(%s) failed\n", __LINE__, #c); failures++; } } while (0)

static int parse(char **v, struct sandbox_opts *o, char *err) {
    int n = 0;
    while (v[n]) n++;
    err[0] = 0;
    return sandbox_parse(n, v, o, err, 256);
}

int main(void) {
    struct sandbox_opts o;
    char err[256];
    {
        char *v[] = {"vmcuda-sandbox", "--user", "nobody", "--workdir", "/var/lib/vmcuda/sessions/1", "--keep", "/opt/x",
                     "--keep", "/tmp/b/native", "--nproc", "2048", "--nofile", "1024", "--tmp-size", "256m", "--",
                     "/var/lib/vmcuda/cache/ab/rewritten", "prog", "arg1", NULL};
        CHECK(parse(v, &o, err) == 0);
        CHECK(strcmp(o.user, "nobody") == 0 && o.n_keep == 2 && o.nproc == 2048 && o.nofile == 1024);
        CHECK(strcmp(o.exe, "/var/lib/vmcuda/cache/ab/rewritten") == 0 && strcmp(o.argv[0], "prog") == 0);
        CHECK(strcmp(o.argv[1], "arg1") == 0 && o.argv[2] == NULL && !o.probe);
    }
    {
        char *v[] = {"s", "--workdir", "/w", "--", "/x", "a0", NULL};
        CHECK(parse(v, &o, err) == 0 && strcmp(o.user, "nobody") == 0 && strcmp(o.tmp_size, "512m") == 0);
        CHECK(o.fsize == 0); /* no file size limit unless asked */
    }
    {
        char *v[] = {"s", "--fsize", "4294967296", "--workdir", "/w", "--", "/x", "a0", NULL};
        CHECK(parse(v, &o, err) == 0 && o.fsize == 4294967296ul);
        char *small[] = {"s", "--fsize", "4096", "--workdir", "/w", "--", "/x", "a0", NULL};
        CHECK(parse(small, &o, err) == -1 && strstr(err, "--fsize"));
    }
    {
        char *v[] = {"s", "--probe", "--user", "daemon", NULL};
        CHECK(parse(v, &o, err) == 0 && o.probe);
    }
    {   /* the start-up check of a session's UCX agent: the agent's confinement takes a session's options, no workdir */
        char *v[] = {"s", "--probe", "--nofile", "1024", "--ucx-agent", "/n/vmcuda-ucx-agent", "--keep", "/n", "--hide", "/state", NULL};
        CHECK(parse(v, &o, err) == 0 && o.probe && strcmp(o.ucx_agent, "/n/vmcuda-ucx-agent") == 0 && o.n_keep == 1 &&
              strcmp(o.hide, "/state") == 0 && o.nofile == 1024 && !o.workdir);
    }
    char *bad[][12] = {
        {"s", NULL},                                             /* no workdir */
        {"s", "--workdir", "/w", NULL},                          /* no program */
        {"s", "--workdir", "/w", "--", "/x", NULL},              /* no argv0 */
        {"s", "--workdir", "rel", "--", "/x", "a", NULL},        /* relative */
        {"s", "--workdir", "/", "--", "/x", "a", NULL},          /* the root */
        {"s", "--workdir", "/a/../etc", "--", "/x", "a", NULL},  /* dot-dot */
        {"s", "--workdir", "/w", "--", "x", "a", NULL},          /* relative executable */
        {"s", "--user", "", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--user", "-rf", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--user", "a b", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--nproc", "0", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--nproc", "-5", "--workdir", "/w", "--", "/x", "a", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(parse(bad[i], &o, err) == -1 && err[0]);
    }
    char *bad2[][12] = {
        {"s", "--nproc", "99999999999999999999999", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--nofile", "12x", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--tmp-size", "lots", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--tmp-size", "5mm", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--frobnicate", "1", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--workdir", NULL},
        {"s", "stray", NULL},
        {"s", "--probe", "--", "/x", "a", NULL},
        {"s", "--keep", "/tmp/a\nb", "--workdir", "/w", "--", "/x", "a", NULL},
    };
    for (size_t i = 0; i < sizeof bad2 / sizeof bad2[0]; i++) {
        CHECK(parse(bad2[i], &o, err) == -1 && err[0]);
    }
    {   /* too many --keep */
        char *v[80];
        int n = 0;
        v[n++] = "s";
        for (int i = 0; i < SANDBOX_MAX_KEEP + 1; i++) { v[n++] = "--keep"; v[n++] = "/k"; }
        v[n++] = "--workdir"; v[n++] = "/w"; v[n++] = "--"; v[n++] = "/x"; v[n++] = "a"; v[n] = NULL;
        CHECK(parse(v, &o, err) == -1);
    }
    {   /* the session's own uid, and the state directory hidden with the workdir below it */
        char *v[] = {"s", "--uid", "5000123", "--hide", "/var/lib/vmcuda", "--workdir", "/var/lib/vmcuda/sessions/7",
                     "--", "/x", "a", NULL};
        CHECK(parse(v, &o, err) == 0 && o.uid == 5000123 && strcmp(o.hide, "/var/lib/vmcuda") == 0);
        char *plain[] = {"s", "--workdir", "/w", "--", "/x", "a", NULL};
        CHECK(parse(plain, &o, err) == 0 && o.uid == 0 && o.hide == NULL && o.lend == NULL);
        char *lend[] = {"s", "--hide", "/s", "--workdir", "/s/sessions/7", "--lend", "/s/lend/7", "--", "/x", "a", NULL};
        CHECK(parse(lend, &o, err) == 0 && strcmp(o.lend, "/s/lend/7") == 0);
    }
    char *bad3[][12] = {
        {"s", "--uid", "0", "--workdir", "/w", "--", "/x", "a", NULL},            /* root */
        {"s", "--uid", "999", "--workdir", "/w", "--", "/x", "a", NULL},          /* a system account */
        {"s", "--uid", "4294967295", "--workdir", "/w", "--", "/x", "a", NULL},   /* (uid_t)-1 */
        {"s", "--uid", "12ab", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--hide", "/var/lib/vmcuda", "--workdir", "/srv/w", "--", "/x", "a", NULL},   /* workdir not below */
        {"s", "--hide", "/var/lib/vm", "--workdir", "/var/lib/vmcuda/s", "--", "/x", "a", NULL}, /* prefix only */
        {"s", "--hide", "/var/lib/vmcuda", "--workdir", "/var/lib/vmcuda", "--", "/x", "a", NULL}, /* itself */
        {"s", "--hide", "/", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--hide", "rel", "--workdir", "/w", "--", "/x", "a", NULL},
        {"s", "--lend", "/s/lend/7", "--workdir", "/w", "--", "/x", "a", NULL},               /* no --hide */
        {"s", "--hide", "/s", "--workdir", "/s/w", "--lend", "/t/lend", "--", "/x", "a", NULL}, /* not below */
    };
    for (size_t i = 0; i < sizeof bad3 / sizeof bad3[0]; i++) {
        CHECK(parse(bad3[i], &o, err) == -1 && err[0]);
    }
    {   /* one --region */
        char *v[] = {"s", "--workdir", "/w", "--region", "/sys/bus/pci/devices/0000:00:05.0/resource2", "--", "/x", "a",
                     NULL};
        CHECK(parse(v, &o, err) == 0 && o.n_region == 1);
        CHECK(strcmp(o.region[0], "/sys/bus/pci/devices/0000:00:05.0/resource2") == 0 && strcmp(o.exe, "/x") == 0);
    }
    {   /* --ucx-agent: an absolute path without '..'; none by default */
        char *v[] = {"s", "--workdir", "/w", "--ucx-agent", "/opt/vmcuda/native/vmcuda-ucx-agent", "--", "/x", "a", NULL};
        CHECK(parse(v, &o, err) == 0 && strcmp(o.ucx_agent, "/opt/vmcuda/native/vmcuda-ucx-agent") == 0);
        char *rel[] = {"s", "--workdir", "/w", "--ucx-agent", "vmcuda-ucx-agent", "--", "/x", "a", NULL};
        CHECK(parse(rel, &o, err) == -1 && err[0]);
        char *up[] = {"s", "--workdir", "/w", "--ucx-agent", "/opt/../tmp/agent", "--", "/x", "a", NULL};
        CHECK(parse(up, &o, err) == -1 && err[0]);
        char *none[] = {"s", "--workdir", "/w", "--", "/x", "a", NULL};
        CHECK(parse(none, &o, err) == 0 && o.ucx_agent == NULL);
    }
    {   /* --cgroup: directories below /sys/fs/cgroup, in order, at most SANDBOX_MAX_CGROUPS; none by default */
        char *v[] = {"s", "--workdir", "/w", "--cgroup", "/sys/fs/cgroup/memory/vmcuda-workers/session-1", "--cgroup",
                     "/sys/fs/cgroup/pids/vmcuda-workers/session-1", "--", "/x", "a", NULL};
        CHECK(parse(v, &o, err) == 0 && o.n_cgroup == 2);
        CHECK(strcmp(o.cgroup[1], "/sys/fs/cgroup/pids/vmcuda-workers/session-1") == 0);
        char *outside[] = {"s", "--workdir", "/w", "--cgroup", "/tmp/cg", "--", "/x", "a", NULL};
        CHECK(parse(outside, &o, err) == -1 && strstr(err, "below /sys/fs/cgroup") != NULL);
        char *up[] = {"s", "--workdir", "/w", "--cgroup", "/sys/fs/cgroup/../../tmp", "--", "/x", "a", NULL};
        CHECK(parse(up, &o, err) == -1 && err[0]);
        char *five[] = {"s", "--workdir", "/w", "--cgroup", "/sys/fs/cgroup/a", "--cgroup", "/sys/fs/cgroup/b", "--cgroup",
                        "/sys/fs/cgroup/c", "--cgroup", "/sys/fs/cgroup/d", "--cgroup", "/sys/fs/cgroup/e", "--", "/x", "a", NULL};
        CHECK(parse(five, &o, err) == -1 && strstr(err, "more than 4 --cgroup") != NULL);
        char *none[] = {"s", "--workdir", "/w", "--", "/x", "a", NULL};
        CHECK(parse(none, &o, err) == 0 && o.n_cgroup == 0);
    }
    {   /* several, kept in order; none by default */
        char *v[] = {"s", "--region", "/dev/uio0", "--workdir", "/w", "--region", "/dev/shm/vmcuda-ring", "--keep", "/k",
                     "--region", "/a/../b", "--", "/x", "a", NULL};
        CHECK(parse(v, &o, err) == 0 && o.n_region == 3 && o.n_keep == 1);
        CHECK(strcmp(o.region[0], "/dev/uio0") == 0 && strcmp(o.region[1], "/dev/shm/vmcuda-ring") == 0);
        CHECK(strcmp(o.region[2], "/a/../b") == 0);
        char *none[] = {"s", "--workdir", "/w", "--", "/x", "a", NULL};
        CHECK(parse(none, &o, err) == 0 && o.n_region == 0);
    }
    {   /* exactly SANDBOX_MAX_REGIONS, then one too many */
        char *v[40];
        int n = 0;
        v[n++] = "s";
        for (int i = 0; i < SANDBOX_MAX_REGIONS; i++) { v[n++] = "--region"; v[n++] = "/dev/shm/r"; }
        v[n++] = "--workdir"; v[n++] = "/w"; v[n++] = "--"; v[n++] = "/x"; v[n++] = "a"; v[n] = NULL;
        CHECK(parse(v, &o, err) == 0 && o.n_region == SANDBOX_MAX_REGIONS);
        n = 0;
        v[n++] = "s";
        for (int i = 0; i < SANDBOX_MAX_REGIONS + 1; i++) { v[n++] = "--region"; v[n++] = "/dev/shm/r"; }
        v[n++] = "--workdir"; v[n++] = "/w"; v[n++] = "--"; v[n++] = "/x"; v[n++] = "a"; v[n] = NULL;
        CHECK(parse(v, &o, err) == -1 && strstr(err, "more than 8 --region") != NULL);
    }
    {   /* missing argument, bad paths */
        char *missing[] = {"s", "--workdir", "/w", "--region", NULL};
        CHECK(parse(missing, &o, err) == -1 && strstr(err, "--region needs a value") != NULL);
        char *bad_region[][10] = {
            {"s", "--region", "rel/path", "--workdir", "/w", "--", "/x", "a", NULL},
            {"s", "--region", "", "--workdir", "/w", "--", "/x", "a", NULL},
            {"s", "--region", "/a,b", "--workdir", "/w", "--", "/x", "a", NULL},
            {"s", "--region", "/a\nb", "--workdir", "/w", "--", "/x", "a", NULL},
        };
        for (size_t i = 0; i < sizeof bad_region / sizeof bad_region[0]; i++)
            CHECK(parse(bad_region[i], &o, err) == -1 && strstr(err, "--region") != NULL);
    }
    {   /* a path at and past PATH_MAX */
        static char big[5000];
        big[0] = '/';
        memset(big + 1, 'a', sizeof big - 2);
        char *v[] = {"s", "--workdir", big, "--", "/x", "a", NULL};
        CHECK(parse(v, &o, err) == -1);
        char *r[] = {"s", "--region", big, "--workdir", "/w", "--", "/x", "a", NULL};
        CHECK(parse(r, &o, err) == -1);
    }
    /* random vectors drawn from option names and values */
    const char *words[] = {"--user", "--workdir", "--keep", "--region", "--nproc", "--nofile", "--tmp-size", "--probe", "--", "/w",
                           "/tmp/x", "nobody", "12", "0", "512m", "", "-", "/..", "/a/..", "x", "99999999999"};
    unsigned long long r = 0x243f6a8885a308d3ull;
    for (int c = 0; c < 100000; c++) {
        char *v[16];
        int n = 1 + (int)(r % 14);
        v[0] = "s";
        for (int i = 1; i < n; i++) {
            r ^= r << 13; r ^= r >> 7; r ^= r << 17;
            v[i] = (char *)words[r % (sizeof words / sizeof words[0])];
        }
        v[n] = NULL;
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        if (sandbox_parse(n, v, &o, err, sizeof err) == 0 && !o.probe)
            CHECK(o.workdir && o.exe && o.argv && o.argv[0] && o.n_region >= 0 && o.n_region <= SANDBOX_MAX_REGIONS);
    }
    if (failures) {
        fprintf(stderr, "test_sandbox_args: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_sandbox_args: ok (incl. 100000 random vectors)\n");
    return 0;
}

/* vmcuda-sandbox: the launcher vmcudad puts in front of every worker when worker.sandbox is on.
 * Argument handling lives in sandbox_args.c (unit-tested under ASan/UBSan); sandbox_main.c does the work. */
#ifndef VMCUDA_SANDBOX_H
#define VMCUDA_SANDBOX_H

#include <stddef.h>

#define SANDBOX_MAX_KEEP 32
#define SANDBOX_MAX_REGIONS 8
/* the sessions' oom_score_adj: when the machine runs out of memory the kernel kills a session, not the daemon
 * (whose unit sets OOMScoreAdjust=-500) or a system service */
#define SANDBOX_OOM_SCORE_ADJ 500
#define SANDBOX_MAX_CGROUPS 4 /* cgroup v1 has one tree per controller: memory, pids, cpu (+1 spare) */
#define SANDBOX_MIN_UID 1000ul     /* --uid below this would be a system account */
#define SANDBOX_MAX_UID 4294967294ul /* (uid_t)-1 is "no change" to setuid */

struct sandbox_opts {
    const char *user;            /* --user NAME (default nobody); must not resolve to uid 0 */
    unsigned long uid;           /* --uid N: run as this uid (the session's own, allocated by the daemon) with
                                  * --user's primary group; 0 = --user's uid */
    const char *hide;            /* --hide DIR: covered by an empty tmpfs (the daemon's state directory; the
                                  * workdir below it is bound back), or NULL */
    const char *lend;            /* --lend DIR: bound back read-only below --hide (module images the daemon
                                  * lends the session), or NULL */
    const char *workdir;         /* --workdir DIR: the session directory, the only writable path */
    const char *keep[SANDBOX_MAX_KEEP]; /* --keep PATH: must stay visible (re-bound read-only if under /tmp) */
    int n_keep;
    const char *region[SANDBOX_MAX_REGIONS]; /* --region PATH: shared-memory region the worker gets open O_RDWR */
    int n_region;
    const char *ucx_agent;       /* --ucx-agent PATH: vmcuda-ucx-agent, started outside the worker's namespaces (in
                                  * mount, PID and IPC namespaces of its own) as --uid for the worker's bulk copies
                                  * over UCX (its socket in $VMCUDA_UCX_AGENT_FD), or NULL */
    const char *cgroup[SANDBOX_MAX_CGROUPS]; /* --cgroup DIR: the session's cgroup(s), joined first (as root, before
                                  * anything is started), so the UCX agent and the worker count against their limits */
    int n_cgroup;
    unsigned long nproc;         /* --nproc N: RLIMIT_NPROC (per user, threads included) */
    unsigned long nofile;        /* --nofile N: RLIMIT_NOFILE */
    unsigned long fsize;         /* --fsize BYTES: RLIMIT_FSIZE, the largest file the worker may write (its
                                  * worker.log included); writes past it fail with EFBIG; 0 = no limit */
    const char *tmp_size;        /* --tmp-size SIZE: size of the private /tmp (tmpfs), e.g. 512m */
    int probe;                   /* --probe: check that namespaces, mounts and the user work, then exit; with
                                  * --ucx-agent, also that the agent runs in its confinement (probe_ucx_agent) */
    const char *exe;             /* EXECUTABLE after -- */
    char **argv;                 /* ARGV0 [ARGS...] after EXECUTABLE (NULL-terminated, points into argv) */
};

/* Parses argv; returns 0, or -1 with a one-line reason in err. Never allocates. */
int sandbox_parse(int argc, char **argv, struct sandbox_opts *o, char *err, size_t err_len);

#define SANDBOX_USAGE \
    "usage: vmcuda-sandbox [--user NAME] [--uid N] --workdir DIR [--hide DIR [--lend DIR]] [--keep PATH]...\n" \
    "                      [--region PATH]... [--ucx-agent PATH] [--cgroup DIR]...\n" \
    "                      [--nproc N] [--nofile N] [--fsize BYTES] [--tmp-size SIZE] -- EXECUTABLE ARGV0 [ARGS...]\n" \
    "       vmcuda-sandbox --probe [--user NAME] [--uid N] [--tmp-size SIZE]\n" \
    "                      [--ucx-agent PATH [--keep PATH]... [--hide DIR] [--nofile N]]\n" \
    "  --probe checks that the worker's sandbox can be built here and its system-call filter holds; with\n" \
    "  --ucx-agent it first builds the agent's confinement as for a session (same options) and runs the\n" \
    "  agent's --self-test in it. Exit 0 when all passed; else the last line says what failed.\n"

#endif

/* vmcuda-sandbox: runs one worker in a sandbox (appliance/CONFIG.md "Worker sandbox").
 * Started by vmcudad (as root) in front of the rewritten executable:
 *   0. joins the session's cgroup(s) (--cgroup: memory, pids and CPU limits the daemon wrote there, SessionCgroups);
 *   1. connects to the daemon's worker socket ($VMCUDA_WORKER_SOCKET) while still root and hands the
 *      connected socket down as $VMCUDA_WORKER_FD (the socket's directory is root-only);
 *   2. opens the executable (O_PATH) and every --region path (O_RDWR | O_CLOEXEC: a shared-memory region,
 *      e.g. an ivshmem BAR under /sys, which the unprivileged worker could not open itself once /sys is
 *      read-only) before any mount hides them; a region that cannot be opened is skipped with one warning
 *      (the client then uses its other data path). The session directory and every --keep path (O_PATH)
 *      are opened in step 4, in the worker's mount namespace, before the new /tmp hides what lies below it;
 *   2b. with --ucx-agent, starts vmcuda-ucx-agent (ucx_agent.h) here, outside the worker's namespaces to come (it
 *      needs the host's network and RDMA devices), as the worker's uid and group, with nothing inherited but its
 *      end of a new socket pair; the worker gets the other end in $VMCUDA_UCX_AGENT_FD. The agent has mount, PID
 *      and IPC namespaces of its own (start_ucx_agent(): every mount read-only, a private /tmp with only the --keep
 *      paths in it, a /dev of its own with a few devices (no GPU) and an empty /dev/shm, --hide covered, alone in its
 *      PID namespace), no new privileges, and installs its own system-call
 *      filter (sandbox_seccomp.c: no exec, no new processes, sockets of the families UCX and rdma-core use). What
 *      it keeps: the host's network, the RDMA devices, read access to what its uid may read of the host's file
 *      system, and the rings its worker hands it. UCX trusts its peers, so whoever reaches the agent's UCX end
 *      point can still read and write the agent's memory and run code in it, within all of that
 *      (docs/ucx.md "Security");
 *   3. unshare(mount, network, IPC, PID namespaces) and forks PID 1 of the new PID namespace, which forks the worker
 *      at a random PID (CUDA IPC needs workers at different PIDs: enter_namespaces()) and waits for it without
 *      privileges; this process stays outside as its parent, turns SIGTERM/SIGINT/SIGHUP into SIGKILL for it (which
 *      ends the namespace) and exits with the worker's status (128 + signal when killed), so the daemon's process
 *      handle behaves as the worker's;
 *   4. in the worker: all mounts private; every mount except /proc and /dev remounted read-only; a fresh
 *      tmpfs on /tmp; --keep paths below /tmp bound back read-only; --hide (the daemon's state directory)
 *      covered by an empty tmpfs; the session directory (owned by the worker, mode 0700) bound writable,
 *      --lend (module images the daemon lends the session) read-only;
 *      a new /proc for the PID namespace; /dev (with /dev/nvidia* and the shared /dev/shm) untouched;
 *   5. RLIMIT_NPROC / RLIMIT_NOFILE / RLIMIT_FSIZE (address space is not capped: CUDA reserves huge virtual ranges),
 *      no core dumps, setgroups/setgid/setuid to --uid (the session's own uid, so that RLIMIT_NPROC and
 *      file ownership are per session) or --user, with --user's group; PR_SET_NO_NEW_PRIVS, parent-death
 *      SIGKILL;
 *   6. the region descriptors made inheritable and listed in $VMCUDA_SHM_REGION_FDS ("fd,fd,..."), with
 *      $VMCUDA_SHM_REGIONS narrowed to the paths that were opened, in the same order;
 *   7. the system-call filter (sandbox_seccomp.c: no new namespaces, mounts, ptrace, sockets but AF_UNIX,
 *      ...); then execveat(the executable's descriptor) with argv[0] = ARGV0.
 * Nothing between step 2 and the exec closes descriptors in the worker (only the outside parent closes its
 * copies); RLIMIT_NOFILE limits new descriptors only, and the region descriptors are among the lowest.
 * The new network namespace has only a loopback interface that is down: the worker keeps the client
 * connections it is handed (descriptors work across namespaces) and can open no other.
 * --probe (probe(), the daemon's start-up check): a worker's namespaces, read-only mounts, private /tmp and /proc,
 * identity and filter (steps 3-5 and 7, without a session's paths), checked from inside; with --ucx-agent, first step 2b's confinement of the agent, built by the same
 * code, with the agent's --self-test run in it (probe_ucx_agent()). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "sandbox_seccomp.h"

extern char **environ;

/* One line on stderr: the launcher's name, a kind, the message, and errno's text when there is one. */
static void vreport(const char *kind, int e, const char *fmt, va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "vmcuda-sandbox: %s%s%s%s\n", kind, msg, e ? ": " : "", e ? strerror(e) : "");
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...) {
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    vreport("", e, fmt, ap);
    va_end(ap);
    _exit(126);
}

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...) {
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    vreport("warning: ", e, fmt, ap);
    va_end(ap);
}

static int under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static void mkdir_p(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            die("mkdir %s", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        die("mkdir %s", buf);
}

/* mountinfo escapes blanks, tabs, newlines and backslashes as \ooo */
static void unescape(char *s) {
    char *o = s;
    for (char *i = s; *i; i++) {
        if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0' && i[3] <= '7') {
            *o++ = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
            i += 3;
        } else {
            *o++ = *i;
        }
    }
    *o = 0;
}

static unsigned long mount_flags(const char *opts) {
    unsigned long f = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", opts);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "nosuid")) f |= MS_NOSUID;
        else if (!strcmp(t, "nodev")) f |= MS_NODEV;
        else if (!strcmp(t, "noexec")) f |= MS_NOEXEC;
        else if (!strcmp(t, "noatime")) f |= MS_NOATIME;
        else if (!strcmp(t, "nodiratime")) f |= MS_NODIRATIME;
        else if (!strcmp(t, "relatime")) f |= MS_RELATIME;
    }
    return f;
}

/* Every mount of this (new, private) namespace read-only, except /proc, and /dev unless `with_dev` (device nodes
 * still open read-write on a read-only mount: only the file system itself becomes read-only). */
static void remount_read_only(int with_dev) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        die("open /proc/self/mountinfo");
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        /* id parent major:minor root mount_point options ... */
        char *field[6] = {0};
        char *save = NULL;
        int n = 0;
        for (char *t = strtok_r(line, " ", &save); t && n < 6; t = strtok_r(NULL, " ", &save))
            field[n++] = t;
        if (n < 6)
            continue;
        char *mp = field[4];
        unescape(mp);
        if (under(mp, "/proc") || (!with_dev && under(mp, "/dev")))
            continue;
        unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | mount_flags(field[5]);
        if (mount(NULL, mp, NULL, flags, NULL) != 0) {
            if (strcmp(mp, "/") == 0)
                die("remount / read-only");
            if (errno != ENOENT && errno != EACCES)
                warn("remount %s read-only", mp);
        }
    }
    fclose(f);
}

/* Mounts what `fd` (an O_PATH descriptor opened before /tmp was replaced) names onto `path`. */
static void bind_fd(int fd, const char *path, int writable) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        die("stat %s", path);
    if (S_ISDIR(st.st_mode)) {
        mkdir_p(path);
    } else {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = 0;
            mkdir_p(parent);
        }
        int t = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (t < 0 && errno != EEXIST && errno != EISDIR && errno != EROFS && errno != EACCES)
            die("create mount point %s", path);
        if (t >= 0)
            close(t);
    }
    char src[64];
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    if (mount(src, path, NULL, MS_BIND | MS_REC, NULL) != 0)
        die("bind %s", path);
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (writable ? 0 : MS_RDONLY);
    if (mount(NULL, path, NULL, flags, NULL) != 0)
        die("remount %s %s", path, writable ? "writable" : "read-only");
}

static int open_path(const char *p) {
    int fd = open(p, O_PATH | O_CLOEXEC);
    if (fd < 0)
        die("open %s", p);
    return fd;
}

static void die_with_launcher(void);

/* The worker's identity: --uid (the session's own) or --user's uid, with --user's primary group. */
static uid_t worker_uid(const struct sandbox_opts *o, const struct passwd *pw) {
    return o->uid ? (uid_t)o->uid : pw->pw_uid;
}

static void drop_privileges(const struct sandbox_opts *o, const struct passwd *pw) {
    /* the namespace's waiter (PID 1) runs as the worker's uid too: one more than the session's own processes */
    struct rlimit nproc = {o->nproc + 1, o->nproc + 1}, nofile = {o->nofile, o->nofile}, core = {0, 0};
    if (setrlimit(RLIMIT_NPROC, &nproc) != 0)
        die("setrlimit(RLIMIT_NPROC, %lu)", o->nproc);
    if (setrlimit(RLIMIT_NOFILE, &nofile) != 0)
        die("setrlimit(RLIMIT_NOFILE, %lu)", o->nofile);
    setrlimit(RLIMIT_CORE, &core);
    if (o->fsize) {
        /* the largest file the worker may write, worker.log included: past it a write fails with EFBIG
         * (SIGXFSZ ignored, as the ignored disposition survives the exec) instead of filling the disk */
        struct rlimit fsize = {o->fsize, o->fsize};
        if (setrlimit(RLIMIT_FSIZE, &fsize) != 0)
            die("setrlimit(RLIMIT_FSIZE, %lu)", o->fsize);
        signal(SIGXFSZ, SIG_IGN);
    }
    if (setgroups(0, NULL) != 0)
        die("setgroups");
    if (setgid(pw->pw_gid) != 0)
        die("setgid(%u)", (unsigned)pw->pw_gid);
    uid_t uid = worker_uid(o, pw);
    if (setuid(uid) != 0)
        die("setuid(%u)", (unsigned)uid);
    if (setuid(0) == 0 || getuid() != uid || geteuid() != uid)
        die("privileges could not be dropped");
    errno = 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        die("prctl(PR_SET_NO_NEW_PRIVS)");
    /* again after setuid, which clears it: the worker dies with this launcher */
    die_with_launcher();
    /* what the worker creates (in /dev/shm, its session directory) is its own, whatever the daemon's umask */
    umask(077);
}

static void mount_common(int with_dev) {
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        die("make mounts private");
    remount_read_only(with_dev);
}

/* A private tmpfs of the session's size (--tmp-size) on `dir`, writable by all as /tmp is. */
static void session_tmpfs(const struct sandbox_opts *o, const char *dir, unsigned long flags) {
    char data[64];
    snprintf(data, sizeof data, "size=%s,mode=1777", o->tmp_size);
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | flags, data) != 0)
        die("mount a private tmpfs on %s", dir);
}

static void mount_tmp(const struct sandbox_opts *o) { session_tmpfs(o, "/tmp", 0); }

/* A private /tmp, with the --keep paths below the old one (the worker library's directory, the CUDA and UCX
 * libraries' where the daemon was told they lie there) bound back read-only: opened first, while the old /tmp is
 * still in sight. */
static void private_tmp(const struct sandbox_opts *o) {
    int keep_fd[SANDBOX_MAX_KEEP];
    for (int i = 0; i < o->n_keep; i++) {
        keep_fd[i] = open(o->keep[i], O_PATH | O_CLOEXEC);
        if (keep_fd[i] < 0 && errno != ENOENT)
            die("open %s", o->keep[i]);
    }
    mount_tmp(o);
    for (int i = 0; i < o->n_keep; i++)
        if (keep_fd[i] >= 0 && under(o->keep[i], "/tmp"))
            bind_fd(keep_fd[i], o->keep[i], 0);
}

/* An empty tmpfs over `dir`, root's (the worker's bind_fd() puts its workdir back below it afterwards), or
 * mounted read-only where nothing is put back. */
static void hide_dir(const char *dir, int read_only) {
    if (under(dir, "/tmp"))
        return; /* the private /tmp hides it already */
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | (read_only ? MS_RDONLY : 0), "size=64k,mode=0755") != 0)
        die("hide %s", dir);
}

static void mount_proc(void) {
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        die("mount /proc for the PID namespace");
}

static pid_t child;
static pid_t ucx_agent; /* the worker's UCX agent (step 2b), or 0 */

static void forward(int sig) {
    (void)sig;
    /* PID 1 of the namespace (the waiter) ignores signals it has no handler for, and the worker has no clean way to
     * stop anyway (its client connections are its life), so a stop request becomes SIGKILL, which ends the namespace. */
    if (child > 0)
        kill(child, SIGKILL);
}

static int wait_child(void) {
    int st;
    for (;;) {
        pid_t r = waitpid(child, &st, 0);
        if (r == child)
            break;
        if (r < 0 && errno != EINTR)
            die("waitpid");
    }
    /* the agent serves this worker alone: it goes with it, reaped here, so that nothing of the session is left
     * once this launcher has exited (a zombie would linger until init reaped it) */
    if (ucx_agent > 0) {
        kill(ucx_agent, SIGKILL);
        while (waitpid(ucx_agent, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 125;
}

/* Moves this process into the cgroup directory `dir` (cgroup.procs: one pid per write). */
static void join_cgroup(const char *dir) {
    char path[PATH_MAX], pid[24];
    if ((size_t)snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= sizeof path) {
        errno = ENAMETOOLONG;
        die("join cgroup %s", dir);
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (fd < 0 || write(fd, pid, (size_t)n) != n)
        die("join the session's cgroup %s", dir);
    close(fd);
}

/* Writes `value` to the kernel's file `path` (/proc); 0 when it could not. */
static int write_number(const char *path, long value) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    char v[24];
    int n = snprintf(v, sizeof v, "%ld\n", value);
    int ok = fd >= 0 && write(fd, v, (size_t)n) == n;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* oom_score_adj SANDBOX_OOM_SCORE_ADJ (inherited by everything the session starts); raising it needs no privilege. */
static void prefer_as_oom_victim(void) {
    if (!write_number("/proc/self/oom_score_adj", SANDBOX_OOM_SCORE_ADJ))
        warn("cannot raise the session's oom_score_adj: the OOM killer may pick another process first");
}

/* The worker's end of a pipe whose other end only this launcher holds: when the launcher is gone the
 * pipe reports POLLHUP (getppid() says nothing across the PID namespace). */
static int parent_alive_fd = -1;

/* The worker must never outlive its launcher: the daemon watches the launcher, not the worker, and gives
 * the session's uid and GPUs back once the launcher has exited. Called after each step that resets the
 * parent-death signal (fork, setuid): set it, then make sure the launcher did not die before that. */
static void die_with_launcher(void) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        die("prctl(PR_SET_PDEATHSIG)");
    struct pollfd p = {parent_alive_fd, POLLIN, 0};
    if (parent_alive_fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
        _exit(125); /* the launcher is gone: nobody would reap or account for this worker */
}

/* The devices the agent may open: the few every program expects, and those UCX's transports use (rdma-core's
 * /dev/infiniband, the knem and xpmem single-copy modules) where the host has them. Not the GPUs (/dev/nvidia*,
 * mode 0666 for the workers' uids): the agent moves host memory only, and a taken-over agent must not reach a GPU
 * outside its session's assignment. Nor anything else of the host's /dev. */
static const char *const agent_devices[] = {"null", "zero", "full", "random", "urandom", "infiniband", "knem", "xpmem"};

/* The agent's /dev: a read-only tmpfs holding binds of agent_devices[] and an empty private tmpfs on shm. Built in
 * the agent's own /tmp (a tmpfs of this namespace), then moved over /dev. */
static void agent_dev(const struct sandbox_opts *o) {
    const char *stage = "/tmp/.vmcuda-agent-dev";
    if (mkdir(stage, 0755) != 0 || mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") != 0)
        die("UCX agent: a tmpfs for its /dev");
    char src[64], dst[96];
    for (size_t i = 0; i < sizeof agent_devices / sizeof agent_devices[0]; i++) {
        snprintf(src, sizeof src, "/dev/%s", agent_devices[i]);
        snprintf(dst, sizeof dst, "%s/%s", stage, agent_devices[i]);
        struct stat st;
        if (stat(src, &st) != 0)
            continue; /* not on this host */
        int point = S_ISDIR(st.st_mode) ? mkdir(dst, 0755) : open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (point < 0)
            die("UCX agent: mount point %s", dst);
        if (!S_ISDIR(st.st_mode))
            close(point);
        if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
            die("UCX agent: bind %s", src);
    }
    snprintf(dst, sizeof dst, "%s/shm", stage);
    if (mkdir(dst, 01777) != 0)
        die("UCX agent: mount point %s", dst);
    session_tmpfs(o, dst, MS_NOEXEC);
    if (mount(stage, "/dev", NULL, MS_MOVE, NULL) != 0)
        die("UCX agent: move its /dev in place");
    if (mount(NULL, "/dev", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL) != 0)
        die("UCX agent: remount its /dev read-only");
    rmdir(stage);
}

/* The UCX agent's file system view, made in its new mount namespace (as root, before it drops privileges): every
 * mount read-only; a private tmpfs on /tmp (empty but for the --keep paths the worker gets too, read-only: they
 * name where the libraries lie, UCX's among them); a /dev of its own (agent_dev(): a few devices, no GPU, an empty
 * private /dev/shm), so that nothing the agent writes reaches the host's and nothing of the host's /tmp, shared
 * memory and devices is in its sight; --hide (the daemon's state: every session's directory, the binary cache,
 * the records) covered by an empty read-only tmpfs; a /proc of its PID namespace, where it is alone. The session
 * directory is the worker's, not bound here. */
static void agent_mounts(const struct sandbox_opts *o) {
    mount_common(1);
    private_tmp(o);
    agent_dev(o);
    if (o->hide)
        hide_dir(o->hide, 1);
    mount_proc();
}

/* The agent reads only UCX's variables: none of the session's (VMCUDA_WORKER_KEY, the worker's key for the daemon
 * link, above all) goes to a process whose UCX end point anyone who reaches it may drive. */
static void drop_vmcuda_environment(void) {
    for (char **e = environ; e && *e;) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "VMCUDA_", 7) != 0 || !eq || eq - *e >= 128) {
            e++;
            continue;
        }
        char name[128];
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        unsetenv(name); /* environ changes under us: look again from the start */
        e = environ;
    }
}

/* In the agent's new namespaces (spawn_ucx_agent()'s child), as root: closes what is not the agent's (`inherited`,
 * what the worker inherits, and sv[0]), builds its file system view (agent_mounts()), drops to the worker's uid and
 * executes `vmcuda-ucx-agent ARG`; `sv[1]` (its end of the worker's socket pair), when sv is not NULL, is the one
 * descriptor it inherits besides stdin, stdout and stderr. A step that fails ends it with die()'s line and 126. */
static void exec_ucx_agent(const struct sandbox_opts *o, const struct passwd *pw, const int *inherited, int n_inherited,
                           const int *sv, const char *arg) __attribute__((noreturn));
static void exec_ucx_agent(const struct sandbox_opts *o, const struct passwd *pw, const int *inherited, int n_inherited,
                           const int *sv, const char *arg) {
    for (int i = 0; i < n_inherited; i++) /* what the worker inherits is not the agent's */
        if (inherited[i] >= 0)
            close(inherited[i]);
    if (sv)
        close(sv[0]);
    int exe = open(o->ucx_agent, O_PATH | O_CLOEXEC); /* before a mount can hide it */
    if (exe < 0)
        die("open %s", o->ucx_agent);
    agent_mounts(o);
    /* the worker's limits that make sense for it: no core dumps, private files, a neutral directory */
    struct rlimit core = {0, 0}, nofile = {o->nofile, o->nofile};
    setrlimit(RLIMIT_CORE, &core);
    setrlimit(RLIMIT_NOFILE, &nofile);
    umask(077);
    if (chdir("/") != 0)
        die("UCX agent: chdir /");
    uid_t uid = worker_uid(o, pw);
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(uid) != 0 || setuid(0) == 0 ||
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        die("UCX agent: drop privileges to uid %u", (unsigned)uid);
    if (sv && fcntl(sv[1], F_SETFD, 0) != 0)
        die("UCX agent: socket");
    drop_vmcuda_environment();
    char *args[] = {"vmcuda-ucx-agent", (char *)arg, NULL};
    /* (an ELF program: through a close-on-exec descriptor a script could not be run) */
    syscall(SYS_execveat, exe, "", args, environ, AT_EMPTY_PATH);
    die("execute %s", o->ucx_agent);
}

/* The worker's UCX agent, confined (for a session, start_ucx_agent(); for the probe, probe_ucx_agent()): a child of
 * this launcher, as the worker is, running as the worker's uid with no privileges, in the host's network namespace
 * (the host's NICs and RDMA devices are what it is for), but in mount, PID and IPC namespaces of its own:
 * agent_mounts() above; PID 1 of a PID namespace where it is alone (it can name no other process: no signals, no
 * /proc/PID of the worker or of anything else of the host's); no System V IPC of the host's. UCX's shared-memory
 * transports then take the agent for a process of another host (UCX compares the IPC and PID namespaces) -- they
 * could not reach it anyway, since it runs as another uid than any client. The namespaces are made here because
 * they need privilege the agent never has; its system-call filter it installs itself once it runs (ucx_agent.c says
 * why). Its parent-death signal still reaches it as PID 1: the kernel forces a SIGKILL sent from an ancestor
 * namespace. Returns its pid; the arguments are exec_ucx_agent()'s. */
static pid_t spawn_ucx_agent(const struct sandbox_opts *o, const struct passwd *pw, const int *inherited, int n_inherited,
                             const int *sv, const char *arg) {
    /* clone(2) itself, as bubblewrap does: fork() cannot make a child in a new PID namespace, and an
     * unshare(CLONE_NEWPID) here would make the worker's own unshare(CLONE_NEWPID) (step 3) fail. Without the C
     * library's fork handlers: this launcher has one thread, and the child only sets up and executes. */
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD, NULL, NULL, NULL, 0);
    if (pid < 0)
        die("start the UCX agent in mount, PID and IPC namespaces of its own");
    if (pid == 0)
        exec_ucx_agent(o, pw, inherited, n_inherited, sv, arg);
    return pid;
}

/* Step 2b: the worker's UCX agent (spawn_ucx_agent()), given its end of a new socket pair as its one argument.
 * Returns the worker's end (close-on-exec until step 6). The agent is killed and reaped by wait_child. */
static int start_ucx_agent(const struct sandbox_opts *o, const struct passwd *pw, const int *inherited, int n_inherited) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair for the UCX agent");
    char num[16];
    snprintf(num, sizeof num, "%d", sv[1]);
    ucx_agent = spawn_ucx_agent(o, pw, inherited, n_inherited, sv, num);
    close(sv[1]);
    return sv[0];
}

/* The next process forked in this process's (new) PID namespace gets a random PID: workers of one machine then carry
 * different PIDs, as native processes do. NVIDIA's driver takes a CUDA IPC handle whose exporter's PID equals the
 * opener's own for one of the opener's, and refuses it (measured: with both workers PID 1 of their namespaces,
 * cudaIpcOpenMemHandle fails with cudaErrorInvalidContext; at different PIDs it opens). ns_last_pid is the PID
 * namespace's of the writer; root may set it. Without it (an old kernel, a read-only /proc/sys, a security module
 * that denies it) the worker is PID 2, which the probe's line shows, and IPC between workers is refused by the
 * driver, nothing else. */
static void randomise_next_pid(void) {
    long max = 32768;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 32768;
        fclose(f);
    }
    if (max > 4194304)
        max = 4194304;
    uint32_t r = 0;
    if (max < 1000 || getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        return;
    long last = 300 + (long)(r % (uint32_t)(max - 600)); /* the next PID is last + 1, below pid_max */
    if (!write_number("/proc/sys/kernel/ns_last_pid", last))
        warn("cannot choose the worker's PID (/proc/sys/kernel/ns_last_pid): CUDA IPC between workers will fail");
}

/* PID 1 of the worker's PID namespace: it holds nothing of the session (every descriptor but the launcher's pipe
 * closed, no privileges: the worker's own uid and group, a uid of the session's own with worker.uid_range, so that
 * no process outside the session may signal it; inside, signals to a PID 1 without handlers are ignored; other
 * sandboxed workers cannot name it from their PID namespaces), reaps what the tenant's code
 * leaves, and exits with the worker's status, which the launcher passes on. Its exit ends the namespace: the kernel
 * kills whatever else still runs in it. */
static void wait_as_init(pid_t worker, uid_t uid, gid_t gid) __attribute__((noreturn));
static void wait_as_init(pid_t worker, uid_t uid, gid_t gid) {
    if (parent_alive_fd > 3)
        syscall(SYS_close_range, 3, parent_alive_fd - 1, 0);
    syscall(SYS_close_range, parent_alive_fd + 1, ~0U, 0);
    if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        _exit(125);
    die_with_launcher(); /* again after setuid, which clears it */
    for (;;) {
        int st;
        pid_t r = waitpid(-1, &st, 0);
        if (r == worker)
            _exit(WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 125);
        if (r < 0 && errno != EINTR)
            _exit(125);
    }
}

/* Forks into the new namespaces: PID 1 there waits (wait_as_init, as uid and gid) for the worker, its child at a
 * random PID, in which this returns; the launcher exits with PID 1's status, the worker's. */
static void enter_namespaces(int *close_in_parent, int n_close, uid_t uid, gid_t gid) {
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID) != 0)
        die("unshare(mount, network, IPC, PID namespaces)");
    int alive[2];
    if (pipe2(alive, O_CLOEXEC) != 0)
        die("pipe");
    child = fork();
    if (child < 0)
        die("fork");
    if (child == 0) {
        close(alive[1]);
        parent_alive_fd = alive[0];
        die_with_launcher();
        randomise_next_pid();
        pid_t worker = fork();
        if (worker < 0)
            die("fork the worker");
        if (worker > 0)
            wait_as_init(worker, uid, gid);
        die_with_launcher(); /* its parent is PID 1 above, which dies with the launcher; and so directly */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        for (int s = 1; s < NSIG; s++)
            sigaction(s, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return;
    }
    close(alive[0]); /* alive[1] stays open until this launcher exits */
    for (int i = 0; i < n_close; i++)
        if (close_in_parent[i] >= 0)
            close(close_in_parent[i]);
    struct sigaction sa = {.sa_handler = forward};
    sigemptyset(&sa.sa_mask);
    int stops[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        sigaction(stops[i], &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    _exit(wait_child());
}

static const struct passwd *worker_user(const struct sandbox_opts *o) {
    errno = 0;
    const struct passwd *pw = getpwnam(o->user);
    if (!pw)
        die("worker user '%s' does not exist (appliance setting worker.user)", o->user);
    if (pw->pw_uid == 0 || pw->pw_gid == 0)
        die("worker user '%s' is root; workers must run unprivileged (worker.user)", o->user);
    return pw;
}

/* --probe --ucx-agent: the confinement a session's agent gets, built by the same spawn_ucx_agent() with the same
 * options (--keep, --hide, --uid, --nofile, --tmp-size, --cgroup: probe() joins those first) and this launcher's
 * environment (the daemon's
 * LD_LIBRARY_PATH and UCX_* settings), with the agent's --self-test run in it, so that a host where it cannot be
 * built or the agent cannot run in it is found at the daemon's start, not by every session. --self-test rather
 * than --probe: it starts UCX as --probe does, and also tries what the agent's own system-call filter must deny
 * and let through, so both halves of the agent's confinement are checked where they meet (the namespaces made
 * here, the filter it installs on itself), as probe() checks the worker's filter. The agent's lines go to this
 * launcher's stdout and stderr; a failure ends the probe with one more line saying which part failed. */
static void probe_ucx_agent(const struct sandbox_opts *o, const struct passwd *pw) {
    pid_t pid = spawn_ucx_agent(o, pw, NULL, 0, NULL, "--self-test");
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid for the UCX agent");
    errno = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 126) /* die() in spawn_ucx_agent's child: its line is above */
        die("probe: the UCX agent's confinement could not be built, or %s could not be executed in it (above)", o->ucx_agent);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("probe: the UCX agent %s failed its self-test in its confinement (%s %d; above)", o->ucx_agent,
            WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    printf("vmcuda-sandbox: probe ok: UCX agent %s: self-test passed as uid %u in its confinement (mount, PID and IPC "
           "namespaces of its own, read-only mounts, private /tmp, %d --keep path(s), own /dev and /proc%s), in %d "
           "cgroup(s)\n",
           o->ucx_agent, (unsigned)worker_uid(o, pw), o->n_keep, o->hide ? ", --hide covered" : "", o->n_cgroup);
    fflush(stdout); /* before enter_namespaces() forks: once, and not lost if the worker's part then fails */
}

static int probe(const struct sandbox_opts *o) {
    const struct passwd *pw = worker_user(o);
    if (geteuid() != 0) {
        errno = 0;
        die("must run as root to build the sandbox (it runs as uid %u)", (unsigned)geteuid());
    }
    /* the cgroups first, as in a session (step 0): the probe's processes run under a session's limits */
    for (int i = 0; i < o->n_cgroup; i++)
        join_cgroup(o->cgroup[i]);
    if (o->ucx_agent) /* first, as in a session: the agent is started before the worker's namespaces */
        probe_ucx_agent(o, pw);
    enter_namespaces(NULL, 0, worker_uid(o, pw), pw->pw_gid);
    mount_common(0);
    mount_tmp(o);
    mount_proc();
    drop_privileges(o, pw);
    /* the sandbox must hold: nothing writable outside /tmp, no network */
    if (access("/etc", W_OK) == 0 || (errno != EROFS && errno != EACCES)) {
        errno = 0;
        die("probe: /etc is writable inside the sandbox");
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr.s_addr = htonl(0x01010101)};
    if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
        errno = 0;
        die("probe: the sandbox reached the network");
    }
    char why[160];
    if (sandbox_seccomp(SANDBOX_FILTER_WORKER, why, sizeof why) != 0) {
        errno = 0;
        die("probe: %s", why);
    }
    int wrong = sandbox_seccomp_check(SANDBOX_FILTER_WORKER, 0); /* each wrong one is a line on stderr */
    if (wrong) {
        errno = 0;
        die("probe: the system-call filter is wrong in %d of its checks (above)", wrong);
    }
    printf("vmcuda-sandbox: probe ok: user %s (uid %u), private mount/network/IPC/PID namespaces (worker at PID %d), "
           "system-call filter\n", o->user, (unsigned)pw->pw_uid, (int)getpid());
    return 0;
}

int main(int argc, char **argv) {
    struct sandbox_opts o;
    char err[256];
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(SANDBOX_USAGE, stdout);
        return 0;
    }
    if (sandbox_parse(argc, argv, &o, err, sizeof err) != 0) {
        fprintf(stderr, "vmcuda-sandbox: %s\n%s", err, SANDBOX_USAGE);
        return 2;
    }
    if (o.probe)
        return probe(&o);
    const struct passwd *pw = worker_user(&o);
    if (geteuid() != 0) {
        errno = 0;
        die("must run as root to build the sandbox (it runs as uid %u); set worker.sandbox = false to run "
            "workers without it", (unsigned)geteuid());
    }

    /* 0. the session's cgroups, before anything else runs: the UCX agent and the worker (every process and
     * page of the session) count against the limits the daemon wrote there; and when the machine as a whole runs
     * out of memory, the kernel's OOM killer takes a session before the daemon or anything else of the host */
    for (int i = 0; i < o.n_cgroup; i++)
        join_cgroup(o.cgroup[i]);
    prefer_as_oom_victim();

    /* 1. the daemon link, connected while still root */
    const char *sock = getenv("VMCUDA_WORKER_SOCKET");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (!sock || strlen(sock) >= sizeof addr.sun_path) {
        errno = 0;
        die("VMCUDA_WORKER_SOCKET missing or too long");
    }
    strcpy(addr.sun_path, sock);
    int dfd = socket(AF_UNIX, SOCK_STREAM, 0); /* no CLOEXEC: the worker inherits it */
    if (dfd < 0 || connect(dfd, (struct sockaddr *)&addr, sizeof addr) != 0)
        die("connect to the daemon at %s", sock);
    char num[16];
    snprintf(num, sizeof num, "%d", dfd);
    setenv("VMCUDA_WORKER_FD", num, 1);

    /* 2. everything the worker needs, opened before mounts can hide it. The session directory becomes the
     * worker's alone: owner its uid, mode 0700 (with per-session uids no other worker can enter it). */
    if (chown(o.workdir, worker_uid(&o, pw), pw->pw_gid) != 0 || chmod(o.workdir, 0700) != 0)
        die("give %s to uid %u", o.workdir, (unsigned)worker_uid(&o, pw));
    int exe_fd = open_path(o.exe);
    /* shared-memory regions: opened as root, before /sys and the rest become read-only; the worker
     * inherits them (FD_CLOEXEC is cleared just before the exec) */
    int region_fd[SANDBOX_MAX_REGIONS];
    const char *region_path[SANDBOX_MAX_REGIONS];
    int n_region_fd = 0;
    for (int i = 0; i < o.n_region; i++) {
        int fd = open(o.region[i], O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            warn("shared-memory region %s skipped (cannot open it read-write)", o.region[i]);
            continue;
        }
        region_path[n_region_fd] = o.region[i];
        region_fd[n_region_fd++] = fd;
    }
    int close_in_parent[3 + SANDBOX_MAX_REGIONS] = {dfd, exe_fd};
    for (int i = 0; i < n_region_fd; i++)
        close_in_parent[2 + i] = region_fd[i];
    int ucx_fd = o.ucx_agent ? start_ucx_agent(&o, pw, close_in_parent, 2 + n_region_fd) : -1;
    close_in_parent[2 + n_region_fd] = ucx_fd;

    /* 3. namespaces; from here on this is the worker */
    enter_namespaces(close_in_parent, 3 + n_region_fd, worker_uid(&o, pw), pw->pw_gid);

    /* 4. the file system view. Bind sources must be mounts of this namespace: open them here, before
     * the new /tmp hides what lies below the old one. */
    mount_common(0);
    int work_fd = open_path(o.workdir);
    int lend_fd = o.lend ? open_path(o.lend) : -1;
    private_tmp(&o);
    if (o.hide) /* the daemon's state (other sessions, the binary cache, records) out of sight */
        hide_dir(o.hide, 0);
    bind_fd(work_fd, o.workdir, 1);
    if (lend_fd >= 0) /* what the daemon lends this session (module images), read-only */
        bind_fd(lend_fd, o.lend, 0);
    mount_proc();
    if (chdir(o.workdir) != 0)
        die("chdir %s", o.workdir);

    /* 5. limits and identity */
    drop_privileges(&o, pw);
    setenv("HOME", o.workdir, 1);
    setenv("TMPDIR", "/tmp", 1);

    /* 6. the worker; with --region, the regions it really has, descriptor i being path i (the paths alone
     * would be of no use to it: it cannot open them in here) */
    unsetenv("VMCUDA_SHM_REGION_FDS"); /* only this launcher may say which descriptors are regions */
    if (o.n_region > 0) {
        char fds[SANDBOX_MAX_REGIONS * 12], paths[SANDBOX_MAX_REGIONS * (PATH_MAX + 1)];
        size_t nf = 0, np = 0;
        fds[0] = paths[0] = 0;
        for (int i = 0; i < n_region_fd; i++) {
            if (fcntl(region_fd[i], F_SETFD, 0) != 0)
                die("make the descriptor of %s inheritable", region_path[i]);
            nf += (size_t)snprintf(fds + nf, sizeof fds - nf, "%s%d", i ? "," : "", region_fd[i]);
            np += (size_t)snprintf(paths + np, sizeof paths - np, "%s%s", i ? "," : "", region_path[i]);
        }
        if (n_region_fd > 0) {
            setenv("VMCUDA_SHM_REGION_FDS", fds, 1);
            setenv("VMCUDA_SHM_REGIONS", paths, 1);
        } else {
            unsetenv("VMCUDA_SHM_REGIONS");
        }
    }
    unsetenv("VMCUDA_UCX_AGENT"); /* in here the worker could not start one that reaches the network */
    unsetenv("VMCUDA_UCX_AGENT_FD");
    if (ucx_fd >= 0) {
        char num[16];
        snprintf(num, sizeof num, "%d", ucx_fd);
        if (fcntl(ucx_fd, F_SETFD, 0) != 0)
            die("make the UCX agent's socket inheritable");
        setenv("VMCUDA_UCX_AGENT_FD", num, 1);
    }
    /* 7. the system-call filter, last: the steps above needed what it denies */
    char why[160];
    if (sandbox_seccomp(SANDBOX_FILTER_WORKER, why, sizeof why) != 0) {
        errno = 0;
        die("%s", why);
    }
    syscall(SYS_execveat, exe_fd, "", o.argv, environ, AT_EMPTY_PATH);
    die("execute %s", o.exe);
}

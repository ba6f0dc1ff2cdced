/* The system-call filters of a session, built with libseccomp (linked statically: the appliance needs no extra
 * library at run time). Both come from the deny list below; what they let through is everything else.
 *
 * The worker's, installed by vmcuda-sandbox as the last step before it executes the worker (after
 * PR_SET_NO_NEW_PRIVS, so no privilege is needed). Everything the CUDA driver and the tenant's host code need
 * stays allowed (the driver's ioctls on /dev/nvidia*, mmap, threads, fork, AF_UNIX sockets, the client
 * connections the worker is handed). What would let tenant code leave or weaken its sandbox fails with EPERM:
 * new namespaces of any kind (unshare, setns, clone with a CLONE_NEW* flag; clone3, whose flags the filter
 * cannot read, fails with ENOSYS so that the C library falls back to clone), mounting, ptrace and reading or
 * writing other processes' memory, loading kernel modules or BPF programs, perf events, keyrings, userfaultfd,
 * io_uring (its operations would bypass this filter), opening files by handle, and sockets of any family but
 * AF_UNIX (the network namespace already has no usable interface; this also closes raw, packet and netlink
 * sockets).
 *
 * The UCX agent's (vmcuda-ucx-agent, ucx_agent.c), which the agent installs itself first thing in main()
 * (ucx_agent.c says why there). The same deny list, and:
 *   - sockets of AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only (UCX's tcp transport, rdma-core's verbs and
 *     connection manager, the C library's list of interfaces), netlink only of the protocols NETLINK_ROUTE and
 *     NETLINK_RDMA (rdma-core's device and neighbour look-ups; getifaddrs): the agent keeps the host's network,
 *     which is what it is for, so this filter narrows what a taken-over agent can reach of the kernel, not of
 *     the network;
 *   - no execve or execveat, and no new processes: fork, vfork and clone without CLONE_THREAD fail (the agent
 *     only makes threads; UCX forks only to attach a debugger or mail an error report, which vmcuda does not
 *     configure);
 *   - process_vm_readv and process_vm_writev on itself only: UCX's CMA transport checks at start-up that it can
 *     write to its own pid, and without it CMA would just be off; the CMA puts and gets into the agent are the
 *     client's system calls, not the agent's.
 * Not denied, for the agent: mmap and mprotect with PROT_EXEC (UCX's memory hooks rewrite the C library's code
 * at run time, and UCX loads its transports with dlopen), kill and the other calls that name a process (in the
 * sandbox the agent has a PID namespace of its own, where it is alone). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox_seccomp.h"

#define DENY SCMP_ACT_ERRNO(EPERM)

/* both filters */
static const char *const denied[] = {
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "ptrace", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at", "swapon",
    "swapoff", "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl",
    "fanotify_init", "iopl", "ioperm", "lookup_dcookie", "vhangup", "pidfd_getfd",
};

/* the agent's alone: it runs nothing and starts no process */
static const char *const denied_to_agent[] = {"execve", "execveat", "fork", "vfork"};

static const unsigned long new_namespace_flags[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET,   CLONE_NEWPID,
                                                    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};

/* the agent's socket families and netlink protocols (everything else up to the largest allowed value is denied
 * one by one, everything above it at once) */
static const int agent_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
static const int agent_netlink[] = {NETLINK_ROUTE, NETLINK_RDMA};

static int listed(const int *v, size_t n, int x) {
    for (size_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* One rule: `action` for system call `name` when all of the n comparisons hold (a name this architecture lacks
 * has nothing to deny). */
static int rule(scmp_filter_ctx f, const char **at, uint32_t action, const char *name, unsigned n,
                const struct scmp_arg_cmp *cmp) {
    *at = name;
    int nr = seccomp_syscall_resolve_name(name);
    return nr == __NR_SCMP_ERROR ? 0 : seccomp_rule_add_array(f, action, nr, n, cmp);
}

/* socket(2) for the agent. Its arguments are compared as 64-bit values: a family or protocol with stray high
 * bits (which the kernel would drop) is above every allowed value, so denied. */
static int agent_sockets(scmp_filter_ctx f, const char **at) {
    int rc = 0, top = agent_families[0];
    for (size_t i = 1; i < sizeof agent_families / sizeof agent_families[0]; i++)
        top = agent_families[i] > top ? agent_families[i] : top;
    for (int fam = 0; rc == 0 && fam <= top; fam++) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)fam);
        if (!listed(agent_families, sizeof agent_families / sizeof agent_families[0], fam))
            rc = rule(f, at, DENY, "socket", 1, &c);
    }
    if (rc == 0) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GT, (scmp_datum_t)top);
        rc = rule(f, at, DENY, "socket", 1, &c);
    }
    int top_nl = agent_netlink[0];
    for (size_t i = 1; i < sizeof agent_netlink / sizeof agent_netlink[0]; i++)
        top_nl = agent_netlink[i] > top_nl ? agent_netlink[i] : top_nl;
    for (int p = 0; rc == 0 && p <= top_nl; p++) {
        struct scmp_arg_cmp c[2] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)p)};
        if (!listed(agent_netlink, sizeof agent_netlink / sizeof agent_netlink[0], p))
            rc = rule(f, at, DENY, "socket", 2, c);
    }
    if (rc == 0) {
        struct scmp_arg_cmp c[2] = {SCMP_A0(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2(SCMP_CMP_GT, (scmp_datum_t)top_nl)};
        rc = rule(f, at, DENY, "socket", 2, c);
    }
    return rc;
}

int sandbox_seccomp(enum sandbox_filter which, char *why, size_t why_len) {
    int agent = which == SANDBOX_FILTER_UCX_AGENT;
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f) {
        snprintf(why, why_len, "seccomp_init failed");
        return -1;
    }
    const char *at = "tsync";
    /* every thread: the agent's libraries could have started one before main() */
    int rc = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
    for (size_t i = 0; rc == 0 && i < sizeof denied / sizeof denied[0]; i++)
        rc = rule(f, &at, DENY, denied[i], 0, NULL);
    for (size_t i = 0; rc == 0 && agent && i < sizeof denied_to_agent / sizeof denied_to_agent[0]; i++)
        rc = rule(f, &at, DENY, denied_to_agent[i], 0, NULL);
    for (size_t i = 0; rc == 0 && i < sizeof new_namespace_flags / sizeof new_namespace_flags[0]; i++) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, new_namespace_flags[i], new_namespace_flags[i]);
        rc = rule(f, &at, DENY, "clone", 1, &c);
    }
    if (rc == 0 && agent) { /* threads only */
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
        rc = rule(f, &at, DENY, "clone", 1, &c);
    }
    if (rc == 0)
        rc = rule(f, &at, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
    /* other processes' memory: never; the agent's own, for UCX's CMA check */
    struct scmp_arg_cmp not_self = SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)getpid());
    unsigned n_cmp = agent ? 1 : 0; /* the worker's: whatever the pid */
    if (rc == 0)
        rc = rule(f, &at, DENY, "process_vm_readv", n_cmp, &not_self);
    if (rc == 0)
        rc = rule(f, &at, DENY, "process_vm_writev", n_cmp, &not_self);
    if (rc == 0 && agent) {
        rc = agent_sockets(f, &at);
    } else if (rc == 0) {
        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
        rc = rule(f, &at, DENY, "socket", 1, &c);
    }
    if (rc == 0) {
        at = "load";
        rc = seccomp_load(f);
    }
    seccomp_release(f);
    if (rc != 0) {
        snprintf(why, why_len, "seccomp filter: %s: error %d", at, rc);
        return -1;
    }
    return 0;
}

/* ---- sandbox_seccomp_check ---- */

static int check_failures;
static int check_verbose;

/* One attempt: `err` is its errno (0: it succeeded); it was denied when that is `denial` (EPERM, or ENOSYS for
 * clone3). */
static void expect(const char *what, int err, int must_deny, int denial) {
    int denied = err == denial;
    int ok = denied == must_deny;
    if (check_verbose || !ok)
        fprintf(ok ? stdout : stderr, "check: %s: %s%s%s%s\n", what, denied ? "denied" : "allowed",
                err && !denied ? " (" : "", err && !denied ? strerror(err) : "", err && !denied ? ")" : "");
    if (!ok) {
        fprintf(stderr, "check: %s: should be %s\n", what, must_deny ? "denied" : "allowed");
        check_failures++;
    }
    fflush(stdout);
}

/* the errno of a call that returned r (-1 on failure); a descriptor it made is closed */
static int fd_result(int r) {
    int e = r < 0 ? errno : 0;
    if (r >= 0)
        close(r);
    return e;
}

static void *nothing(void *arg) {
    return arg;
}

int sandbox_seccomp_check(enum sandbox_filter which, int verbose) {
    int agent = which == SANDBOX_FILTER_UCX_AGENT;
    check_failures = 0;
    check_verbose = verbose;

    expect("socket(AF_UNIX)", fd_result(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)), 0, EPERM);
    expect("socket(AF_INET)", fd_result(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), !agent, EPERM);
    expect("socket(AF_INET6)", fd_result(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)), !agent, EPERM);
    expect("socket(AF_NETLINK, NETLINK_ROUTE)", fd_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)),
           !agent, EPERM);
    expect("socket(AF_NETLINK, NETLINK_SOCK_DIAG)",
           fd_result(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)), 1, EPERM);
    expect("socket(AF_PACKET)", fd_result(socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, 0)), 1, EPERM);
    /* stray high bits in the family's register, which the kernel drops: it would make an AF_NETLINK socket */
    expect("socket(AF_NETLINK + 2^32)",
           fd_result((int)syscall(SYS_socket, (1ul << 32) | AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)), 1, EPERM);

    /* another process's memory (the parent's, or none: ESRCH) and this one's own */
    pid_t parent = getppid();
    errno = 0;
    long r = ptrace(PTRACE_PEEKDATA, parent, NULL, NULL);
    expect("ptrace(PEEKDATA, parent)", r == -1 && errno ? errno : 0, 1, EPERM);
    uint64_t src = 1, dst = 0;
    struct iovec local = {&dst, sizeof dst}, remote = {NULL, sizeof dst};
    expect("process_vm_readv(parent)", process_vm_readv(parent, &local, 1, &remote, 1, 0) < 0 ? errno : 0, 1, EPERM);
    struct iovec from = {&src, sizeof src}, to = {&dst, sizeof dst};
    expect("process_vm_writev(itself)", process_vm_writev(getpid(), &from, 1, &to, 1, 0) < 0 ? errno : 0, !agent, EPERM);

    expect("mount", mount(NULL, "/nonexistent/vmcuda-seccomp-check", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0 ? errno : 0,
           1, EPERM);
#ifdef SYS_io_uring_setup
    expect("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL) < 0 ? errno : 0, 1, EPERM);
#endif
#ifdef SYS_clone3
    expect("clone3", syscall(SYS_clone3, NULL, 0) < 0 ? errno : 0, 1, ENOSYS);
#endif

    pthread_t t;
    int e = pthread_create(&t, NULL, nothing, NULL);
    if (e == 0)
        pthread_join(t, NULL);
    expect("pthread_create", e, 0, EPERM);
    pid_t child = fork(); /* the C library's fork: clone without CLONE_THREAD */
    if (child == 0)
        _exit(0);
    e = child < 0 ? errno : 0;
    if (child > 0)
        waitpid(child, NULL, 0);
    expect("fork", e, agent, EPERM);
#ifdef SYS_fork
    long raw = syscall(SYS_fork);
    if (raw == 0)
        _exit(0);
    e = raw < 0 ? errno : 0;
    if (raw > 0)
        waitpid((pid_t)raw, NULL, 0);
    expect("fork (system call)", e, agent, EPERM);
#endif
    char *no_args[] = {"vmcuda-seccomp-check", NULL};
    /* a path that does not exist: allowed, the call fails with ENOENT and this process goes on */
    execve("/nonexistent/vmcuda-seccomp-check", no_args, no_args + 1);
    expect("execve", errno, agent, EPERM);
    syscall(SYS_execveat, -1, "/nonexistent/vmcuda-seccomp-check", no_args, no_args + 1, 0);
    expect("execveat", errno, agent, EPERM);

    expect("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER) < 0 ? errno : 0, 1, EPERM);
    return check_failures;
}

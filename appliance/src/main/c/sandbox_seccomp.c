/* The worker's system-call filter, installed by vmcuda-sandbox as the last step before it executes the
 * worker (after PR_SET_NO_NEW_PRIVS, so no privilege is needed). Built with libseccomp (linked statically:
 * the appliance needs no extra library at run time).
 *
 * Everything the CUDA driver and the tenant's host code need stays allowed (the driver's ioctls on
 * /dev/nvidia*, mmap, threads, AF_UNIX sockets, the client connections the worker is handed). What would
 * let tenant code leave or weaken its sandbox fails with EPERM: new namespaces of any kind (unshare,
 * setns, clone with a CLONE_NEW* flag; clone3, whose flags the filter cannot read, fails with ENOSYS so
 * that the C library falls back to clone), mounting, ptrace and reading or writing other processes'
 * memory, loading kernel modules or BPF programs, perf events, keyrings, userfaultfd, io_uring (its
 * operations would bypass this filter), opening files by handle, and sockets of any family but AF_UNIX
 * (the network namespace already has no usable interface; this also closes raw, packet and netlink
 * sockets). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/socket.h>

#include "sandbox.h"

static const char *const denied[] = {
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff", "reboot", "acct", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "fanotify_init", "iopl", "ioperm",
    "lookup_dcookie", "vhangup", "pidfd_getfd",
};

static const unsigned long new_namespace_flags[] = {CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWNET,   CLONE_NEWPID,
                                                    CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};

/* Returns 0, or -1 with a one-line reason in why. */
int sandbox_seccomp(char *why, size_t why_len) {
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f) {
        snprintf(why, why_len, "seccomp_init failed");
        return -1;
    }
    int rc = 0;
    const char *at = "";
    for (size_t i = 0; rc == 0 && i < sizeof denied / sizeof denied[0]; i++) {
        int nr = seccomp_syscall_resolve_name(denied[i]);
        at = denied[i];
        if (nr != __NR_SCMP_ERROR) /* a name this architecture lacks has nothing to deny */
            rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    for (size_t i = 0; rc == 0 && i < sizeof new_namespace_flags / sizeof new_namespace_flags[0]; i++) {
        at = "clone";
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, new_namespace_flags[i], new_namespace_flags[i]));
    }
    if (rc == 0) {
        at = "clone3";
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    }
    if (rc == 0) {
        at = "socket";
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
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

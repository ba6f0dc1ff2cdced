/* The system-call filters of a session (sandbox_seccomp.c): the worker's, and its UCX agent's. Both come from
 * one deny list; sandbox_seccomp.c says what differs. */
#ifndef VMCUDA_SANDBOX_SECCOMP_H
#define VMCUDA_SANDBOX_SECCOMP_H

#include <stddef.h>

enum sandbox_filter {
    SANDBOX_FILTER_WORKER,    /* installed by vmcuda-sandbox as the last step before it executes the worker */
    SANDBOX_FILTER_UCX_AGENT, /* installed by vmcuda-ucx-agent itself, first thing in main() (ucx_agent.c says why) */
};

/* Installs filter `which` on the calling process (all its threads); returns 0, or -1 with a one-line reason in why. */
int sandbox_seccomp(enum sandbox_filter which, char *why, size_t why_len);

/* After sandbox_seccomp(which): tries, harmlessly, what that filter must deny and what it must let through, and
 * returns how many came out wrong. Each wrong one is a line on stderr; with `verbose`, every one is a line on stdout.
 * A filter that is missing shows: most of the attempts it must deny have another result without it (ENOENT,
 * ESRCH, EFAULT, or success); a few (a packet socket, ptrace) fail with EPERM anyway in a process without
 * privileges, which is why the tests also read Seccomp: 2 in /proc/PID/status. The unshare(CLONE_NEWUSER)
 * attempt comes last: without the filter it would succeed and leave this process in a new user namespace. */
int sandbox_seccomp_check(enum sandbox_filter which, int verbose);

#endif

/* What a worker that crashes leaves in its session log: the signal, the faulting address, and the stack of the
 * thread that crashed (function names where the symbol tables have them), before the signal's default action
 * ends the process as it would have (the daemon still sees the signal in the exit status). Without it the
 * operator has only "worker killed by signal 11" and no core dump (the sandbox forbids them). */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "worker.h"

static int crash_log_fd = -1;
static volatile sig_atomic_t crash_signal;

/* How long the stack may take: backtrace and backtrace_symbols_fd take the dynamic loader's lock, which the
 * crashed thread itself (or one it waits for) may hold; a worker stuck here would hold its client and the daemon. */
#define REPORT_SECONDS 2

/* SIGALRM after REPORT_SECONDS: the crash's own signal, with its default action, ends the process from here. */
static void report_took_too_long(int sig) {
    (void)sig;
    signal(crash_signal, SIG_DFL);
    raise(crash_signal);
}

/* write(2) only below, but for the stack (above). */
static void put(const char *s) {
    ssize_t ignored = write(crash_log_fd, s, strlen(s));
    (void)ignored;
}

static void put_hex(uintptr_t v) {
    char b[2 + 2 * sizeof v + 1];
    int i = (int)sizeof b - 1;
    b[i] = 0;
    do {
        b[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && i > 2);
    b[--i] = 'x';
    b[--i] = '0';
    put(b + i);
}

static void put_dec(long v) {
    char b[24];
    int i = (int)sizeof b - 1;
    b[i] = 0;
    unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
    do {
        b[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        b[--i] = '-';
    put(b + i);
}

static void on_crash(int sig, siginfo_t *info, void *context) {
    (void)context;
    crash_signal = sig;
    struct sigaction timeout = {.sa_handler = report_took_too_long};
    sigaction(SIGALRM, &timeout, NULL);
    alarm(REPORT_SECONDS);
    put("vmcuda-worker[");
    put_dec((long)getpid());
    put("]: crashed: signal ");
    put_dec(sig);
    if (info->si_code <= 0) { /* sent (kill, abort's raise): no faulting address */
        put(", sent by pid ");
        put_dec((long)info->si_pid);
    } else {
        put(", address ");
        put_hex((uintptr_t)info->si_addr);
    }
    put(", code ");
    put_dec(info->si_code);
    put(", thread ");
    put_dec((long)syscall(SYS_gettid));
    put("; its stack:\n");
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, crash_log_fd);
    /* SA_RESETHAND restored the default action: the signal, raised again on return from a fault or here for one
     * sent, ends the process as it would have */
    if (info->si_code <= 0)
        raise(sig);
}

void vmc_w_crash_report_to(int log_fd) {
    crash_log_fd = log_fd;
    void *warm[1];
    backtrace(warm, 1); /* loads the unwinder now: a crash handler must not be the first to */
    static char alt_stack[64 << 10];
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL); /* the serving thread's stack overflowing still reports (other threads' do not) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &sa, NULL);
}

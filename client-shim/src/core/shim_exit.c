/* The program's exit status on the appliance's side. The worker's own exit status says nothing about the program
 * (a worker ends cleanly after a program that exit(1)s), so the client tells its worker what the program passed to
 * exit() or returned from main, as it exits: one asynchronous internal call on the exiting thread's connection.
 * A program killed by a signal or ending in _exit() sends nothing; its record then has no program status. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "shim_call.h"
#include "shim_exit.h"
#include "shim_session.h"
#include "vmc_api.h"
#include "vmc_internal.h"

static pid_t session_pid;

static void report_exit(int status, void *arg) {
    (void)arg;
    /* a child forked after the session began has none (shim_session.c), and a thread without a connection of
     * its own would open one just to say goodbye: neither reports */
    if (getpid() != session_pid || !vmc_thread_has_conn())
        return;
    struct vmc_call c;
    if (vmc_call_begin(&c, VMC_API_vmc_ProgramExit, 1) != cudaSuccess)
        return;
    /* a copy answered on the completion word left its REPLY unread: the worker's output before it comes out now,
     * before the program's end (nothing is read after this asynchronous call) */
    if (c.conn->owed_reply_id)
        (void)vmc_call_settle_owed(c.conn);
    vmc_put_program_exit_args(vmc_call_args(&c), &(struct vmc_program_exit_args){.status = (uint32_t)status & 0xffu});
    vmc_call_finish(&c);
}

void vmc_exit_report_arm(void) {
    session_pid = getpid();
    on_exit(report_exit, NULL);
}

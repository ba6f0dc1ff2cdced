#ifndef VMCUDA_SHIM_EXIT_H
#define VMCUDA_SHIM_EXIT_H

/* Arms the report of the program's exit status to its worker (vmc_ProgramExit), for the session's record and
 * the daemon's log: only the client knows it. Called once, by the thread that opened the session. */
void vmc_exit_report_arm(void);

#endif

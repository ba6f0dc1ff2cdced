/* Opening a file this process shares with its worker to the worker's uid alone (a POSIX ACL entry), not to
 * every local user. */
#ifndef VMC_SHM_ACL_H
#define VMC_SHM_ACL_H

#include <stdint.h>

/* The worker's uid, from its manifest (shim_session.c). */
void vmc_shm_set_worker_uid(uint32_t uid);
/* Lets the worker read and write the file behind fd (created 0600 by this process): an ACL entry for its
 * uid when it runs as another user; where the file system has no ACLs, mode 0666 (said once). */
void vmc_shm_open_to_worker(int fd);

#endif

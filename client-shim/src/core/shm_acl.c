#include "shm_acl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The kernel's POSIX ACL in extended-attribute form (linux/posix_acl_xattr.h): a version, then entries sorted
 * by tag and id, little-endian. Written here rather than through libacl, which client VMs need not have. */
#define ACL_XATTR_VERSION 2u
enum { ACL_USER_OBJ = 0x01, ACL_USER = 0x02, ACL_GROUP_OBJ = 0x04, ACL_MASK = 0x10, ACL_OTHER = 0x20 };
#define ACL_NO_ID 0xffffffffu
#define ACL_RW 6u

static uint32_t worker_uid;
static int worker_uid_known;

void vmc_shm_set_worker_uid(uint32_t uid) {
    __atomic_store_n(&worker_uid, uid, __ATOMIC_RELAXED);
    __atomic_store_n(&worker_uid_known, 1, __ATOMIC_RELEASE);
}

static void put_entry(unsigned char *p, uint16_t tag, uint16_t perm, uint32_t id) {
    p[0] = (unsigned char)tag, p[1] = (unsigned char)(tag >> 8);
    p[2] = (unsigned char)perm, p[3] = (unsigned char)(perm >> 8);
    for (int i = 0; i < 4; i++)
        p[4 + i] = (unsigned char)(id >> (8 * i));
}

void vmc_shm_open_to_worker(int fd) {
    if (!__atomic_load_n(&worker_uid_known, __ATOMIC_ACQUIRE)) {
        fchmod(fd, 0666); /* no manifest yet (cannot happen after a handshake): the name alone guards it */
        return;
    }
    uint32_t uid = __atomic_load_n(&worker_uid, __ATOMIC_RELAXED);
    if (uid == (uint32_t)geteuid())
        return; /* an unsandboxed worker of this very user: 0600 is all it needs */
    unsigned char acl[4 + 5 * 8];
    acl[0] = ACL_XATTR_VERSION, acl[1] = acl[2] = acl[3] = 0;
    put_entry(acl + 4, ACL_USER_OBJ, ACL_RW, ACL_NO_ID);
    put_entry(acl + 12, ACL_USER, ACL_RW, uid);
    put_entry(acl + 20, ACL_GROUP_OBJ, 0, ACL_NO_ID);
    put_entry(acl + 28, ACL_MASK, ACL_RW, ACL_NO_ID);
    put_entry(acl + 36, ACL_OTHER, 0, ACL_NO_ID);
    if (fsetxattr(fd, "system.posix_acl_access", acl, sizeof acl, 0) == 0)
        return;
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "vmcuda: /dev/shm has no POSIX ACLs (%s): the files shared with the worker are open to "
                        "every local user who learns their random names while they exist\n", strerror(errno));
    fchmod(fd, 0666);
}

/* Files shared with the worker (shm_acl.c) open to the worker's uid and to no other user: what keeps another
 * tenant's worker, or any local user who learns a ring's name, out of a client's ring, call pipe and mapped
 * memory. Needs root (to act as other users); says so and checks nothing else without it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "shm_acl.h"

#define WORKER_UID 64999u
#define OTHER_UID 64998u

/* 0 when a process running as uid can open path read-write, else its errno. */
static int open_as(uid_t uid, const char *path) {
    pid_t p = fork();
    if (p == 0) {
        if (setgid(65534) != 0 || setuid(uid) != 0)
            _exit(250);
        int fd = open(path, O_RDWR);
        _exit(fd >= 0 ? 0 : errno);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 251;
}

int main(void) {
    if (geteuid() != 0) {
        printf("test_shm_acl: skipped (needs root to act as the worker and as another user)\n");
        return 0;
    }
    char dir[] = "/dev/shm/vmcuda-acl-test.XXXXXX";
    if (!mkdtemp(dir) || chmod(dir, 0711) != 0) {
        perror("mkdtemp");
        return 2;
    }
    char path[96];
    snprintf(path, sizeof path, "%s/f", dir);
    vmc_shm_set_worker_uid(WORKER_UID);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0, "create");
    vmc_shm_open_to_worker(fd);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && (st.st_mode & 07) == 0, "no permission for others (mode %o)", st.st_mode & 0777);
    CHECK(open_as(WORKER_UID, path) == 0, "the worker's uid opens it");
    int other = open_as(OTHER_UID, path);
    CHECK(other == EACCES, "another uid cannot (errno %d)", other);
    close(fd);
    unlink(path);
    rmdir(dir);
    return check_summary("test_shm_acl");
}

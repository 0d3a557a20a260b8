/*
 * crash: run.lock and the cutting of torn last lines (crash.h).
 */
#include "rundir/crash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"

/* The pid written in the lock file fd, 0 when none can be read. */
static pid_t lock_holder(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long v = strtol(buf, &end, 10);
    return v > 0 && v <= INT32_MAX && (*end == '\n' || *end == '\0') ? (pid_t)v : 0;
}

int rundir_crash_lock(const char *dir, int create, pid_t *holder, struct carma_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, RUNDIR_LOCK_NAME);
    if (holder)
        *holder = 0;
    int fd = open(path, (create ? O_CREAT : 0) | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int r = -errno;
        return carma_err_set(e, r, "%s: cannot open: %s", path, strerror(-r));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int r = -errno;
        if (holder && r == -EWOULDBLOCK)
            *holder = lock_holder(fd);
        close(fd);
        return carma_err_set(e, r, "%s: %s", path,
                             r == -EWOULDBLOCK ? "held by another process" : strerror(-r));
    }
    if (create) {
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        int r = ftruncate(fd, 0) < 0 ? -errno : file_write_all(fd, pid, (size_t)n);
        if (r < 0) {
            close(fd);
            return carma_err_set(e, r, "%s: cannot write: %s", path, strerror(-r));
        }
    }
    return fd;
}

int rundir_crash_trim(const char *dir, const char *name, size_t *dropped, struct carma_err *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *dropped = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int r = -errno;
        return carma_err_set(e, r, "%s: cannot open: %s", path, strerror(-r));
    }
    int r = 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        carma_err_set(e, r, "%s: cannot stat: %s", path, strerror(-r));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        r = carma_err_set(e, -EINVAL, "%s: not a regular file", path);
        goto out;
    }
    /* from the end back to the last line end */
    char buf[65536];
    off_t end = st.st_size, keep = 0;
    while (end > 0) {
        off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
        ssize_t n = pread(fd, buf, (size_t)(end - from), from);
        if (n != end - from) {
            r = n < 0 ? -errno : -EIO;
            carma_err_set(e, r, "%s: cannot read: %s", path, strerror(-r));
            goto out;
        }
        char *nl = memrchr(buf, '\n', (size_t)n);
        if (nl) {
            keep = from + (nl - buf) + 1;
            break;
        }
        end = from;
    }
    if (keep == st.st_size)
        goto out; /* whole lines only (or empty) */
    if (ftruncate(fd, keep) < 0 || fsync(fd) < 0) {
        r = -errno;
        carma_err_set(e, r, "%s: cannot cut its torn last line: %s", path, strerror(-r));
        goto out;
    }
    *dropped = (size_t)(st.st_size - keep);
    r = 1;
out:
    close(fd);
    return r;
}

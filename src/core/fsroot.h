/*
 * fsroot: every sysfs/procfs access carma makes goes through one root directory.
 *
 * `--root DIR` (default "/") is opened once as a directory fd; files below it are opened
 * relative to that fd, so a fixture tree stands in for a real machine. Every path is resolved
 * below the root, as a chroot or a container sees it: an absolute symbolic link starts again
 * at the root (a link to /etc/passwd reads ROOT/etc/passwd) and ".." never climbs above it.
 * The kernel does this where it has openat2(RESOLVE_IN_ROOT) (Linux 5.6); elsewhere (ENOSYS)
 * carma walks the path itself, one O_NOFOLLOW component at a time, reading each link and
 * resolving its text the same way (at most 40 links, as the kernel). Setting
 * CARMA_FSROOT_RESOLVE=walk (read when a root is opened) forces that walk, for tests. Sources
 * open their files once at probe time and re-read them with fsroot_pread_text() at offset 0
 * each tick: no path formatting, no allocation and no open in the sampling path.
 *
 * Test fault hook: the environment variable CARMA_FAULT, read when a root is opened, lists
 * faults separated by ';':
 *   eacces:REL        opening REL fails with -EACCES (chmod cannot stop root from reading)
 *   enodev@N:REL      after N successful reads of REL, reads fail with -ENODEV (a sensor
 *                     that vanished, as sysfs reports an unplugged device)
 *   eio@N:REL         likewise with -EIO
 * REL is the path below the root without a leading '/'. A fault follows the file (device and
 * inode), whichever fd reads it. The fault table is one per process: opening a root re-reads
 * CARMA_FAULT and restarts every count. The hook costs one branch per read when unset.
 */
#ifndef CARMA_CORE_FSROOT_H
#define CARMA_CORE_FSROOT_H

#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct fsroot {
    int dirfd;
    char path[4096];
};

/*
 * Opens path as the root directory. Returns 0, or a negative errno with a message in e
 * naming the path. The fault hook is (re)read from CARMA_FAULT here.
 */
int fsroot_open(struct fsroot *r, const char *path, struct carma_err *e);

/* Closes the root (safe on a zeroed or already closed root). */
void fsroot_close(struct fsroot *r);

/*
 * Opens rel (a leading '/' is ignored) below the root, read-only and O_CLOEXEC, without
 * blocking on a FIFO. Returns the fd (the caller owns it), or a negative errno: -ESPIPE when
 * rel is neither a regular file nor a directory (a FIFO, a socket, a device such as /dev/zero:
 * in a fixture tree anything may stand where sysfs has a regular file), refused at open time so
 * that no read ever blocks or runs on without end.
 */
int fsroot_open_file(const struct fsroot *r, const char *rel);

/* Opens directory rel below the root. Returns 0 and *ret (caller closedir()s), or -errno. */
int fsroot_open_dir(const struct fsroot *r, const char *rel, DIR **ret);

/*
 * Reads the whole of small file rel into buf (NUL-terminated, trailing whitespace removed).
 * Returns its length or a negative errno (-EFBIG when it does not fit in cap - 1 bytes,
 * -EINVAL when it holds a NUL byte: text cut short there would parse as something else).
 */
ssize_t fsroot_read_text(const struct fsroot *r, const char *rel, char *buf, size_t cap);

/* Like fsroot_read_text() for an fd already open: pread at offset 0. Sampling-path safe. */
ssize_t fsroot_pread_text(int fd, char *buf, size_t cap);

/*
 * pread(2) at offset 0 of up to n bytes, through the fault hook, without trimming or
 * terminating (for files read as a prefix, such as proc/stat). Returns the bytes read or a
 * negative errno.
 */
ssize_t fsroot_pread_raw(int fd, char *buf, size_t n);

/* Returns 1 if rel exists below the root, 0 if not. */
int fsroot_exists(const struct fsroot *r, const char *rel);

#endif

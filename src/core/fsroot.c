/* fsroot: file access below one root directory, with a test fault hook (see fsroot.h). */
#include "fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file.h"
#include "parse.h"

#define FAULT_MAX 16

enum fault_mode { FAULT_EACCES, FAULT_ENODEV, FAULT_EIO };

/* A fault follows the file (dev, ino) that rel named when it was opened, not the fd number:
 * a closed fd's number is reused by the next open, and one path may be opened many times. */
struct fault {
    enum fault_mode mode;
    char rel[256];
    long after; /* successful reads allowed before failing */
    long reads; /* successful reads of rel so far, through any fd */
    bool bound; /* rel has been opened: dev and ino are known */
    dev_t dev;
    ino_t ino;
};

static struct fault faults[FAULT_MAX];
static int n_faults;

static void faults_load(void)
{
    n_faults = 0;
    const char *env = getenv("CARMA_FAULT");
    if (!env || !*env)
        return;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", env);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok && n_faults < FAULT_MAX;
         tok = strtok_r(NULL, ";", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon)
            continue;
        *colon = '\0';
        struct fault *f = &faults[n_faults];
        memset(f, 0, sizeof *f);
        char *at = strchr(tok, '@');
        if (at) {
            *at = '\0';
            uint64_t n;
            if (parse_u64(at + 1, &n) < 0)
                continue;
            f->after = (long)n;
        }
        if (strcmp(tok, "eacces") == 0)
            f->mode = FAULT_EACCES;
        else if (strcmp(tok, "enodev") == 0)
            f->mode = FAULT_ENODEV;
        else if (strcmp(tok, "eio") == 0)
            f->mode = FAULT_EIO;
        else
            continue;
        const char *rel = colon + 1;
        while (*rel == '/')
            rel++;
        snprintf(f->rel, sizeof f->rel, "%s", rel);
        n_faults++;
    }
}

/* ---- resolving a path below the root ---- */

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* Whether openat2(RESOLVE_IN_ROOT) is tried: cleared by CARMA_FSROOT_RESOLVE=walk (re-read when
 * a root is opened) and, for the rest of the process, by a kernel without openat2 (ENOSYS). */
static atomic_bool use_openat2 = true;

static void resolve_load(void)
{
    const char *env = getenv("CARMA_FSROOT_RESOLVE");
    use_openat2 = !(env && strcmp(env, "walk") == 0);
}

/* At most this many directories deep, and this many symbolic links followed (the kernel's own
 * limit, 40), in one walk. */
#define WALK_DEPTH 128
#define WALK_LINKS 40

/*
 * The fallback: rel resolved one component at a time from rootfd, each opened with O_PATH |
 * O_NOFOLLOW, so that the kernel never follows a link itself. A symbolic link's text is put in
 * place of the component and walked in turn: an absolute one from the root, ".." never above
 * it (the view a chroot or a container has). The last component is opened with flags.
 */
static int walk_open(int rootfd, const char *rel, int flags)
{
    char todo[2 * PATH_MAX];
    size_t tl = strlen(rel);
    if (tl >= sizeof todo)
        return -ENAMETOOLONG;
    memcpy(todo, rel, tl + 1);
    int stack[WALK_DEPTH];
    int depth = 0;
    stack[0] = rootfd;
    int links = 0, r = 0;
    size_t pos = 0;
    char last[NAME_MAX + 1] = "";
    for (;;) {
        while (todo[pos] == '/')
            pos++;
        if (!todo[pos])
            break;
        size_t len = strcspn(todo + pos, "/");
        if (len > NAME_MAX) {
            r = -ENAMETOOLONG;
            goto out;
        }
        char name[NAME_MAX + 1];
        memcpy(name, todo + pos, len);
        name[len] = '\0';
        pos += len;
        size_t after = pos;
        while (todo[after] == '/')
            after++;
        bool more = todo[after] != '\0';
        last[0] = '\0';
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            if (depth > 0)
                close(stack[depth--]);
            continue;
        }
        int fd = openat(stack[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            r = -errno;
            goto out;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
            r = -errno;
            close(fd);
            goto out;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = -1;
            r = -ELOOP;
            if (++links <= WALK_LINKS) {
                n = readlinkat(fd, "", target, sizeof target);
                r = n < 0 ? -errno : 0;
            }
            close(fd);
            if (r < 0)
                goto out;
            if ((size_t)n >= sizeof target) {
                r = -ENAMETOOLONG;
                goto out;
            }
            /* todo becomes the link's text, '/', then what was left of it */
            size_t rest = strlen(todo + pos);
            if ((size_t)n + 1 + rest >= sizeof todo) {
                r = -ENAMETOOLONG;
                goto out;
            }
            memmove(todo + n + 1, todo + pos, rest + 1);
            memcpy(todo, target, (size_t)n);
            todo[n] = '/';
            pos = 0;
            if (todo[0] == '/')
                while (depth > 0)
                    close(stack[depth--]);
            continue;
        }
        if (!more) {
            close(fd);
            memcpy(last, name, len + 1);
            break;
        }
        if (depth + 1 >= WALK_DEPTH) {
            close(fd);
            r = -ENAMETOOLONG;
            goto out;
        }
        stack[++depth] = fd;
    }
    /* not a link (checked above): O_NOFOLLOW refuses one put there since */
    r = openat(stack[depth], last[0] ? last : ".", flags | O_NOFOLLOW);
    if (r < 0)
        r = -errno;
out:
    while (depth > 0)
        close(stack[depth--]);
    return r;
}

/* Opens rel (no leading '/') below the root with flags, never outside it. Returns the fd or a
 * negative errno. */
static int resolve_open(const struct fsroot *r, const char *rel, int flags)
{
    if (use_openat2) {
        struct open_how how;
        memset(&how, 0, sizeof how);
        how.flags = (uint64_t)(unsigned)flags;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        for (int tries = 0; tries < 16; tries++) {
            long fd = syscall(SYS_openat2, r->dirfd, rel, &how, sizeof how);
            if (fd >= 0)
                return (int)fd;
            /* EAGAIN: a rename below the root raced with the lookup, which is safe to retry */
            if (errno != EAGAIN && errno != EINTR)
                break;
        }
        if (errno != ENOSYS)
            return -errno;
        use_openat2 = false; /* a kernel before 5.6 (or a filter that hides the call) */
    }
    return walk_open(r->dirfd, rel, flags);
}

int fsroot_open(struct fsroot *r, const char *path, struct carma_err *e)
{
    r->dirfd = -1;
    if (!path || !*path)
        path = "/";
    if (strlen(path) >= sizeof r->path) {
        r->path[0] = '\0';
        return carma_err_set(e, -ENAMETOOLONG, "root directory path too long (%zu bytes)",
                             strlen(path));
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    int fd = open(r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return carma_err_set(e, -errno, "cannot open root directory %s: %s", r->path,
                             strerror(errno));
    r->dirfd = fd;
    faults_load();
    resolve_load();
    return 0;
}

void fsroot_close(struct fsroot *r)
{
    /* path is set by fsroot_open: a zeroed root (dirfd 0) owns no descriptor */
    if (r->dirfd >= 0 && r->path[0])
        close(r->dirfd);
    r->dirfd = -1;
    r->path[0] = '\0';
}

static const char *strip(const char *rel)
{
    while (*rel == '/')
        rel++;
    return *rel ? rel : ".";
}

/* The open step's check: sysfs and procfs attributes are regular files, but in a fixture tree
 * (--root) anything may stand in their place. A FIFO was opened without blocking (O_NONBLOCK)
 * and would block every read; a device such as /dev/zero never ends: only a regular file (or a
 * directory, whose read fails with EISDIR) is kept, with O_NONBLOCK cleared. Returns fd, or a
 * negative errno (-ESPIPE for a file of another kind) with fd closed. */
static int keep_regular(int fd)
{
    return file_check_input(fd, true, NULL);
}

int fsroot_open_file(const struct fsroot *r, const char *rel)
{
    rel = strip(rel);
    bool hit = false;
    for (int i = 0; i < n_faults; i++) {
        if (strcmp(faults[i].rel, rel) == 0) {
            if (faults[i].mode == FAULT_EACCES)
                return -EACCES;
            hit = true;
        }
    }
    int fd = resolve_open(r, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return fd;
    if ((fd = keep_regular(fd)) < 0)
        return fd;
    struct stat st;
    if (hit && fstat(fd, &st) == 0) {
        for (int i = 0; i < n_faults; i++) {
            if (strcmp(faults[i].rel, rel) == 0) {
                faults[i].bound = true;
                faults[i].dev = st.st_dev;
                faults[i].ino = st.st_ino;
            }
        }
    }
    return fd;
}

int fsroot_open_dir(const struct fsroot *r, const char *rel, DIR **ret)
{
    int fd = resolve_open(r, strip(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return fd;
    DIR *d = fdopendir(fd);
    if (!d) {
        int err = -errno;
        close(fd);
        return err;
    }
    *ret = d;
    return 0;
}

/* The faults bound to the file behind fd: before a read (count 0) returns the error of one
 * whose allowance is used up, after a successful read (count 1) counts it. */
static int fault_hook(int fd, int count)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return 0; /* pread reports the bad fd */
    for (int i = 0; i < n_faults; i++) {
        struct fault *f = &faults[i];
        if (!f->bound || f->dev != st.st_dev || f->ino != st.st_ino)
            continue;
        if (count)
            f->reads++;
        else if (f->reads >= f->after)
            return f->mode == FAULT_ENODEV ? -ENODEV : -EIO;
    }
    return 0;
}

ssize_t fsroot_pread_text(int fd, char *buf, size_t cap)
{
    if (cap < 2)
        return -EINVAL;
    if (n_faults) {
        int r = fault_hook(fd, 0);
        if (r < 0)
            return r;
    }
    ssize_t n = pread(fd, buf, cap, 0);
    if (n < 0)
        return -errno;
    if ((size_t)n >= cap)
        return -EFBIG;
    if (n_faults)
        fault_hook(fd, 1);
    /* "12\0 34" is no number 12: a NUL byte would cut the text short for every parser */
    if (memchr(buf, '\0', (size_t)n))
        return -EINVAL;
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    return n;
}

ssize_t fsroot_pread_raw(int fd, char *buf, size_t n)
{
    if (n_faults) {
        int r = fault_hook(fd, 0);
        if (r < 0)
            return r;
    }
    ssize_t got = pread(fd, buf, n, 0);
    if (got < 0)
        return -errno;
    if (n_faults)
        fault_hook(fd, 1);
    return got;
}

ssize_t fsroot_read_text(const struct fsroot *r, const char *rel, char *buf, size_t cap)
{
    int fd = fsroot_open_file(r, rel);
    if (fd < 0)
        return fd;
    ssize_t n = fsroot_pread_text(fd, buf, cap);
    close(fd);
    return n;
}

int fsroot_exists(const struct fsroot *r, const char *rel)
{
    int fd = resolve_open(r, strip(rel), O_PATH | O_CLOEXEC);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

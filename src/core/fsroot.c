/* fsroot: file access below one root directory, with a test fault hook (see fsroot.h). */
#include "fsroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    int fd = openat(r->dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
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
    int fd = openat(r->dirfd, strip(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
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
    struct stat st;
    return fstatat(r->dirfd, strip(rel), &st, 0) == 0;
}

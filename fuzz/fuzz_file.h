/*
 * fuzz_file.h: for harnesses whose entry point takes a path. fuzz_dir() is a directory of this
 * process's own (made once, under $TMPDIR or /tmp, removed at exit); fuzz_put() writes an input
 * there whole (replacing the file) and returns its path. fuzz_root(NAME) is a directory of this
 * process's own for a harness that writes a whole tree on every input (made once on the tmpfs
 * /dev/shm when there is one, else under /tmp, removed at exit); fuzz_rm_tree() removes a tree.
 */
#ifndef CARMA_FUZZ_FILE_H
#define CARMA_FUZZ_FILE_H

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir_path[PATH_MAX];
static char fuzz_root_path[PATH_MAX];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes path and everything below it (links not followed). */
__attribute__((unused)) static void fuzz_rm_tree(const char *path)
{
    if (path[0])
        nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_dir_rm(void)
{
    fuzz_rm_tree(fuzz_dir_path);
    fuzz_rm_tree(fuzz_root_path);
}

/* /dev/shm/carma-fuzz-NAME-PID (or under /tmp), made once, removed at exit. */
__attribute__((unused)) static const char *fuzz_root(const char *name)
{
    if (!fuzz_root_path[0]) {
        struct stat st;
        const char *t = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(fuzz_root_path, sizeof fuzz_root_path, "%s/carma-fuzz-%s-%d", t, name,
                 (int)getpid());
        if (mkdir(fuzz_root_path, 0755) != 0)
            abort();
        atexit(fuzz_dir_rm);
    }
    return fuzz_root_path;
}

__attribute__((unused)) static const char *fuzz_dir(void)
{
    if (!fuzz_dir_path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/carma-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_path))
            abort();
        atexit(fuzz_dir_rm);
    }
    return fuzz_dir_path;
}

/* Writes n bytes to fuzz_dir()/name (its parent directories must exist) and returns its path
 * (a static buffer per call site is the caller's business: this one is overwritten). */
__attribute__((unused)) static const char *fuzz_put(const char *name, const void *p, size_t n)
{
    static char path[PATH_MAX];
    char tmp[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        abort();
    const char *s = p;
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            abort();
        s += w;
        n -= (size_t)w;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0)
        abort();
    return path;
}

/* Makes fuzz_dir()/name (one level) when it is not there. */
__attribute__((unused)) static void fuzz_mkdir(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    if (mkdir(path, 0755) < 0 && access(path, F_OK) < 0)
        abort();
}

/* Removes fuzz_dir()/name when it is there. */
__attribute__((unused)) static void fuzz_unlink(const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    (void)unlink(path);
}

#endif

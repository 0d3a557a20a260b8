/* file: whole-file reads with a size limit (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <jansson.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int file_check_input(int fd, bool dirs_ok, struct stat *ret_st)
{
    struct stat st;
    int r = 0;
    if (fstat(fd, &st) < 0)
        r = -errno;
    else if (S_ISDIR(st.st_mode) && !dirs_ok)
        r = -EISDIR;
    else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        r = -ESPIPE;
    else {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
            r = -errno;
    }
    if (r < 0) {
        close(fd);
        return r;
    }
    if (ret_st)
        *ret_st = st;
    return fd;
}

int file_open_input(int dirfd, const char *path, struct stat *ret_st)
{
    int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int err = errno;
        struct stat st;
        /* a socket cannot be opened at all (ENXIO): it is a file of the wrong kind too */
        if (err == ENXIO && fstatat(dirfd, path, &st, 0) == 0 && S_ISSOCK(st.st_mode))
            return -ESPIPE;
        return -err;
    }
    struct stat st;
    fd = file_check_input(fd, false, &st);
    if (fd < 0)
        return fd;
    if (ret_st)
        *ret_st = st;
    return fd;
}

FILE *file_fopen_input(const char *path, int *err)
{
    int fd = file_open_input(AT_FDCWD, path, NULL);
    if (fd < 0) {
        *err = fd;
        return NULL;
    }
    FILE *f = fdopen(fd, "re");
    if (!f) {
        *err = -errno;
        close(fd);
    }
    return f;
}

const char *file_kind(mode_t mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "an unknown file";
}

const char *file_kind_at(int dirfd, const char *path)
{
    struct stat st;
    if (fstatat(dirfd, path, &st, 0) == 0)
        return file_kind(st.st_mode);
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return "a dangling symbolic link";
    return "an unreadable file";
}

int file_input_err(struct carma_err *e, const char *path, int r)
{
    if (r == -ESPIPE)
        return carma_err_set(e, r, "%s is not a regular file (%s)", path,
                             file_kind_at(AT_FDCWD, path));
    return carma_err_set(e, r, "%s: %s", path, strerror(-r));
}

json_t *file_load_json(const char *path, size_t flags, json_error_t *je, int *err)
{
    json_error_t local;
    if (!je)
        je = &local;
    char *text = NULL;
    size_t len = 0;
    int r = file_read_all(path, FILE_JSON_MAX, &text, &len);
    if (r < 0) {
        memset(je, 0, sizeof *je);
        snprintf(je->text, sizeof je->text, "%s",
                 r == -ESPIPE ? "not a regular file" : strerror(-r));
        if (err)
            *err = r;
        return NULL;
    }
    json_t *j = json_loadb(text, len, flags, je);
    free(text);
    if (!j && err)
        *err = -EINVAL;
    return j;
}

int file_read_all(const char *path, size_t max, char **ret, size_t *ret_len)
{
    struct stat st;
    int fd = file_open_input(AT_FDCWD, path, &st);
    if (fd < 0)
        return fd;
    int r = 0;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap > max) { /* one byte past max was read: the file is larger */
                r = -EFBIG;
                goto out;
            }
            size_t nc = cap ? 2 * cap : 4096;
            if (nc > max + 1)
                nc = max + 1;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                r = -ENOMEM;
                goto out;
            }
            buf = nb;
            cap = nc;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max) {
        r = -EFBIG;
        goto out;
    }
    if (!buf && !(buf = malloc(1))) {
        r = -ENOMEM;
        goto out;
    }
    buf[len] = '\0';
    *ret = buf;
    *ret_len = len;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return r;
}

int file_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int file_createat(int dfd, const char *path, int flags)
{
    int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | flags, FILE_MODE);
    return fd < 0 ? -errno : fd;
}

int file_create(const char *path, int flags)
{
    return file_createat(AT_FDCWD, path, flags);
}

FILE *file_fopen_w(const char *path)
{
    int fd = file_create(path, O_TRUNC);
    if (fd < 0) {
        errno = -fd;
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int err = errno;
        close(fd);
        errno = err;
    }
    return f;
}

/* 64 random bits for a temporary file's name: the kernel's, or the clock's when it has none. */
static uint64_t tmp_rand_default(void)
{
    uint64_t v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
        return v;
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (++counter * 0x9e3779b97f4a7c15u);
    return v;
}

uint64_t (*file_tmp_rand)(void) = tmp_rand_default;

int file_mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0)
        return -EINVAL;
    if (n >= sizeof buf)
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, FILE_DIR_MODE) < 0 && errno != EEXIST)
            return -errno;
        *s = '/';
    }
    if (mkdir(buf, FILE_DIR_MODE) < 0) {
        if (errno != EEXIST)
            return -errno;
        struct stat st;
        if (stat(buf, &st) < 0)
            return -errno;
        if (!S_ISDIR(st.st_mode))
            return -ENOTDIR;
    }
    return 0;
}

int file_replace(const char *path, const void *p, size_t n)
{
    /* not a regular file (/dev/null, /dev/stdout, a FIFO): written as it is, never replaced,
     * since a rename would put a regular file in place of the device */
    struct stat ost;
    if (stat(path, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        if (S_ISDIR(ost.st_mode))
            return -EISDIR;
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            return -errno;
        int r = file_write_all(fd, p, n);
        if (close(fd) < 0 && r == 0)
            r = -errno;
        return r;
    }
    /* a new file of a name no one else uses: O_EXCL never opens one left by a crashed run (or
     * put there, a link to elsewhere); another random name is tried instead */
    char tmp[4200];
    int fd = -EEXIST;
    for (int tries = 0; tries < FILE_TMP_TRIES && fd == -EEXIST; tries++) {
        if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%d.%016llx", path, (int)getpid(),
                             (unsigned long long)file_tmp_rand()) >= sizeof tmp)
            return -ENAMETOOLONG;
        fd = file_create(tmp, O_EXCL);
    }
    if (fd < 0)
        return fd;
    int r = file_write_all(fd, p, n);
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    if (close(fd) < 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp);
        return r;
    }
    /* the directory entry: best effort, some file systems refuse to sync a directory */
    char dir[4200];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* 1 when the directory fd holds no entry but . and .., 0 when it holds one, or -errno. */
static int dir_is_empty(int dfd)
{
    int fd = dup(dfd);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int r = -errno;
        close(fd);
        return r;
    }
    int empty = 1;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    }
    closedir(d);
    return empty;
}

int file_claim_dir(const char *path, const char *claim, const char *const *outputs,
                   bool *ret_created)
{
    char parent[4096];
    size_t n = strlen(path);
    if (n == 0 || !claim || !*claim || strchr(claim, '/'))
        return -EINVAL;
    if (n >= sizeof parent)
        return -ENAMETOOLONG;
    memcpy(parent, path, n + 1);
    while (n > 1 && parent[n - 1] == '/')
        parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        int r = file_mkdirs(parent);
        if (r < 0)
            return r;
    }
    bool created = mkdir(path, FILE_DIR_MODE) == 0;
    if (!created && errno != EEXIST)
        return -errno;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return errno == ENOTDIR ? -ENOTDIR : -errno;
    int r = 0;
    if (!created && !outputs) {
        r = dir_is_empty(dfd);
        if (r == 0)
            r = -ENOTEMPTY;
        if (r < 0)
            goto out;
    }
    for (size_t k = 0; !created && outputs && outputs[k]; k++) {
        struct stat st;
        if (fstatat(dfd, outputs[k], &st, AT_SYMLINK_NOFOLLOW) == 0) {
            r = -ENOTEMPTY;
            goto out;
        }
    }
    /* the claim proper: of two processes that both made or found the directory empty, only
     * one creates the file */
    int fd = file_createat(dfd, claim, O_EXCL);
    if (fd < 0) {
        r = fd == -EEXIST ? -ENOTEMPTY : fd;
        goto out;
    }
    close(fd);
    r = 0;
    *ret_created = created;
out:
    close(dfd);
    return r;
}

void file_unclaim_dir(const char *path, const char *claim, bool created)
{
    char p[4200];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", path, claim) >= sizeof p)
        return;
    unlink(p);
    if (created)
        rmdir(path); /* fails, harmlessly, when something else is there */
}

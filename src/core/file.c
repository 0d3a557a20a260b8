/* file: whole-file reads with a size limit (see file.h). */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read_all(const char *path, size_t max, char **ret, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = 0;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        r = -errno;
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        r = -EISDIR;
        goto out;
    }
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
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -errno;
        *s = '/';
    }
    if (mkdir(buf, 0755) < 0) {
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

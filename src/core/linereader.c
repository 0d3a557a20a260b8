/* linereader: lines as Python's text mode splits them, read in chunks (see linereader.h). */
#include "core/linereader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/file.h"

/* Bytes read from a file at a time. */
#define CHUNK (1u << 20)

int linereader_open(struct linereader *l, const char *path, size_t max, bool cut_long)
{
    memset(l, 0, sizeof *l);
    l->max = max;
    l->cut_long = cut_long;
    l->fd = file_open_input(AT_FDCWD, path, NULL);
    return l->fd < 0 ? l->fd : 0;
}

void linereader_close(struct linereader *l)
{
    if (l->fd >= 0)
        close(l->fd);
    free(l->buf);
    memset(l, 0, sizeof *l);
    l->fd = -1;
}

/* Reads more after compacting. 0, or a negative errno. */
static int fill(struct linereader *l)
{
    if (l->pos > 0) {
        memmove(l->buf, l->buf + l->pos, l->len - l->pos);
        l->len -= l->pos;
        l->pos = 0;
    }
    if (array_grow(&l->buf, &l->cap, l->len + CHUNK + 1, 1) < 0)
        return -ENOMEM;
    for (;;) {
        ssize_t n = read(l->fd, l->buf + l->len, CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            l->eof = true;
        l->len += (size_t)n;
        return 0;
    }
}

int linereader_next(struct linereader *l, char **ret, size_t *ret_len)
{
    size_t scan = l->pos;
    for (;;) {
        size_t i = scan;
        while (i < l->len && l->buf[i] != '\n' && l->buf[i] != '\r')
            i++;
        if (i < l->len && (l->buf[i] == '\n' || i + 1 < l->len || l->eof)) {
            size_t end = i + 1;
            if (l->buf[i] == '\r' && end < l->len && l->buf[end] == '\n')
                end++;
            l->buf[i] = '\0';
            char *s = l->buf + l->pos;
            size_t n = i - l->pos;
            l->pos = end;
            if (l->skipping) {
                l->skipping = false;
                scan = l->pos;
                continue;
            }
            l->lineno++;
            *ret = s;
            *ret_len = n;
            return 1;
        }
        if (l->eof) {
            if (l->pos == l->len || l->skipping)
                return 0;
            l->buf[l->len] = '\0';
            *ret = l->buf + l->pos;
            *ret_len = l->len - l->pos;
            l->pos = l->len;
            l->lineno++;
            return 1;
        }
        if (l->len - l->pos >= l->max && !(i < l->len)) {
            if (!l->cut_long)
                return -EFBIG;
            if (l->skipping) {
                l->pos = l->len;
            } else {
                l->skipping = true;
                l->buf[l->pos + l->max] = '\0';
                *ret = l->buf + l->pos;
                *ret_len = l->max;
                l->pos = l->len;
                l->lineno++;
                return 1;
            }
        }
        size_t done = i - l->pos;
        int r = fill(l);
        if (r < 0)
            return r;
        scan = l->pos + done;
    }
}

/* csvstream: a CSV file as a stream of records split in place, read in chunks (see
 * csvstream.h). */
#include "core/csvstream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/array.h"
#include "core/file.h"

/* Bytes read from a file at a time. */
#define CHUNK (1u << 20)

int csvstream_open(struct csvstream *r, const char *path, size_t max, struct carma_err *e)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->max = max;
    r->line = 1;
    struct stat st;
    r->fd = file_open_input(AT_FDCWD, path, &st);
    if (r->fd < 0) {
        int err = r->fd;
        r->fd = -1;
        return file_input_err(e, path, err);
    }
    r->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    return 0;
}

void csvstream_close(struct csvstream *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    csv_fields_free(&r->f);
    r->fd = -1;
    r->buf = NULL;
}

/* Finds the end of the last whole record in buf (cut), from where the last scan stopped. */
static void scan(struct csvstream *r)
{
    size_t i = r->scan;
    r->lines = CSVSTREAM_LINES_UNKNOWN;
    if (!r->inq && i < r->len && !memchr(r->buf + i, '"', r->len - i)) {
        /* no quote: the last \n ends a record; only the bytes after it need a closer look */
        const char *nl = memrchr(r->buf + i, '\n', r->len - i);
        if (nl) {
            r->cut = (size_t)(nl - r->buf) + 1;
            i = r->cut;
        }
    }
    for (; i < r->len; i++) {
        char c = r->buf[i];
        if (c == '"') {
            r->inq = !r->inq;
        } else if (c == '\n') {
            if (!r->inq)
                r->cut = i + 1;
        } else if (c == '\r' && !r->inq) {
            if (i + 1 == r->len && !r->eof)
                break; /* is a \n next? */
            if (i + 1 == r->len || r->buf[i + 1] != '\n')
                r->cut = i + 1;
        }
    }
    r->scan = i;
}

int csvstream_next(struct csvstream *r, struct csv_row **ret, bool *ret_torn, struct carma_err *e)
{
    for (;;) {
        if (r->pos < r->cut) {
            size_t line0 = r->line;
            int k = csv_split(r->buf, r->cut, &r->pos, &r->line, r->path, &r->f, e);
            if (k == -EINVAL && r->final && r->inq && r->one_line) {
                carma_err_clear(e);
                r->torn_unparsed = true;
                r->torn_line = line0;
                r->pos = r->cut;
                continue;
            }
            if (k < 0)
                return k;
            if (k > 0) {
                *ret = &r->f.row;
                *ret_torn = r->final;
                return 1;
            }
            continue;
        }
        if (r->final)
            return 0;
        if (r->cut > 0) {
            memmove(r->buf, r->buf + r->cut, r->len - r->cut);
            r->off += r->cut;
            r->len -= r->cut;
            r->scan -= r->cut;
            r->pos = 0;
            r->cut = 0;
            r->lines = CSVSTREAM_LINES_UNKNOWN;
        }
        if (r->eof) {
            r->final = true;
            r->cut = r->len;
            r->lines = CSVSTREAM_LINES_UNKNOWN;
            r->one_line = !memchr(r->buf, '\n', r->len) && !memchr(r->buf, '\r', r->len);
            continue;
        }
        if (r->len >= r->max) {
            size_t p = 0, ln = r->line;
            int k;
            while ((k = csv_split(r->buf, r->len, &p, &ln, r->path, &r->f, e)) > 0)
                ;
            if (k < 0)
                return k;
            return carma_err_set(e, -EINVAL, "%s:%zu: a record longer than %zu bytes", r->path,
                                 r->line, r->max);
        }
        if (array_grow(&r->buf, &r->cap, r->len + CHUNK + 1, 1) < 0)
            return carma_err_set(e, -ENOMEM, "out of memory");
        ssize_t n = read(r->fd, r->buf + r->len, CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = -errno;
            return carma_err_set(e, err, "%s: %s", r->path, strerror(-err));
        }
        if (n == 0)
            r->eof = true;
        r->len += (size_t)n;
        scan(r);
    }
}

void csvstream_lines_look(struct csvstream *r)
{
    const char *s = r->buf + r->pos;
    const char *nl = NULL;
    if (!memchr(s, '"', r->cut - r->pos) && !memchr(s, '\0', r->cut - r->pos))
        nl = memrchr(s, '\n', r->cut - r->pos);
    r->lines = nl ? CSVSTREAM_LINES : CSVSTREAM_LINES_NONE;
    r->lines_end = nl ? (size_t)(nl - r->buf) + 1 : 0;
}

int csvstream_seek(struct csvstream *r, uint64_t off, size_t line, struct carma_err *e)
{
    if (lseek(r->fd, (off_t)off, SEEK_SET) < 0) {
        int err = -errno;
        return carma_err_set(e, err, "%s: %s", r->path, strerror(-err));
    }
    r->len = r->pos = r->scan = r->cut = 0;
    r->inq = r->eof = r->final = r->one_line = false;
    r->off = off;
    r->line = line;
    r->lines = CSVSTREAM_LINES_UNKNOWN;
    r->lines_end = 0;
    return 0;
}

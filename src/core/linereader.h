/*
 * linereader: a file's lines as Python's text mode splits them (\n, \r\n or a lone \r ends a
 * line), read in 1 MiB chunks and returned in place, with a cap on a line's length.
 */
#ifndef CARMA_CORE_LINEREADER_H
#define CARMA_CORE_LINEREADER_H

#include <stdbool.h>
#include <stddef.h>

struct linereader {
    int fd;
    char *buf;
    size_t len, cap, pos;
    size_t max; /* the longest line taken whole */
    bool eof;
    bool skipping; /* the rest of an over-long line is being dropped */
    bool cut_long; /* over-long lines: cut (true) or an error (false) */
    size_t lineno; /* of the line last returned, from 1 */
};

/* Opens path (core/file's file_open_input: a regular file, a pipe or a terminal). Lines over
 * max bytes are cut there when cut_long, else an error. Returns 0, or a negative errno (then
 * linereader_close is still safe). */
int linereader_open(struct linereader *l, const char *path, size_t max, bool cut_long);

/* Closes the file and frees the buffer (safe after a failed open). */
void linereader_close(struct linereader *l);

/*
 * The next line (without its \n, \r\n or \r) into *ret / *ret_len, NUL-terminated in place
 * (valid until the next call). Returns 1, 0 at the end, -EFBIG for a line over max when
 * cut_long is off (a longer line is otherwise returned cut at max bytes, the rest dropped),
 * -ENOMEM, or a read errno.
 */
int linereader_next(struct linereader *l, char **ret, size_t *ret_len);

#endif

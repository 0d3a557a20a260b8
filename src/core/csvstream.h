/*
 * csvstream: a CSV file read as a stream of records, in chunks of whole records split in place
 * (core/csv's csv_split: exactly csv_parse's reading, without an allocation per field), for
 * files too large to hold whole.
 *
 * The file is read 1 MiB at a time into a buffer; a scan finds where the last whole record in
 * the buffer ends (cut; quote-aware, memchr/memrchr when the new bytes hold no quote), and the
 * records before it are split in place and handed out one at a time. The partial record after
 * cut moves to the front before the next read. At the end of the file what is left (one record
 * without a line end, or nothing) is split last (final). A reader may instead take the plain
 * lines of a chunk without quotes as they are (csvstream_lines: a caller's own one-pass line
 * reader); whatever it does not take is split as above.
 */
#ifndef CARMA_CORE_CSVSTREAM_H
#define CARMA_CORE_CSVSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/csv.h"
#include "core/err.h"

struct csvstream {
    int fd;
    const char *path;
    size_t max; /* the longest record taken */
    char *buf;
    size_t len, cap;
    size_t pos;    /* the next record in buf */
    size_t scan;   /* bytes of buf looked at for record ends */
    bool inq;      /* the scan is inside a quoted field */
    size_t cut;    /* end of the last whole record in buf (0: none yet) */
    size_t line;   /* the line number at pos */
    uint64_t off;  /* the file offset of buf[0] */
    uint64_t size; /* the file's size when opened (0: unknown) */
    bool eof, final, one_line;
    struct csv_fields f;
    bool torn_unparsed; /* the file ends in an unterminated quoted field on one line */
    size_t torn_line;
    /* what csvstream_lines may hand out of the records in [pos, cut): unknown (not looked at
     * since cut last moved), none (they hold a quote), lines (the lines before lines_end) */
    enum { CSVSTREAM_LINES_UNKNOWN, CSVSTREAM_LINES_NONE, CSVSTREAM_LINES } lines;
    size_t lines_end; /* just after the last \n in [pos, cut) */
};

/*
 * Opens path (core/file's file_open_input: a regular file, a pipe or a terminal), path kept
 * (not copied) for the messages; a record longer than max bytes is an error. Returns 0, or a
 * negative errno with e set as file_input_err sets it (csvstream_close is then still safe).
 */
int csvstream_open(struct csvstream *r, const char *path, size_t max, struct carma_err *e);

/* Closes the file and frees the buffers (safe after a failed open, and twice). */
void csvstream_close(struct csvstream *r);

/*
 * The next record (blank lines skipped) into *ret, valid until the next call (its fields point
 * into the read buffer); *ret_torn when it is the file's last line and has no line end.
 * Returns 1, 0 at the end of the file, or a negative errno with e set: csv_split's -EINVAL
 * ("path:line: ..."), -EINVAL for a record over max ("path:line: a record longer than N
 * bytes"), -ENOMEM, or a read errno ("path: <strerror>"). After 0, r->torn_unparsed says that
 * the file ended in an unterminated quoted field (at r->torn_line) that was not returned.
 */
int csvstream_next(struct csvstream *r, struct csv_row **ret, bool *ret_torn, struct carma_err *e);

/* How much of the file the records handed out so far cover, and ahead bytes more, 0 to 1 (0
 * when the size is unknown). */
static inline double csvstream_progress(const struct csvstream *r, size_t ahead)
{
    return r->size > 0 ? (double)(r->off + r->pos + ahead) / (double)r->size : 0.0;
}

/* Looks at the records in [pos, cut) for csvstream_lines (sets lines and lines_end). */
void csvstream_lines_look(struct csvstream *r);

/*
 * The records at pos as plain lines, for a reader that splits them itself: when the records
 * left in [pos, cut) hold no quote and no NUL byte and the next one is not blank, *ret is its
 * first byte and [*ret, *ret + *ret_avail) whole records, the last byte a \n: a reader that
 * stops at \n (and at \r, to take CRLF whole and leave a lone CR) never reads past it, and a
 * record it reads as a line of fields split at commas has exactly csv_split's fields. Else
 * false: csvstream_next reads the record (csv_split refuses a NUL byte, naming its line).
 * Nothing moves: a reader that took one record of n bytes says so with csvstream_took. Inline,
 * as it is asked once a row.
 */
static inline bool csvstream_lines(struct csvstream *r, const char **ret, size_t *ret_avail)
{
    if (r->pos >= r->cut)
        return false;
    const char *s = r->buf + r->pos;
    if (r->lines == CSVSTREAM_LINES_UNKNOWN)
        csvstream_lines_look(r);
    if (r->lines == CSVSTREAM_LINES_NONE || r->pos >= r->lines_end || s[0] == '\n' || s[0] == '\r')
        return false;
    *ret = s;
    *ret_avail = r->lines_end - r->pos;
    return true;
}

/*
 * Moves the stream to the record that starts at file offset off (line number line), as if the
 * records before it had been read: what the buffer held is dropped and the next read is at off.
 * For a reader that took the records in [its position, off) some other way (srt/log's parallel
 * GPU reader). Returns 0, or a negative errno with e set ("path: <strerror>").
 */
int csvstream_seek(struct csvstream *r, uint64_t off, size_t line, struct carma_err *e);

/* One record of n bytes (its line end included) taken from csvstream_lines: the stream moves
 * past it, one line on. */
static inline void csvstream_took(struct csvstream *r, size_t n)
{
    r->pos += n;
    r->line++;
}

#endif

/*
 * csv: RFC 4180 reading and writing.
 *
 * The reader parses a whole buffer (a data table, a samples file) into rows of fields,
 * handling quoted fields with embedded commas, quotes and newlines, CRLF or LF line ends.
 * It reports the 1-based line of a malformed row. The writer appends fields to a
 * caller-owned buffer, quoting only when needed, rows ending in CRLF.
 */
#ifndef CARMA_CORE_CSV_H
#define CARMA_CORE_CSV_H

#include <stddef.h>

#include "err.h"

struct csv_row {
    char **fields;
    size_t n;
    size_t line; /* line number (1-based) where the row starts */
};

struct csv_doc {
    struct csv_row *rows;
    size_t n;
};

/*
 * Parses len bytes of text. name labels errors ("data/cpu_tdp.csv:12: ..."). Returns 0 and
 * fills doc (free with csv_doc_free), or -EINVAL with e set (unterminated quote, stray quote,
 * a NUL byte anywhere).
 * Blank lines are skipped.
 */
int csv_parse(const char *text, size_t len, const char *name, struct csv_doc *doc,
              struct carma_err *e);

/* Frees what csv_parse allocated (safe on a zeroed doc). */
void csv_doc_free(struct csv_doc *doc);

/* Index of column name in row, or -1. */
int csv_column(const struct csv_row *header, const char *name);

/* One record split in place by csv_split: row.fields point into the caller's text. */
struct csv_fields {
    struct csv_row row;
    size_t cap; /* room in row.fields */
};

/*
 * Splits the next record of text[*pos, len) in place, reading it exactly as csv_parse would
 * (quoted fields with "" escapes, embedded commas and line ends; CRLF, LF or CR line ends; blank
 * lines skipped; a record may end at len without a line end), but without allocating per field:
 * each field is NUL-terminated where it lies (the separator or line end after it is
 * overwritten, a quoted field is unquoted in place), so text[len] must be writable. *line is the
 * line number at *pos and is advanced past the record's line ends; f->row.line is the record's
 * first line. Returns 1 with f->row filled and *pos after the record, 0 when only blank lines
 * were left (*pos = len), -EINVAL with e set as csv_parse sets it ("name:line: unterminated
 * quoted field", "name:line: a NUL byte (not text)", ...), or -ENOMEM. The text of a record that
 * failed is left half-split.
 */
int csv_split(char *text, size_t len, size_t *pos, size_t *line, const char *name,
              struct csv_fields *f, struct carma_err *e);

/* Frees f's field array (the text is the caller's); safe on a zeroed f. */
void csv_fields_free(struct csv_fields *f);

/* A growable output buffer used by writers. */
struct csv_buf {
    char *data;
    size_t len, cap;
};

/* Appends field s (quoted if it holds , " CR or LF), preceded by ',' unless first. */
int csv_buf_field(struct csv_buf *b, const char *s, int first);

/* Appends raw bytes (already-safe text such as numbers). */
int csv_buf_raw(struct csv_buf *b, const char *s, size_t n);

/* Ends the row with CRLF. */
int csv_buf_end_row(struct csv_buf *b);

/* Ensures room for extra more bytes. Returns 0 or -ENOMEM. */
int csv_buf_reserve(struct csv_buf *b, size_t extra);

/* Frees the buffer's storage. */
void csv_buf_free(struct csv_buf *b);

#endif

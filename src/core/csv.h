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
 * fills doc (free with csv_doc_free), or -EINVAL with e set (unterminated quote, stray quote).
 * Blank lines are skipped.
 */
int csv_parse(const char *text, size_t len, const char *name, struct csv_doc *doc,
              struct carma_err *e);

/* Frees what csv_parse allocated (safe on a zeroed doc). */
void csv_doc_free(struct csv_doc *doc);

/* Index of column name in row, or -1. */
int csv_column(const struct csv_row *header, const char *name);

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

/*
 * libFuzzer harness for core/csv: csv_parse (allocating, whole buffer), csv_split (in place,
 * record by record) and the writer (csv_buf_field, csv_buf_end_row).
 *
 * - csv_parse and csv_split read the same text alike: both succeed or both fail with the same
 *   message; on success the same records, each with the same first line and the same fields
 *   byte for byte;
 * - csv_split never reads or writes past text[len] (an exact-size copy plus the one writable
 *   byte it is promised);
 * - the records written back with csv_buf_field and csv_buf_end_row and parsed again are the
 *   same records (except a record of one empty field, which the writer makes a blank line,
 *   and blank lines are skipped); the first lines are those of the written text;
 * - a written text holds no bare CR or LF outside quotes but the row ends.
 *
 * fuzz-sources: src/core/csv.c src/core/err.c
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"

static void compare_docs(const struct csv_doc *a, const struct csv_doc *b, bool lines)
{
    if (a->n != b->n) {
        fprintf(stderr, "%zu records vs %zu\n", a->n, b->n);
        abort();
    }
    for (size_t i = 0; i < a->n; i++) {
        if (a->rows[i].n != b->rows[i].n || (lines && a->rows[i].line != b->rows[i].line)) {
            fprintf(stderr, "record %zu: %zu fields line %zu vs %zu line %zu\n", i, a->rows[i].n,
                    a->rows[i].line, b->rows[i].n, b->rows[i].line);
            abort();
        }
        for (size_t k = 0; k < a->rows[i].n; k++)
            if (strcmp(a->rows[i].fields[k], b->rows[i].fields[k]) != 0) {
                fprintf(stderr, "record %zu field %zu: '%s' vs '%s'\n", i, k, a->rows[i].fields[k],
                        b->rows[i].fields[k]);
                abort();
            }
    }
}

/* The records of text read by csv_split into a doc of copies (so that compare_docs applies). */
static int split_all(const char *text, size_t len, struct csv_doc *doc, struct carma_err *e)
{
    memset(doc, 0, sizeof *doc);
    char *copy = malloc(len + 1); /* exactly len + 1 bytes: text[len] must be writable */
    if (!copy)
        return -ENOMEM;
    memcpy(copy, text, len);
    copy[len] = '\x7f'; /* not promised to be anything */
    struct csv_fields f = {0};
    size_t pos = 0, line = 1, cap = 0;
    int r;
    while ((r = csv_split(copy, len, &pos, &line, "t.csv", &f, e)) == 1) {
        if (pos > len)
            abort();
        if (doc->n == cap) {
            cap = cap ? cap * 2 : 16;
            doc->rows = realloc(doc->rows, cap * sizeof *doc->rows);
            if (!doc->rows)
                abort();
        }
        struct csv_row *row = &doc->rows[doc->n++];
        row->n = f.row.n;
        row->line = f.row.line;
        row->fields = calloc(f.row.n ? f.row.n : 1, sizeof *row->fields);
        if (!row->fields)
            abort();
        for (size_t k = 0; k < f.row.n; k++) {
            const char *s = f.row.fields[k];
            if (s < copy || s > copy + len)
                abort(); /* a field outside the text */
            row->fields[k] = strdup(s);
            if (!row->fields[k])
                abort();
        }
    }
    if (r == 0 && pos != len)
        abort();
    csv_fields_free(&f);
    free(copy);
    if (r < 0) {
        csv_doc_free(doc);
        return r;
    }
    return 0;
}

static void check_written(const char *w, size_t n)
{
    bool quoted = false;
    for (size_t i = 0; i < n; i++) {
        if (w[i] == '"')
            quoted = !quoted;
        else if (!quoted && w[i] == '\r' && !(i + 1 < n && w[i + 1] == '\n'))
            abort();
        else if (!quoted && w[i] == '\n' && !(i > 0 && w[i - 1] == '\r'))
            abort();
    }
    if (quoted)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);

    struct csv_doc doc, split;
    struct carma_err e1 = {0}, e2 = {0};
    int r1 = csv_parse(text, size, "t.csv", &doc, &e1);
    int r2 = split_all(text, size, &split, &e2);
    if (r1 != r2 || (r1 < 0 && strcmp(e1.msg, e2.msg) != 0)) {
        fprintf(stderr, "csv_parse %d '%s', csv_split %d '%s'\n", r1, e1.msg, r2, e2.msg);
        abort();
    }
    if (r1 < 0) {
        if (r1 != -EINVAL || strncmp(e1.msg, "t.csv:", 6) != 0)
            abort();
        free(text);
        return 0;
    }
    compare_docs(&doc, &split, true);
    csv_doc_free(&split);

    /* written back, less the records of one empty field */
    struct csv_buf b = {0};
    struct csv_doc want = {0};
    want.rows = calloc(doc.n ? doc.n : 1, sizeof *want.rows);
    if (!want.rows)
        abort();
    for (size_t i = 0; i < doc.n; i++) {
        const struct csv_row *row = &doc.rows[i];
        if (row->n == 0 || (row->n == 1 && row->fields[0][0] == '\0'))
            continue;
        want.rows[want.n++] = *row;
        for (size_t k = 0; k < row->n; k++)
            if (csv_buf_field(&b, row->fields[k], k == 0) < 0)
                abort();
        if (csv_buf_end_row(&b) < 0)
            abort();
    }
    check_written(b.data ? b.data : "", b.len);
    struct csv_doc again;
    struct carma_err e3 = {0};
    if (csv_parse(b.data ? b.data : "", b.len, "w.csv", &again, &e3) != 0) {
        fprintf(stderr, "the written text does not parse: %s\n", e3.msg);
        abort();
    }
    compare_docs(&want, &again, false);
    struct csv_doc again2;
    if (split_all(b.data ? b.data : "", b.len, &again2, &e3) != 0)
        abort();
    compare_docs(&again, &again2, true);
    csv_doc_free(&again2);
    csv_doc_free(&again);
    free(want.rows);
    csv_buf_free(&b);
    csv_doc_free(&doc);
    free(text);
    return 0;
}

/* csv: RFC 4180 reader and writer helpers (see csv.h). */
#include "csv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct growbuf {
    char *s;
    size_t n, cap;
};

static int gb_put(struct growbuf *g, char c)
{
    if (g->n + 1 >= g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        char *p = realloc(g->s, cap);
        if (!p)
            return -ENOMEM;
        g->s = p;
        g->cap = cap;
    }
    g->s[g->n++] = c;
    g->s[g->n] = '\0';
    return 0;
}

static int row_push(struct csv_row *row, struct growbuf *field, size_t *cap)
{
    if (row->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        char **p = realloc(row->fields, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        row->fields = p;
        *cap = nc;
    }
    row->fields[row->n++] = field->s ? field->s : strdup("");
    if (!row->fields[row->n - 1])
        return -ENOMEM;
    memset(field, 0, sizeof *field);
    return 0;
}

static int doc_push(struct csv_doc *doc, struct csv_row *row, size_t *cap)
{
    if (doc->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        struct csv_row *p = realloc(doc->rows, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        doc->rows = p;
        *cap = nc;
    }
    doc->rows[doc->n++] = *row;
    memset(row, 0, sizeof *row);
    return 0;
}

static void row_free(struct csv_row *row)
{
    for (size_t i = 0; i < row->n; i++)
        free(row->fields[i]);
    free(row->fields);
    memset(row, 0, sizeof *row);
}

int csv_parse(const char *text, size_t len, const char *name, struct csv_doc *doc,
              struct carma_err *e)
{
    memset(doc, 0, sizeof *doc);
    struct csv_row row = {0};
    struct growbuf field = {0};
    size_t row_cap = 0, doc_cap = 0, line = 1;
    int r = 0;
    size_t i = 0;
    row.line = 1;

    while (i < len) {
        char c = text[i];
        if (c == '\0') {
            r = carma_err_set(e, -EINVAL, "%s:%zu: a NUL byte (not text)", name, line);
            goto fail;
        }
        if (c == '"' && field.n == 0 && !field.s) {
            /* quoted field */
            size_t start_line = line;
            i++;
            for (;;) {
                if (i >= len) {
                    r = carma_err_set(e, -EINVAL, "%s:%zu: unterminated quoted field", name,
                                      start_line);
                    goto fail;
                }
                if (text[i] == '"') {
                    if (i + 1 < len && text[i + 1] == '"') {
                        if ((r = gb_put(&field, '"')) < 0)
                            goto fail;
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                if (text[i] == '\n')
                    line++;
                if (text[i] == '\0') {
                    r = carma_err_set(e, -EINVAL, "%s:%zu: a NUL byte (not text)", name, line);
                    goto fail;
                }
                if ((r = gb_put(&field, text[i])) < 0)
                    goto fail;
                i++;
            }
            if (!field.s && (r = gb_put(&field, '\0')) < 0)
                goto fail;
            if (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                r = carma_err_set(e, -EINVAL, "%s:%zu: unexpected text after a quoted field", name,
                                  line);
                goto fail;
            }
            continue;
        }
        if (c == ',') {
            if ((r = row_push(&row, &field, &row_cap)) < 0)
                goto fail;
            i++;
            continue;
        }
        if (c == '\r' || c == '\n') {
            if (c == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            i++;
            bool blank = row.n == 0 && field.n == 0 && !field.s;
            if (!blank) {
                if ((r = row_push(&row, &field, &row_cap)) < 0 ||
                    (r = doc_push(doc, &row, &doc_cap)) < 0)
                    goto fail;
                row_cap = 0;
            }
            line++;
            row.line = line;
            continue;
        }
        if (c == '"') {
            r = carma_err_set(e, -EINVAL, "%s:%zu: stray quote inside an unquoted field", name,
                              line);
            goto fail;
        }
        if ((r = gb_put(&field, c)) < 0)
            goto fail;
        i++;
    }
    if (row.n > 0 || field.s) {
        if ((r = row_push(&row, &field, &row_cap)) < 0 || (r = doc_push(doc, &row, &doc_cap)) < 0)
            goto fail;
    }
    return 0;
fail:
    free(field.s);
    row_free(&row);
    csv_doc_free(doc);
    if (r == -ENOMEM)
        carma_err_set(e, r, "%s: out of memory", name);
    return r;
}

void csv_doc_free(struct csv_doc *doc)
{
    for (size_t i = 0; i < doc->n; i++)
        row_free(&doc->rows[i]);
    free(doc->rows);
    memset(doc, 0, sizeof *doc);
}

/* The bytes that end an unquoted field's run: separator, line ends, a (stray) quote, a NUL
 * (refused). */
static const unsigned char csv_special[256] = {
    [','] = 1, ['\n'] = 1, ['\r'] = 1, ['"'] = 1, ['\0'] = 1};

int csv_split(char *text, size_t len, size_t *pos, size_t *line, const char *name,
              struct csv_fields *f, struct carma_err *e)
{
    size_t i = *pos, ln = *line;
    while (i < len && (text[i] == '\n' || text[i] == '\r')) { /* blank lines */
        if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
            i++;
        i++;
        ln++;
    }
    if (i >= len) {
        *pos = i;
        *line = ln;
        return 0;
    }
    f->row.n = 0;
    f->row.line = ln;
    for (;;) {
        if (f->row.n == f->cap) {
            size_t nc = f->cap ? f->cap * 2 : 16;
            char **p = realloc(f->row.fields, nc * sizeof *p);
            if (!p)
                return carma_err_set(e, -ENOMEM, "%s: out of memory", name);
            f->row.fields = p;
            f->cap = nc;
        }
        char *start = text + i;
        size_t end;
        if (i < len && text[i] == '"') {
            size_t start_line = ln, w = i;
            i++;
            for (;;) {
                if (i >= len)
                    return carma_err_set(e, -EINVAL, "%s:%zu: unterminated quoted field", name,
                                         start_line);
                char c = text[i];
                if (c == '"') {
                    if (i + 1 < len && text[i + 1] == '"') {
                        text[w++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                if (c == '\n')
                    ln++;
                if (c == '\0')
                    return carma_err_set(e, -EINVAL, "%s:%zu: a NUL byte (not text)", name, ln);
                text[w++] = c;
                i++;
            }
            if (i < len && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
                return carma_err_set(e, -EINVAL, "%s:%zu: unexpected text after a quoted field",
                                     name, ln);
            end = w;
        } else {
            while (i < len && !csv_special[(unsigned char)text[i]])
                i++;
            if (i < len && text[i] == '"')
                return carma_err_set(e, -EINVAL, "%s:%zu: stray quote inside an unquoted field",
                                     name, ln);
            if (i < len && text[i] == '\0')
                return carma_err_set(e, -EINVAL, "%s:%zu: a NUL byte (not text)", name, ln);
            end = i;
        }
        char sep = i < len ? text[i] : '\0';
        text[end] = '\0';
        f->row.fields[f->row.n++] = start;
        if (sep == ',') {
            i++;
            continue;
        }
        if (sep == '\r' && i + 1 < len && text[i + 1] == '\n')
            i++;
        if (sep != '\0') {
            i++;
            ln++;
        }
        break;
    }
    *pos = i;
    *line = ln;
    return 1;
}

void csv_fields_free(struct csv_fields *f)
{
    free(f->row.fields);
    memset(f, 0, sizeof *f);
}

int csv_column(const struct csv_row *header, const char *name)
{
    for (size_t i = 0; i < header->n; i++)
        if (strcmp(header->fields[i], name) == 0)
            return (int)i;
    return -1;
}

int csv_buf_reserve(struct csv_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return -ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int csv_buf_raw(struct csv_buf *b, const char *s, size_t n)
{
    if (csv_buf_reserve(b, n) < 0)
        return -ENOMEM;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int csv_buf_field(struct csv_buf *b, const char *s, int first)
{
    size_t n = strlen(s);
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    if (csv_buf_reserve(b, 2 * n + 3) < 0)
        return -ENOMEM;
    if (!first)
        b->data[b->len++] = ',';
    if (!quote) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
    } else {
        b->data[b->len++] = '"';
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"')
                b->data[b->len++] = '"';
            b->data[b->len++] = s[i];
        }
        b->data[b->len++] = '"';
    }
    b->data[b->len] = '\0';
    return 0;
}

int csv_buf_end_row(struct csv_buf *b)
{
    return csv_buf_raw(b, "\r\n", 2);
}

void csv_buf_free(struct csv_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

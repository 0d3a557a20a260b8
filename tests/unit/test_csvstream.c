/*
 * Unit tests for core/csvstream: records read as csv_parse reads the whole text (across the
 * 1 MiB chunks, a quoted record or a CRLF cut by a chunk's end), the line numbers, a torn last
 * line, the plain-line fast path, the record cap and a missing file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "core/csvstream.h"
#include "testutil.h"

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tu_dir, name);
}

/* Writes text to name below tu_dir (text may hold NUL bytes: len of them). */
static void put_bytes(const char *name, const char *text, size_t len)
{
    char path[512];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The stream of name gives exactly csv_parse's rows of text, fields and lines. */
static void same_as_parse(const char *name, const char *text, size_t len)
{
    put_bytes(name, text, len);
    char path[512];
    path_of(path, sizeof path, name);
    struct csv_doc doc = {0};
    struct carma_err e = {0};
    assert_int_equal(csv_parse(text, len, path, &doc, &e), 0);
    struct csvstream r;
    assert_int_equal(csvstream_open(&r, path, 16u << 20, &e), 0);
    struct csv_row *row;
    bool torn;
    size_t i = 0;
    int k;
    while ((k = csvstream_next(&r, &row, &torn, &e)) > 0) {
        assert_true(i < doc.n);
        assert_int_equal(row->line, doc.rows[i].line);
        assert_int_equal(row->n, doc.rows[i].n);
        for (size_t j = 0; j < row->n; j++)
            assert_string_equal(row->fields[j], doc.rows[i].fields[j]);
        i++;
    }
    assert_int_equal(k, 0);
    assert_int_equal(i, doc.n);
    assert_false(r.torn_unparsed);
    csvstream_close(&r);
    csvstream_close(&r);
    csv_doc_free(&doc);
}

static void test_records(void **state)
{
    (void)state;
    const char *text = "a,b,c\r\n1,\"x,y\",3\n\n\"multi\nline\",\"q\"\"q\",\r4,5,6\r\nlast,,";
    same_as_parse("a.csv", text, strlen(text));

    char path[512];
    path_of(path, sizeof path, "a.csv");
    struct csvstream r;
    struct carma_err e = {0};
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    struct csv_row *row;
    bool torn;
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_false(torn);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1); /* 1,"x,y",3 */
    assert_int_equal(row->line, 2);
    assert_string_equal(row->fields[1], "x,y");
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1); /* the quoted line end */
    assert_int_equal(row->line, 4);
    assert_string_equal(row->fields[0], "multi\nline");
    assert_string_equal(row->fields[1], "q\"q");
    assert_string_equal(row->fields[2], "");
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1); /* after a lone CR */
    assert_int_equal(row->line, 6);
    assert_false(torn);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1); /* no line end: torn */
    assert_int_equal(row->line, 7);
    assert_true(torn);
    assert_int_equal(row->n, 3);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 0);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 0);
    assert_true(csvstream_progress(&r, 0) == 1.0);
    csvstream_close(&r);

    /* blank lines only, and an empty file: no record */
    same_as_parse("b.csv", "\n\r\n\n", 4);
    same_as_parse("c.csv", "", 0);
}

/* Records around the chunk ends: a quoted field holding line ends that a chunk cuts, a CRLF
 * whose CR ends a chunk, and many plain rows. */
static void test_chunks(void **state)
{
    (void)state;
    size_t cap = 5u << 20, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)sprintf(text, "t,v,name\r\n");
    tu_rng_seed(7);
    for (size_t i = 0; len < cap - 4096; i++) {
        int kind = (int)(tu_rng_next() % 16);
        if (kind == 0)
            len += (size_t)sprintf(text + len, "%zu,\"a\r\nb,\"\"c\"\"\n\",x\r\n", i);
        else if (kind == 1)
            len += (size_t)sprintf(text + len, "%zu,1.5,\n", i);
        else if (kind == 2)
            len += (size_t)sprintf(text + len, "\r\n");
        else
            len += (size_t)sprintf(text + len, "%zu,%u,host%u\r\n", i, (unsigned)(i * 7919 % 1000),
                                   (unsigned)(i % 3));
        /* a CR just before the 1 MiB mark (the first read's end), its LF after */
        if (len > (1u << 20) - 40 && len < (1u << 20) - 20) {
            size_t pad = (1u << 20) - 1 - len;
            memset(text + len, 'p', pad - 4);
            memcpy(text + len + pad - 4, ",,\"\"", 4);
            len += pad;
            text[len++] = '\r';
            text[len++] = '\n';
        }
    }
    assert_true(text[(1u << 20) - 1] == '\r' && text[1u << 20] == '\n');
    same_as_parse("big.csv", text, len);
    free(text);
}

static void test_torn_quote(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "t.csv");
    tu_put("t.csv", "a,b\n1,2\n3,\"unterminated");
    struct csvstream r;
    struct carma_err e = {0};
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    struct csv_row *row;
    bool torn;
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 0);
    assert_true(r.torn_unparsed);
    assert_int_equal(r.torn_line, 3);
    assert_string_equal(e.msg, "");
    csvstream_close(&r);

    /* over more than one line it is an error, as csv_parse says it */
    tu_put("t.csv", "a,b\n1,\"x\ny");
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), -EINVAL);
    char want[600];
    snprintf(want, sizeof want, "%s:2: unterminated quoted field", path);
    assert_string_equal(e.msg, want);
    csvstream_close(&r);
}

static void test_lines(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "l.csv");
    tu_put("l.csv", "h1,h2\n1,2\r\n3,4\nlast,x");
    struct csvstream r;
    struct carma_err e = {0};
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    const char *s;
    size_t avail;
    assert_false(csvstream_lines(&r, &s, &avail)); /* nothing read yet */
    struct csv_row *row;
    bool torn;
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_string_equal(row->fields[0], "h1");
    assert_true(csvstream_lines(&r, &s, &avail));
    assert_int_equal(avail, strlen("1,2\r\n3,4\n"));
    assert_memory_equal(s, "1,2\r\n", 5);
    csvstream_took(&r, 5);
    assert_int_equal(r.line, 3);
    assert_true(csvstream_lines(&r, &s, &avail));
    assert_int_equal(avail, 4);
    csvstream_took(&r, 4);
    assert_false(csvstream_lines(&r, &s, &avail)); /* the last line: no line end */
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(row->line, 4);
    assert_true(torn);
    assert_string_equal(row->fields[1], "x");
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 0);
    csvstream_close(&r);

    /* a quote or a NUL byte in the chunk: no plain lines, the records are split */
    put_bytes("q.csv", "h\n\"a\"\nb\n", 8);
    path_of(path, sizeof path, "q.csv");
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_false(csvstream_lines(&r, &s, &avail));
    csvstream_close(&r);
    put_bytes("n.csv", "h\na\0\nb\n", 7);
    path_of(path, sizeof path, "n.csv");
    assert_int_equal(csvstream_open(&r, path, 1000, &e), 0);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_false(csvstream_lines(&r, &s, &avail));
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), -EINVAL);
    csvstream_close(&r);
}

static void test_limits(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "long.csv");
    size_t big = 3u << 20;
    char *text = malloc(big + 8);
    assert_non_null(text);
    memcpy(text, "h\nx", 3);
    memset(text + 3, 'x', big);
    text[big + 3] = '\n';
    put_bytes("long.csv", text, big + 4);
    struct csvstream r;
    struct carma_err e = {0};
    assert_int_equal(csvstream_open(&r, path, 2u << 20, &e), 0);
    struct csv_row *row;
    bool torn;
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), -EINVAL);
    char want[600];
    snprintf(want, sizeof want, "%s:2: a record longer than %u bytes", path, 2u << 20);
    assert_string_equal(e.msg, want);
    csvstream_close(&r);

    /* an over-long record that a bad quote makes: the quote's error, as csv_split says it */
    text[2] = '"';
    put_bytes("long.csv", text, big + 3);
    free(text);
    assert_int_equal(csvstream_open(&r, path, 2u << 20, &e), 0);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), 1);
    assert_int_equal(csvstream_next(&r, &row, &torn, &e), -EINVAL);
    snprintf(want, sizeof want, "%s:2: unterminated quoted field", path);
    assert_string_equal(e.msg, want);
    csvstream_close(&r);

    path_of(path, sizeof path, "absent.csv");
    assert_true(csvstream_open(&r, path, 1000, &e) < 0);
    assert_non_null(strstr(e.msg, "absent.csv"));
    csvstream_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_records, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_chunks, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_torn_quote, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_lines, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_limits, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for core/csv: the RFC 4180 reader (quoting, line ends, blank lines, error
 * lines) and the writer (quoting only when needed, CRLF row ends, round trip).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"

static int parse_str(const char *text, struct csv_doc *doc, struct carma_err *e)
{
    return csv_parse(text, strlen(text), "t.csv", doc, e);
}

/* Asserts that row i of doc holds exactly the n fields given and starts on line. */
static void check_row(const struct csv_doc *doc, size_t i, size_t line, size_t n,
                      const char *const *fields)
{
    assert_true(i < doc->n);
    const struct csv_row *row = &doc->rows[i];
    if (row->n != n)
        fail_msg("row %zu has %zu fields, want %zu", i, row->n, n);
    for (size_t k = 0; k < n; k++)
        assert_string_equal(row->fields[k], fields[k]);
    if (row->line != line)
        fail_msg("row %zu starts on line %zu, want %zu", i, row->line, line);
}

#define ROW(doc, i, line, ...)                                                                     \
    do {                                                                                           \
        const char *const f_[] = {__VA_ARGS__};                                                    \
        check_row(doc, i, line, sizeof f_ / sizeof f_[0], f_);                                     \
    } while (0)

static void test_simple_lf_and_crlf(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str("a,b,c\n1,2,3\n", &doc, &e), 0);
    assert_int_equal(doc.n, 2);
    ROW(&doc, 0, 1, "a", "b", "c");
    ROW(&doc, 1, 2, "1", "2", "3");
    csv_doc_free(&doc);

    assert_int_equal(parse_str("a,b\r\n1,2\r\n", &doc, &e), 0);
    assert_int_equal(doc.n, 2);
    ROW(&doc, 0, 1, "a", "b");
    ROW(&doc, 1, 2, "1", "2");
    csv_doc_free(&doc);

    /* no final line end; mixed line ends */
    assert_int_equal(parse_str("a,b\r\n1,2\n3,4", &doc, &e), 0);
    assert_int_equal(doc.n, 3);
    ROW(&doc, 2, 3, "3", "4");
    csv_doc_free(&doc);
}

static void test_empty_fields(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str(",a,\n,\n\"\"\n\"\",x\n a , b \n", &doc, &e), 0);
    assert_int_equal(doc.n, 5);
    ROW(&doc, 0, 1, "", "a", "");
    ROW(&doc, 1, 2, "", "");
    ROW(&doc, 2, 3, "");
    ROW(&doc, 3, 4, "", "x");
    ROW(&doc, 4, 5, " a ", " b "); /* spaces are part of a field */
    csv_doc_free(&doc);

    assert_int_equal(parse_str("x,", &doc, &e), 0);
    assert_int_equal(doc.n, 1);
    ROW(&doc, 0, 1, "x", "");
    csv_doc_free(&doc);

    assert_int_equal(parse_str("", &doc, &e), 0);
    assert_int_equal(doc.n, 0);
    csv_doc_free(&doc);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    const char *text = "name,note\n"
                       "\"a,b\",\"say \"\"hi\"\"\"\n"
                       "\"two\nlines\",\"crlf\r\ninside\"\n"
                       "after,\"\"\"\"\n";
    assert_int_equal(parse_str(text, &doc, &e), 0);
    assert_int_equal(doc.n, 4);
    ROW(&doc, 0, 1, "name", "note");
    ROW(&doc, 1, 2, "a,b", "say \"hi\"");
    ROW(&doc, 2, 3, "two\nlines", "crlf\r\ninside");
    ROW(&doc, 3, 6, "after", "\""); /* the row above took lines 3 to 5 */
    csv_doc_free(&doc);

    /* a quoted field at the end of the text, no line end */
    assert_int_equal(parse_str("1,\"x\"", &doc, &e), 0);
    ROW(&doc, 0, 1, "1", "x");
    csv_doc_free(&doc);
}

static void test_blank_lines_skipped(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str("\n\na,b\n\n\r\n1,2\r\n\r\n\n3,4\n\n", &doc, &e), 0);
    assert_int_equal(doc.n, 3);
    ROW(&doc, 0, 3, "a", "b");
    ROW(&doc, 1, 6, "1", "2");
    ROW(&doc, 2, 9, "3", "4");
    csv_doc_free(&doc);
}

static void test_column(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str("pattern,tdp_w,cores\n", &doc, &e), 0);
    assert_int_equal(csv_column(&doc.rows[0], "pattern"), 0);
    assert_int_equal(csv_column(&doc.rows[0], "cores"), 2);
    assert_int_equal(csv_column(&doc.rows[0], "tdp"), -1);
    assert_int_equal(csv_column(&doc.rows[0], "TDP_W"), -1);
    csv_doc_free(&doc);
}

static void test_unterminated_quote(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str("a,b\n1,2\n3,\"open\nstill open\n", &doc, &e), -EINVAL);
    assert_int_equal(e.code, -EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:3:"));
    assert_non_null(strstr(e.msg, "unterminated"));
    assert_int_equal(doc.n, 0);
    assert_null(doc.rows);
    csv_doc_free(&doc); /* safe after a failure */
}

static void test_stray_quote(void **state)
{
    (void)state;
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(parse_str("a,b\n\n1,2\"3\n", &doc, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:3:"));
    assert_non_null(strstr(e.msg, "quote"));
    assert_int_equal(doc.n, 0);

    /* text after a closing quote */
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_str("a\n\"x\"y,z\n", &doc, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:2:"));
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_str("\"x\" ,z\n", &doc, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:1:"));

    /* the error line counts the lines inside an earlier quoted field */
    memset(&e, 0, sizeof e);
    assert_int_equal(parse_str("\"1\n2\n3\",x\nbad\"\n", &doc, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "t.csv:4:"));
}

static void test_not_nul_terminated(void **state)
{
    (void)state;
    /* only len bytes are read */
    const char text[] = {'a', ',', 'b', '\n', 'c', ',', 'd', 'X'};
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(csv_parse(text, 7, "t.csv", &doc, &e), 0);
    assert_int_equal(doc.n, 2);
    ROW(&doc, 1, 2, "c", "d");
    csv_doc_free(&doc);
}

/* A NUL byte in a cell (unquoted or quoted) is refused with its line by the parser (data
 * tables, intensity files) instead of cutting the cell where it stands. */
static void test_nul_byte(void **state)
{
    (void)state;
    static const char unq[] = "a,b\n1,2\n12\0 34,5\n";
    static const char quo[] = "a,b\n\"x\0y\",5\n";
    const struct {
        const char *text;
        size_t len;
    } cases[] = {{unq, sizeof unq - 1}, {quo, sizeof quo - 1}};
    for (size_t k = 0; k < 2; k++) {
        struct csv_doc doc;
        struct carma_err e = {0};
        assert_int_equal(csv_parse(cases[k].text, cases[k].len, "t.csv", &doc, &e), -EINVAL);
        assert_non_null(strstr(e.msg, k == 0 ? "t.csv:3: a NUL byte" : "t.csv:2: a NUL byte"));
    }
}

/* csv_split refuses a NUL byte as csv_parse does, with the same line, instead of handing out
 * the cell cut at it: unquoted, quoted, in a later record, and in the last one with no line
 * end. */
static void test_split_nul_byte(void **state)
{
    (void)state;
    static const char unq[] = "a,b\n1,2\n12\0 34,5\n";
    static const char quo[] = "a,b\n\"x\ny\0\",5\n";
    static const char last[] = "a,b\r\n1,2\r\n3,4\0";
    const struct {
        const char *text;
        size_t len, rows_before;
        const char *want;
    } cases[] = {{unq, sizeof unq - 1, 2, "t.csv:3: a NUL byte"},
                 {quo, sizeof quo - 1, 1, "t.csv:3: a NUL byte"},
                 {last, sizeof last - 1, 2, "t.csv:3: a NUL byte"}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *buf = malloc(cases[k].len + 1);
        assert_non_null(buf);
        memcpy(buf, cases[k].text, cases[k].len + 1);
        struct csv_fields f = {0};
        struct carma_err e = {0};
        size_t pos = 0, line = 1;
        for (size_t i = 0; i < cases[k].rows_before; i++)
            assert_int_equal(csv_split(buf, cases[k].len, &pos, &line, "t.csv", &f, &e), 1);
        assert_int_equal(csv_split(buf, cases[k].len, &pos, &line, "t.csv", &f, &e), -EINVAL);
        if (!strstr(e.msg, cases[k].want))
            fail_msg("case %zu: %s", k, e.msg);
        /* and csv_parse says the same */
        struct csv_doc doc;
        struct carma_err pe = {0};
        assert_int_equal(csv_parse(cases[k].text, cases[k].len, "t.csv", &doc, &pe), -EINVAL);
        assert_string_equal(pe.msg, e.msg);
        csv_fields_free(&f);
        free(buf);
    }
}

static void test_writer_quoting(void **state)
{
    (void)state;
    struct csv_buf b = {0};
    assert_int_equal(csv_buf_field(&b, "plain", 1), 0);
    assert_int_equal(csv_buf_field(&b, "a,b", 0), 0);
    assert_int_equal(csv_buf_field(&b, "say \"hi\"", 0), 0);
    assert_int_equal(csv_buf_field(&b, "", 0), 0);
    assert_int_equal(csv_buf_field(&b, "two\nlines", 0), 0);
    assert_int_equal(csv_buf_field(&b, "cr\rhere", 0), 0);
    assert_int_equal(csv_buf_field(&b, " spaced ", 0), 0);
    assert_int_equal(csv_buf_end_row(&b), 0);
    const char *want = "plain,\"a,b\",\"say \"\"hi\"\"\",,\"two\nlines\",\"cr\rhere\", spaced \r\n";
    assert_string_equal(b.data, want);
    assert_int_equal(b.len, strlen(want));

    assert_int_equal(csv_buf_raw(&b, "1.5", 3), 0);
    assert_int_equal(csv_buf_field(&b, "\"", 0), 0);
    assert_int_equal(csv_buf_end_row(&b), 0);
    assert_string_equal(b.data + strlen(want), "1.5,\"\"\"\"\r\n");
    csv_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    csv_buf_free(&b); /* twice is safe */
}

static void test_writer_grows(void **state)
{
    (void)state;
    struct csv_buf b = {0};
    char field[1000];
    memset(field, '"', sizeof field - 1);
    field[sizeof field - 1] = '\0';
    for (int i = 0; i < 50; i++)
        assert_int_equal(csv_buf_field(&b, field, i == 0), 0);
    assert_int_equal(csv_buf_end_row(&b), 0);
    /* each field: 2 quotes around 999 doubled quotes; 49 commas; CRLF */
    assert_int_equal(b.len, 50 * (2 + 2 * 999) + 49 + 2);
    assert_true(b.cap > b.len);
    assert_int_equal(b.data[b.len], '\0');
    assert_int_equal(csv_buf_reserve(&b, 10), 0);
    csv_buf_free(&b);
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const rows[][4] = {
        {"pattern", "tdp_w", "note", "empty"},
        {"Xeon(R) Gold 6248R", "205", "a, b", ""},
        {"say \"hi\"", "0.5", "line1\nline2", "x"},
        {"crlf\r\nin", "\"", ",", "\"\""},
        {" lead", "trail ", "", ","},
    };
    const size_t nrows = sizeof rows / sizeof rows[0];
    struct csv_buf b = {0};
    for (size_t i = 0; i < nrows; i++) {
        for (size_t k = 0; k < 4; k++)
            assert_int_equal(csv_buf_field(&b, rows[i][k], k == 0), 0);
        assert_int_equal(csv_buf_end_row(&b), 0);
    }
    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(csv_parse(b.data, b.len, "rt.csv", &doc, &e), 0);
    assert_int_equal(doc.n, nrows);
    for (size_t i = 0; i < nrows; i++) {
        assert_int_equal(doc.rows[i].n, 4);
        for (size_t k = 0; k < 4; k++)
            assert_string_equal(doc.rows[i].fields[k], rows[i][k]);
    }
    /* rows 0 and 1 take one line each, rows 2 and 3 two each (CRLF inside quotes counts) */
    assert_int_equal(doc.rows[0].line, 1);
    assert_int_equal(doc.rows[1].line, 2);
    assert_int_equal(doc.rows[2].line, 3);
    assert_int_equal(doc.rows[3].line, 5);
    assert_int_equal(doc.rows[4].line, 7);
    csv_doc_free(&doc);
    csv_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_lf_and_crlf),
        cmocka_unit_test(test_empty_fields),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_blank_lines_skipped),
        cmocka_unit_test(test_column),
        cmocka_unit_test(test_unterminated_quote),
        cmocka_unit_test(test_stray_quote),
        cmocka_unit_test(test_not_nul_terminated),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_split_nul_byte),
        cmocka_unit_test(test_writer_quoting),
        cmocka_unit_test(test_writer_grows),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

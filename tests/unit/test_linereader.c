/*
 * Unit tests for core/linereader: Python text mode's line ends (\n, \r\n, a lone \r), a last
 * line without one, the numbering, and an over-long line cut or refused.
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

#include "core/linereader.h"
#include "testutil.h"

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tu_dir, name);
}

static void next_is(struct linereader *l, const char *want, size_t lineno)
{
    char *s = NULL;
    size_t n = 0;
    assert_int_equal(linereader_next(l, &s, &n), 1);
    assert_int_equal(n, strlen(want));
    assert_string_equal(s, want);
    assert_int_equal(l->lineno, lineno);
}

static void test_line_ends(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "a.txt");
    tu_put("a.txt", "one\ntwo\r\nthree\rfour\n\n\r\rlast");
    struct linereader l;
    assert_int_equal(linereader_open(&l, path, 100, false), 0);
    next_is(&l, "one", 1);
    next_is(&l, "two", 2);
    next_is(&l, "three", 3);
    next_is(&l, "four", 4);
    next_is(&l, "", 5);
    next_is(&l, "", 6); /* "\r\r": two empty lines, not one \r\n */
    next_is(&l, "", 7);
    next_is(&l, "last", 8);
    char *s;
    size_t n;
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    linereader_close(&l);

    /* a file ending in a line end has no empty last line; an empty file no line */
    tu_put("b.txt", "x\r\n");
    path_of(path, sizeof path, "b.txt");
    assert_int_equal(linereader_open(&l, path, 100, false), 0);
    next_is(&l, "x", 1);
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    linereader_close(&l);
    tu_put("c.txt", "");
    path_of(path, sizeof path, "c.txt");
    assert_int_equal(linereader_open(&l, path, 100, false), 0);
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    linereader_close(&l);

    path_of(path, sizeof path, "absent.txt");
    assert_int_equal(linereader_open(&l, path, 100, false), -ENOENT);
    linereader_close(&l);
}

static void test_long_lines(void **state)
{
    (void)state;
    /* lines past one read chunk (1 MiB) */
    size_t big = (3u << 20) / 2;
    char *text = malloc(2 * big + 16);
    assert_non_null(text);
    memset(text, 'a', big);
    memcpy(text + big, "\nok\n", 5);
    memset(text + big + 4, 'b', big);
    text[2 * big + 4] = '\0';
    tu_put("long.txt", text);
    char path[512];
    path_of(path, sizeof path, "long.txt");
    struct linereader l;
    char *s;
    size_t n;

    /* taken whole when the cap allows */
    assert_int_equal(linereader_open(&l, path, 2 * big, false), 0);
    assert_int_equal(linereader_next(&l, &s, &n), 1);
    assert_int_equal(n, big);
    assert_true(s[0] == 'a' && s[big - 1] == 'a');
    next_is(&l, "ok", 2);
    assert_int_equal(linereader_next(&l, &s, &n), 1);
    assert_int_equal(n, big);
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    linereader_close(&l);

    /* refused over the cap */
    assert_int_equal(linereader_open(&l, path, 1000, false), 0);
    assert_int_equal(linereader_next(&l, &s, &n), -EFBIG);
    linereader_close(&l);

    /* cut at the cap, the rest dropped, the next line whole */
    assert_int_equal(linereader_open(&l, path, 1000, true), 0);
    assert_int_equal(linereader_next(&l, &s, &n), 1);
    assert_int_equal(n, 1000);
    assert_int_equal(strlen(s), 1000);
    next_is(&l, "ok", 2);
    assert_int_equal(linereader_next(&l, &s, &n), 1);
    assert_int_equal(n, 1000);
    assert_true(s[0] == 'b');
    assert_int_equal(l.lineno, 3);
    assert_int_equal(linereader_next(&l, &s, &n), 0);
    linereader_close(&l);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_line_ends, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_long_lines, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

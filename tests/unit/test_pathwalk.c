/*
 * Unit tests for core/pathwalk: PurePosixPath's text, the path parts, pathlib's ordering, and
 * the walks (iterdir, rglob: parents before their subdirectories, symlinked directories not
 * descended into, unreadable directories skipped, a callback's error ending the walk).
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
#include <unistd.h>

#include "core/pathwalk.h"
#include "testutil.h"

static void norm_is(const char *in, const char *want)
{
    char *s = pathwalk_norm(in);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

static void test_text(void **state)
{
    (void)state;
    norm_is("", ".");
    norm_is(".", ".");
    norm_is("./", ".");
    norm_is("a//b/", "a/b");
    norm_is("./a/./b/.", "a/b");
    norm_is("a/../b", "a/../b"); /* pathlib keeps ".." */
    norm_is("/", "/");
    norm_is("//x", "//x");
    norm_is("///x//", "/x");
    norm_is("/./a", "/a");

    char *s = pathwalk_join(".", "x");
    assert_string_equal(s, "x");
    free(s);
    s = pathwalk_join("a/", "x");
    assert_string_equal(s, "a/x");
    free(s);
    s = pathwalk_join("/", "x");
    assert_string_equal(s, "/x");
    free(s);
    s = pathwalk_join("a/b", "c/d");
    assert_string_equal(s, "a/b/c/d");
    free(s);

    s = pathwalk_with_name("a/b/c.jsonl", "m.json");
    assert_string_equal(s, "a/b/m.json");
    free(s);
    s = pathwalk_with_name("c.jsonl", "m.json");
    assert_string_equal(s, "m.json");
    free(s);

    assert_string_equal(pathwalk_name("a/b/c"), "c");
    assert_string_equal(pathwalk_name("c"), "c");

    const char *p;
    size_t n;
    pathwalk_parent_name("log/power/samples.csv", &p, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "power", 5);
    pathwalk_parent_name("power/samples.csv", &p, &n);
    assert_int_equal(n, 5);
    pathwalk_parent_name("samples.csv", &p, &n);
    assert_int_equal(n, 0);
    pathwalk_parent_name("/samples.csv", &p, &n);
    assert_int_equal(n, 0);
}

static void test_order(void **state)
{
    (void)state;
    assert_true(pathwalk_cmp("a/b", "a-x") < 0); /* strcmp says the other way ('/' > '-') */
    assert_true(strcmp("a/b", "a-x") > 0);
    assert_true(pathwalk_cmp("a", "a/b") < 0);
    assert_true(pathwalk_cmp("a/b", "a") > 0);
    assert_true(pathwalk_cmp("a/b", "a/b") == 0);
    assert_true(pathwalk_cmp("a/b/c", "a/bc") < 0);
    assert_true(pathwalk_cmp("x/gpu", "x/cpu") > 0);

    const char *v[] = {"log/sa-bench_x/y", "log/power/samples.csv", "log-2/a",
                       "log/cpu/samples.csv", "log"};
    qsort(v, 5, sizeof *v, pathwalk_cmp_ptr);
    assert_string_equal(v[0], "log");
    assert_string_equal(v[1], "log/cpu/samples.csv");
    assert_string_equal(v[2], "log/power/samples.csv");
    assert_string_equal(v[3], "log/sa-bench_x/y");
    assert_string_equal(v[4], "log-2/a");
}

struct seen {
    char path[32][256];
    size_t n;
    int stop_at; /* return -EIO at this call (-1: never) */
};

static int collect(void *ud, const char *name, const char *path)
{
    struct seen *s = ud;
    const char *slash = strrchr(path, '/');
    assert_string_equal(name, slash ? slash + 1 : path);
    if ((int)s->n == s->stop_at)
        return -EIO;
    assert_true(s->n < 32);
    /* below tu_dir: keep the relative part */
    snprintf(s->path[s->n++], sizeof s->path[0], "%s", path + strlen(tu_dir) + 1);
    return 0;
}

static size_t index_of(const struct seen *s, const char *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->path[i], p) == 0)
            return i;
    fail_msg("%s not visited", p);
    return SIZE_MAX;
}

static void test_walk(void **state)
{
    (void)state;
    tu_put("log/benchmark.out", "x\n");
    tu_put("log/a/b/deep.txt", "x\n");
    tu_put("log/a/f.txt", "x\n");
    tu_put("log/c/g.txt", "x\n");
    tu_put("other/h.txt", "x\n");
    char dir[512], target[512], link[512];
    snprintf(dir, sizeof dir, "%s/log", tu_dir);
    snprintf(target, sizeof target, "%s/other", tu_dir);
    snprintf(link, sizeof link, "%s/log/link", tu_dir);
    assert_int_equal(symlink(target, link), 0);

    assert_true(pathwalk_is_dir(dir));
    assert_false(pathwalk_is_file(dir));
    assert_true(pathwalk_exists(dir));
    assert_true(pathwalk_is_dir(link)); /* stat follows the link */
    snprintf(target, sizeof target, "%s/log/benchmark.out", tu_dir);
    assert_true(pathwalk_is_file(target));
    snprintf(target, sizeof target, "%s/log/none", tu_dir);
    assert_false(pathwalk_exists(target));

    struct seen s = {.stop_at = -1};
    assert_int_equal(pathwalk_list(dir, collect, &s), 0);
    assert_int_equal(s.n, 4); /* benchmark.out a c link */
    index_of(&s, "log/benchmark.out");
    index_of(&s, "log/link");

    s = (struct seen){.stop_at = -1};
    assert_int_equal(pathwalk_rglob(dir, collect, &s), 0);
    assert_int_equal(s.n, 8); /* + a/b a/f.txt a/b/deep.txt c/g.txt; not link/h.txt */
    size_t top = 0;
    top = index_of(&s, "log/benchmark.out") > top ? index_of(&s, "log/benchmark.out") : top;
    top = index_of(&s, "log/a") > top ? index_of(&s, "log/a") : top;
    top = index_of(&s, "log/c") > top ? index_of(&s, "log/c") : top;
    top = index_of(&s, "log/link") > top ? index_of(&s, "log/link") : top;
    assert_int_equal(top, 3); /* the directory's own entries first */
    assert_true(index_of(&s, "log/a/f.txt") > top);
    assert_true(index_of(&s, "log/a/b/deep.txt") > index_of(&s, "log/a/b"));
    assert_true(index_of(&s, "log/a/b/deep.txt") > index_of(&s, "log/a/f.txt"));
    /* depth first: a's whole tree before c's entries, or c's before a's */
    if (index_of(&s, "log/a") < index_of(&s, "log/c"))
        assert_true(index_of(&s, "log/a/b/deep.txt") < index_of(&s, "log/c/g.txt"));
    else
        assert_true(index_of(&s, "log/c/g.txt") < index_of(&s, "log/a/f.txt"));

    /* the callback's error ends the walk with it */
    s = (struct seen){.stop_at = 5};
    assert_int_equal(pathwalk_rglob(dir, collect, &s), -EIO);
    assert_int_equal(s.n, 5);

    /* a directory that cannot be read has no entries */
    s = (struct seen){.stop_at = -1};
    assert_int_equal(pathwalk_rglob(target, collect, &s), 0);
    assert_int_equal(pathwalk_list(target, collect, &s), 0);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_order),
        cmocka_unit_test_setup_teardown(test_walk, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

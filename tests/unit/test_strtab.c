/* Unit tests for core/strtab: ids in order of first appearance, copies kept, lookups. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/strtab.h"

static void test_ids(void **state)
{
    (void)state;
    struct strtab t = {0};
    assert_int_equal(strtab_find(&t, "x"), SIZE_MAX);
    size_t id = 99;
    bool fresh = false;
    char name[32] = "node-b";
    assert_int_equal(strtab_id(&t, name, &id, &fresh), 0);
    assert_int_equal(id, 0);
    assert_true(fresh);
    strcpy(name, "changed"); /* the table keeps its own copy */
    assert_string_equal(t.names[0], "node-b");
    assert_int_equal(strtab_id(&t, "node-a", &id, NULL), 0);
    assert_int_equal(id, 1);
    assert_int_equal(strtab_id(&t, "node-b", &id, &fresh), 0);
    assert_int_equal(id, 0);
    assert_false(fresh);
    assert_int_equal(strtab_find(&t, "node-a"), 1);
    assert_int_equal(strtab_find(&t, "node-c"), SIZE_MAX);
    assert_int_equal(strtab_find(&t, ""), SIZE_MAX);
    /* many: past the index's first capacity */
    for (int i = 0; i < 500; i++) {
        char s[32];
        snprintf(s, sizeof s, "h%d", i);
        assert_int_equal(strtab_id(&t, s, &id, &fresh), 0);
        assert_true(fresh);
        assert_int_equal(id, (size_t)i + 2);
    }
    assert_int_equal(t.n, 502);
    assert_int_equal(strtab_find(&t, "h250"), 252);
    assert_int_equal(strtab_find(&t, "node-b"), 0);
    strtab_free(&t);
    assert_int_equal(t.n, 0);
    assert_int_equal(strtab_find(&t, "node-b"), SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

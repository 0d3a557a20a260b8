/*
 * Unit tests for core/jsonutil: a number that is not finite written as null, an absent, null
 * or non-number value read as NAN, NULL strings as null.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "core/jsonutil.h"

static void test_real(void **state)
{
    (void)state;
    json_t *v = jsonutil_real(1.5);
    assert_true(json_is_real(v) && json_real_value(v) == 1.5);
    json_decref(v);
    double bad[] = {NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < 3; i++) {
        v = jsonutil_real(bad[i]);
        assert_true(json_is_null(v));
        json_decref(v);
    }
    json_t *o = json_object();
    jsonutil_set_num(o, "a", 2.0);
    jsonutil_set_num(o, "b", NAN);
    assert_true(json_real_value(json_object_get(o, "a")) == 2.0);
    assert_true(json_is_null(json_object_get(o, "b")));
    json_decref(o);
}

static void test_str(void **state)
{
    (void)state;
    json_t *v = jsonutil_str("x");
    assert_string_equal(json_string_value(v), "x");
    json_decref(v);
    v = jsonutil_str(NULL);
    assert_true(json_is_null(v));
    json_decref(v);
}

static void test_get(void **state)
{
    (void)state;
    json_t *o = json_pack("{s:f, s:i, s:n, s:s, s:b}", "r", 0.25, "i", 7, "n", "s", "text", "b", 1);
    assert_non_null(o);
    assert_true(jsonutil_get_num(o, "r") == 0.25);
    assert_true(jsonutil_get_num(o, "i") == 7.0);
    assert_true(isnan(jsonutil_get_num(o, "n")));
    assert_true(isnan(jsonutil_get_num(o, "s")));
    assert_true(isnan(jsonutil_get_num(o, "b")));
    assert_true(isnan(jsonutil_get_num(o, "absent")));
    assert_true(isnan(jsonutil_get_num(NULL, "r")));
    assert_true(isnan(jsonutil_num(NULL)));
    assert_true(jsonutil_num(json_object_get(o, "i")) == 7.0);
    assert_string_equal(jsonutil_get_str(o, "s"), "text");
    assert_null(jsonutil_get_str(o, "r"));
    assert_null(jsonutil_get_str(o, "absent"));
    assert_null(jsonutil_get_str(NULL, "s"));
    json_decref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real),
        cmocka_unit_test(test_str),
        cmocka_unit_test(test_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

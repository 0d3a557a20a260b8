/*
 * Unit tests for analysis/carbon: grams of CO2e from joules, PUE and intensity, and where
 * the intensity comes from (a constant, a region of data/grid_intensity.csv, the world
 * average).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include <errno.h>
#include <string.h>

#include "analysis/carbon.h"
#include "testutil.h"

static void test_operational(void **state)
{
    (void)state;
    /* 3.6 MJ = 1 kWh */
    tu_assert_near(carbon_operational_g(3.6e6, 1.0, 475.0), 475.0, 1e-9);
    tu_assert_near(carbon_operational_g(3.6e6, 1.2, 475.0), 570.0, 1e-9);
    tu_assert_near(carbon_operational_g(1.8e6, 1.0, 56.0), 28.0, 1e-9);
    tu_assert_near(carbon_operational_g(360.0, 1.5, 400.0), 0.06, 1e-12);
    assert_true(carbon_operational_g(0.0, 1.2, 475.0) == 0.0);
}

static void test_region(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("FRA", 0, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 56.0);
    assert_string_equal(ci.region, "FRA");
    assert_non_null(strstr(ci.source, "FRA (France)"));
    assert_non_null(strstr(ci.source, "2023"));
    assert_non_null(strstr(ci.source, "Ember"));
    tu_assert_near(carbon_operational_g(3.6e6, 1.0, ci.g_per_kwh), 56.0, 1e-9);

    /* codes are case-insensitive; the canonical spelling is kept */
    assert_int_equal(carbon_intensity_resolve("fra", 0, &ci, &e), 0);
    assert_string_equal(ci.region, "FRA");
    assert_true(ci.g_per_kwh == 56.0);
}

static void test_world_default(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve(NULL, 0, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 475.0);
    assert_string_equal(ci.region, "WORLD");
    assert_non_null(strstr(ci.source, "IEA 2019"));
    assert_non_null(strstr(ci.source, ", 2019"));
    /* a non-positive constant means "not given" */
    assert_int_equal(carbon_intensity_resolve(NULL, -3, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 475.0);
}

static void test_unknown_region(void **state)
{
    (void)state;
    struct carbon_intensity ci = {.g_per_kwh = 1.0};
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("XYZ", 0, &ci, &e), -ENOENT);
    assert_int_equal(e.code, -ENOENT);
    assert_non_null(strstr(e.msg, "unknown region 'XYZ'"));
    assert_non_null(strstr(e.msg, "--intensity"));
    assert_true(ci.g_per_kwh == 1.0); /* untouched */
    assert_int_equal(carbon_intensity_resolve("", 0, &ci, &e), -ENOENT);
}

static void test_constant_wins(void **state)
{
    (void)state;
    struct carbon_intensity ci;
    struct carma_err e = {0};
    assert_int_equal(carbon_intensity_resolve("FRA", 123.5, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 123.5);
    assert_string_equal(ci.region, "");
    assert_string_equal(ci.source, "given on the command line");
    /* even with a region that does not exist */
    assert_int_equal(carbon_intensity_resolve("XYZ", 10, &ci, &e), 0);
    assert_true(ci.g_per_kwh == 10.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operational),   cmocka_unit_test(test_region),
        cmocka_unit_test(test_world_default), cmocka_unit_test(test_unknown_region),
        cmocka_unit_test(test_constant_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

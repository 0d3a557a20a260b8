/*
 * Unit tests for core/energy: wrap-safe counter accumulation, reset detection and the
 * trapezoid rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "core/energy.h"
#include "core/timeutil.h"

/* A RAPL package domain: µJ counter, max_energy_range_uj of a real machine. */
#define RAPL_RANGE_UJ 262143328850ULL

static void test_init(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, RAPL_RANGE_UJ, 1e-6, 500.0);
    assert_true(c.range == RAPL_RANGE_UJ);
    assert_true(c.unit_j == 1e-6);
    assert_true(c.max_power_w == 500.0);
    assert_false(c.primed);
    assert_int_equal(c.wraps, 0);
    assert_int_equal(c.resets, 0);
}

static void test_first_and_forward(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, RAPL_RANGE_UJ, 1e-6, 500.0);
    double j = -1;
    assert_int_equal(energy_counter_update(&c, 123456789, 0, &j), ENERGY_FIRST);
    assert_true(j == 0.0);
    assert_true(c.primed);
    assert_int_equal(c.last_raw, 123456789);

    /* 25 J in 100 ms (250 W) */
    assert_int_equal(energy_counter_update(&c, 123456789 + 25000000, 100 * NS_PER_MS, &j),
                     ENERGY_OK);
    assert_true(j == 25000000 * 1e-6);
    assert_int_equal(c.last_raw, 148456789);

    /* the counter did not move */
    assert_int_equal(energy_counter_update(&c, 148456789, 100 * NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 0.0);

    /* 1 µJ */
    assert_int_equal(energy_counter_update(&c, 148456790, 100 * NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 1e-6);
    assert_int_equal(c.wraps, 0);
    assert_int_equal(c.resets, 0);
}

static void test_wrap(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, RAPL_RANGE_UJ, 1e-6, 500.0);
    double j = -1;
    assert_int_equal(energy_counter_update(&c, RAPL_RANGE_UJ - 850, 0, &j), ENERGY_FIRST);
    /* 850 µJ up to the range, then 0 → 150: 1000 µJ */
    assert_int_equal(energy_counter_update(&c, 150, NS_PER_MS, &j), ENERGY_WRAP);
    assert_true(j == 1000 * 1e-6);
    assert_int_equal(c.wraps, 1);
    assert_int_equal(c.resets, 0);
    assert_int_equal(c.last_raw, 150);

    /* counting goes on from the wrapped value */
    assert_int_equal(energy_counter_update(&c, 2150, NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 2000 * 1e-6);

    /* a large wrap: 40 J across it in 100 ms (400 W) */
    assert_int_equal(energy_counter_update(&c, RAPL_RANGE_UJ - 15000000, 0, &j),
                     ENERGY_IMPLAUSIBLE);
    assert_int_equal(c.implausible, 1); /* that jump forward was implausible (dt 0) */
    assert_int_equal(c.resets, 0);
    assert_int_equal(energy_counter_update(&c, 25000000, 100 * NS_PER_MS, &j), ENERGY_WRAP);
    assert_true(j == 40000000 * 1e-6);
    assert_int_equal(c.wraps, 2);

    /* last reading exactly at the range */
    energy_counter_init(&c, 1000, 1e-6, 0);
    assert_int_equal(energy_counter_update(&c, 1000, 0, &j), ENERGY_FIRST);
    assert_int_equal(energy_counter_update(&c, 7, NS_PER_S, &j), ENERGY_WRAP);
    assert_true(j == 7 * 1e-6);
}

static void test_backwards_unknown_range(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, 0, 1e-3, 1000.0); /* NVML: mJ, no known range */
    double j = -1;
    assert_int_equal(energy_counter_update(&c, 5000000, 0, &j), ENERGY_FIRST);
    assert_int_equal(energy_counter_update(&c, 5030000, 100 * NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 30000 * 1e-3);
    j = -1;
    assert_int_equal(energy_counter_update(&c, 1000, 100 * NS_PER_MS, &j), ENERGY_RESET);
    assert_true(j == 0.0);
    assert_int_equal(c.resets, 1);
    assert_int_equal(c.wraps, 0);
    assert_int_equal(c.last_raw, 1000);
    /* after the reset the counter continues from the new value */
    assert_int_equal(energy_counter_update(&c, 21000, 100 * NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 20000 * 1e-3);
    assert_int_equal(c.resets, 1);
}

static void test_wrap_too_large_is_reset(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, RAPL_RANGE_UJ, 1e-6, 400.0);
    double j = -1;
    assert_int_equal(energy_counter_update(&c, 200000000, 0, &j), ENERGY_FIRST);
    /* backwards by 100 J: as a wrap it would be ~262043 J in 100 ms */
    j = -1;
    assert_int_equal(energy_counter_update(&c, 100000000, 100 * NS_PER_MS, &j), ENERGY_RESET);
    assert_true(j == 0.0);
    assert_int_equal(c.resets, 1);
    assert_int_equal(c.wraps, 0);
    assert_int_equal(c.last_raw, 100000000);
    assert_int_equal(energy_counter_update(&c, 110000000, 100 * NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 10000000 * 1e-6);

    /* a reading above the range cannot be a wrap */
    energy_counter_init(&c, 1000, 1e-6, 0);
    assert_int_equal(energy_counter_update(&c, 5000, 0, &j), ENERGY_FIRST);
    assert_int_equal(energy_counter_update(&c, 10, NS_PER_S, &j), ENERGY_RESET);
    assert_int_equal(c.resets, 1);
    assert_int_equal(c.wraps, 0);
}

static void test_forward_jump_too_large_is_reset(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, RAPL_RANGE_UJ, 1e-6, 100.0);
    double j = -1;
    assert_int_equal(energy_counter_update(&c, 0, 0, &j), ENERGY_FIRST);
    /* 100 J in 1 s at a 100 W limit: accepted */
    assert_int_equal(energy_counter_update(&c, 100000000, NS_PER_S, &j), ENERGY_OK);
    assert_true(j == 100000000 * 1e-6);
    /* 102 J in 1 s: implausible, no reset */
    j = -1;
    assert_int_equal(energy_counter_update(&c, 202000000, NS_PER_S, &j), ENERGY_IMPLAUSIBLE);
    assert_true(j == 0.0);
    assert_int_equal(c.implausible, 1);
    assert_int_equal(c.resets, 0);
    assert_int_equal(c.last_raw, 202000000);
    /* the next step is measured from the value after the jump */
    assert_int_equal(energy_counter_update(&c, 252000000, NS_PER_S, &j), ENERGY_OK);
    assert_true(j == 50000000 * 1e-6);
    assert_int_equal(c.implausible, 1);
    assert_int_equal(c.resets, 0);

    /* with no limit (max_power_w 0) any forward step counts */
    energy_counter_init(&c, 0, 1e-6, 0);
    assert_int_equal(energy_counter_update(&c, 0, 0, &j), ENERGY_FIRST);
    assert_int_equal(energy_counter_update(&c, 1000000000000ULL, NS_PER_MS, &j), ENERGY_OK);
    assert_true(j == 1000000000000ULL * 1e-6);
    assert_int_equal(c.resets, 0);
}

static void test_jitter_slack(void **state)
{
    (void)state;
    struct energy_counter c;
    energy_counter_init(&c, 0, 1e-6, 100.0);
    double j = -1;
    assert_int_equal(energy_counter_update(&c, 0, 0, &j), ENERGY_FIRST);
    /* 0.05 J with dt 0 is within 1 ms of 100 W (0.1 J) */
    assert_int_equal(energy_counter_update(&c, 50000, 0, &j), ENERGY_OK);
    assert_true(j == 50000 * 1e-6);
    /* 0.2 J with dt 0 is not */
    assert_int_equal(energy_counter_update(&c, 250000, 0, &j), ENERGY_IMPLAUSIBLE);
    /* a negative dt counts as 0 */
    assert_int_equal(energy_counter_update(&c, 450000, -NS_PER_S, &j), ENERGY_IMPLAUSIBLE);
    assert_int_equal(c.implausible, 2);
    assert_int_equal(c.resets, 0);
}

/* A step's power: j / dt, unknown beyond the bound (a step within the 1 ms slack over a short
 * dt is energy, but no power a 100 W device draws) */
static void test_step_watts(void **state)
{
    (void)state;
    assert_true(energy_step_watts(5.0, 100 * NS_PER_MS, 100.0) == 50.0);
    assert_true(energy_step_watts(10.0, 100 * NS_PER_MS, 100.0) == 100.0);
    assert_true(isnan(energy_step_watts(0.05, 100000, 100.0))); /* 500 W */
    assert_true(energy_step_watts(0.05, 100000, 0) == 500.0);   /* no bound */
    assert_true(isnan(energy_step_watts(1.0, 0, 100.0)));
}

static void test_trapezoid(void **state)
{
    (void)state;
    assert_true(energy_trapezoid_j(100.0, 200.0, NS_PER_S) == 150.0);
    assert_true(energy_trapezoid_j(10.0, 20.0, 500 * NS_PER_MS) == 7.5);
    assert_true(energy_trapezoid_j(40.0, 40.0, 250 * NS_PER_MS) == 10.0);
    assert_true(energy_trapezoid_j(0.0, 0.0, NS_PER_S) == 0.0);
    assert_true(energy_trapezoid_j(100.0, 200.0, 0) == 0.0);
    assert_true(energy_trapezoid_j(0.0, 3.0, 2 * NS_PER_S) == 3.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_first_and_forward),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_backwards_unknown_range),
        cmocka_unit_test(test_wrap_too_large_is_reset),
        cmocka_unit_test(test_forward_jump_too_large_is_reset),
        cmocka_unit_test(test_jitter_slack),
        cmocka_unit_test(test_step_watts),
        cmocka_unit_test(test_trapezoid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

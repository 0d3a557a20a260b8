/* Unit tests for core/periodic: calls every period, one final call at the stop, the last call's
 * error returned. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "core/periodic.h"

struct rec {
    atomic_int calls, finals;
    atomic_bool last_final;
    int fail_periodic; /* returned by the calls that are not final */
    int fail_final;    /* returned by the final call */
};

static int tick(void *arg, bool final, struct carma_err *e)
{
    struct rec *r = arg;
    atomic_fetch_add(&r->calls, 1);
    atomic_store(&r->last_final, final);
    if (final)
        atomic_fetch_add(&r->finals, 1);
    int rc = final ? r->fail_final : r->fail_periodic;
    return rc < 0 ? carma_err_set(e, rc, "call %s failed", final ? "final" : "periodic") : 0;
}

/* Waits (at most 10 s) until r has had n calls. */
static void wait_calls(struct rec *r, int n)
{
    for (int k = 0; k < 10000 && atomic_load(&r->calls) < n; k++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    assert_true(atomic_load(&r->calls) >= n);
}

static void test_periods_then_final(void **state)
{
    (void)state;
    struct rec r = {0};
    struct carma_err e = {0};
    struct periodic *p = periodic_start(2000000, tick, &r, "test", &e);
    assert_non_null(p);
    wait_calls(&r, 3);
    assert_int_equal(atomic_load(&r.finals), 0);
    assert_false(atomic_load(&r.last_final));
    assert_int_equal(periodic_stop(p, &e), 0);
    assert_int_equal(atomic_load(&r.finals), 1);
    assert_true(atomic_load(&r.last_final)); /* the final call is the last one */
    assert_true(atomic_load(&r.calls) >= 4);
}

static void test_stop_wakes_the_wait(void **state)
{
    (void)state;
    struct rec r = {0};
    struct carma_err e = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct periodic *p = periodic_start(3600LL * 1000000000LL, tick, &r, "test", &e);
    assert_non_null(p);
    assert_int_equal(periodic_stop(p, &e), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(atomic_load(&r.calls), 1); /* the final one only, not an hour later */
    assert_int_equal(atomic_load(&r.finals), 1);
    assert_true(t1.tv_sec - t0.tv_sec < 60);
}

static void test_last_error(void **state)
{
    (void)state;
    /* earlier calls failed, the final one did not: no error */
    struct rec r = {.fail_periodic = -EIO};
    struct carma_err e = {0};
    struct periodic *p = periodic_start(2000000, tick, &r, "test", &e);
    assert_non_null(p);
    wait_calls(&r, 2);
    assert_int_equal(periodic_stop(p, &e), 0);
    /* the final call failed: its error and message */
    struct rec q = {.fail_final = -ENOSPC};
    p = periodic_start(2000000, tick, &q, "test", &e);
    assert_non_null(p);
    wait_calls(&q, 2);
    memset(&e, 0, sizeof e);
    assert_int_equal(periodic_stop(p, &e), -ENOSPC);
    assert_string_equal(e.msg, "call final failed");
    /* e may be NULL */
    struct rec s = {.fail_final = -EIO};
    p = periodic_start(2000000, tick, &s, "test", &e);
    assert_non_null(p);
    assert_int_equal(periodic_stop(p, NULL), -EIO);
    assert_int_equal(periodic_stop(NULL, &e), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_periods_then_final),
        cmocka_unit_test(test_stop_wakes_the_wait),
        cmocka_unit_test(test_last_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_split: apportioning one channel's tick energy to jobs, idle, other, unattributed. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "analysis/split.h"
#include "testutil.h"

static double total(const struct split_out *o, size_t n)
{
    double t = o->idle_j + o->other_j + o->unattributed_j;
    for (size_t i = 0; i < n; i++)
        t += o->job_j[i];
    return t;
}

/* 100 J, 40 J static; jobs busy 3 and 1 of a node busy 5: dynamic 60 J as 36 / 12 / other 12 */
static void test_idle_policy(void **state)
{
    (void)state;
    double busy[2] = {3, 1};
    bool running[2] = {true, true};
    struct split_in in = {.de_j = 100,
                          .static_j = 40,
                          .njobs = 2,
                          .job_busy = busy,
                          .running = running,
                          .node_busy = 5,
                          .policy = SPLIT_IDLE};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.job_j[0], 36.0, 1e-12);
    tu_assert_near(o.job_j[1], 12.0, 1e-12);
    tu_assert_near(o.other_j, 12.0, 1e-12);
    tu_assert_near(o.idle_j, 40.0, 0);
    tu_assert_near(o.unattributed_j, 0.0, 0);
    tu_assert_near(total(&o, 2), 100.0, 1e-12);
}

/* proportional: the static 40 J follows the dynamic shares 3:1:1 (other included) */
static void test_proportional(void **state)
{
    (void)state;
    double busy[2] = {3, 1};
    bool running[2] = {true, true};
    struct split_in in = {.de_j = 100,
                          .static_j = 40,
                          .njobs = 2,
                          .job_busy = busy,
                          .running = running,
                          .node_busy = 5,
                          .policy = SPLIT_PROPORTIONAL};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.job_j[0], 36.0 + 24.0, 1e-12);
    tu_assert_near(o.job_j[1], 12.0 + 8.0, 1e-12);
    tu_assert_near(o.other_j, 12.0 + 8.0, 1e-12);
    tu_assert_near(o.idle_j, 0.0, 1e-12);
    tu_assert_near(total(&o, 2), 100.0, 1e-12);
}

/* equal: the static part among the running jobs only */
static void test_equal(void **state)
{
    (void)state;
    double busy[3] = {3, 1, 0};
    bool running[3] = {true, true, false};
    struct split_in in = {.de_j = 100,
                          .static_j = 40,
                          .njobs = 3,
                          .job_busy = busy,
                          .running = running,
                          .node_busy = 4,
                          .policy = SPLIT_EQUAL};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.job_j[0], 45.0 + 20.0, 1e-12);
    tu_assert_near(o.job_j[1], 15.0 + 20.0, 1e-12);
    tu_assert_near(o.job_j[2], 0.0, 0);
    tu_assert_near(o.other_j, 0.0, 1e-12);
    tu_assert_near(o.idle_j, 0.0, 0);
    /* nobody running: the static part stays idle */
    running[0] = running[1] = false;
    split_energy(&in, &o);
    tu_assert_near(o.idle_j, 40.0, 0);
    tu_assert_near(total(&o, 3), 100.0, 1e-12);
}

/* no busy time at all: the dynamic part is unattributed, never given to a job */
static void test_no_busy(void **state)
{
    (void)state;
    double busy[1] = {0};
    bool running[1] = {true};
    struct split_in in = {.de_j = 10,
                          .static_j = 4,
                          .njobs = 1,
                          .job_busy = busy,
                          .running = running,
                          .node_busy = 0,
                          .policy = SPLIT_PROPORTIONAL};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.unattributed_j, 6.0, 0);
    tu_assert_near(o.idle_j, 4.0, 0);
    tu_assert_near(o.job_j[0], 0.0, 0);
}

/* static above the tick's energy is clamped; jobs busier than the node take the node's all */
static void test_clamps(void **state)
{
    (void)state;
    double busy[2] = {2, 2};
    bool running[2] = {true, true};
    struct split_in in = {.de_j = 10,
                          .static_j = 50,
                          .njobs = 2,
                          .job_busy = busy,
                          .running = running,
                          .node_busy = 3,
                          .policy = SPLIT_IDLE};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.idle_j, 10.0, 0);
    tu_assert_near(o.job_j[0] + o.job_j[1] + o.other_j, 0.0, 0);
    in.static_j = 0;
    split_energy(&in, &o);
    tu_assert_near(o.job_j[0], 5.0, 1e-12);
    tu_assert_near(o.job_j[1], 5.0, 1e-12);
    tu_assert_near(o.other_j, 0.0, 1e-12);
}

/* the residual stays at rounding level over many random splits, for every policy */
static void test_residual(void **state)
{
    (void)state;
    srand(7);
    double worst = 0;
    for (int k = 0; k < 100000; k++) {
        double busy[5];
        bool running[5];
        size_t n = 1 + (size_t)(rand() % 5);
        double jobs = 0;
        for (size_t i = 0; i < n; i++) {
            busy[i] = (rand() % 4) ? rand() / (double)RAND_MAX : 0.0;
            running[i] = rand() % 2;
            jobs += busy[i];
        }
        struct split_in in = {.de_j = rand() / (double)RAND_MAX * 500,
                              .static_j = rand() / (double)RAND_MAX * 300,
                              .njobs = n,
                              .job_busy = busy,
                              .running = running,
                              .node_busy = jobs * (rand() / (double)RAND_MAX * 2),
                              .policy = (enum split_policy)(k % 3)};
        struct split_out o;
        split_energy(&in, &o);
        double r = fabs(total(&o, n) - in.de_j) / (in.de_j > 1e-9 ? in.de_j : 1.0);
        if (r > worst)
            worst = r;
        for (size_t i = 0; i < n; i++)
            assert_true(o.job_j[i] >= -1e-12);
        assert_true(o.idle_j >= -1e-12 && o.other_j >= -1e-9 && o.unattributed_j >= 0);
    }
    assert_true(worst < 1e-12);
}

static void test_policy_names(void **state)
{
    (void)state;
    enum split_policy p;
    assert_int_equal(split_policy_parse("proportional", &p), 0);
    assert_int_equal(p, SPLIT_PROPORTIONAL);
    assert_int_equal(split_policy_parse("equal", &p), 0);
    assert_int_equal(p, SPLIT_EQUAL);
    assert_int_equal(split_policy_parse("idle", &p), 0);
    assert_int_equal(p, SPLIT_IDLE);
    assert_int_equal(split_policy_parse("fair", &p), -EINVAL);
    assert_string_equal(split_policy_name(SPLIT_IDLE), "idle");
    assert_string_equal(split_policy_name(SPLIT_PROPORTIONAL), "proportional");
    assert_string_equal(split_policy_name(SPLIT_EQUAL), "equal");
    assert_string_equal(split_policy_name((enum split_policy)42), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_policy),  cmocka_unit_test(test_proportional),
        cmocka_unit_test(test_equal),        cmocka_unit_test(test_no_busy),
        cmocka_unit_test(test_clamps),       cmocka_unit_test(test_residual),
        cmocka_unit_test(test_policy_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

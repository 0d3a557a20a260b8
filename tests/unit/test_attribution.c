/*
 * Unit tests for analysis/attribution: the CPU-side energy of a process tree by its share of
 * the node's busy time, over epochs, with the static/dynamic split; every figure is worked
 * out by hand in the comments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>

#include "analysis/attribution.h"
#include "testutil.h"

#define MS  1000000LL
#define EPS 1e-9

static void test_init(void **state)
{
    (void)state;
    struct cpu_attrib a;
    cpu_attrib_init(&a, 1000 * MS, 12.5, 0);
    assert_true(a.epoch_ns == 1000 * MS);
    assert_true(a.have_static);
    assert_true(a.static_w == 12.5);
    assert_true(a.energy_j == 0 && a.dynamic_j == 0 && a.node_j == 0 && a.node_dyn_j == 0);
    assert_true(a.tree_ns == 0 && a.busy_ns == 0);
    assert_true(cpu_attrib_share(&a) == 0.0);

    cpu_attrib_init(&a, 1000 * MS, -1, 0);
    assert_false(a.have_static);
    /* 0 W is a known static power */
    cpu_attrib_init(&a, 1000 * MS, 0, 0);
    assert_true(a.have_static);
    assert_true(a.static_w == 0.0);
    assert_true(a.static_busy == 0.0);
    /* the background load only matters with a known static power, and is never negative */
    cpu_attrib_init(&a, 1000 * MS, 30.0, 1.5);
    assert_true(a.static_busy == 1.5);
    cpu_attrib_init(&a, 1000 * MS, -1, 1.5);
    assert_true(a.static_busy == 0.0);
    cpu_attrib_init(&a, 1000 * MS, 30.0, -2);
    assert_true(a.static_busy == 0.0);
}

static void test_epochs(void **state)
{
    (void)state;
    struct cpu_attrib a;
    cpu_attrib_init(&a, 1000 * MS, 10.0, 0);
    /* 0.8 s into the epoch: nothing split yet */
    cpu_attrib_add(&a, 30.0, 400 * MS, 200, 100);
    cpu_attrib_add(&a, 30.0, 400 * MS, 200, 100);
    assert_true(a.energy_j == 0.0);
    assert_true(a.node_j == 0.0);
    assert_true(a.tree_ns == 0 && a.busy_ns == 0);
    /* 1.2 s: the epoch closes. 100 J, tree 300 of 500 busy: share 0.6, 60 J.
     * static 10 W x 1.2 s = 12 J, dynamic 88 J, of which the tree's 52.8 J. */
    cpu_attrib_add(&a, 40.0, 400 * MS, 100, 100);
    tu_assert_near(a.energy_j, 60.0, EPS);
    tu_assert_near(a.node_j, 100.0, EPS);
    tu_assert_near(a.node_dyn_j, 88.0, EPS);
    tu_assert_near(a.dynamic_j, 52.8, EPS);
    assert_true(a.tree_ns == 300 && a.busy_ns == 500);
    assert_true(a.ep_ns == 0 && a.ep_j == 0.0 && a.ep_busy_ns == 0 && a.ep_tree_ns == 0);
    tu_assert_near(cpu_attrib_share(&a), 0.6, EPS);

    /* a short epoch left open at the end: finish splits it. 20 J in 0.5 s, nothing busy:
     * share 0, static 5 J, dynamic 15 J */
    cpu_attrib_add(&a, 20.0, 500 * MS, 0, 0);
    tu_assert_near(a.node_j, 100.0, EPS);
    cpu_attrib_finish(&a);
    tu_assert_near(a.energy_j, 60.0, EPS);
    tu_assert_near(a.node_j, 120.0, EPS);
    tu_assert_near(a.node_dyn_j, 103.0, EPS);
    tu_assert_near(a.dynamic_j, 52.8, EPS);
    /* finishing twice adds nothing */
    cpu_attrib_finish(&a);
    tu_assert_near(a.node_j, 120.0, EPS);
    tu_assert_near(a.energy_j, 60.0, EPS);
    tu_assert_near(cpu_attrib_share(&a), 0.6, EPS);
}

static void test_share_clamped(void **state)
{
    (void)state;
    struct cpu_attrib a;
    /* the tree's CPU time runs ahead of the node's (different clocks, coarse ticks): share
     * at most 1 */
    cpu_attrib_init(&a, 100 * MS, -1, 0);
    cpu_attrib_add(&a, 5.0, 100 * MS, 100, 300);
    tu_assert_near(a.energy_j, 5.0, EPS);
    tu_assert_near(a.node_j, 5.0, EPS);
    assert_true(cpu_attrib_share(&a) == 1.0);
    /* unknown static power: no dynamic figures */
    assert_true(a.dynamic_j == 0.0 && a.node_dyn_j == 0.0);
}

static void test_busy_zero(void **state)
{
    (void)state;
    struct cpu_attrib a;
    /* the node saw no busy time but the tree ran: all of it */
    cpu_attrib_init(&a, 100 * MS, -1, 0);
    cpu_attrib_add(&a, 2.0, 100 * MS, 0, 10);
    tu_assert_near(a.energy_j, 2.0, EPS);
    assert_true(cpu_attrib_share(&a) == 1.0);
    /* neither ran: none of it */
    cpu_attrib_init(&a, 100 * MS, -1, 0);
    cpu_attrib_add(&a, 2.0, 100 * MS, 0, 0);
    assert_true(a.energy_j == 0.0);
    tu_assert_near(a.node_j, 2.0, EPS);
    assert_true(cpu_attrib_share(&a) == 0.0);
}

static void test_dynamic_never_negative(void **state)
{
    (void)state;
    struct cpu_attrib a;
    /* 50 J in 1 s against a static 200 W: no dynamic energy, not -150 J */
    cpu_attrib_init(&a, 1000 * MS, 200.0, 0);
    cpu_attrib_add(&a, 50.0, 1000 * MS, 10, 5);
    tu_assert_near(a.energy_j, 25.0, EPS);
    assert_true(a.dynamic_j == 0.0);
    assert_true(a.node_dyn_j == 0.0);
    /* the next epoch is above it: 300 J in 1 s, 100 J dynamic, tree half of it */
    cpu_attrib_add(&a, 300.0, 1000 * MS, 10, 5);
    tu_assert_near(a.dynamic_j, 50.0, EPS);
    tu_assert_near(a.node_dyn_j, 100.0, EPS);
    tu_assert_near(a.energy_j, 175.0, EPS);

    /* static 0 W: everything is dynamic */
    cpu_attrib_init(&a, 1000 * MS, 0.0, 0);
    cpu_attrib_add(&a, 8.0, 1000 * MS, 4, 1);
    tu_assert_near(a.node_dyn_j, 8.0, EPS);
    tu_assert_near(a.dynamic_j, 2.0, EPS);
    tu_assert_near(a.energy_j, 2.0, EPS);
}

static void test_epoch_zero(void **state)
{
    (void)state;
    struct cpu_attrib a;
    /* no grouping: each tick is its own epoch; shares differ per tick */
    cpu_attrib_init(&a, 0, -1, 0);
    cpu_attrib_add(&a, 10.0, 100 * MS, 100, 100); /* 10 J */
    cpu_attrib_add(&a, 10.0, 100 * MS, 100, 0);   /* 0 J */
    cpu_attrib_add(&a, 10.0, 100 * MS, 100, 50);  /* 5 J */
    tu_assert_near(a.energy_j, 15.0, EPS);
    tu_assert_near(a.node_j, 30.0, EPS);
    /* over everything: 150 of 300 */
    tu_assert_near(cpu_attrib_share(&a), 0.5, EPS);
    cpu_attrib_finish(&a);
    tu_assert_near(a.node_j, 30.0, EPS);
}

/* A baseline measured with background load: that load is paid by the static power, so the
 * tree's dynamic share is of the busy time above it. */
static void test_static_busy(void **state)
{
    (void)state;
    struct cpu_attrib a;
    /* 30 J in 1 s over a 10 W baseline that saw 0.5 CPU busy; node 1.5 CPU-s busy, the tree
     * 0.5 of them. share 1/3: 10 J. dynamic 20 J; busy above the baseline's 1.0 CPU-s, the
     * tree half of it: 10 J. */
    cpu_attrib_init(&a, 1000 * MS, 10.0, 0.5);
    cpu_attrib_add(&a, 30.0, 1000 * MS, 1500 * MS, 500 * MS);
    tu_assert_near(a.energy_j, 10.0, EPS);
    tu_assert_near(a.node_dyn_j, 20.0, EPS);
    tu_assert_near(a.dynamic_j, 10.0, EPS);

    /* the busy time above the baseline is less than the tree's own: all the dynamic energy
     * is the tree's. 0.6 CPU-s busy, 0.5 of them the tree: share 5/6 of 30 J = 25 J */
    cpu_attrib_init(&a, 1000 * MS, 10.0, 0.5);
    cpu_attrib_add(&a, 30.0, 1000 * MS, 600 * MS, 500 * MS);
    tu_assert_near(a.energy_j, 25.0, EPS);
    tu_assert_near(a.dynamic_j, 20.0, EPS);

    /* the tree idle: nothing, whatever the background */
    cpu_attrib_init(&a, 1000 * MS, 10.0, 0.5);
    cpu_attrib_add(&a, 30.0, 1000 * MS, 200 * MS, 0);
    assert_true(a.energy_j == 0.0);
    assert_true(a.dynamic_j == 0.0);
    tu_assert_near(a.node_dyn_j, 20.0, EPS);
}

/* CPU time that came with no energy and no elapsed time is still counted in the share. */
static void test_cpu_time_without_energy(void **state)
{
    (void)state;
    struct cpu_attrib a;
    cpu_attrib_init(&a, 1000 * MS, 5.0, 0);
    cpu_attrib_add(&a, 0.0, 0, 100, 40);
    cpu_attrib_finish(&a);
    assert_true(a.tree_ns == 40 && a.busy_ns == 100);
    tu_assert_near(cpu_attrib_share(&a), 0.4, EPS);
    assert_true(a.energy_j == 0.0 && a.node_j == 0.0 && a.node_dyn_j == 0.0);
}

/* Over many ticks the attributed energy never exceeds the node's, and the split adds up. */
static void test_sums(void **state)
{
    (void)state;
    struct cpu_attrib a;
    cpu_attrib_init(&a, 250 * MS, 20.0, 0);
    double node = 0;
    for (int k = 0; k < 1000; k++) {
        double de = 3.0 + (k % 7);
        node += de;
        cpu_attrib_add(&a, de, 100 * MS, 1000 + (uint64_t)(k % 13) * 10, (uint64_t)(k % 11) * 150);
    }
    cpu_attrib_finish(&a);
    tu_assert_near(a.node_j, node, 1e-6);
    assert_true(a.energy_j <= a.node_j);
    assert_true(a.dynamic_j <= a.node_dyn_j);
    assert_true(a.dynamic_j <= a.energy_j);
    assert_true(a.node_dyn_j <= a.node_j);
    assert_true(a.energy_j > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_epochs),
        cmocka_unit_test(test_share_clamped),
        cmocka_unit_test(test_busy_zero),
        cmocka_unit_test(test_dynamic_never_negative),
        cmocka_unit_test(test_epoch_zero),
        cmocka_unit_test(test_static_busy),
        cmocka_unit_test(test_cpu_time_without_energy),
        cmocka_unit_test(test_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

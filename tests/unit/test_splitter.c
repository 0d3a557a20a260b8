/*
 * Unit tests for analysis/splitter: fixture ticks split and posted to a ledger. Two jobs under
 * each idle policy, a baseline with background load, a wall meter holding a CPU and a GPU
 * channel, a GPU split by its processes, Σ parts == ΔE over random ticks, and `carma stat`'s
 * epochs with busy times in ns. Every figure is worked out by hand in the comments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "analysis/splitter.h"
#include "testutil.h"

#define S   1000000000LL
#define MS  1000000LL
#define EPS 1e-9

static const char *const names[] = {"a", "b", "c"};
static const struct ledger_time at = {.ts = "1.000000", .g_per_j = 0.01};

/* One CPU channel of the node, two jobs, static 10 W. */
static void one_cpu(struct splitter *sp, struct ledger *l, enum split_policy p)
{
    splitter_init(sp, 2, p);
    assert_int_equal(splitter_add_channel(sp, "cpu", KIND_CPU), 0);
    splitter_node(sp, 0);
    double sw = 10.0;
    splitter_set_static(sp, &sw, 0);
    ledger_init(l, 2, names, NULL, NULL);
}

/*
 * 30 J in 1 s: static 10 J, dynamic 20 J. Busy: a 0.5 s, b 0.25 s, the node 1 s (0.25 s of
 * other processes): dynamic a 10, b 5, other 5. Idle: the static 10 J is idle. Equal: 5 J to
 * each running job. Proportional: by the busy shares, a 5, b 2.5, other 2.5.
 */
static void test_two_jobs_policies(void **state)
{
    (void)state;
    static const enum split_policy pol[] = {SPLIT_IDLE, SPLIT_EQUAL, SPLIT_PROPORTIONAL};
    static const double want[][4] = {
        /* a, b, idle, other */
        {10.0, 5.0, 10.0, 5.0},
        {15.0, 10.0, 0.0, 5.0},
        {15.0, 7.5, 0.0, 7.5},
    };
    for (size_t q = 0; q < 3; q++) {
        struct splitter sp;
        struct ledger l;
        one_cpu(&sp, &l, pol[q]);
        double e = 30.0;
        splitter_tick(&sp, &e, 1 * S);
        double busy[] = {0.5, 0.25};
        bool run[] = {true, true};
        struct splitter_busy b = {.job = busy, .running = run, .node = 1.0};
        splitter_split(&sp, &l, &b, false, &at);
        tu_assert_near(l.job[0].energy_j, want[q][0], EPS);
        tu_assert_near(l.job[1].energy_j, want[q][1], EPS);
        tu_assert_near(l.idle_j, want[q][2], EPS);
        tu_assert_near(l.other_j, want[q][3], EPS);
        assert_true(l.unattr_j == 0.0);
        assert_true(l.total_j == 30.0);
        /* carbon = J × g/J */
        tu_assert_near(l.job[0].g_op, want[q][0] * 0.01, EPS);
        /* the pending energy is gone: a second split posts nothing */
        splitter_split(&sp, &l, &b, false, &at);
        assert_true(l.total_j == 30.0);
        ledger_done(&l);
    }
}

/* Idle time: no busy time at all leaves the dynamic part unattributed; a job that ended
 * during the tick takes no static part under the equal policy. */
static void test_no_busy_and_equal(void **state)
{
    (void)state;
    struct splitter sp;
    struct ledger l;
    one_cpu(&sp, &l, SPLIT_EQUAL);
    double e = 16.0;
    splitter_tick(&sp, &e, 1 * S);
    double busy[] = {0, 0};
    bool run[] = {true, false};
    struct splitter_busy b = {.job = busy, .running = run, .node = 0};
    splitter_split(&sp, &l, &b, false, &at);
    /* static 10 J: all of it to a, the one running; dynamic 6 J: nobody busy */
    assert_true(l.job[0].energy_j == 10.0 && l.job[1].energy_j == 0.0);
    assert_true(l.unattr_j == 6.0 && l.idle_j == 0.0);
    ledger_done(&l);
}

/*
 * A baseline of 20 W measured while other processes kept 0.5 CPU busy. Each tick: 40 J in
 * 1 s, the node 1.5 CPU-s busy, the job 0.5 of them: busy above the baseline's 1.0.
 * Tick 1 (nothing learnt yet): static 20 J idle, dynamic 20 J: job 10, other 10.
 * Then 20 J of dynamic energy over 1 busy CPU-s above the baseline: 20 W per busy CPU, so the
 * baseline's 0.5 CPU explain 10 J of its 20: tick 2 gives them to other, and splits 30 J
 * with a static 10 J: job 10, other 10 + 10, idle 10.
 */
static void test_background(void **state)
{
    (void)state;
    struct splitter sp;
    struct ledger l;
    splitter_init(&sp, 1, SPLIT_IDLE);
    splitter_add_channel(&sp, "cpu", KIND_CPU);
    splitter_node(&sp, 0);
    double sw = 20.0;
    splitter_set_static(&sp, &sw, 0.5);
    ledger_init(&l, 1, names, NULL, NULL);
    double e = 40.0, busy = 0.5;
    bool run = true;
    struct splitter_busy b = {.job = &busy, .running = &run, .node = 1.5};
    splitter_tick(&sp, &e, 1 * S);
    splitter_split(&sp, &l, &b, false, &at);
    tu_assert_near(l.job[0].energy_j, 10.0, EPS);
    tu_assert_near(l.other_j, 10.0, EPS);
    tu_assert_near(l.idle_j, 20.0, EPS);
    assert_true(sp.bg_other_j == 0.0);
    splitter_tick(&sp, &e, 1 * S);
    splitter_split(&sp, &l, &b, false, &at);
    tu_assert_near(l.job[0].energy_j, 20.0, EPS);
    tu_assert_near(l.other_j, 30.0, EPS);
    tu_assert_near(l.idle_j, 30.0, EPS);
    tu_assert_near(sp.bg_other_j, 10.0, EPS);
    assert_true(l.total_j == 80.0);

    /* background off (carma stat): tick 2 is split as tick 1 */
    splitter_init(&sp, 1, SPLIT_IDLE);
    splitter_add_channel(&sp, "cpu", KIND_CPU);
    splitter_node(&sp, 0);
    splitter_set_static(&sp, &sw, 0.5);
    sp.background = false;
    ledger_init(&l, 1, names, NULL, NULL);
    for (int t = 0; t < 2; t++) {
        splitter_tick(&sp, &e, 1 * S);
        splitter_split(&sp, &l, &b, false, &at);
    }
    tu_assert_near(l.job[0].energy_j, 20.0, EPS);
    tu_assert_near(l.other_j, 20.0, EPS);
    tu_assert_near(l.idle_j, 40.0, EPS);
    assert_true(sp.bg_other_j == 0.0);
}

/*
 * A wall meter (the node) holding a CPU channel and a GPU split by process; two jobs, static
 * power unknown. One tick of 1 s: meter 200 J, CPU 40 J, GPU 60 J.
 * The CPU: a 0.6 s busy, b 0.2 s, the node 1 s: a 24, b 8, other 8.
 * The meter waits for the GPU. The GPU: a at 75% SM, b at 25%: a 45, b 15.
 * Then the meter follows its parts: a 69, b 23, other 8 of 100, so of 200 J: a 138, b 46,
 * other 16. Only the meter counts in the node.
 */
static void test_wall_meter(void **state)
{
    (void)state;
    struct splitter sp;
    struct ledger l;
    splitter_init(&sp, 2, SPLIT_IDLE);
    splitter_add_channel(&sp, "meter", KIND_SYSTEM);
    splitter_add_channel(&sp, "cpu", KIND_CPU);
    splitter_add_channel(&sp, "gpu0", KIND_GPU);
    splitter_node(&sp, 0);
    int parts[] = {1, 2};
    splitter_meter(&sp, parts, 2);
    assert_true(sp.meter_has_gpu);
    assert_int_equal(splitter_add_gpu(&sp, 2), 0);
    double sw[] = {NAN, NAN, NAN};
    splitter_set_static(&sp, sw, 0);
    ledger_init(&l, 2, names, NULL, NULL);

    double e[] = {200.0, 40.0, 999.0}; /* the GPU's comes through splitter_gpu_tick */
    splitter_tick(&sp, e, 1 * S);
    splitter_gpu_tick(&sp, 0, 60.0, 1 * S, 0);
    double busy[] = {0.6, 0.2};
    bool run[] = {true, true};
    struct splitter_busy b = {.job = busy, .running = run, .node = 1.0};
    splitter_split(&sp, &l, &b, false, &at);
    /* the CPU is split, the meter waits */
    assert_true(l.total_j == 0.0);
    assert_true(sp.ch[0].pend_j == 200.0 && sp.ch[2].pend_j == 0.0);
    struct gpu_proc procs[] = {{.job = 0, .sm_pct = 75}, {.job = 1, .sm_pct = 25}};
    bool owns[] = {true, true};
    splitter_gpu_split(&sp, &l, 0, procs, 2, owns, run, &at);
    assert_true(l.gpu[0].jobs_j == 60.0 && l.gpu[0].total_j == 60.0);
    assert_true(l.job[0].gpu_j[0] == 45.0 && l.job[1].gpu_j[0] == 15.0);
    assert_true(l.gpu[0].basis_s[GPU_BASIS_SM] == 1.0);
    assert_true(l.job[0].energy_j == 0.0); /* the GPU is not a node channel here */
    /* the next split: the meter by its parts' shares */
    splitter_split(&sp, &l, &b, false, &at);
    tu_assert_near(l.job[0].energy_j, 138.0, EPS);
    tu_assert_near(l.job[1].energy_j, 46.0, EPS);
    tu_assert_near(l.other_j, 16.0, EPS);
    tu_assert_near(l.job[0].by_kind_j[KIND_SYSTEM], 138.0, EPS);
    assert_true(l.total_j == 200.0);
    assert_true(l.idle_j == 0.0 && l.unattr_j == 0.0);
    /* the parts' shares start again after the meter's split */
    assert_true(sp.mw_idle == 0 && sp.mw_other == 0 && sp.mw_job[0] == 0 && !sp.mw_gpu_seen);

    /* final: the meter does not wait for the GPU; without parts' energy it goes by CPU time
     * (the system channel: a 0.6, b 0.2 of the 1 s) */
    e[0] = 10.0;
    e[1] = 0.0;
    splitter_tick(&sp, e, 1 * S);
    splitter_split(&sp, &l, &b, true, &at);
    tu_assert_near(l.job[0].energy_j, 144.0, EPS);
    tu_assert_near(l.job[1].energy_j, 48.0, EPS);
    tu_assert_near(l.other_j, 18.0, EPS);
    assert_true(l.total_j == 210.0);
}

/*
 * A GPU split by process on its own clock: static 20 W, 2 s pending, 100 J of which 30 J
 * before b started, 1.5 s into the period. The list at the start: only a (context basis);
 * at the end: a and b at equal SM. The part before holds no dynamic energy, so the period
 * goes by the list at its end; the static 40 J is idle.
 */
static void test_gpu_period(void **state)
{
    (void)state;
    struct splitter sp;
    struct ledger l;
    splitter_init(&sp, 2, SPLIT_IDLE);
    splitter_add_channel(&sp, "gpu0", KIND_GPU);
    splitter_add_channel(&sp, "gpu0:mem", KIND_GPU);
    splitter_node(&sp, 0);
    assert_int_equal(splitter_add_gpu(&sp, 0), 0);
    splitter_skip(&sp, 1);
    double sw[] = {20.0, NAN};
    splitter_set_static(&sp, sw, 0);
    ledger_init(&l, 2, names, NULL, NULL);
    bool owns[] = {true, true}, alive[] = {true, false};
    /* the first read: nothing pending yet, the list read at the period's start */
    struct gpu_proc first[] = {{.job = 0, .sm_pct = -1}};
    splitter_gpu_split(&sp, &l, 0, first, 1, owns, alive, &at);
    assert_true(l.gpu[0].total_j == 0.0);
    /* a tick of 1 s (10 J), then one of 1 s (90 J) with b starting 0.5 s into it: 30 J in
     * 1.5 s before */
    splitter_gpu_tick(&sp, 0, 10.0, 1 * S, 0);
    splitter_gpu_tick(&sp, 0, 40.0, 1 * S, 500 * MS);
    assert_true(sp.gpu[0].have_tau && sp.gpu[0].pend_before_j == 30.0);
    assert_true(sp.gpu[0].pend_before_ns == 1500 * MS);
    double rest = 50.0;
    splitter_gpu_tick(&sp, 0, rest, 0, 0); /* the rest of the period's energy */
    /* the components are never split */
    double e[] = {1000.0, 1000.0};
    splitter_tick(&sp, e, 1 * S);
    assert_true(sp.ch[0].pend_j == 0.0 && sp.ch[1].pend_j == 0.0);
    alive[1] = true;
    struct gpu_proc second[] = {{.job = 0, .sm_pct = 50}, {.job = 1, .sm_pct = 50}};
    splitter_gpu_split(&sp, &l, 0, second, 2, owns, alive, &at);
    /* 100 J over 2 s: static 40 J, dynamic 60 J. Before: 30 J - 20 W × 1.5 s = 0 J; after:
     * 70 J - 20 W × 0.5 s = 60 J: all by the second list: a 30, b 30 */
    tu_assert_near(l.job[0].gpu_j[0], 30.0, EPS);
    tu_assert_near(l.job[1].gpu_j[0], 30.0, EPS);
    tu_assert_near(l.gpu[0].idle_j, 40.0, EPS);
    assert_true(l.gpu[0].total_j == 100.0 && l.total_j == 100.0);
    tu_assert_near(l.job[0].by_kind_j[KIND_GPU], 30.0, EPS);
    /* the second list counted most: its basis */
    assert_true(l.gpu[0].basis_s[GPU_BASIS_SM] == 2.0);
    assert_true(!sp.gpu[0].have_tau && sp.gpu[0].pend_j == 0.0 && sp.gpu[0].pend_ns == 0);
}

/* Σ jobs + idle + other + unattributed == ΔE, to rounding, over random ticks, channels and
 * policies. */
static void test_sum_exact(void **state)
{
    (void)state;
    tu_rng_seed(16);
    for (int run = 0; run < 30; run++) {
        struct splitter sp;
        struct ledger l;
        splitter_init(&sp, 3, (enum split_policy)(run % 3));
        splitter_add_channel(&sp, "cpu", KIND_CPU);
        splitter_add_channel(&sp, "dram", KIND_DRAM);
        splitter_add_channel(&sp, "gpu", KIND_GPU);
        splitter_add_channel(&sp, "psys", KIND_SYSTEM);
        for (size_t i = 0; i < 4; i++)
            splitter_node(&sp, i);
        assert_int_equal(splitter_add_gpu(&sp, 2), 0);
        double sw[] = {20.0 * tu_rng_u(), run % 2 ? NAN : 5.0, 30.0, 2.0};
        splitter_set_static(&sp, sw, run % 4 ? 0.7 * tu_rng_u() : 0);
        ledger_init(&l, 3, names, NULL, NULL);
        double want = 0;
        for (int t = 0; t < 50; t++) {
            double e[4];
            for (size_t i = 0; i < 4; i++) {
                e[i] = 40.0 * tu_rng_u();
                if (i != 2)
                    want += e[i];
            }
            splitter_tick(&sp, e, 100 * MS);
            splitter_gpu_tick(&sp, 0, e[2], 100 * MS, t == 7 ? 30 * MS : 0);
            want += e[2];
            double busy[3];
            bool running[3];
            for (size_t k = 0; k < 3; k++) {
                busy[k] = tu_rng_u() < 0.2 ? 0.0 : 0.1 * tu_rng_u();
                running[k] = busy[k] > 0;
            }
            struct splitter_busy b = {.job = busy, .running = running, .node = 0.4 * tu_rng_u()};
            if (t % 3 == 0) {
                struct gpu_proc p[] = {{.job = (int)(tu_rng_next() % 4) - 1, .sm_pct = 40},
                                       {.job = 2, .sm_pct = t % 2 ? -1 : 10}};
                bool owns[] = {true, false, true};
                splitter_gpu_split(&sp, &l, 0, p, t % 4 ? 2 : 0, owns, running, &at);
            }
            if (t % 2 == 0 || t == 49)
                splitter_split(&sp, &l, &b, t == 49, &at);
        }
        bool all[] = {true, true, true};
        splitter_gpu_split(&sp, &l, 0, NULL, 0, NULL, all, &at);
        double got = l.idle_j + l.other_j + l.unattr_j;
        for (size_t k = 0; k < 3; k++)
            got += l.job[k].energy_j;
        tu_assert_near(got, want, 1e-9 * want);
        tu_assert_near(l.total_j, want, 1e-9 * want);
        /* by kind adds up to the jobs' energy */
        for (size_t k = 0; k < 3; k++) {
            double kinds = 0;
            for (int q = 0; q < CHANNEL_KINDS; q++)
                kinds += l.job[k].by_kind_j[q];
            tu_assert_near(kinds, l.job[k].energy_j, 1e-9 * want);
        }
        ledger_done(&l);
    }
}

/*
 * carma stat's rule: one job (the command's tree), the CPU-side energy one channel, epochs of
 * at least 1 s, busy times in ns, no background. all: no static part (every joule by the
 * share of the node's busy time); dyn: the energy above a static 10 W.
 * 30 J, 30 J, 40 J in 0.4 s each: the epoch closes after 1.2 s. Busy 500 ns, the tree 300:
 * all 60 J of 100 J. dyn: static 12 J, dynamic 88 J, the tree's 52.8 J.
 */
static void test_stat_epochs(void **state)
{
    (void)state;
    struct splitter all, dyn;
    struct ledger la, ld;
    double none = NAN, sw = 10.0;
    struct splitter *sp[] = {&all, &dyn};
    for (size_t k = 0; k < 2; k++) {
        splitter_init(sp[k], 1, SPLIT_IDLE);
        splitter_add_channel(sp[k], "cpu", KIND_CPU);
        splitter_node(sp[k], 0);
        sp[k]->background = false;
        sp[k]->busy_unit_ns = 1;
        sp[k]->epoch_ns = 1000 * MS;
    }
    splitter_set_static(&all, &none, 0);
    splitter_set_static(&dyn, &sw, 0);
    ledger_init(&la, 1, names, NULL, NULL);
    ledger_init(&ld, 1, names, NULL, NULL);
    const double e[] = {30.0, 30.0, 40.0};
    for (int t = 0; t < 3; t++) {
        assert_false(splitter_due(&all, true, false)); /* fresh CPU times do not count */
        splitter_tick(&all, &e[t], 400 * MS);
        splitter_tick(&dyn, &e[t], 400 * MS);
    }
    assert_true(splitter_due(&all, false, false));
    double tree = 300;
    bool run = true;
    struct splitter_busy b = {.job = &tree, .running = &run, .node = 500};
    splitter_split(&all, &la, &b, false, &at);
    splitter_split(&dyn, &ld, &b, false, &at);
    tu_assert_near(la.job[0].energy_j, 60.0, EPS);
    assert_true(la.total_j == 100.0);
    tu_assert_near(ld.job[0].energy_j, 52.8, EPS);
    tu_assert_near(ld.idle_j, 12.0, EPS);
    assert_false(splitter_due(&all, false, false));
    assert_true(splitter_due(&all, false, true)); /* the end splits what is left */

    /*
     * A baseline that saw 0.5 CPU busy: 30 J in 1 s over 10 W, the node 1.5 s busy (in ns),
     * the tree 0.5 s: all 10 J (share 1/3); dynamic 20 J by the busy time above the
     * baseline's (1 s): the tree's half, 10 J.
     */
    splitter_init(&dyn, 1, SPLIT_IDLE);
    splitter_add_channel(&dyn, "cpu", KIND_CPU);
    splitter_node(&dyn, 0);
    dyn.background = false;
    dyn.busy_unit_ns = 1;
    dyn.epoch_ns = 1000 * MS;
    splitter_set_static(&dyn, &sw, 0.5);
    ledger_init(&ld, 1, names, NULL, NULL);
    double e1 = 30.0;
    splitter_tick(&dyn, &e1, 1000 * MS);
    tree = 500.0 * MS;
    b.node = 1500.0 * MS;
    splitter_split(&dyn, &ld, &b, false, &at);
    tu_assert_near(ld.job[0].energy_j, 10.0, EPS);
    tu_assert_near(ld.other_j, 10.0, EPS);
    /* a static power above the energy: no dynamic energy, never a negative one */
    splitter_set_static(&dyn, &(double){200.0}, 0);
    double e2 = 50.0;
    splitter_tick(&dyn, &e2, 1000 * MS);
    splitter_split(&dyn, &ld, &b, false, &at);
    tu_assert_near(ld.job[0].energy_j, 10.0, EPS);
    tu_assert_near(ld.idle_j, 10.0 + 50.0, EPS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_jobs_policies), cmocka_unit_test(test_no_busy_and_equal),
        cmocka_unit_test(test_background),        cmocka_unit_test(test_wall_meter),
        cmocka_unit_test(test_gpu_period),        cmocka_unit_test(test_sum_exact),
        cmocka_unit_test(test_stat_epochs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

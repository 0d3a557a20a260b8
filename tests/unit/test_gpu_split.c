/* test_gpu_split: who used a GPU (weights for the split), CUDA_VISIBLE_DEVICES, and which
 * workload a pid belongs to (workload/pidowner). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/gpu_split.h"
#include "workload/pidowner.h"
#include "testutil.h"

/* 3:1 SM between two jobs, an outsider at 10: weights 60/20 of 90, basis sm */
static void test_sm_share(void **state)
{
    (void)state;
    struct gpu_proc p[] = {{0, 40}, {1, 20}, {0, 20}, {-1, 10}, {1, -1}};
    struct gpu_weights w;
    gpu_weights(p, 5, 3, NULL, NULL, &w);
    assert_int_equal(w.basis, GPU_BASIS_SM);
    tu_assert_near(w.job_w[0], 60, 0);
    tu_assert_near(w.job_w[1], 20, 0);
    tu_assert_near(w.job_w[2], 0, 0);
    tu_assert_near(w.node_w, 90, 0);
    assert_true(w.present[0] && w.present[1] && !w.present[2]);

    /* fed to the split: 100 J dynamic → 66.67 / 22.22 / other 11.11 */
    struct split_in in = {.de_j = 100,
                          .njobs = 3,
                          .job_busy = w.job_w,
                          .running = w.present,
                          .node_busy = w.node_w,
                          .policy = SPLIT_IDLE};
    struct split_out o;
    split_energy(&in, &o);
    tu_assert_near(o.job_j[0], 100.0 * 60 / 90, 1e-12);
    tu_assert_near(o.job_j[1], 100.0 * 20 / 90, 1e-12);
    tu_assert_near(o.other_j, 100.0 * 10 / 90, 1e-12);
}

/* no SM figure (unsupported, or all idle): equal among jobs with a context, an outsider is
 * one more party; a job with two processes counts once */
static void test_context(void **state)
{
    (void)state;
    struct gpu_proc p[] = {{0, -1}, {0, -1}, {2, 0}, {-1, -1}};
    struct gpu_weights w;
    gpu_weights(p, 4, 3, NULL, NULL, &w);
    assert_int_equal(w.basis, GPU_BASIS_CONTEXT);
    tu_assert_near(w.job_w[0], 1, 0);
    tu_assert_near(w.job_w[1], 0, 0);
    tu_assert_near(w.job_w[2], 1, 0);
    tu_assert_near(w.node_w, 3, 0);
    assert_true(w.present[0] && !w.present[1] && w.present[2]);
}

/* nobody listed: the live owners share; none alive or none owning: no basis */
static void test_allocation_and_none(void **state)
{
    (void)state;
    bool owns[3] = {true, false, true}, alive[3] = {true, true, false};
    struct gpu_weights w;
    gpu_weights(NULL, 0, 3, owns, alive, &w);
    assert_int_equal(w.basis, GPU_BASIS_ALLOCATION);
    tu_assert_near(w.job_w[0], 1, 0);
    tu_assert_near(w.job_w[2], 0, 0);
    tu_assert_near(w.node_w, 1, 0);
    alive[0] = false;
    gpu_weights(NULL, 0, 3, owns, alive, &w);
    assert_int_equal(w.basis, GPU_BASIS_NONE);
    tu_assert_near(w.node_w, 0, 0);
    gpu_weights(NULL, 0, 3, NULL, NULL, &w);
    assert_int_equal(w.basis, GPU_BASIS_NONE);
    assert_string_equal(gpu_basis_name(GPU_BASIS_ALLOCATION), "allocation");
}

/* weights of two jobs, other's as the rest of node */
static struct gpu_weights wts(double a, double b, double node)
{
    struct gpu_weights w = {0};
    w.job_w[0] = a;
    w.job_w[1] = b;
    w.present[0] = a > 0;
    w.present[1] = b > 0;
    w.node_w = node;
    w.basis = node > 0 ? GPU_BASIS_SM : GPU_BASIS_NONE;
    return w;
}

static void test_period_shares(void **state)
{
    (void)state;
    struct gpu_shares sh;
    /* A (75 %) ended in the period: before it, 30 J of dynamic energy by the start's shares;
     * after, 10 J by the end's (B alone) */
    struct gpu_weights p = wts(60, 20, 80), c = wts(0, 20, 20);
    gpu_period_shares(&p, &c, 2, 30, 10, 0.004, 0.016, &sh);
    tu_assert_near(sh.f[0], 0.75 * 30 / 40, 1e-15);
    tu_assert_near(sh.f[1], (0.25 * 30 + 1.0 * 10) / 40, 1e-15);
    tu_assert_near(sh.node, 1, 0);
    assert_true(sh.present[0] && sh.present[1]);
    /* no dynamic energy: by duration */
    gpu_period_shares(&p, &c, 2, 0, -1, 0.005, 0.015, &sh);
    tu_assert_near(sh.f[0], 0.75 * 0.25, 1e-15);
    /* an outsider's share stays other's: node 1, Σf 0.5 */
    struct gpu_weights o = wts(10, 0, 20);
    gpu_period_shares(&o, &o, 2, 5, 5, 0.01, 0.01, &sh);
    tu_assert_near(sh.f[0], 0.5, 1e-15);
    tu_assert_near(sh.node, 1, 0);
    /* the first period, or an end where nobody used the device: the other end alone */
    gpu_period_shares(NULL, &c, 2, 30, 10, 0.01, 0.01, &sh);
    tu_assert_near(sh.f[1], 1, 1e-15);
    tu_assert_near(sh.f[0], 0, 0);
    struct gpu_weights none = wts(0, 0, 0);
    gpu_period_shares(&p, &none, 2, 5, 5, 0.01, 0.01, &sh);
    tu_assert_near(sh.f[0], 0.75, 1e-15);
    assert_int_equal(sh.basis, GPU_BASIS_SM);
    /* nobody at either end: unattributed */
    gpu_period_shares(&none, &none, 2, 5, 5, 0.01, 0.01, &sh);
    tu_assert_near(sh.node, 0, 0);
    tu_assert_near(sh.f[0] + sh.f[1], 0, 0);
    assert_int_equal(sh.basis, GPU_BASIS_NONE);
    gpu_period_shares(NULL, &none, 2, 5, 5, 0.01, 0.01, &sh);
    tu_assert_near(sh.node, 0, 0);
}

static void test_visible(void **state)
{
    (void)state;
    const char *uuid[] = {"GPU-1111-aaaa", "GPU-2222-bbbb", "GPU-2223-cccc", ""};
    bool v[4];
#define VIS(s, want, a, b, c, d)                                                                   \
    do {                                                                                           \
        memset(v, 0, sizeof v);                                                                    \
        assert_int_equal(gpu_visible_parse(s, uuid, 4, v), want);                                  \
        assert_true(v[0] == (a) && v[1] == (b) && v[2] == (c) && v[3] == (d));                     \
    } while (0)
    VIS("0", 1, 1, 0, 0, 0);
    VIS("2,0", 2, 1, 0, 1, 0);
    VIS(" 1 , 3 ", 2, 0, 1, 0, 1);
    VIS("GPU-2222-bbbb", 1, 0, 1, 0, 0);
    VIS("GPU-1", 1, 1, 0, 0, 0);      /* a unique prefix */
    VIS("GPU-222,0", 0, 0, 0, 0, 0);  /* ambiguous: the list ends there */
    VIS("0,7,1", 1, 1, 0, 0, 0);      /* 7 is no device: CUDA stops at it */
    VIS("MIG-abcd,1", 0, 0, 0, 0, 0); /* an instance is no whole device */
    VIS("", 0, 0, 0, 0, 0);           /* nothing visible */
    VIS("-1", 0, 0, 0, 0, 0);
    VIS("0,0", 1, 1, 0, 0, 0);
    VIS("99999999999", 0, 0, 0, 0, 0);
    memset(v, 0, sizeof v);
    assert_int_equal(gpu_visible_parse(NULL, uuid, 4, v), 0);
}

/* a /proc of three processes: 100 in a job's cgroup, 200 whose process group is job 1's, 300
 * a grandchild of job 1's main process in another group, 400 nobody's */
static void put_proc(int pid, const char *cgroup, int ppid, int pgrp)
{
    char rel[64], text[256];
    snprintf(rel, sizeof rel, "proc/%d/cgroup", pid);
    snprintf(text, sizeof text, "12:cpu:/x\n0::%s\n", cgroup);
    tu_put(rel, text);
    snprintf(rel, sizeof rel, "proc/%d/stat", pid);
    snprintf(text, sizeof text, "%d (a (b) c) S %d %d %d 0 -1\n", pid, ppid, pgrp, pgrp);
    tu_put(rel, text);
}

static void test_pidowner(void **state)
{
    (void)state;
    put_proc(100, "/user.slice/carma-9/train/sub", 1, 100);
    put_proc(200, "/", 50, 77);
    put_proc(300, "/", 250, 300);
    put_proc(250, "/", 77, 250);
    put_proc(77, "/", 1, 77);
    put_proc(400, "/user.slice/carma-9/trainer", 1, 400); /* a name that only starts alike */
    char proc[TU_DIR_MAX + 8];
    snprintf(proc, sizeof proc, "%s/proc", tu_dir);
    struct pidowner_job jobs[2] = {
        {.cgroup = "/user.slice/carma-9/train", .pid = 90},
        {.cgroup = NULL, .pid = 77},
    };
    struct pidowner o;
    pidowner_init(&o, proc);
    assert_int_equal(pidowner_lookup(&o, 100, jobs, 2), 0);
    assert_int_equal(pidowner_lookup(&o, 200, jobs, 2), 1);
    assert_int_equal(pidowner_lookup(&o, 300, jobs, 2), 1);
    assert_int_equal(pidowner_lookup(&o, 400, jobs, 2), -1);
    assert_int_equal(pidowner_lookup(&o, 999, jobs, 2), -1); /* gone */
    /* cached: the answer stays while the pid is seen, and is dropped once it is not */
    char rel[64];
    snprintf(rel, sizeof rel, "%s/proc/100/cgroup", tu_dir);
    unlink(rel);
    pidowner_next(&o);
    assert_int_equal(pidowner_lookup(&o, 100, jobs, 2), 0);
    pidowner_next(&o);
    pidowner_next(&o); /* 100 not looked up in a whole generation: forgotten */
    assert_int_equal(pidowner_lookup(&o, 100, jobs, 2), -1); /* stat: group 100, nobody's */
    char cg[256];
    assert_true(pidowner_cgroup_of(proc, 400, cg, sizeof cg));
    assert_string_equal(cg, "/user.slice/carma-9/trainer");
    assert_false(pidowner_cgroup_of(proc, 12345, cg, sizeof cg));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sm_share),
        cmocka_unit_test(test_context),
        cmocka_unit_test(test_allocation_and_none),
        cmocka_unit_test(test_period_shares),
        cmocka_unit_test(test_visible),
        cmocka_unit_test_setup_teardown(test_pidowner, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

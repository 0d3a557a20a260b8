/*
 * Unit tests for analysis/ledger: a split posted to the accounts (per job, per kind, grams,
 * the node's idle/other/unattributed and total, a GPU's account) and the attribution.csv rows
 * it makes, handed to the sink whole. Every figure is worked out by hand in the comments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "analysis/ledger.h"
#include "testutil.h"

#define EPS 1e-12

/* What the sink was given. */
struct got {
    int calls;
    char text[4096];
    size_t len;
    uint64_t rows;
    int ret;
};

static int sink(void *ctx, const char *rows, size_t len, uint64_t nrows)
{
    struct got *g = ctx;
    g->calls++;
    assert_true(g->len + len < sizeof g->text);
    memcpy(g->text + g->len, rows, len);
    g->len += len;
    g->text[g->len] = '\0';
    g->rows += nrows;
    return g->ret;
}

static const char *const names[] = {"train", "infer \"b\""};

/* Two jobs on a node CPU channel: 10 J as 4 + 3 to the jobs, 2 idle, 1 other, at 1 mg/J. */
static void test_post_node(void **state)
{
    (void)state;
    struct got g = {0};
    struct ledger l;
    ledger_init(&l, 2, names, sink, &g);
    struct split_out o = {.job_j = {4.0, 3.0}, .idle_j = 2.0, .other_j = 1.0};
    struct ledger_post p = {.channel = "rapl:package-0",
                            .kind = KIND_CPU,
                            .node = true,
                            .gpu = -1,
                            .njobs = 2,
                            .de_j = 10.0};
    struct ledger_time at = {.ts = "1700000000.250000", .g_per_j = 0.001};
    assert_int_equal(ledger_post(&l, &p, &o, &at), 0);
    /* nothing handed over before the flush */
    assert_int_equal(g.calls, 0);
    assert_int_equal(l.rows, 4);
    assert_int_equal(ledger_flush(&l), 0);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.rows, 4);
    /* a row per part that is not 0 J (unattributed is not): the job's name quoted */
    assert_string_equal(g.text, "1700000000.250000,rapl:package-0,train,4\r\n"
                                "1700000000.250000,rapl:package-0,\"infer \"\"b\"\"\",3\r\n"
                                "1700000000.250000,rapl:package-0,idle,2\r\n"
                                "1700000000.250000,rapl:package-0,other,1\r\n");
    /* flushed: a second flush hands nothing */
    assert_int_equal(ledger_flush(&l), 0);
    assert_int_equal(g.calls, 1);

    assert_true(l.job[0].energy_j == 4.0 && l.job[1].energy_j == 3.0);
    assert_true(l.job[0].by_kind_j[KIND_CPU] == 4.0 && l.job[0].by_kind_j[KIND_GPU] == 0.0);
    assert_true(l.job[0].event_j == 4.0);
    /* carbon = J × g/J: 4 J × 0.001 g/J */
    tu_assert_near(l.job[0].g_op, 0.004, EPS);
    tu_assert_near(l.job[1].g_op, 0.003, EPS);
    assert_true(l.idle_j == 2.0 && l.other_j == 1.0 && l.unattr_j == 0.0);
    tu_assert_near(l.idle_g, 0.002, EPS);
    tu_assert_near(l.other_g, 0.001, EPS);
    assert_true(l.total_j == 10.0);
    /* no GPU account touched */
    assert_true(l.gpu[0].total_j == 0.0 && l.job[0].gpu_j[0] == 0.0);

    /* a second split adds up: 6 J, all train's, at 2 mg/J */
    struct split_out o2 = {.job_j = {6.0}};
    p.de_j = 6.0;
    at.g_per_j = 0.002;
    ledger_post(&l, &p, &o2, &at);
    assert_true(l.job[0].energy_j == 10.0 && l.total_j == 16.0);
    tu_assert_near(l.job[0].g_op, 0.004 + 0.012, EPS);
    ledger_flush(&l);
    assert_int_equal(g.calls, 2);
    assert_int_equal(g.rows, 5);
    ledger_done(&l);
}

/* A channel outside the node (a component, a meter's part): rows, no accounts. */
static void test_post_not_node(void **state)
{
    (void)state;
    struct got g = {0};
    struct ledger l;
    ledger_init(&l, 2, names, sink, &g);
    struct split_out o = {.job_j = {1.2345678, 0.0}, .unattributed_j = 0.7654322};
    struct ledger_post p = {.channel = "rapl:core",
                            .kind = KIND_CPU,
                            .node = false,
                            .gpu = -1,
                            .njobs = 2,
                            .de_j = 2.0};
    struct ledger_time at = {.ts = "5.000000", .g_per_j = 1.0};
    ledger_post(&l, &p, &o, &at);
    ledger_flush(&l);
    /* joules with 6 decimals at most (fmt_fixed6) */
    assert_string_equal(g.text, "5.000000,rapl:core,train,1.234568\r\n"
                                "5.000000,rapl:core,unattributed,0.765432\r\n");
    assert_true(l.job[0].energy_j == 0.0 && l.job[0].g_op == 0.0 && l.job[0].event_j == 0.0);
    assert_true(l.unattr_j == 0.0 && l.total_j == 0.0);
    ledger_done(&l);
}

/* A GPU split: its own account and the jobs' GPU shares, node channel or not. */
static void test_post_gpu(void **state)
{
    (void)state;
    struct got g = {0};
    struct ledger l;
    ledger_init(&l, 2, names, sink, &g);
    struct split_out o = {
        .job_j = {5.0, 2.0}, .idle_j = 1.0, .other_j = 0.5, .unattributed_j = 0.25};
    struct ledger_post p = {
        .channel = "nvml:gpu1", .kind = KIND_GPU, .node = true, .gpu = 1, .njobs = 2, .de_j = 8.75};
    struct ledger_time at = {.ts = "1.000000", .g_per_j = 0.5};
    ledger_post(&l, &p, &o, &at);
    assert_true(l.gpu[1].jobs_j == 7.0 && l.gpu[1].idle_j == 1.0 && l.gpu[1].other_j == 0.5);
    assert_true(l.gpu[1].unattr_j == 0.25 && l.gpu[1].total_j == 8.75);
    assert_true(l.gpu[0].total_j == 0.0);
    assert_true(l.job[0].gpu_j[1] == 5.0 && l.job[1].gpu_j[1] == 2.0);
    assert_true(l.job[0].by_kind_j[KIND_GPU] == 5.0 && l.job[0].g_op == 2.5);
    assert_true(l.total_j == 8.75 && l.unattr_j == 0.25);
    /* outside the node: the GPU's account and the shares only */
    p.node = false;
    ledger_post(&l, &p, &o, &at);
    assert_true(l.gpu[1].jobs_j == 14.0 && l.gpu[1].total_j == 17.5);
    assert_true(l.job[0].gpu_j[1] == 10.0 && l.job[0].energy_j == 5.0);
    assert_true(l.total_j == 8.75);
    /* the seconds by basis */
    ledger_basis(&l, 1, GPU_BASIS_SM, 0.5);
    ledger_basis(&l, 1, GPU_BASIS_SM, 0.25);
    ledger_basis(&l, 1, GPU_BASIS_NONE, 2.0);
    assert_true(l.gpu[1].basis_s[GPU_BASIS_SM] == 0.75);
    assert_true(l.gpu[1].basis_s[GPU_BASIS_NONE] == 2.0);
    assert_true(l.gpu[1].basis_s[GPU_BASIS_CONTEXT] == 0.0);
    ledger_basis(&l, LEDGER_GPUS_MAX, GPU_BASIS_SM, 1.0); /* out of range: ignored */
    ledger_done(&l);
}

/* Without a sink no row is kept; the accounts are posted all the same. A row given whole. */
static void test_no_sink_and_raw_rows(void **state)
{
    (void)state;
    struct ledger l;
    ledger_init(&l, 1, names, NULL, NULL);
    struct split_out o = {.job_j = {1.0}, .idle_j = 1.0};
    struct ledger_post p = {
        .channel = "c", .kind = KIND_DRAM, .node = true, .gpu = -1, .njobs = 1, .de_j = 2.0};
    struct ledger_time at = {.ts = "1.000000", .g_per_j = 0};
    ledger_post(&l, &p, &o, &at);
    assert_true(l.csv.len == 0 && l.rows == 0);
    assert_true(l.job[0].by_kind_j[KIND_DRAM] == 1.0 && l.total_j == 2.0);
    assert_int_equal(ledger_flush(&l), 0);
    ledger_done(&l);

    /* rows as given (the nsys re-split copies the rows it keeps), and the sink's error */
    struct got g = {.ret = -ENOSPC};
    ledger_init(&l, 1, names, sink, &g);
    assert_int_equal(ledger_row(&l, "2.500000", "a,b", "idle", "1.250000"), 0);
    assert_int_equal(ledger_flush(&l), -ENOSPC);
    assert_string_equal(g.text, "2.500000,\"a,b\",idle,1.250000\r\n");
    assert_int_equal(g.rows, 1);
    /* the rows are forgotten even when the sink failed */
    assert_true(l.csv.len == 0 && l.rows == 0);
    ledger_done(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_node),
        cmocka_unit_test(test_post_not_node),
        cmocka_unit_test(test_post_gpu),
        cmocka_unit_test(test_no_sink_and_raw_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

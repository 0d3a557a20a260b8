/*
 * Unit tests for sources/estimate (the source named "model"): the utilization curves, the TDP
 * look-up and its fallback, user overrides, when the model is probed at all, and the power it
 * reports from a proc/stat rewritten between ticks with known deltas.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "sampler/sampler.h"
#include "sources/estimate.h"
#include "sources/procfs.h"
#include "sources/source.h"
#include "testutil.h"

extern const struct source_ops estimate_source_ops;

static struct estimate_opts default_opts(void)
{
    struct estimate_opts m = {
        .tdp_w = 0,
        .idle_w = -1,
        .idle_fraction = ESTIMATE_IDLE_FRACTION_DEFAULT,
        .curve = ESTIMATE_CURVE_FAN,
    };
    return m;
}

static struct sampler *new_with(const char *sources, const struct estimate_opts *m)
{
    struct sampler_opts o = {.root = tu_dir, .sources = sources, .model = *m};
    return tu_sampler_new(&o);
}

/* The model source of a sampler (the last in priority order). */
static const struct source *model_src(const struct sampler *s)
{
    for (size_t i = 0; i < s->nsrc; i++)
        if (strcmp(s->src[i].ops->name, "model") == 0)
            return &s->src[i];
    fail_msg("no model source");
    return NULL;
}

/* ---- curves ---- */

static void test_curves(void **state)
{
    (void)state;
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, 0.0) == 0.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, 1.0) == 1.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, 0.5) == 1.0 - pow(0.5, 1.4));
    assert_true(fabs(estimate_curve(ESTIMATE_CURVE_FAN, 0.5) - 0.6210708583724005) < 1e-15);
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, 0.25) == 0.5 - pow(0.25, 1.4));
    /* the fan curve lies above the line inside (0, 1) */
    for (double u = 0.05; u < 1.0; u += 0.05)
        assert_true(estimate_curve(ESTIMATE_CURVE_FAN, u) > u);
    assert_true(estimate_curve(ESTIMATE_CURVE_LINEAR, 0.0) == 0.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_LINEAR, 0.25) == 0.25);
    assert_true(estimate_curve(ESTIMATE_CURVE_LINEAR, 1.0) == 1.0);
    /* u is clamped to [0, 1]; NaN counts as 0 */
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, -0.5) == 0.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, 1.5) == 1.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_LINEAR, 7.0) == 1.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_LINEAR, -1.0) == 0.0);
    assert_true(estimate_curve(ESTIMATE_CURVE_FAN, NAN) == 0.0);
}

static void test_curve_names(void **state)
{
    (void)state;
    int c = -1;
    assert_int_equal(estimate_curve_parse("fan", &c), 0);
    assert_int_equal(c, ESTIMATE_CURVE_FAN);
    assert_int_equal(estimate_curve_parse("linear", &c), 0);
    assert_int_equal(c, ESTIMATE_CURVE_LINEAR);
    c = 42;
    assert_int_equal(estimate_curve_parse("Linear", &c), -EINVAL);
    assert_int_equal(estimate_curve_parse("", &c), -EINVAL);
    assert_int_equal(estimate_curve_parse("fan ", &c), -EINVAL);
    assert_int_equal(c, 42);
    assert_string_equal(estimate_curve_name(ESTIMATE_CURVE_FAN), "fan");
    assert_string_equal(estimate_curve_name(ESTIMATE_CURVE_LINEAR), "linear");
}

/* ---- probing ---- */

static void test_tdp_from_table(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct estimate_opts m = default_opts();
    struct sampler *s = new_with("model", &m);
    const struct source *src = model_src(s);
    assert_int_equal(src->status, 0);
    assert_int_equal(s->set.n, 2);
    for (int k = 0; k < 2; k++) {
        const struct channel *c = &s->set.ch[k];
        char want[64];
        snprintf(want, sizeof want, "model/cpu%d", k);
        assert_string_equal(c->name, want);
        assert_string_equal(c->source, "model");
        assert_int_equal(c->kind, KIND_CPU);
        assert_string_equal(c->zone, "cpu");
        snprintf(want, sizeof want, "socket %d, fan curve", k);
        assert_string_equal(c->label, want);
        assert_int_equal(c->socket, k);
        assert_int_equal(c->domain, DOMAIN_TOTAL);
        assert_int_equal(c->parent, -1);
        assert_int_equal(c->form, FORM_GAUGE);
        assert_int_equal(c->method, METHOD_ESTIMATED);
        assert_true(c->idle_w == 18.0);
        assert_string_equal(c->path, "proc/stat");
    }
    assert_non_null(strstr(src->note, "estimated, not measured"));
    assert_non_null(strstr(src->note, "P = 18 + (150 - 18) x f(u) W per socket"));
    assert_non_null(strstr(src->note, "2u - u^1.4"));
    assert_non_null(
        strstr(src->note, "TDP 150 W per socket for \"Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\""));
    assert_non_null(strstr(src->note, "table row \"Xeon(R) Gold 6248\""));
    assert_null(strstr(src->note, "6248R"));
    sampler_free(s);
}

static void test_tdp_fallback(void **state)
{
    (void)state;
    tu_copy_fixture("vm-empty");
    struct estimate_opts m = default_opts();
    struct sampler *s = new_with(NULL, &m);
    const struct source *src = model_src(s);
    assert_int_equal(src->status, 0);
    assert_int_equal(s->set.n, 1);
    assert_string_equal(s->set.ch[0].name, "model/cpu0");
    assert_true(s->set.ch[0].idle_w == 0.12 * 85);
    assert_non_null(strstr(src->note, "CPU model \"AMD EPYC\" is not in the TDP table"));
    assert_non_null(strstr(src->note, "generic TDP 85 W per socket"));
    assert_non_null(strstr(src->note, "--cpu-tdp"));
    sampler_free(s);
}

static void test_overrides(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct estimate_opts m = default_opts();
    m.tdp_w = 200;
    m.idle_w = 30;
    m.curve = ESTIMATE_CURVE_LINEAR;
    struct sampler *s = new_with("model", &m);
    const struct source *src = model_src(s);
    assert_true(s->set.ch[0].idle_w == 30.0);
    assert_string_equal(s->set.ch[1].label, "socket 1, linear curve");
    assert_non_null(strstr(src->note, "P = 30 + (200 - 30) x f(u)"));
    assert_non_null(strstr(src->note, "u (linear)"));
    assert_non_null(strstr(src->note, "TDP 200 W per socket from --cpu-tdp"));
    sampler_free(s);

    /* idle above the maximum is cut to it */
    m = default_opts();
    m.idle_w = 500;
    s = new_with("model", &m);
    assert_true(s->set.ch[0].idle_w == 150.0);
    sampler_free(s);

    /* an idle fraction instead of the default 0.12 */
    m = default_opts();
    m.idle_fraction = 0.25;
    s = new_with("model", &m);
    assert_true(s->set.ch[0].idle_w == 37.5);
    sampler_free(s);

    /* idle 0 is a valid override, not "unset" */
    m = default_opts();
    m.idle_w = 0;
    s = new_with("model", &m);
    assert_true(s->set.ch[0].idle_w == 0.0);
    sampler_free(s);
}

static void test_table_path(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    char table[400];
    snprintf(table, sizeof table, "%s/tdp.csv", tu_dir);
    tu_put("tdp.csv", "pattern,vendor,family,cores,tdp_w,source\n"
                      "Gold 6248,Intel,test,20,99,a test row\n"
                      "*,*,unknown,,77,test fallback\n");
    struct estimate_opts m = default_opts();
    m.table_path = table;
    struct sampler *s = new_with("model", &m);
    const struct source *src = model_src(s);
    assert_int_equal(src->status, 0);
    assert_non_null(strstr(src->note, "TDP 99 W per socket"));
    assert_non_null(strstr(src->note, "a test row"));
    sampler_free(s);

    /* a table that cannot be opened: the model is unusable and says why */
    char missing[500];
    snprintf(missing, sizeof missing, "%s/none.csv", tu_dir);
    m.table_path = missing;
    s = new_with("model", &m);
    src = model_src(s);
    assert_int_equal(src->status, -ENOENT);
    assert_int_equal(s->set.n, 0);
    assert_non_null(strstr(src->reason, "cannot open CPU table"));
    assert_non_null(strstr(src->reason, missing));
    sampler_free(s);

    /* a malformed table */
    tu_put("tdp.csv", "pattern,vendor,family,cores,tdp_w,source\nGold 6248,Intel,x,20,lots,y\n");
    m.table_path = table;
    s = new_with("model", &m);
    src = model_src(s);
    assert_int_equal(src->status, -EINVAL);
    assert_non_null(strstr(src->reason, table));
    assert_non_null(strstr(src->reason, "tdp_w"));
    sampler_free(s);
}

static void test_not_needed_with_measured(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct estimate_opts m = default_opts();
    struct sampler *s = new_with(NULL, &m);
    const struct source *src = model_src(s);
    assert_int_equal(src->status, -ENOENT);
    assert_non_null(strstr(src->reason, "not needed"));
    assert_non_null(strstr(src->reason, "--sources"));
    for (size_t i = 0; i < s->set.n; i++)
        assert_string_not_equal(s->set.ch[i].source, "model");
    sampler_free(s);

    /* asked for by name: probed beside RAPL */
    s = new_with("rapl,model", &m);
    src = model_src(s);
    assert_int_equal(src->status, 0);
    assert_int_equal(src->first, 6);
    assert_int_equal(src->count, 2);
    assert_string_equal(s->set.ch[6].name, "model/cpu0");
    assert_string_equal(s->set.ch[7].name, "model/cpu1");
    sampler_free(s);
}

static void test_no_utilization(void **state)
{
    (void)state;
    tu_put("sys/class/powercap/.keep", "");
    struct estimate_opts m = default_opts();
    struct sampler *s = new_with("model", &m);
    assert_false(s->have_util);
    const struct source *src = model_src(s);
    assert_int_equal(src->status, -ENOENT);
    assert_non_null(strstr(src->reason, "no CPU utilization"));
    sampler_free(s);
}

/* ---- readings ---- */

/* Before two proc/stat readings the utilization is unknown: so is the power. */
static void test_invalid_before_primed(void **state)
{
    (void)state;
    tu_copy_fixture("vm-empty");
    struct fsroot root;
    struct carma_err e = {0};
    assert_int_equal(fsroot_open(&root, tu_dir, &e), 0);
    struct procstat util;
    assert_int_equal(procstat_open(&util, &root, &e), 0);
    assert_false(util.primed);
    struct channel_set *set = calloc(1, sizeof *set);
    assert_non_null(set);
    struct estimate_opts m = default_opts();
    struct probe_ctx ctx = {.root = &root, .set = set, .util = &util, .model = &m};
    struct source src = {.ops = &estimate_source_ops};
    assert_int_equal(estimate_source_ops.probe(&src, &ctx), 1);
    struct reading rd = {.valid = READING_POWER, .power_w = 1};
    estimate_source_ops.read(&src, &rd);
    assert_int_equal(rd.valid, 0);
    assert_int_equal(rd.err, -EAGAIN);

    /* cpu0 busy 30 of 100 ticks, cpu1 busy 10 of 100: the socket 20 % */
    tu_put("proc/stat", "cpu  2040 10 600 100160 20 0 5 0 0 0\n"
                        "cpu0 1030 10 300 50070 20 0 5 0 0 0\n"
                        "cpu1 1010 10 300 50090 20 0 5 0 0 0\n");
    assert_int_equal(procstat_sample(&util), 0);
    assert_true(util.primed);
    estimate_source_ops.read(&src, &rd);
    assert_int_equal(rd.valid, READING_POWER);
    assert_int_equal(rd.err, 0);
    double idle = 0.12 * 85;
    assert_true(rd.power_w == idle + (85 - idle) * (2 * 0.2 - pow(0.2, 1.4)));

    /* proc/stat unreadable this tick: the power is missing with that error */
    tu_put("proc/stat", "nonsense\n");
    assert_int_equal(procstat_sample(&util), -EINVAL);
    estimate_source_ops.read(&src, &rd);
    assert_int_equal(rd.valid, 0);
    assert_int_equal(rd.err, -EINVAL);

    estimate_source_ops.close(&src);
    assert_null(src.priv);
    estimate_source_ops.close(&src); /* twice is fine */
    procstat_close(&util);
    fsroot_close(&root);
    free(set);
}

/* intel-2s: cpu0, cpu1 on socket 0, cpu2, cpu3 on socket 1; the fixture has every cpu at
 * user 1000, nice 10, system 300, idle 50000, iowait 20, softirq 5. */
static void put_stat(unsigned u0, unsigned i0, unsigned u1, unsigned i1)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "cpu  %u 40 1200 %u 80 0 20 0 0 0\n"
             "cpu0 %u 10 300 %u 20 0 5 0 0 0\n"
             "cpu1 %u 10 300 %u 20 0 5 0 0 0\n"
             "cpu2 %u 10 300 %u 20 0 5 0 0 0\n"
             "cpu3 %u 10 300 %u 20 0 5 0 0 0\n"
             "intr 123456 0 0\nctxt 987654\n",
             2 * u0 + 2 * u1, 2 * i0 + 2 * i1, u0, i0, u0, i0, u1, i1, u1, i1);
    tu_put("proc/stat", buf);
}

static void test_power_from_utilization(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    struct estimate_opts m = default_opts();
    struct sampler *s = new_with("model", &m);
    assert_int_equal(s->set.n, 2);
    const double idle = 18.0, max = 150.0;

    /* socket 0: +50 busy +50 idle per cpu (50 %); socket 1: +25 busy +75 idle (25 %) */
    put_stat(1050, 50050, 1025, 50075);
    sampler_tick(s);
    assert_true(s->util.socket_util[0] == 0.5);
    assert_true(s->util.socket_util[1] == 0.25);
    double p0 = idle + (max - idle) * (1.0 - pow(0.5, 1.4));
    double p1 = idle + (max - idle) * (0.5 - pow(0.25, 1.4));
    assert_true(fabs(p0 - 99.98135330515687) < 1e-9);
    assert_int_equal(s->readings[0].valid, READING_POWER);
    assert_true(s->readings[0].power_w == p0);
    assert_true(s->readings[1].power_w == p1);
    assert_true(s->st[0].watts == p0);
    assert_true(s->st[1].watts == p1);
    assert_true(s->st[0].energy_j == 0.0);
    int64_t t1 = s->t_now;

    /* socket 0 fully busy, socket 1 idle (proc/stat is re-read at most every 10 ms) */
    put_stat(1150, 50050, 1025, 50175);
    tu_pause_ms(2 * SAMPLER_UTIL_PERIOD_NS / 1000000);
    sampler_tick(s);
    assert_true(s->st[0].watts == max);
    assert_true(s->st[1].watts == idle);
    assert_true(s->st[0].energy_j == energy_trapezoid_j(p0, max, s->t_now - t1));
    assert_true(s->st[1].energy_j == energy_trapezoid_j(p1, idle, s->t_now - t1));

    /* no tick elapsed on any cpu: the last fractions stay */
    tu_pause_ms(2 * SAMPLER_UTIL_PERIOD_NS / 1000000);
    sampler_tick(s);
    assert_true(s->st[0].watts == max);
    assert_true(s->st[1].watts == idle);
    sampler_free(s);

    /* the linear curve */
    tu_copy_fixture("intel-2s");
    m.curve = ESTIMATE_CURVE_LINEAR;
    s = new_with("model", &m);
    put_stat(1050, 50050, 1025, 50075);
    sampler_tick(s);
    assert_true(s->st[0].watts == 18.0 + 132.0 * 0.5);
    assert_true(s->st[1].watts == 18.0 + 132.0 * 0.25);
    sampler_free(s);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_curves),
        cmocka_unit_test(test_curve_names),
        T(test_tdp_from_table),
        T(test_tdp_fallback),
        T(test_overrides),
        T(test_table_path),
        T(test_not_needed_with_measured),
        T(test_no_utilization),
        T(test_invalid_before_primed),
        T(test_power_from_utilization),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

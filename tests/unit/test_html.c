/*
 * Unit tests for the HTML report's pieces: report/lttb (downsampling), report/svg (charts),
 * runreport_timeline_load (the run's data over time) and report/html (the page of a run
 * directory, on the fixtures of tests/fixtures/rundir).
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"
#include "report/lttb.h"
#include "report/runreport.h"
#include "report/svg.h"

static char fixture[1024];

static const char *fx(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "rundir/%s", name);
    tu_fixture_path(fixture, sizeof fixture, rel);
    return fixture;
}

/* ---- lttb ---- */

static void test_lttb_small(void **state)
{
    (void)state;
    double x[5] = {0, 1, 2, 3, 4}, y[5] = {5, 1, 4, 2, 3};
    size_t idx[8];
    assert_int_equal(lttb(x, y, 5, 5, idx), 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(idx[i], i);
    assert_int_equal(lttb(x, y, 2, 100, idx), 2);
    assert_int_equal(lttb(x, y, 0, 100, idx), 0);
}

/* A spike survives a 50:1 reduction; the ends are kept; one point per bucket, in its bucket. */
static void test_lttb_peak(void **state)
{
    (void)state;
    enum { N = 1000, M = 20 };
    double x[N], y[N];
    for (size_t i = 0; i < N; i++) {
        x[i] = (double)i * 0.1;
        y[i] = 100 + (double)(i % 7) * 0.01;
    }
    y[537] = 900;
    y[222] = -50;
    size_t idx[M];
    size_t m = lttb(x, y, N, M, idx);
    assert_int_equal(m, M);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[M - 1], N - 1);
    bool peak = false, dip = false;
    double every = (double)(N - 2) / (M - 2);
    for (size_t k = 1; k < M - 1; k++) {
        assert_true(idx[k] > idx[k - 1]);
        size_t lo = (size_t)((double)(k - 1) * every) + 1, hi = (size_t)((double)k * every) + 1;
        assert_true(idx[k] >= lo && idx[k] < hi);
        peak |= idx[k] == 537;
        dip |= idx[k] == 222;
    }
    assert_true(peak);
    assert_true(dip);
}

/* Gaps: each kept once as a break (the first missing value), no other missing value kept. */
static void test_lttb_gaps(void **state)
{
    (void)state;
    enum { N = 3000 };
    static double x[N], y[N];
    for (size_t i = 0; i < N; i++) {
        x[i] = (double)i;
        y[i] = sin((double)i / 50.0) * 100;
    }
    for (size_t i = 1000; i < 1010; i++)
        y[i] = NAN;
    y[2000] = INFINITY;
    y[N - 1] = NAN;
    size_t room = lttb_gaps_room(y, N, 100);
    size_t *idx = malloc(room * sizeof *idx);
    assert_non_null(idx);
    size_t m = lttb_gaps(x, y, N, 100, idx);
    assert_true(m <= room);
    assert_true(m >= 100 - 4 && m <= 100 + 8);
    size_t breaks = 0;
    for (size_t k = 0; k < m; k++) {
        if (k > 0)
            assert_true(idx[k] > idx[k - 1]);
        if (!isfinite(y[idx[k]])) {
            breaks++;
            assert_true(idx[k] == 1000 || idx[k] == 2000 || idx[k] == N - 1);
        }
    }
    assert_int_equal(breaks, 3);
    /* the runs' ends are kept: the last point before and the first after each gap */
    bool before = false, after = false;
    for (size_t k = 0; k < m; k++) {
        before |= idx[k] == 999;
        after |= idx[k] == 1010;
    }
    assert_true(before && after);
    /* all missing: only breaks */
    for (size_t i = 0; i < N; i++)
        y[i] = NAN;
    assert_int_equal(lttb_gaps(x, y, N, 100, idx), 0);
    free(idx);
}

/* ---- svg ---- */

static void test_nice_step(void **state)
{
    (void)state;
    double first;
    assert_true(svg_nice_step(0, 97, 6, &first) == 20);
    assert_true(first == 0);
    tu_assert_near(svg_nice_step(0.013, 0.027, 5, &first), 0.005, 1e-15);
    tu_assert_near(first, 0.015, 1e-12);
    assert_true(svg_nice_step(3, 3, 5, &first) == 1);
    assert_true(first == 3);
    tu_assert_near(svg_nice_step(-1000, 4000, 5, &first), 1000, 1e-9);
    tu_assert_near(first, -1000, 1e-9);
}

static char *capture_lines(const struct svg_chart *c, const struct svg_series *s, size_t n,
                           int *ret)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    *ret = svg_lines(f, c, s, n, false);
    fclose(f);
    return buf;
}

static void test_svg_lines(void **state)
{
    (void)state;
    enum { N = 5000 };
    static double x[N], y[N], z[N];
    for (size_t i = 0; i < N; i++) {
        x[i] = 1000 + (double)i;
        y[i] = (double)(i % 100);
        z[i] = NAN;
    }
    struct svg_series s[2] = {
        {.label = "a & <b>", .x = x, .y = y, .n = N, .dashed = true, .color = 0},
        {.label = "empty", .x = x, .y = z, .n = N, .color = 1},
    };
    struct svg_chart c = {.id = "t1",
                          .title = "T \"1\"",
                          .x_label = "t",
                          .y_label = "W",
                          .x0 = 1000,
                          .y_from_zero = true,
                          .max_points = 300};
    int r;
    char *out = capture_lines(&c, s, 2, &r);
    assert_int_equal(r, 0);
    assert_non_null(strstr(out, "<figure class=\"chart\" id=\"t1\">"));
    assert_non_null(strstr(out, "aria-label=\"T &quot;1&quot;\""));
    assert_non_null(strstr(out, "data-label=\"a &amp; &lt;b&gt;\" data-points=\"5000\" "
                                "data-shown=\"300\""));
    assert_non_null(strstr(out, "stroke-dasharray"));
    assert_non_null(strstr(out, "empty (no data)"));
    assert_null(strstr(out, "nan"));
    assert_null(strstr(out, "inf"));
    /* 5000 s: minutes on the axis */
    assert_non_null(strstr(out, "(min)"));
    free(out);
    assert_int_equal(svg_lines(stdout, &c, s, 0, false), -EINVAL);
}

static void test_svg_stacked(void **state)
{
    (void)state;
    double x[4] = {0, 1, 2, 3}, a[4] = {1, 2, NAN, 1}, b[4] = {3, 3, 3, -1};
    struct svg_series s[2] = {{.label = "a", .y = a, .color = 0},
                              {.label = "b", .y = b, .color = 1}};
    struct svg_chart c = {.id = "st", .title = "S", .y_from_zero = true, .height = 240};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(svg_stacked(f, &c, x, 4, s, 2), 0);
    fclose(f);
    /* two areas, the legend, no NaN in the geometry */
    assert_non_null(strstr(buf, "data-label=\"a\""));
    assert_non_null(strstr(buf, "data-label=\"b\""));
    assert_null(strstr(buf, "nan"));
    /* the top of the stack is 5 W (2 + 3; a missing or negative value counts as 0): the axis
     * ends at 5 */
    assert_non_null(strstr(buf, ">5</text>"));
    assert_null(strstr(buf, ">6</text>"));
    free(buf);
    assert_int_equal(svg_stacked(stdout, &c, x, 1, s, 2), -EINVAL);
}

/* Ranges a few ulps wide (a flat negative series, epoch times 0.1 µs apart) end their ticks:
 * the tick loops once stepped by less than the values' resolution and never ended. */
static void test_svg_flat(void **state)
{
    (void)state;
    double x[2] = {1796046807.0, 1796046807.0000001}, y[2] = {-5.0, -5.000000000000001};
    struct svg_series s = {.label = "flat", .x = x, .y = y, .n = 2};
    struct svg_chart c = {.id = "flat", .title = "F", .y_from_zero = true};
    int r;
    char *out = capture_lines(&c, &s, 1, &r);
    assert_int_equal(r, 0);
    assert_non_null(strstr(out, "data-label=\"flat\""));
    assert_true(strlen(out) < 20000);
    free(out);
    double z[2] = {0, 0};
    s.x = z;
    out = capture_lines(&c, &s, 1, &r);
    assert_int_equal(r, 0);
    assert_true(strlen(out) < 20000);
    free(out);
}

/* Values at the ends of a double's range (1e308 W, a sum gone to inf): the geometry and the
 * axes stay finite numbers, never "nan" or "inf" in an attribute. */
static void test_svg_extreme(void **state)
{
    (void)state;
    double x[3] = {0, 1, 2}, y[3] = {-1.7e308, 1.7e308, 1e308}, big[3] = {1e308, 1e308, INFINITY};
    struct svg_series s = {.label = "huge", .x = x, .y = y, .n = 3};
    struct svg_chart c = {.id = "x", .title = "X"};
    int r;
    char *out = capture_lines(&c, &s, 1, &r);
    assert_int_equal(r, 0);
    assert_null(strstr(out, "nan"));
    assert_null(strstr(out, "inf"));
    free(out);
    struct svg_series st[2] = {{.label = "a", .y = big, .color = 0},
                               {.label = "b", .y = y, .color = 1}};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(svg_stacked(f, &c, x, 3, st, 2), 0);
    fclose(f);
    assert_null(strstr(buf, "nan"));
    assert_null(strstr(buf, "inf"));
    free(buf);
}

/* ---- the run's timeline ---- */

static double jget(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* The bins hold the attribution: per job, the sum over the bins equals the run window's
 * figure of `carma report` (both cut attribution.csv's periods at the window's edges). */
static void test_timeline_sums(void **state)
{
    (void)state;
    static const char *const dirs[] = {"run-cpu", "run-gpu"};
    for (size_t d = 0; d < 2; d++) {
        struct runreport_timeline tl;
        struct carma_err e = {0};
        int r = runreport_timeline_load(fx(dirs[d]), NULL, 7, &tl, &e);
        if (r < 0)
            fail_msg("%s: %s", dirs[d], e.msg);
        assert_true(tl.nbins >= 2 && tl.nbins <= 7);
        assert_true(tl.t1 > tl.t0);
        assert_true(tl.nch > 0);
        const json_t *run = json_array_get(tl.report, 0);
        double total = 0;
        for (size_t k = 0; k < tl.njobs; k++) {
            double dt = (tl.t1 - tl.t0) / (double)tl.nbins, sum = 0;
            for (size_t i = 0; i < tl.nbins; i++)
                sum += tl.jobs[k].w[i] * dt;
            tu_assert_near(sum, tl.jobs[k].energy_j, 1e-9 * (1 + fabs(sum)));
            total += tl.jobs[k].energy_j;
            double want = NAN;
            if (strcmp(tl.jobs[k].name, "idle") == 0)
                want = jget(run, "idle_joules");
            else if (strcmp(tl.jobs[k].name, "other") == 0)
                want = jget(run, "other_joules");
            else if (strcmp(tl.jobs[k].name, "unattributed") == 0)
                want = jget(run, "unattributed_joules");
            size_t q;
            const json_t *j;
            json_array_foreach(json_object_get(run, "jobs"), q,
                               j) if (strcmp(json_string_value(json_object_get(j, "name")),
                                             tl.jobs[k].name) == 0) want = jget(j, "joules");
            if (!isfinite(want))
                fail_msg("%s: job %s not in the report", dirs[d], tl.jobs[k].name);
            tu_assert_near(tl.jobs[k].energy_j, want, 1e-6 * (1 + fabs(want)));
        }
        /* the node's counters against the rows of attribution.csv, each rounded to 1 µJ */
        double node = jget(run, "node_total_joules");
        tu_assert_near(total, node, 1e-5 * (1 + node));
        assert_int_equal(tl.bin_t[tl.nbins - 1] == tl.t1, 1);
        runreport_timeline_free(&tl);
    }
    /* attribution.csv with a row past the run's last tick (a hand-edited directory): its period
     * starts where the window ends and falls outside every bin (it once wrote one past them) */
    tu_copy_fixture("rundir/run-cpu");
    char path[1200];
    snprintf(path, sizeof path, "%s/attribution.csv", tu_dir);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("1796046810.289353,rapl/package-0,full,5.0\r\n", f);
    fclose(f);
    for (size_t nb = 2; nb < 3000; nb += 97) {
        struct runreport_timeline tl;
        struct carma_err e = {0};
        if (runreport_timeline_load(tu_dir, NULL, nb, &tl, &e) < 0)
            fail_msg("%s", e.msg);
        double sum = 0;
        for (size_t k = 0; k < tl.njobs; k++)
            sum += tl.jobs[k].energy_j;
        tu_assert_near(sum, jget(json_array_get(tl.report, 0), "node_total_joules"),
                       1e-5 * (1 + sum));
        runreport_timeline_free(&tl);
    }
    /* a stat directory: no attribution, no bins */
    struct runreport_timeline tl;
    struct carma_err e = {0};
    assert_int_equal(runreport_timeline_load(fx("stat"), NULL, 100, &tl, &e), 0);
    assert_int_equal(tl.nbins, 0);
    assert_int_equal(tl.njobs, 0);
    runreport_timeline_free(&tl);
    runreport_timeline_free(&tl); /* twice: a zeroed struct */
}

/* ---- the page ---- */

static char *page_of(const char *dir)
{
    struct html_opts o = {.version = "9.9.9"};
    char *page = NULL;
    size_t len = 0;
    struct carma_err e = {0};
    int r = html_run(dir, NULL, &o, &page, &len, &e);
    if (r < 0)
        fail_msg("html_run(%s): %s", dir, e.msg);
    assert_int_equal(strlen(page), len);
    return page;
}

static void test_html_run_gpu(void **state)
{
    (void)state;
    char *p = page_of(fx("run-gpu"));
    static const char *const want[] = {
        "<!DOCTYPE html>",
        "<title>carma report: gpu2</title>",
        "<table id=\"jobs\">",
        ">small <span class=\"tag measured\">measured</span></td>",
        /* report.json's energy of "small" (113.288 J) and the run's (512.402 J) */
        "<td>113.3</td>",
        "<td>512.4</td>",
        "id=\"power-gpu\"",
        "data-label=\"nvml/gpu0\"",
        "data-label=\"nvml/gpu0/power_instant\"",
        "id=\"jobs-power\"",
        "id=\"jobs-energy\"",
        "id=\"jobs-co2e\"",
        "id=\"drift-table\"",
        "id=\"settings-table\"",
        "options.idle_policy",
        "id=\"warnings\"",
        "carma 9.9.9",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(p, want[i]))
            fail_msg("the page lacks %s", want[i]);
    assert_null(strstr(p, "nan"));
    /* nothing to fetch when it opens */
    assert_null(strstr(p, "<script"));
    assert_null(strstr(p, "<link"));
    assert_null(strstr(p, " src="));
    assert_null(strstr(p, "url("));
    free(p);

    p = page_of(fx("stat"));
    assert_non_null(strstr(p, "Node energy over the run"));
    /* the command's CPU energy (summary.json: 140.327 J, a share of 0.4045) */
    assert_non_null(strstr(p, "<table id=\"command\">"));
    assert_non_null(strstr(p, "carma-busy 1 <span class=\"tag measured\">"));
    assert_non_null(strstr(p, "<td>140.3</td><td>0.4045</td>"));
    assert_null(strstr(p, "id=\"jobs-power\""));
    free(p);
}

/* A copy of rundir/run-gpu with `"type": TYPE` added to workload "small" in file rel. */
static void add_type(const char *rel, const char *type)
{
    static char buf[1 << 20];
    char path[TU_DIR_MAX + 64], to[256];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_slurp(path, buf, sizeof buf);
    char *p = strstr(buf, "\"name\": \"small\",");
    assert_non_null(p);
    p += strlen("\"name\": \"small\",");
    snprintf(to, sizeof to, " \"type\": %s,", type);
    assert_true(strlen(buf) + strlen(to) < sizeof buf);
    memmove(p + strlen(to), p, strlen(p) + 1);
    memcpy(p, to, strlen(to));
    tu_put(rel, buf);
}

/* The workload's type (the experiment's kind) beside its name, escaped, in the jobs table and
 * its window; none where the run has none. */
static void test_html_type(void **state)
{
    (void)state;
    char *p = page_of(fx("run-gpu"));
    assert_null(strstr(p, "tag kind"));
    free(p);
    tu_copy_fixture("rundir/run-gpu");
    add_type("report.json", "\"fine<tune>\"");
    add_type("workloads.json", "\"fine<tune>\"");
    p = page_of(tu_dir);
    assert_non_null(strstr(p, ">small <span class=\"tag kind\">fine&lt;tune&gt;</span> <span "
                              "class=\"tag measured\">measured</span></td>"));
    assert_non_null(
        strstr(p, "<summary>workload small <span class=\"tag kind\">fine&lt;tune&gt;</span>: "));
    free(p);
}

static void test_html_errors(void **state)
{
    (void)state;
    char *page = NULL;
    size_t len = 0;
    struct carma_err e = {0};
    assert_int_equal(html_run("/nonexistent/carma-run", NULL, NULL, &page, &len, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/carma-run/manifest.json"));
    assert_null(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lttb_small),
        cmocka_unit_test(test_lttb_peak),
        cmocka_unit_test(test_lttb_gaps),
        cmocka_unit_test(test_nice_step),
        cmocka_unit_test(test_svg_lines),
        cmocka_unit_test(test_svg_stacked),
        cmocka_unit_test(test_svg_flat),
        cmocka_unit_test(test_svg_extreme),
        cmocka_unit_test_setup_teardown(test_timeline_sums, tu_setup, tu_teardown),
        cmocka_unit_test(test_html_run_gpu),
        cmocka_unit_test_setup_teardown(test_html_type, tu_setup, tu_teardown),
        cmocka_unit_test(test_html_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

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

/* ---- the marks' timeline ---- */

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Lanes: nested windows one below the other, touching ones on one lane, two beginning together
 * the longer first, each group its own block of lanes, at most SVG_LANES_MAX. */
static void test_svg_lanes(void **state)
{
    (void)state;
    struct svg_band b[] = {
        {.label = "outer", .x0 = 0, .x1 = 10, .group = "a"},
        {.label = "s1", .x0 = 1, .x1 = 3, .group = "a"},
        {.label = "s2", .x0 = 3, .x1 = 5, .group = "a"}, /* touches s1 */
        {.label = "in", .x0 = 3.5, .x1 = 4, .group = "a"},
        {.label = "b-long", .x0 = 2, .x1 = 9, .group = "b"},
        {.label = "b-short", .x0 = 2, .x1 = 3, .group = "b"},
        {.label = "b-after", .x0 = 9, .x1 = 12, .group = "b"},
        {.label = "late", .x0 = 11, .x1 = 12, .group = "a"}, /* after outer: its first lane */
    };
    size_t lanes = 99;
    assert_int_equal(svg_lanes(b, 8, &lanes), 0);
    assert_int_equal(lanes, 5);
    static const size_t want[] = {0, 1, 1, 2, 3, 4, 3, 0};
    for (size_t i = 0; i < 8; i++)
        if (b[i].lane != want[i])
            fail_msg("%s: lane %zu, expected %zu", b[i].label, b[i].lane, want[i]);
    assert_int_equal(svg_lanes(b, 0, &lanes), 0);
    assert_int_equal(lanes, 0);
    /* 100 nested: the deepest share the last lane */
    struct svg_band d[100];
    for (size_t i = 0; i < 100; i++)
        d[i] = (struct svg_band){.label = "n", .x0 = (double)i, .x1 = 1000.0 - (double)i};
    assert_int_equal(svg_lanes(d, 100, &lanes), 0);
    assert_int_equal(lanes, SVG_LANES_MAX);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(d[i].lane, i < SVG_LANES_MAX ? i : SVG_LANES_MAX - 1);
}

static char *capture_timeline(const struct svg_chart *c, const struct svg_band *b, size_t n,
                              const struct svg_tick *t, size_t nt, int *ret)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    *ret = svg_timeline(f, c, b, n, t, nt);
    fclose(f);
    return buf;
}

/* The bars on the fixed time axis (the plot from x 64 to 984 of 1000), labels that fit
 * (escaped, cut with "…"), the flagged one hatched, ticks within a pixel drawn as one, the
 * legend's names once each and no more than twelve. */
static void test_svg_timeline(void **state)
{
    (void)state;
    struct svg_band b[16] = {
        {.label = "a & <b>", .title = "tip \"a\"", .id = 1, .x0 = 100, .x1 = 150},
        {.label = "left", .id = 2, .x0 = 150, .x1 = 200, .flagged = true, .color = 1},
        {.label = "a-very-long-name-that-cannot-fit", .id = 3, .x0 = 110, .x1 = 113},
    };
    for (size_t i = 3; i < 16; i++) {
        static char names[16][8];
        snprintf(names[i], sizeof names[i], "n%zu", i);
        b[i] = (struct svg_band){
            .label = names[i], .id = (long long)i + 1, .x0 = 120, .x1 = 121, .color = (int)i};
    }
    size_t lanes;
    assert_int_equal(svg_lanes(b, 16, &lanes), 0);
    struct svg_tick t[3] = {{.title = "loss = 1", .x = 130},
                            {.title = "loss = 2", .x = 130.01},
                            {.title = "x", .x = 190}};
    struct svg_chart c = {.id = "marks-timeline",
                          .title = "M",
                          .x_label = "time",
                          .x0 = 100,
                          .width = 1000,
                          .x_fixed = true,
                          .x_min = 100,
                          .x_max = 200,
                          .flag_note = "hatched: unended"};
    int r;
    char *out = capture_timeline(&c, b, 16, t, 3, &r);
    assert_int_equal(r, 0);
    assert_int_equal(count(out, "<g class=\"mark\""), 16);
    /* 100..150 of 100..200 over 64..984 */
    assert_non_null(strstr(out, "data-id=\"1\" data-start=\"100.000000\" data-end=\"150.000000\" "
                                "data-lane=\"0\"><title>tip &quot;a&quot;</title><rect "
                                "x=\"64.00\""));
    assert_non_null(strstr(out, "width=\"460.00\""));
    assert_non_null(strstr(out, ">a &amp; &lt;b&gt;</text>"));
    assert_int_equal(count(out, "data-flagged=\"true\""), 1);
    assert_int_equal(count(out, "class=\"hatch\""), 1);
    assert_non_null(strstr(out, ">left (unended)</text>"));
    /* 3 s of 100 s: 27.6 px, room for two characters and the ellipsis */
    assert_non_null(strstr(out, ">a-…</text>"));
    assert_int_equal(count(out, "<g class=\"tick\""), 2);
    assert_non_null(strstr(out, "data-count=\"2\"><title>2 events: loss = 1; loss = 2</title>"));
    assert_non_null(strstr(out, "<li>and more</li>"));
    assert_non_null(strstr(out, "hatched: unended"));
    assert_null(strstr(out, "nan"));
    assert_null(strstr(out, "inf"));
    assert_null(strstr(out, "url("));
    free(out);
    assert_int_equal(svg_timeline(stdout, &c, b, 0, t, 0), -EINVAL);
    /* a band behind a chart's lines: the same pixels as the bar */
    double x[2] = {100, 200}, y[2] = {1, 2};
    struct svg_series s = {.label = "w", .x = x, .y = y, .n = 2};
    c.bands = b;
    c.nbands = 1;
    c.id = "lines";
    out = capture_lines(&c, &s, 1, &r);
    assert_int_equal(r, 0);
    assert_non_null(strstr(out, "<rect class=\"band\" data-id=\"1\" x=\"64.00\" y=\"30.0\" "
                                "width=\"460.00\""));
    free(out);
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

/* marks.csv of rundir/run-cpu's workloads: nested, touching, another workload's window ended
 * by full, an unended one, a short one, events, names to escape. */
static const char run_cpu_marks[] =
    "schema_version,event,id,name,timestamp_unix,pid,workload,tokens,requests,value\n"
    "1,begin,1,epoch,1796046807.300000,15289,full,100,,\n"
    "1,begin,2,step,1796046807.350000,15289,full,,,\n"
    "1,end,2,step,1796046807.750000,15289,full,,,\n"
    "1,begin,3,step,1796046807.750000,15289,full,,,\n"
    "1,begin,4,\"load, cold\",1796046807.800000,15290,sleeper,,,\n"
    "1,event,,loss,1796046808.000000,15289,full,,,0.5\n"
    "1,end,3,step,1796046808.200000,15289,full,,,\n"
    "1,end,1,epoch,1796046808.500000,15289,full,1000,,\n"
    "1,begin,5,eval <all>,1796046808.550000,15289,full,,,\n"
    "1,end,4,\"load, cold\",1796046808.600000,15289,full,,2,\n"
    "1,begin,6,short,1796046808.700000,15290,sleeper,,,\n"
    "1,event,,ckpt,1796046808.720000,15290,sleeper,,,3\n"
    "1,end,6,short,1796046808.750000,15290,sleeper,,,\n"
    "1,unended,5,eval <all>,1796046809.289353,,,,,\n";

/* The marks over the power charts: a bar per window in its workload's lanes, the first lanes'
 * windows as bands behind each power chart, the events, the table, each window's summary;
 * none of it without marks. */
static void test_html_marks(void **state)
{
    (void)state;
    char *p = page_of(fx("run-cpu"));
    assert_null(strstr(p, "marks-timeline"));
    assert_null(strstr(p, "class=\"band\""));
    assert_null(strstr(p, "marks-table"));
    free(p);
    tu_copy_fixture("rundir/run-cpu");
    tu_put("marks.csv", run_cpu_marks);
    p = page_of(tu_dir);
    assert_non_null(strstr(p, "<figure class=\"chart\" id=\"marks-timeline\">"));
    assert_non_null(strstr(p, ">Marked windows (6) and events (2)</text>"));
    assert_int_equal(count(p, "<g class=\"mark\""), 6);
    /* full's lanes (epoch and eval; the steps), then sleeper's */
    assert_non_null(strstr(p, "data-id=\"1\" data-start=\"1796046807.300000\" "
                              "data-end=\"1796046808.500000\" data-lane=\"0\""));
    assert_non_null(strstr(p, "data-id=\"3\" data-start=\"1796046807.750000\" "
                              "data-end=\"1796046808.200000\" data-lane=\"1\""));
    assert_non_null(strstr(p, "data-id=\"4\" data-start=\"1796046807.800000\" "
                              "data-end=\"1796046808.600000\" data-lane=\"2\""));
    assert_non_null(strstr(p, "data-lane=\"0\" data-flagged=\"true\"><title>eval &lt;all&gt; "
                              "(mark 5)\nworkload full\n"));
    assert_non_null(strstr(p, "<title>load, cold (mark 4)\nworkload sleeper, ended by full\n"));
    assert_non_null(strstr(p, ">sleeper</text>"));
    assert_int_equal(count(p, "<g class=\"tick\""), 2);
    /* epoch, eval, load, short behind the CPU and the DRAM chart */
    assert_int_equal(count(p, "<rect class=\"band\""), 8);
    assert_non_null(strstr(p, "<table id=\"marks-table\">"));
    assert_int_equal(count(p, "<tr data-id=\""), 6);
    assert_non_null(strstr(p, "<td class=\"l\">sleeper, ended by full</td>"));
    assert_non_null(strstr(p, ">eval &lt;all&gt; <span class=\"tag estimated\">unended</span>"));
    assert_non_null(strstr(p, "<summary>mark load, cold (id 4, workload sleeper): "));
    assert_null(strstr(p, "nan"));
    assert_null(strstr(p, "url("));
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
        cmocka_unit_test(test_svg_lanes),
        cmocka_unit_test(test_svg_timeline),
        cmocka_unit_test_setup_teardown(test_timeline_sums, tu_setup, tu_teardown),
        cmocka_unit_test(test_html_run_gpu),
        cmocka_unit_test_setup_teardown(test_html_type, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_html_marks, tu_setup, tu_teardown),
        cmocka_unit_test(test_html_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

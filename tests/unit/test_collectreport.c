/*
 * Unit tests for report/collectreport: carma report of a carma collect directory.
 *
 * Every directory is written here, a few rows each, and the figures checked were worked out
 * by hand (the comments show the arithmetic): a counter's difference against the trapezoid of
 * the same channel's watts, a reset skipped, a gap over the limit left out (and its node
 * reported down), windows that reach past the first or last sample, and the node rule (the
 * nodes.csv total; a dcgm-exporter GPU added only to a node without a carma GPU channel).
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/collectreport.h"

#define SH                                                                                         \
    "schema_version,timestamp_unix,scrape_seq,node,target,channel,source,kind,domain,method,"      \
    "watts,joules_total\r\n"
#define NH                                                                                         \
    "schema_version,timestamp_unix,scrape_seq,node,target,method,watts,joules_total,"              \
    "cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n"

static void put_dir(const char *samples, const char *nodes)
{
    tu_put("c/manifest.json", "{\"producer\": \"carma collect\", \"options\": {\"interval_s\": 1}, "
                              "\"job_id\": \"42\", \"status\": \"complete\"}\n");
    tu_put("c/samples.csv", samples);
    char p[TU_DIR_MAX + 16];
    snprintf(p, sizeof p, "%s/c/nodes.csv", tu_dir);
    if (nodes)
        tu_put("c/nodes.csv", nodes);
    else
        unlink(p);
}

static char dirbuf[TU_DIR_MAX + 8];

static const char *cdir(void)
{
    snprintf(dirbuf, sizeof dirbuf, "%s/c", tu_dir);
    return dirbuf;
}

static json_t *build(const struct collectreport_opts *o)
{
    json_t *j = NULL;
    struct carma_err e = {0};
    int r = collectreport_build(cdir(), o, &j, &e);
    if (r < 0)
        fail_msg("collectreport_build: %d %s", r, e.msg);
    assert_string_equal(json_string_value(json_object_get(j, "kind")), "collect");
    return j;
}

static void build_fails(const char *needle)
{
    json_t *j = NULL;
    struct carma_err e = {0};
    int r = collectreport_build(cdir(), NULL, &j, &e);
    if (r >= 0)
        fail_msg("collectreport_build succeeded; wanted an error with '%s'", needle);
    assert_null(j);
    if (!strstr(e.msg, needle))
        fail_msg("'%s' does not hold '%s'", e.msg, needle);
}

static const json_t *win(const json_t *j, const char *name)
{
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(j, "windows"), i, w)
    {
        if (strcmp(json_string_value(json_object_get(w, "name")), name) == 0)
            return w;
    }
    fail_msg("no window %s", name);
    return NULL;
}

static const json_t *item(const json_t *w, const char *list, const char *key, const char *val)
{
    size_t i;
    const json_t *o;
    json_array_foreach(json_object_get(w, list), i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, key)), val) == 0)
            return o;
    }
    fail_msg("no %s %s=%s", list, key, val);
    return NULL;
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("%s is not a number", key);
    return json_number_value(v);
}

/* watts 10,20,20,10,10 at 100..104; the counter 0,16,36,52,62 (its steps 16,20,16,10 differ
 * from the trapezoid's 15,20,15,10 on purpose). */
#define ONE_NODE                                                                                   \
    SH "1,100.000000,0,n1,n1:9405,c,rapl,cpu,total,measured,10,0\r\n"                              \
       "1,101.000000,1,n1,n1:9405,c,rapl,cpu,total,measured,20,16\r\n"                             \
       "1,102.000000,2,n1,n1:9405,c,rapl,cpu,total,measured,20,36\r\n"                             \
       "1,103.000000,3,n1,n1:9405,c,rapl,cpu,total,measured,10,52\r\n"                             \
       "1,104.000000,4,n1,n1:9405,c,rapl,cpu,total,measured,10,62\r\n"

static void counter_vs_trapezoid(void **state)
{
    (void)state;
    put_dir(ONE_NODE, NULL);
    struct collectreport_window w[2] = {
        {.name = "mid", .start = 100.5, .end = 102.5, .tokens = 360, .requests = NAN},
        {.name = "early", .start = 95, .end = 101.5, .tokens = NAN, .requests = NAN},
    };
    struct collectreport_opts o = {.windows = w, .nwindows = 2};
    json_t *j = build(&o);
    const json_t *run = win(j, "run");
    tu_assert_near(num(run, "start_unix"), 100, 0);
    tu_assert_near(num(run, "end_unix"), 104, 0);
    const json_t *c = item(run, "channels", "channel", "c");
    assert_string_equal(json_string_value(json_object_get(c, "energy_source")), "counter");
    tu_assert_near(num(c, "energy_j"), 62, 1e-12);    /* 62 - 0 */
    tu_assert_near(num(c, "trapezoid_j"), 60, 1e-12); /* 15 + 20 + 15 + 10 */
    tu_assert_near(num(c, "drift_pct"), (60.0 - 62.0) / 62.0 * 100.0, 1e-12);
    tu_assert_near(num(c, "avg_power_w"), 62.0 / 4, 1e-12);
    tu_assert_near(num(c, "p50_w"), 10, 0); /* of 10,10,10,20,20 */
    tu_assert_near(num(c, "max_w"), 20, 0);
    tu_assert_near(num(c, "p25_w"), 10, 1e-12);
    tu_assert_near(num(c, "p75_w"), 20, 1e-12);
    tu_assert_near(num(c, "p95_w"), 20, 1e-12);
    /* the node: its total-domain channel, no nodes.csv (a warning says so) */
    const json_t *n = item(run, "nodes", "node", "n1");
    tu_assert_near(num(n, "energy_j"), 62, 1e-12);
    assert_string_equal(json_string_value(json_object_get(n, "method")), "measured");
    assert_string_equal(json_string_value(json_object_get(n, "basis")), "channels");
    assert_false(json_is_true(json_object_get(n, "down")));
    /* carbon: WORLD 475 g/kWh, PUE 1 */
    tu_assert_near(num(json_object_get(n, "carbon"), "g_co2e"), 62 / 3.6e6 * 475, 1e-12);
    /* [100.5, 102.5]: counter 16 x 0.5 + 20 + 16 x 0.5 = 36; trapezoid 0.5 x (15 + 20) / 2 +
     * 20 + 0.5 x (20 + 15) / 2 = 37.5; statistics over the samples at 101, 102 */
    const json_t *mid = win(j, "mid");
    c = item(mid, "channels", "channel", "c");
    tu_assert_near(num(c, "energy_j"), 36, 1e-12);
    tu_assert_near(num(c, "trapezoid_j"), 37.5, 1e-12);
    tu_assert_near(num(c, "p5_w"), 20, 0);
    assert_int_equal(json_integer_value(json_object_get(c, "stat_samples")), 2);
    const json_t *job = json_object_get(mid, "job");
    tu_assert_near(num(job, "energy_j"), 36, 1e-12);
    tu_assert_near(num(job, "j_per_token"), 36.0 / 360, 1e-15);
    /* 360 tokens / 2 s over 36 J / 2 s */
    tu_assert_near(num(job, "tokens_per_s_per_w"), 180.0 / 18.0, 1e-12);
    /* [95, 101.5]: nothing before 100 (5 s, over the 3 s limit: down); 16 + 20 x 0.5 */
    const json_t *early = win(j, "early");
    n = item(early, "nodes", "node", "n1");
    tu_assert_near(num(n, "energy_j"), 26, 1e-12);
    tu_assert_near(num(n, "covered_s"), 1.5, 1e-12);
    tu_assert_near(num(n, "missing_s"), 5, 1e-12);
    assert_true(json_is_true(json_object_get(n, "down")));
    tu_assert_near(num(n, "down_s"), 5, 1e-12);
    assert_int_equal(json_array_size(json_object_get(early, "warnings")), 1);
    assert_non_null(strstr(json_string_value(json_array_get(json_object_get(early, "warnings"), 0)),
                           "node n1 was down for 5.000 s of 6.500 s"));
    json_decref(j);
}

static void snap(void **state)
{
    (void)state;
    put_dir(ONE_NODE, NULL);
    /* --edges snap: [100.4, 102.6] snaps to the samples at 100 and 103: 15 + 20 + 15, the
     * trapezoid (the counter is not used with snapped edges) */
    struct collectreport_window w = {
        .name = "w", .start = 100.4, .end = 102.6, .tokens = NAN, .requests = NAN};
    struct collectreport_opts o = {.edges = SERIES_EDGES_SNAP, .windows = &w, .nwindows = 1};
    json_t *j = build(&o);
    const json_t *c = item(win(j, "w"), "channels", "channel", "c");
    tu_assert_near(num(c, "energy_j"), 50, 1e-12);
    assert_string_equal(json_string_value(json_object_get(c, "energy_source")), "trapezoid");
    assert_string_equal(json_string_value(json_object_get(j, "edges")), "snap");
    json_decref(j);
}

static void reset(void **state)
{
    (void)state;
    /* the exporter restarted before 103: 36 -> 5 is a reset, skipped; 16 + 20 + 10 */
    put_dir(SH "1,100,0,n1,n1:9405,c,rapl,cpu,total,measured,10,0\r\n"
               "1,101,1,n1,n1:9405,c,rapl,cpu,total,measured,20,16\r\n"
               "1,102,2,n1,n1:9405,c,rapl,cpu,total,measured,20,36\r\n"
               "1,103,3,n1,n1:9405,c,rapl,cpu,total,measured,10,5\r\n"
               "1,104,4,n1,n1:9405,c,rapl,cpu,total,measured,10,15\r\n",
            NULL);
    json_t *j = build(NULL);
    const json_t *c = item(win(j, "run"), "channels", "channel", "c");
    tu_assert_near(num(c, "energy_j"), 46, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(c, "resets")), 1);
    tu_assert_near(num(c, "trapezoid_j"), 60, 1e-12);
    json_decref(j);
}

static void gap(void **state)
{
    (void)state;
    /* 100..102, blank rows 103..109, 110..111: the 8 s gap is over the 3 s limit */
    char s[4096] = SH;
    for (int k = 0; k <= 11; k++) {
        char row[128];
        if (k >= 3 && k <= 9)
            snprintf(row, sizeof row, "1,%d,%d,n1,n1:9405,,,,,,,\r\n", 100 + k, k);
        else
            snprintf(row, sizeof row, "1,%d,%d,n1,n1:9405,c,rapl,cpu,total,measured,10,\r\n",
                     100 + k, k);
        strcat(s, row);
    }
    put_dir(s, NULL);
    json_t *j = build(NULL);
    const json_t *run = win(j, "run");
    const json_t *n = item(run, "nodes", "node", "n1");
    tu_assert_near(num(n, "energy_j"), 30, 1e-12); /* 10 W over 2 s + 1 s */
    tu_assert_near(num(n, "covered_s"), 3, 1e-12);
    tu_assert_near(num(n, "missing_s"), 8, 1e-12);
    tu_assert_near(num(n, "avg_power_w"), 10, 1e-12);
    tu_assert_near(num(n, "down_s"), 8, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(n, "blank_rows")), 7);
    const json_t *c = item(run, "channels", "channel", "c");
    assert_string_equal(json_string_value(json_object_get(c, "energy_source")), "trapezoid");
    const json_t *cov = json_array_get(json_object_get(j, "coverage"), 0);
    tu_assert_near(num(cov, "largest_gap_s"), 8, 0);
    tu_assert_near(num(cov, "first_sample_unix"), 100, 0);
    tu_assert_near(num(cov, "last_sample_unix"), 111, 0);
    const char *msg = json_string_value(json_array_get(json_object_get(run, "warnings"), 0));
    assert_non_null(strstr(msg, "node n1 was down for 8.000 s of 11.000 s"));
    assert_non_null(strstr(msg, "7 scrapes gave nothing"));
    /* a limit of 10 s interpolates across it: 10 W over 11 s */
    struct collectreport_opts o = {.max_gap_s = 10};
    json_decref(j);
    j = build(&o);
    tu_assert_near(num(item(win(j, "run"), "nodes", "node", "n1"), "energy_j"), 110, 1e-12);
    json_decref(j);
}

static void node_rule(void **state)
{
    (void)state;
    /* n1: nodes.csv 100 W, a carma GPU (nvml) and a dcgm GPU: the node is nodes.csv alone;
     * n2: nodes.csv 80 W, no carma GPU: its dcgm GPU (200 W) is added */
    char s[8192] = SH, n[4096] = NH;
    for (int k = 0; k <= 4; k++) {
        char row[512];
        snprintf(row, sizeof row,
                 "1,%d,%d,n1,n1:9405,rapl/package-0,rapl,cpu,total,measured,40,\r\n"
                 "1,%d,%d,n1,n1:9405,rapl/package-0/core,rapl,cpu,component,measured,25,\r\n"
                 "1,%d,%d,n1,n1:9405,nvml/gpu0,nvml,gpu,total,measured,50,\r\n"
                 "1,%d,%d,n1,n1:9400,dcgm/gpu0,dcgm,gpu,total,measured,55,\r\n"
                 "1,%d,%d,n2,n2:9405,rapl/package-0,rapl,cpu,total,estimated,30,\r\n"
                 "1,%d,%d,n2,n2:9400,dcgm/gpu0,dcgm,gpu,total,measured,200,\r\n",
                 100 + k, k, 100 + k, k, 100 + k, k, 100 + k, k, 100 + k, k, 100 + k, k);
        strcat(s, row);
        snprintf(row, sizeof row,
                 "1,%d,%d,n1,n1:9405,measured,100,,0.5,0.4,0,0.1,0\r\n"
                 "1,%d,%d,n2,n2:9405,estimated,80,,0.5,0.4,0,0.1,0\r\n",
                 100 + k, k, 100 + k, k);
        strcat(n, row);
    }
    put_dir(s, n);
    char r1[] = "n2=FRA", r0[] = "DEU";
    struct collectreport_region reg[2];
    struct carma_err e = {0};
    assert_int_equal(collectreport_region_parse(r1, &reg[0], &e), 0);
    assert_int_equal(collectreport_region_parse(r0, &reg[1], &e), 0);
    struct collectreport_opts o = {.regions = reg, .nregions = 2};
    json_t *j = build(&o);
    const json_t *run = win(j, "run");
    const json_t *n1 = item(run, "nodes", "node", "n1"), *n2 = item(run, "nodes", "node", "n2");
    tu_assert_near(num(n1, "energy_j"), 400, 1e-12);
    assert_string_equal(json_string_value(json_object_get(n1, "basis")), "nodes.csv");
    assert_int_equal(json_integer_value(json_object_get(n1, "dcgm_gpus_added")), 0);
    tu_assert_near(num(n2, "energy_j"), 80 * 4 + 200 * 4, 1e-12);
    assert_int_equal(json_integer_value(json_object_get(n2, "dcgm_gpus_added")), 1);
    tu_assert_near(num(n2, "p50_w"), 280, 1e-12);
    /* n2's 320 J of its total is estimated, the dcgm GPU measured */
    assert_string_equal(json_string_value(json_object_get(n2, "method")), "measured+estimated");
    tu_assert_near(num(n2, "estimated_j"), 320, 1e-12);
    /* kinds: gpu = n1's nvml 200 + n2's dcgm 800 (n1's dcgm not counted); cpu 160 + 120 (the
     * component channel not counted) */
    tu_assert_near(num(item(run, "kinds", "kind", "gpu"), "energy_j"), 1000, 1e-12);
    tu_assert_near(num(item(run, "kinds", "kind", "cpu"), "energy_j"), 280, 1e-12);
    const json_t *job = json_object_get(run, "job");
    tu_assert_near(num(job, "energy_j"), 1520, 1e-12);
    tu_assert_near(num(job, "avg_power_w"), 380, 1e-12);
    tu_assert_near(num(job, "p50_w"), 380, 1e-12);
    assert_string_equal(json_string_value(json_object_get(job, "method")), "measured+estimated");
    /* regions: n2 its own, n1 the default */
    assert_string_equal(json_string_value(json_object_get(json_object_get(n2, "carbon"), "region")),
                        "FRA");
    assert_string_equal(json_string_value(json_object_get(json_object_get(n1, "carbon"), "region")),
                        "DEU");
    const json_t *cb = json_object_get(n1, "carbon");
    tu_assert_near(num(cb, "g_co2e"), 400 / 3.6e6 * num(cb, "g_per_kwh"), 1e-12);
    char *text = collectreport_text(j);
    assert_non_null(text);
    assert_non_null(strstr(text, "node n2"));
    free(text);
    json_decref(j);
    /* the timeline: each node's power at its first part's times, its other parts added */
    struct collectreport_timeline tl;
    assert_int_equal(collectreport_timeline_load(cdir(), &o, &tl, &e), 0);
    assert_int_equal(tl.nnodes, 2);
    assert_string_equal(tl.nodes[1].node, "n2");
    assert_int_equal(tl.nodes[1].n, 5);
    for (size_t k = 0; k < 5; k++) {
        tu_assert_near(tl.nodes[1].t[k], 100 + (double)k, 0);
        tu_assert_near(tl.nodes[1].w[k], 280, 0);
        tu_assert_near(tl.nodes[0].w[k], 100, 0);
    }
    tu_assert_near(tl.t0, 100, 0);
    tu_assert_near(tl.t1, 104, 0);
    collectreport_timeline_free(&tl);
}

static void malformed(void **state)
{
    (void)state;
    put_dir(SH "1,100,0,n1,n1:9405,c,rapl,cpu,total,measured,10,0\r\n"
               "1,101,1,n1,n1:9405,c,rapl,cpu,total,measured,abc,16\r\n",
            NULL);
    build_fails("c/samples.csv:3: watts: 'abc' is not a finite number");
    put_dir(SH "1,100,0,n1,n1:9405,c,rapl,cpu,total,measured,10\r\n", NULL);
    build_fails("c/samples.csv:2: 11 fields, the header has 12");
    put_dir(SH "2,100,0,n1,n1:9405,c,rapl,cpu,total,measured,10,0\r\n", NULL);
    build_fails("c/samples.csv:2: schema_version: '2' is not 1");
    put_dir("schema_version,timestamp_unix\r\n1,100\r\n", NULL);
    build_fails("c/samples.csv:1: not the header of carma collect's samples.csv");
    put_dir(SH "1,100,x,n1,n1:9405,c,rapl,cpu,total,measured,10,0\r\n", NULL);
    build_fails("c/samples.csv:2: scrape_seq: 'x' is not a cycle number");
    put_dir(ONE_NODE, NH "1,100,0,n1,n1:9405,measured,1e999,,,,,,\r\n");
    build_fails("c/nodes.csv:2: watts: '1e999' is not a finite number");
    /* a torn last line: skipped, with a warning */
    put_dir(ONE_NODE "1,105.000000,5,n1,n1:9405,c,rapl,cpu,tot", NULL);
    json_t *j = build(NULL);
    tu_assert_near(num(win(j, "run"), "end_unix"), 104, 0);
    const char *w = json_string_value(json_array_get(json_object_get(j, "warnings"), 0));
    assert_non_null(strstr(w, "c/samples.csv:7: the last line has no line end"));
    json_decref(j);
}

static void windows_files(void **state)
{
    (void)state;
    struct collectreport_window *v = NULL;
    size_t n = 0, cap = 0;
    struct carma_err e = {0};
    char p[TU_DIR_MAX + 16];
    snprintf(p, sizeof p, "%s/w.csv", tu_dir);
    tu_put("w.csv", "name,start,end,tokens\n"
                    "a,100,200,1000\n"
                    "b,2026-11-30T00:00:00Z,2026-11-30T02:00:00+01:00,\n");
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), 2);
    assert_string_equal(v[0].name, "a");
    tu_assert_near(v[0].tokens, 1000, 0);
    tu_assert_near(v[1].start, 1795996800, 0);
    tu_assert_near(v[1].end, 1795996800 + 3600, 0);
    assert_true(isnan(v[1].tokens));
    tu_put("w.csv", "name,start,end\na,100,200\nb,1OO,200\n");
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "w.csv:3: start: '1OO'"));
    tu_put("w.csv", "name,start,end\na,300,200\n");
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "w.csv:2: end: not after start"));
    tu_put("w.csv", "name,begin,end\n");
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "w.csv:1: no column 'start'"));
    snprintf(p, sizeof p, "%s/w.json", tu_dir);
    tu_put("w.json", "[\n  {\"name\": \"x\", \"start\": 100, \"end\": 150, \"tokens\": 5},\n"
                     "  {\"name\": \"y\",\n   \"start\": \"2026-11-30T00:00:00Z\",\n"
                     "   \"end\": 1795996860, \"requests\": 3}\n]\n");
    n = 0;
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), 2);
    tu_assert_near(v[1].start, 1795996800, 0);
    tu_assert_near(v[1].requests, 3, 0);
    tu_put("w.json", "[\n  {\"name\": \"x\", \"start\": 100, \"end\": 150},\n"
                     "  {\"name\": \"y\",\n   \"start\": true, \"end\": 3}\n]\n");
    assert_int_equal(collectreport_windows_load(p, &v, &n, &cap, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "w.json:3: start: not a time"));
    free(v);
    /* --window */
    struct collectreport_window w;
    assert_int_equal(collectreport_window_parse("bench=2026-11-30T00:00:00Z,1795996860.5", &w, &e),
                     0);
    assert_string_equal(w.name, "bench");
    tu_assert_near(w.start, 1795996800, 0);
    tu_assert_near(w.end, 1795996860.5, 0);
    assert_int_equal(collectreport_window_parse("bench=200,100", &w, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "the end is not after the start"));
    assert_int_equal(collectreport_window_parse("bench=100", &w, &e), -EINVAL);
    assert_int_equal(collectreport_window_parse("bench=2026-11-30T00:00:00,200", &w, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "UTC offset"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counter_vs_trapezoid, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(snap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(reset, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(gap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(node_rule, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(malformed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(windows_files, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

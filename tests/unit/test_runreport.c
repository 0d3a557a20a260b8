/*
 * Unit tests for report/runreport: `carma report` on run directories carma wrote itself.
 *
 * The fixtures (tests/fixtures/rundir, see its README) are real run directories, trimmed:
 * run-cpu (carma run, two workloads on the simulated intel-2s power plant, 200 ms ticks),
 * run-gpu (carma run, two workloads on the fake NVML GPU, utilization.csv) and stat (carma
 * stat). The figures checked were worked out by hand (with a few lines of Python) from the
 * fixtures' CSV files: a channel's window energy against the joules_total difference, the
 * snap energy against the trapezoid over the snapped ticks, the sum rule of the attribution,
 * the boundaries of each workload's window. Malformed inputs are copies of a fixture edited in
 * a scratch directory.
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/runreport.h"

/* run-cpu's run: the tick that ended the baseline .. the last tick */
#define CPU_RUN_START 1796046807.282001
#define CPU_RUN_END   1796046809.289353
/* its workloads (workloads.json) */
#define CPU_SLEEPER_START 1796046807.782514
#define CPU_SLEEPER_END   1796046808.794069

static char fixture[1024];

static const char *fx(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "rundir/%s", name);
    tu_fixture_path(fixture, sizeof fixture, rel);
    return fixture;
}

static json_t *build_ok(const char *dir, enum series_edges edges)
{
    struct runreport_opts o = {.edges = edges};
    json_t *j = NULL;
    struct carma_err e = {0};
    int r = runreport_build(dir, &o, &j, &e);
    if (r < 0)
        fail_msg("runreport_build(%s): %d %s", dir, r, e.msg);
    assert_non_null(j);
    assert_true(json_is_array(j));
    return j;
}

/* runreport_build must fail with code, and its message hold each of the needles. */
static void build_fails(int code, const char *needle1, const char *needle2)
{
    struct runreport_opts o = {.edges = SERIES_EDGES_INTERPOLATE};
    json_t *j = NULL;
    struct carma_err e = {0};
    int r = runreport_build(tu_dir, &o, &j, &e);
    if (r != code)
        fail_msg("expected %d, got %d (%s)", code, r, e.msg);
    assert_null(j);
    if (needle1 && !strstr(e.msg, needle1))
        fail_msg("'%s' not in '%s'", needle1, e.msg);
    if (needle2 && !strstr(e.msg, needle2))
        fail_msg("'%s' not in '%s'", needle2, e.msg);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("%s is not a number", key);
    return json_number_value(v);
}

static const json_t *find_label(const json_t *arr, const char *key, const char *label)
{
    size_t k;
    const json_t *v;
    json_array_foreach(arr, k, v)
    {
        if (strcmp(json_string_value(json_object_get(v, key)), label) == 0)
            return v;
    }
    fail_msg("no %s '%s'", key, label);
    return NULL;
}

static const json_t *chan(const json_t *win, const char *label)
{
    return find_label(json_object_get(win, "per_channel"), "label", label);
}

static const json_t *job(const json_t *win, const char *name)
{
    return find_label(json_object_get(win, "jobs"), "name", name);
}

static bool has_warning(const json_t *win, const char *needle)
{
    size_t k;
    const json_t *v;
    json_array_foreach(json_object_get(win, "warnings"), k, v)
    {
        if (strstr(json_string_value(v), needle))
            return true;
    }
    return false;
}

static void assert_keys(const json_t *o, const char *const *keys, size_t n)
{
    assert_int_equal(json_object_size(o), n);
    const char *key;
    const json_t *v;
    size_t k = 0;
    json_object_foreach((json_t *)o, key, v)
    {
        if (strcmp(key, keys[k]) != 0)
            fail_msg("key %zu is '%s', expected '%s'", k, key, keys[k]);
        k++;
    }
}

static void assert_rel(double a, double b, double rel)
{
    if (!(fabs(a - b) <= rel * fabs(b)))
        fail_msg("%.17g and %.17g differ by more than %g relative", a, b, rel);
}

/* ---- editing a copy of a fixture ---- */

static char filebuf[1 << 20];

static void edit(const char *rel, const char *from, const char *to)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_slurp(path, filebuf, sizeof filebuf);
    char *p = strstr(filebuf, from);
    if (!p)
        fail_msg("'%s' not in %s", from, rel);
    size_t fl = strlen(from), tl = strlen(to), rest = strlen(p + fl);
    assert_true(strlen(filebuf) + tl < sizeof filebuf);
    memmove(p + tl, p + fl, rest + 1);
    memcpy(p, to, tl);
    tu_put(rel, filebuf);
}

static void remove_file(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    assert_int_equal(remove(path), 0);
}

/* ---- tests ---- */

static void is_run_dir(void **state)
{
    (void)state;
    assert_true(runreport_is_run_dir(fx("run-cpu")));
    assert_true(runreport_is_run_dir(fx("run-gpu")));
    assert_true(runreport_is_run_dir(fx("stat")));
    assert_false(runreport_is_run_dir(fx("nonexistent")));
    assert_false(runreport_is_run_dir(NULL));
    char dir[1024];
    tu_fixture_path(dir, sizeof dir, "srt/sabench");
    assert_false(runreport_is_run_dir(dir));
    tu_put("manifest.json", "{\"schema_version\": 1, \"producer\": \"carma collect\"}\n");
    assert_false(runreport_is_run_dir(tu_dir));
    tu_put("manifest.json", "{\"producer\": \"carma run\"\n");
    assert_false(runreport_is_run_dir(tu_dir));
    tu_put("manifest.json", "{\"producer\": \"carma stat\"}\n");
    assert_true(runreport_is_run_dir(tu_dir));
}

static void cpu_windows_and_keys(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-cpu"), SERIES_EDGES_INTERPOLATE);
    assert_int_equal(json_array_size(rep), 3);
    static const char *const wkeys[] = {"window",
                                        "name",
                                        "start_unix",
                                        "end_unix",
                                        "duration_seconds",
                                        "edges",
                                        "per_channel",
                                        "per_node",
                                        "node_total_joules",
                                        "jobs",
                                        "idle_joules",
                                        "other_joules",
                                        "unattributed_joules",
                                        "events",
                                        "carbon",
                                        "gpu_utilization",
                                        "warnings"};
    static const char *const bkeys[] = {"label",
                                        "joules",
                                        "avg_power_w",
                                        "sample_start_unix",
                                        "sample_end_unix",
                                        "samples",
                                        "mean_w",
                                        "min_w",
                                        "p5_w",
                                        "p50_w",
                                        "p95_w",
                                        "p99_w",
                                        "max_w",
                                        "kind",
                                        "domain",
                                        "method"};
    static const char *const ckeys[] = {"g_per_kwh", "pue", "intensity_source",
                                        "operational_g_co2e", "embodied_g_co2e"};
    static const char *const jkeys[] = {"name", "joules", "share", "by_channel"};
    const json_t *run = json_array_get(rep, 0);
    for (size_t k = 0; k < 3; k++) {
        const json_t *w = json_array_get(rep, k);
        assert_keys(w, wkeys, 17);
        assert_keys(json_array_get(json_object_get(w, "per_channel"), 0), bkeys, 16);
        assert_keys(json_array_get(json_object_get(w, "per_node"), 0), bkeys, 16);
        assert_keys(json_object_get(w, "carbon"), ckeys, 5);
        assert_keys(json_array_get(json_object_get(w, "jobs"), 0), jkeys, 4);
        assert_string_equal(json_string_value(json_object_get(w, "edges")), "interpolate");
        assert_int_equal(json_array_size(json_object_get(w, "per_channel")), 6);
        assert_int_equal(json_array_size(json_object_get(w, "gpu_utilization")), 0);
        assert_int_equal(json_array_size(json_object_get(w, "warnings")), 0);
    }
    /* the run: from the tick that ended the baseline to the last tick */
    assert_string_equal(json_string_value(json_object_get(run, "window")), "run");
    assert_true(json_is_null(json_object_get(run, "name")));
    assert_true(num(run, "start_unix") == CPU_RUN_START);
    assert_true(num(run, "end_unix") == CPU_RUN_END);
    /* the workloads, in workloads.json's order, over their lifetimes */
    const json_t *full = json_array_get(rep, 1), *sl = json_array_get(rep, 2);
    assert_string_equal(json_string_value(json_object_get(full, "window")), "workload");
    assert_string_equal(json_string_value(json_object_get(full, "name")), "full");
    assert_string_equal(json_string_value(json_object_get(sl, "name")), "sleeper");
    assert_true(num(full, "start_unix") == 1796046807.282278);
    assert_true(num(full, "end_unix") == 1796046809.289353);
    assert_true(num(sl, "start_unix") == CPU_SLEEPER_START);
    assert_true(num(sl, "end_unix") == CPU_SLEEPER_END);
    tu_assert_near(num(sl, "duration_seconds"), CPU_SLEEPER_END - CPU_SLEEPER_START, 1e-9);
    /* channel metadata from samples.csv */
    const json_t *core = chan(run, "rapl/package-0/core");
    assert_string_equal(json_string_value(json_object_get(core, "kind")), "cpu");
    assert_string_equal(json_string_value(json_object_get(core, "domain")), "component");
    assert_string_equal(json_string_value(json_object_get(core, "method")), "measured");
    const json_t *node = json_array_get(json_object_get(run, "per_node"), 0);
    assert_string_equal(json_string_value(json_object_get(node, "label")), "node");
    assert_string_equal(json_string_value(json_object_get(node, "method")), "measured");
    json_decref(rep);
}

static void cpu_energy(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-cpu"), SERIES_EDGES_INTERPOLATE);
    const json_t *run = json_array_get(rep, 0), *sl = json_array_get(rep, 2);
    /* edges on ticks: exactly the rise of joules_total (228.750932 - 18.000239) */
    const json_t *p0 = chan(run, "rapl/package-0");
    tu_assert_near(num(p0, "joules"), 228.750932 - 18.000239, 1e-9);
    tu_assert_near(num(p0, "avg_power_w"), (228.750932 - 18.000239) / (CPU_RUN_END - CPU_RUN_START),
                   1e-6);
    assert_int_equal(json_integer_value(json_object_get(p0, "samples")), 12);
    assert_true(num(p0, "sample_start_unix") == CPU_RUN_START);
    /* the step powers of the window: max of the watts column after the start */
    tu_assert_near(num(p0, "max_w"), 114.05682, 1e-3);
    tu_assert_near(num(p0, "min_w"), 95.934508, 1e-3);
    /* edges between ticks: joules_total interpolated at both (worked out by hand) */
    tu_assert_near(num(chan(sl, "rapl/package-0"), "joules"), 103.53643269096341, 1e-6);
    /* the node: the channels report.json adds up (packages and dram), = its total */
    double node = num(run, "node_total_joules");
    double sum = 0;
    const char *nodes[] = {"rapl/package-0", "rapl/package-0/dram", "rapl/package-1",
                           "rapl/package-1/dram"};
    for (size_t k = 0; k < 4; k++)
        sum += num(chan(run, nodes[k]), "joules");
    tu_assert_near(node, sum, 1e-9);
    assert_rel(node, 477.7015699999999, 1e-6);
    tu_assert_near(num(json_array_get(json_object_get(run, "per_node"), 0), "joules"), node, 0);
    /* the sum rule: jobs + idle + other + unattributed = the node (run window) */
    double all =
        num(run, "idle_joules") + num(run, "other_joules") + num(run, "unattributed_joules");
    size_t k;
    const json_t *v;
    json_array_foreach(json_object_get(run, "jobs"), k, v) all += num(v, "joules");
    assert_rel(all, node, 1e-6);
    /* and each job as report.json has it */
    tu_assert_near(num(job(run, "full"), "joules"), 379.2710867448166, 1e-5);
    tu_assert_near(num(job(run, "sleeper"), "joules"), 1.360969793993589, 1e-5);
    tu_assert_near(num(run, "other_joules"), 97.06951346118974, 1e-5);
    tu_assert_near(num(job(run, "full"), "share"), 379.2710867448166 / all, 1e-6);
    /* by_channel: every channel the job has rows for, components included */
    const json_t *bc = json_object_get(job(run, "full"), "by_channel");
    assert_int_equal(json_object_size(bc), 6);
    /* a workload's rows count over its own lifetime: all of the sleeper's energy is in its
     * window, though its first and last split periods reach outside it */
    tu_assert_near(num(job(sl, "sleeper"), "joules"), 1.360969793993589, 1e-5);
    /* full ran all along: its share of the sleeper's window is less than its total */
    assert_true(num(job(sl, "full"), "joules") < 0.6 * 379.27);
    json_decref(rep);
}

static void cpu_carbon(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-cpu"), SERIES_EDGES_INTERPOLATE);
    const json_t *run = json_array_get(rep, 0), *sl = json_array_get(rep, 2);
    const json_t *c = json_object_get(run, "carbon");
    assert_true(num(c, "g_per_kwh") == 475.0);
    assert_true(num(c, "pue") == 1.0);
    assert_non_null(strstr(json_string_value(json_object_get(c, "intensity_source")), "WORLD"));
    tu_assert_near(num(c, "operational_g_co2e"), num(run, "node_total_joules") / 3.6e6 * 475.0,
                   1e-12);
    /* report.json's figure (per-tick intensity, constant here) */
    assert_rel(num(c, "operational_g_co2e"), 0.06303006826388885, 1e-6);
    tu_assert_near(num(c, "embodied_g_co2e"), 0.0006320496488959871, 1e-15);
    tu_assert_near(num(json_object_get(sl, "carbon"), "embodied_g_co2e"), 2.273620300656577e-6,
                   1e-18);
    json_decref(rep);
}

static void cpu_snap(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-cpu"), SERIES_EDGES_SNAP);
    const json_t *run = json_array_get(rep, 0), *sl = json_array_get(rep, 2);
    assert_string_equal(json_string_value(json_object_get(run, "edges")), "snap");
    /* srt-slurm's trapezoid over the watts of the snapped ticks */
    const json_t *p0 = chan(run, "rapl/package-0");
    tu_assert_near(num(p0, "joules"), 202.979325965987, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(p0, "samples")), 12);
    const json_t *s0 = chan(sl, "rapl/package-0");
    tu_assert_near(num(s0, "joules"), 102.31870215398061, 1e-9);
    assert_true(num(s0, "sample_start_unix") == 1796046807.882108);
    assert_true(num(s0, "sample_end_unix") == 1796046808.882082);
    assert_int_equal(json_integer_value(json_object_get(s0, "samples")), 6);
    /* the node row: the per-tick sums integrated the same way */
    double sum = 0;
    const char *nodes[] = {"rapl/package-0", "rapl/package-0/dram", "rapl/package-1",
                           "rapl/package-1/dram"};
    for (size_t k = 0; k < 4; k++)
        sum += num(chan(run, nodes[k]), "joules");
    assert_rel(num(run, "node_total_joules"), sum, 1e-9);
    json_decref(rep);
}

static void gpu_utilization(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-gpu"), SERIES_EDGES_INTERPOLATE);
    assert_int_equal(json_array_size(rep), 3);
    const json_t *run = json_array_get(rep, 0), *big = json_array_get(rep, 2);
    assert_int_equal(json_array_size(json_object_get(run, "warnings")), 0);
    /* one node channel, the GPU; its energy as report.json's total */
    assert_rel(num(run, "node_total_joules"), 512.4020000000002, 1e-9);
    assert_rel(num(job(run, "big"), "joules"), 246.8132973637208, 1e-6);
    tu_assert_near(num(job(big, "big"), "joules"), 246.8132973637208, 1e-5);
    /* device rows only: 20,20,80,80,80,80,80,0 (process rows have no device figures) */
    const json_t *u = json_object_get(run, "gpu_utilization");
    assert_int_equal(json_array_size(u), 2);
    const json_t *g = json_array_get(u, 0), *m = json_array_get(u, 1);
    static const char *const ukeys[] = {"label", "column", "mean", "max", "samples"};
    assert_keys(g, ukeys, 5);
    assert_string_equal(json_string_value(json_object_get(g, "label")), "nvml/gpu0");
    assert_string_equal(json_string_value(json_object_get(g, "column")), "gpu_util_pct");
    assert_string_equal(json_string_value(json_object_get(m, "column")), "mem_util_pct");
    assert_int_equal(json_integer_value(json_object_get(g, "samples")), 8);
    tu_assert_near(num(g, "mean"), 440.0 / 8, 1e-12);
    assert_true(num(g, "max") == 80.0);
    assert_true(num(m, "mean") == 5.0);
    /* big's window holds the five 80% rows */
    const json_t *gb = json_array_get(json_object_get(big, "gpu_utilization"), 0);
    assert_int_equal(json_integer_value(json_object_get(gb, "samples")), 5);
    assert_true(num(gb, "mean") == 80.0);
    json_decref(rep);
}

static void stat_dir(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("stat"), SERIES_EDGES_INTERPOLATE);
    assert_int_equal(json_array_size(rep), 1);
    const json_t *w = json_array_get(rep, 0);
    assert_int_equal(json_array_size(json_object_get(w, "warnings")), 0);
    assert_string_equal(json_string_value(json_object_get(w, "window")), "run");
    /* summary.json's window (end_unix is 1 µs past the last tick's printed time) */
    assert_true(num(w, "start_unix") == 1796046827.509442);
    assert_true(num(w, "end_unix") == 1796046828.528552);
    assert_rel(num(w, "node_total_joules"), 346.8061299999999, 1e-6);
    assert_int_equal(json_array_size(json_object_get(w, "jobs")), 0);
    assert_true(json_is_null(json_object_get(w, "idle_joules")));
    assert_true(json_is_null(json_object_get(w, "unattributed_joules")));
    const json_t *c = json_object_get(w, "carbon");
    assert_true(json_is_null(json_object_get(c, "embodied_g_co2e")));
    assert_rel(num(c, "operational_g_co2e"), 0.04575914215277777, 1e-6);
    json_decref(rep);
}

static void text_form(void **state)
{
    (void)state;
    json_t *rep = build_ok(fx("run-cpu"), SERIES_EDGES_INTERPOLATE);
    char *t = runreport_text(rep);
    assert_non_null(t);
    assert_true(t[strlen(t) - 1] == '\n');
    assert_non_null(strstr(t, "[run] window=2.01s start=1796046807.282 end=1796046809.289 "
                              "edges=interpolate\n"));
    assert_non_null(strstr(t, "\n[workload sleeper] window=1.01s start=1796046807.783 "));
    assert_non_null(strstr(t, "\n  node total: 477.70 J ("));
    assert_non_null(strstr(t, "\n    rapl/package-0: 210.75 J (104.99 W avg; p50="));
    assert_non_null(strstr(t, "\n  job full: 379.27 J ("));
    assert_non_null(strstr(t, "\n  idle: 0.00 J, other: 97.07 J, unattributed: 0.00 J\n"));
    assert_non_null(strstr(t, "\n  carbon: operational 0.0630 g CO2e (475.00 g/kWh x PUE 1.00)"));
    free(t);
    json_decref(rep);
    /* thousands separators, n/a for null, warnings, utilization lines */
    json_error_t je;
    json_t *w = json_loads(
        "[{\"window\": \"workload\", \"name\": \"w\", \"start_unix\": 100, \"end_unix\": 1334.5,"
        " \"duration_seconds\": 1234.5, \"edges\": \"snap\", \"per_channel\": [{\"label\": \"c\","
        " \"joules\": 1234567.891, \"avg_power_w\": -1000.005, \"p50_w\": null, \"p95_w\": 0.125,"
        " \"p99_w\": 999.996, \"max_w\": 1000}], \"per_node\": [], \"node_total_joules\": null,"
        " \"jobs\": [], \"carbon\": {}, \"gpu_utilization\": [{\"label\": \"nvml/gpu0\","
        " \"column\": \"gpu_util_pct\", \"mean\": 50, \"max\": 99.999}, {\"label\": \"nvml/gpu0\","
        " \"column\": \"mem_util_pct\", \"mean\": 5, \"max\": 5}], \"warnings\": [\"oops\"]}]",
        0, &je);
    assert_non_null(w);
    t = runreport_text(w);
    assert_non_null(t);
    assert_non_null(strstr(t, "[workload w] window=1234.50s start=100.000 end=1334.500 "
                              "edges=snap\n  warning: oops\n  node total: n/a J\n"));
    assert_non_null(strstr(t, "    c: 1,234,567.89 J (-1,000.00 W avg; p50=n/a p95=0.12 "
                              "p99=1,000.00 max=1,000.00 W)\n"));
    assert_non_null(strstr(t, "    nvml/gpu0 utilization: gpu_util_pct mean=50.00 max=100.00; "
                              "mem_util_pct mean=5.00 max=5.00\n"));
    free(t);
    json_decref(w);
}

/* workloads.json's type (the experiment's kind): in the workload's window and its text; a
 * workload without one has none */
static void workload_type(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-cpu");
    edit("workloads.json", "\"name\": \"sleeper\",",
         "\"name\": \"sleeper\", \"type\": \"inference\",");
    json_t *rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    assert_null(json_object_get(json_array_get(rep, 0), "type"));
    assert_null(json_object_get(json_array_get(rep, 1), "type"));
    const json_t *sl = json_array_get(rep, 2);
    assert_string_equal(json_string_value(json_object_get(sl, "name")), "sleeper");
    assert_string_equal(json_string_value(json_object_get(sl, "type")), "inference");
    char *t = runreport_text(rep);
    assert_non_null(t);
    assert_non_null(strstr(t, "\n[workload sleeper (inference)] window=1.01s "));
    assert_non_null(strstr(t, "\n[workload full] window="));
    free(t);
    json_decref(rep);
}

static void killed_run(void **state)
{
    (void)state;
    /* no end_unix: the window ends at the run's last tick, with a warning */
    tu_copy_fixture("rundir/run-cpu");
    edit("workloads.json", "\"end_unix\": 1796046808.794069,", "");
    json_t *rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    const json_t *sl = json_array_get(rep, 2);
    assert_true(num(sl, "end_unix") == CPU_RUN_END);
    assert_true(has_warning(sl, "no end_unix for sleeper"));
    assert_int_equal(json_array_size(json_object_get(json_array_get(rep, 0), "warnings")), 0);
    json_decref(rep);
    /* end_unix null, the same */
    edit("workloads.json", "\"start_unix\": 1796046807.782514,",
         "\"start_unix\": 1796046807.782514, \"end_unix\": null,");
    rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    assert_true(num(json_array_get(rep, 2), "end_unix") == CPU_RUN_END);
    json_decref(rep);
    /* never started: a window with nothing but its warning */
    edit("workloads.json", "\"start_unix\": 1796046807.782514,", "\"start_unix\": null,");
    rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    sl = json_array_get(rep, 2);
    assert_true(json_is_null(json_object_get(sl, "start_unix")));
    assert_true(json_is_null(json_object_get(sl, "node_total_joules")));
    assert_int_equal(json_array_size(json_object_get(sl, "per_channel")), 0);
    assert_true(has_warning(sl, "sleeper never started"));
    json_decref(rep);
    /* carma killed: no report.json, no workloads.json: the whole samples.csv, warnings */
    remove_file("report.json");
    remove_file("workloads.json");
    rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    assert_int_equal(json_array_size(rep), 1);
    const json_t *run = json_array_get(rep, 0);
    assert_true(has_warning(run, "report.json is missing"));
    assert_true(has_warning(run, "workloads.json is missing"));
    assert_true(num(run, "start_unix") == 1796046806.681762);
    /* without report.json the node is the channels of domain total, as carma's */
    assert_rel(num(run, "node_total_joules"), 2 * (228.750932 + 30.500124), 1e-9);
    /* jobs from attribution.csv alone */
    assert_int_equal(json_array_size(json_object_get(run, "jobs")), 2);
    assert_true(json_is_null(json_object_get(json_object_get(run, "carbon"), "g_per_kwh")));
    json_decref(rep);
}

/* A workload whose end (its own clock reading, to the µs) falls a µs after the run's last tick:
 * its window ends at the tick, and the jobs and the rests add up to the node as in every window.
 * Half a second after it is no rounding: the window is left as it is (uncovered beyond). */
static void edge_past_last_tick(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-cpu");
    edit("workloads.json", "\"end_unix\": 1796046809.289353", "\"end_unix\": 1796046809.289354");
    json_t *rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    const json_t *w = json_array_get(rep, 1);
    assert_string_equal(json_string_value(json_object_get(w, "window")), "workload");
    assert_true(num(w, "end_unix") == CPU_RUN_END);
    double parts = num(w, "idle_joules") + num(w, "other_joules") + num(w, "unattributed_joules");
    size_t k;
    json_t *j;
    json_array_foreach(json_object_get(w, "jobs"), k, j) parts += num(j, "joules");
    tu_assert_near(parts, num(w, "node_total_joules"), 1e-9 * num(w, "node_total_joules") + 1e-9);
    assert_int_equal(json_array_size(json_object_get(w, "warnings")), 0);
    json_decref(rep);
    edit("workloads.json", "\"end_unix\": 1796046809.289354", "\"end_unix\": 1796046809.789353");
    rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    assert_true(num(json_array_get(rep, 1), "end_unix") == 1796046809.789353);
    json_decref(rep);
}

static void uncovered_window(void **state)
{
    (void)state;
    /* a workload window after the last sample: warnings and nulls, not a failure */
    tu_copy_fixture("rundir/run-cpu");
    edit("workloads.json", "\"end_unix\": 1796046808.794069", "\"end_unix\": 1796046830");
    edit("workloads.json", "\"start_unix\": 1796046807.782514", "\"start_unix\": 1796046820");
    json_t *rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    const json_t *sl = json_array_get(rep, 2);
    const json_t *p0 = chan(sl, "rapl/package-0");
    assert_true(json_is_null(json_object_get(p0, "joules")));
    assert_true(json_is_null(json_object_get(p0, "p50_w")));
    assert_true(json_is_null(json_object_get(sl, "node_total_joules")));
    assert_true(json_is_null(json_object_get(json_object_get(sl, "carbon"), "operational_g_co2e")));
    assert_true(has_warning(sl, "rapl/package-0: "));
    assert_true(has_warning(sl, "no coverage"));
    /* the other windows are whole */
    assert_true(json_is_number(json_object_get(json_array_get(rep, 0), "node_total_joules")));
    json_decref(rep);
    /* snap says it srt-slurm's way */
    rep = build_ok(tu_dir, SERIES_EDGES_SNAP);
    assert_true(
        has_warning(json_array_get(rep, 2), "rapl/package-0: nearest sample to window start is"));
    json_decref(rep);
    /* a node channel report.json names that samples.csv lacks: the node is unknown */
    edit("report.json", "\"rapl/package-1/dram\"", "\"rapl/package-1/dram\", \"model/cpu0\"");
    rep = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    const json_t *run = json_array_get(rep, 0);
    assert_true(json_is_null(json_object_get(run, "node_total_joules")));
    assert_true(has_warning(run, "1 of the 5 node channels"));
    json_decref(rep);
}

static void malformed_attribution(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-cpu");
    /* cut short in the middle of its last row (line 145): the row is skipped, said once */
    edit("attribution.csv", "1796046809.289353,rapl/package-1/dram,other,0.001777\r\n",
         "1796046809.289353,rapl/package-1/dram,oth");
    json_t *cut = build_ok(tu_dir, SERIES_EDGES_INTERPOLATE);
    char *ws = json_dumps(json_object_get(json_array_get(cut, 0), "warnings"), 0);
    assert_non_null(strstr(ws, "attribution.csv:145: the last line has no line end (cut short by "
                               "a crash or a copy): it is skipped"));
    free(ws);
    json_decref(cut);
    /* a row with a field missing */
    edit("attribution.csv", "809.289353,rapl/package-1/dram,oth",
         "809.289353,rapl/package-1/dram,other\r\n");
    build_fails(-EINVAL, "attribution.csv:145:", "3 fields");
    edit("attribution.csv", "809.289353,rapl/package-1/dram,other\r\n",
         "809.289353,rapl/package-1/dram,other,0.001777\r\n");
    json_decref(build_ok(tu_dir, SERIES_EDGES_INTERPOLATE));
    /* NaN */
    edit("attribution.csv", "full,16.308096", "full,NaN");
    build_fails(-EINVAL, "attribution.csv:2: joules: 'NaN'", NULL);
    edit("attribution.csv", "full,NaN", "full,16.308096");
    /* a missing column */
    edit("attribution.csv", "timestamp_unix,channel,job,joules", "timestamp_unix,channel,job,j");
    build_fails(-EINVAL, "attribution.csv:1: no column 'joules'", NULL);
    edit("attribution.csv", "timestamp_unix,channel,job,j", "timestamp_unix,channel,job,joules");
    /* a channel samples.csv does not have */
    edit("attribution.csv", "807.482046,rapl/package-0,full", "807.482046,rapl/package-9,full");
    build_fails(-EINVAL, "attribution.csv:2: channel 'rapl/package-9'", NULL);
}

static void malformed_samples(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-cpu");
    edit("samples.csv", "watts,joules_total", "watts,joules");
    build_fails(-EINVAL, "samples.csv:1: no column 'joules_total'", NULL);
    edit("samples.csv", "watts,joules", "watts,joules_total");
    /* line 8: the second tick's rapl/package-0 */
    edit("samples.csv", "measured,29.963212,6.000044", "measured,nan,6.000044");
    build_fails(-EINVAL, "samples.csv:8: watts: 'nan' is not a finite number", NULL);
    edit("samples.csv", "measured,nan,6.000044", "measured,29.963212,6.000044");
    edit("samples.csv", "measured,29.963212,6.000044", "measured,29.963212,6.000044,7");
    build_fails(-EINVAL, "samples.csv:8: 10 fields, the header has 9", NULL);
    edit("samples.csv", "measured,29.963212,6.000044,7", "measured,29.963212,6.000044");
    /* finite numbers no sensor shows (whose node sum would overflow): refused at their row */
    edit("samples.csv", "measured,29.963212,6.000044", "measured,1e308,6.000044");
    build_fails(-ERANGE, "samples.csv:8: watts: 1e+308 W is no reading of a cpu channel", NULL);
    edit("samples.csv", "measured,1e308,6.000044", "measured,29.963212,1e308");
    build_fails(-ERANGE, "samples.csv:8: joules_total: 1e+308 J is no energy of a cpu channel",
                NULL);
    edit("samples.csv", "measured,29.963212,1e308", "measured,29.963212,6.000044");
    remove_file("samples.csv");
    build_fails(-ENOENT, "samples.csv", NULL);
}

static void malformed_json(void **state)
{
    (void)state;
    tu_copy_fixture("rundir/run-cpu");
    edit("workloads.json", "\"pgid\": 15290,", "\"pgid\": 15290");
    build_fails(-EINVAL, "workloads.json:22:", NULL);
    edit("workloads.json", "\"pgid\": 15290", "\"pgid\": 15290,");
    edit("workloads.json", "\"end_unix\": 1796046808.794069", "\"end_unix\": \"soon\"");
    build_fails(-EINVAL, "workloads.json: workloads[1].end_unix: not a number", NULL);
    edit("workloads.json", "\"end_unix\": \"soon\"", "\"end_unix\": 1796046808.794069");
    edit("workloads.json", "\"name\": \"sleeper\"", "\"name\": \"full\"");
    build_fails(-EINVAL, "workloads.json: workloads[1].name: 'full' named twice", NULL);
    edit("workloads.json", "\"name\": \"full\",\n      \"pids\": [\n        15290",
         "\"name\": \"sleeper\",\n      \"pids\": [\n        15290");
    edit("report.json", "\"experiment\": \"plant2\",", "\"experiment\": \"plant2\"");
    build_fails(-EINVAL, "report.json:3:", NULL);
    edit("report.json", "\"experiment\": \"plant2\"", "\"experiment\": \"plant2\",");
    json_decref(build_ok(tu_dir, SERIES_EDGES_INTERPOLATE));
    /* an intensity whose product with the energy overflows: said, never a null CO2e (or an
     * "out of memory" for a number JSON cannot hold) */
    edit("report.json", "\"g_per_kwh\": 475.0", "\"g_per_kwh\": 1.5e308");
    edit("report.json", "\"pue\": 1.0", "\"pue\": 1e300");
    build_fails(-ERANGE,
                "report.json: carbon: the operational CO2e (energy x pue x g_per_kwh): the sum "
                "overflows a double",
                NULL);
    edit("report.json", "\"g_per_kwh\": 1.5e308", "\"g_per_kwh\": 475.0");
    edit("report.json", "\"pue\": 1e300", "\"pue\": 1.0");
    edit("manifest.json", "\"producer\": \"carma run\"", "\"producer\": \"carma collect\"");
    build_fails(-EINVAL, "producer is \"carma collect\"", NULL);
    remove_file("manifest.json");
    build_fails(-ENOENT, "manifest.json", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(is_run_dir, tu_setup, tu_teardown),
        cmocka_unit_test(cpu_windows_and_keys),
        cmocka_unit_test(cpu_energy),
        cmocka_unit_test(cpu_carbon),
        cmocka_unit_test(cpu_snap),
        cmocka_unit_test(gpu_utilization),
        cmocka_unit_test(stat_dir),
        cmocka_unit_test(text_form),
        cmocka_unit_test_setup_teardown(workload_type, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(killed_run, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(edge_past_last_tick, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(uncovered_window, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(malformed_attribution, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(malformed_samples, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(malformed_json, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

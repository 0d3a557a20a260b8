/*
 * Unit tests for srt/report: srt-slurm's per-concurrency report (formats: docs/report.md;
 * the cases are srt-slurm's upstream tests as the formats doc §8 lists them, with the figures
 * worked out by hand): perf/W with and without a CPU leg, statistics over a node's summed
 * series, role rows and their order, utilization rows and groups, warnings and their order,
 * Python's int/float arithmetic on passed-through values, the text lines, a failing breakdown
 * aborting the report, and the interpolated edges beside srt-slurm's snapping.
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pyjson.h"
#include "srt/log.h"
#include "srt/report.h"

#define GPU_HDR                                                                                    \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"   \
    "sm_active\r\n"
#define CPU_HDR                                                                                    \
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\r\n"
#define SA_OUT "============ Serving Benchmark Result ============\nSuccessful requests: 10\n"

static struct srt_log L;
static struct carma_err E;

/* GPU rows: one GPU node-a gpu0 at w watts every second from t0 to t1. */
static void put_flat_gpu(const char *rel, int t0, int t1, double w)
{
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    fputs(GPU_HDR, f);
    for (int t = t0; t <= t1; t++)
        fprintf(f, "2,%d.0,%d,node-a,0,GPU-a0,%.1f,,\r\n", t, t - t0, w);
    fclose(f);
    tu_put(rel, csv);
    free(csv);
}

static void put_flat_cpu(int t0, int t1, double w)
{
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    fputs(CPU_HDR, f);
    for (int t = t0; t <= t1; t++)
        fprintf(f, "1,%d.0,node-a,acpi,Grace Power Socket 0,0,%.1f,%.1f\r\n", t, w, w);
    fclose(f);
    tu_put("power/cpu/samples.csv", csv);
    free(csv);
}

static json_t *build(enum series_edges edges)
{
    srt_log_done(&L);
    carma_err_clear(&E);
    int r = srt_log_open(&L, tu_dir, NULL, &E);
    if (r < 0)
        fail_msg("srt_log_open: %s", E.msg);
    json_t *list = NULL;
    r = srt_report_build(&L, edges, &list, &E);
    if (r < 0)
        fail_msg("srt_report_build: %s", E.msg);
    return list;
}

static double dnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        fail_msg("%s is not a number", k);
    return json_number_value(v);
}

static const json_t *get2(const json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

static const json_t *get3(const json_t *o, const char *a, const char *b, const char *c)
{
    return json_object_get(get2(o, a, b), c);
}

static bool has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}

#define assert_line(text, line)                                                                    \
    do {                                                                                           \
        if (!has_line((text), (line)))                                                             \
            fail_msg("no line '%s' in:\n%s", (line), (text));                                      \
    } while (0)

/* §8 perf/W: flat 400 W GPU, window [100,110], out 500, in 1500, duration 9.8 */
static void test_perf_per_watt_gpu_only(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 100, \"benchmark_end_time_unix\": 110, "
           "\"total_input_tokens\": 1500, \"total_output_tokens\": 500, \"duration\": 9.8}");
    put_flat_gpu("power/samples.csv", 95, 115, 400.0);
    json_t *list = build(SERIES_EDGES_SNAP);
    assert_int_equal(json_array_size(list), 1);
    const json_t *r = json_array_get(list, 0);
    const json_t *pw = json_object_get(r, "perf_per_watt");
    tu_assert_near(dnum(pw, "output_tokens_per_second"), 50.0, 1e-12);
    tu_assert_near(dnum(pw, "total_tokens_per_second"), 200.0, 1e-12);
    tu_assert_near(dnum(pw, "gpu_avg_power_w"), 400.0, 1e-12);
    tu_assert_near(dnum(pw, "output_tokens_per_second_per_gpu_watt"), 0.125, 1e-15);
    tu_assert_near(dnum(pw, "total_tokens_per_second_per_gpu_watt"), 0.5, 1e-15);
    assert_true(json_is_null(json_object_get(pw, "combined_avg_power_w")));
    assert_true(json_is_null(json_object_get(pw, "output_tokens_per_second_per_combined_watt")));
    /* ints stay ints: the window and its duration, the token sum; the CPU total is sum([]) */
    assert_true(json_is_integer(get3(r, "timing", "computed", "duration_seconds")));
    assert_true(json_is_integer(json_object_get(r, "start_unix")));
    assert_true(json_is_integer(json_object_get(r, "cpu_total_joules")));
    assert_int_equal(json_integer_value(json_object_get(r, "cpu_total_joules")), 0);
    tu_assert_near(dnum(r, "gpu_total_joules"), 4000.0, 1e-9);
    tu_assert_near(dnum(r, "joules_per_output_token"), 8.0, 1e-12);
    tu_assert_near(dnum(r, "joules_per_total_token"), 2.0, 1e-12);
    const json_t *dev = json_array_get(json_object_get(r, "gpu_per_device"), 0);
    assert_int_equal(json_integer_value(json_object_get(dev, "samples")), 11);
    /* warnings: no roles, then no CPU leg */
    const json_t *w = json_object_get(r, "warnings");
    assert_int_equal(json_array_size(w), 2);
    assert_string_equal(json_string_value(json_array_get(w, 0)), SRT_REPORT_WARN_NO_ROLES);
    assert_string_equal(json_string_value(json_array_get(w, 1)), SRT_REPORT_WARN_NO_CPU);

    char *text = srt_report_text(list);
    assert_non_null(text);
    assert_line(text, "[sa-bench concurrency=4] window=10.00s");
    assert_line(text, "  cpu total:      0.00 J");
    assert_line(text, "  gpu total:      4,000.00 J");
    assert_line(text, "  tokens: output=500 input=1,500");
    assert_line(text, "  timing: computed start=100.000 end=110.000 duration=10.00s | "
                      "reported[sa-bench-json] start=100.000 end=110.000 duration=9.80s "
                      "(computed-reported=+0.20s) | samples cover 100.000..110.000 (10.00s)");
    assert_line(text, "  perf/W: output=50.00 tok/s total=200.00 tok/s | gpu avg=400.00 W -> "
                      "output 0.1250 tok/s/W, total 0.5000 tok/s/W | combined: n/a");
    assert_line(text, "    gpu/node-a/gpu0: 4,000.00 J (400.00 W avg; p50=400.00 p95=400.00 "
                      "p99=400.00 max=400.00 W)");
    assert_line(text, "  warning: " SRT_REPORT_WARN_NO_CPU);
    assert_non_null(strstr(text, "\n\ntotal energy across all concurrency points: 4,000.00 J\n"));
    free(text);
    json_decref(list);
}

/* §8 perf/W with a flat 100 W CPU leg: combined 500 W, 0.1 / 0.4 tok/s/W, coverage 100..110 */
static void test_perf_per_watt_combined(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 100, \"benchmark_end_time_unix\": 110, "
           "\"total_input_tokens\": 1500, \"total_output_tokens\": 500}");
    put_flat_gpu("power/samples.csv", 100, 110, 400.0);
    put_flat_cpu(100, 110, 100.0);
    json_t *list = build(SERIES_EDGES_SNAP);
    const json_t *r = json_array_get(list, 0);
    const json_t *pw = json_object_get(r, "perf_per_watt");
    tu_assert_near(dnum(pw, "combined_avg_power_w"), 500.0, 1e-12);
    tu_assert_near(dnum(pw, "output_tokens_per_second_per_combined_watt"), 0.1, 1e-15);
    tu_assert_near(dnum(pw, "total_tokens_per_second_per_combined_watt"), 0.4, 1e-15);
    tu_assert_near(dnum(r, "cpu_total_joules"), 1000.0, 1e-9);
    tu_assert_near(dnum(r, "combined_total_joules"), 5000.0, 1e-9);
    const json_t *cov = get2(r, "timing", "coverage");
    tu_assert_near(dnum(cov, "sample_start_unix"), 100.0, 0);
    tu_assert_near(dnum(cov, "sample_end_unix"), 110.0, 0);
    tu_assert_near(dnum(cov, "duration_seconds"), 10.0, 0);
    /* no duration in the result: the note, and no duration in the reported text */
    const json_t *rep = get2(r, "timing", "reported");
    assert_string_equal(json_string_value(json_object_get(rep, "note")),
                        "result JSON has no 'duration' field");
    const json_t *w = json_object_get(r, "warnings");
    assert_int_equal(json_array_size(w), 1);
    assert_string_equal(json_string_value(json_array_get(w, 0)), SRT_REPORT_WARN_NO_ROLES);
    char *text = srt_report_text(list);
    assert_line(text, "  perf/W: output=50.00 tok/s total=200.00 tok/s | gpu avg=400.00 W -> "
                      "output 0.1250 tok/s/W, total 0.5000 tok/s/W | combined avg=500.00 W -> "
                      "output 0.1000 tok/s/W, total 0.4000 tok/s/W");
    assert_line(text, "  timing: computed start=100.000 end=110.000 duration=10.00s | "
                      "reported[sa-bench-json] start=100.000 end=110.000 | samples cover "
                      "100.000..110.000 (10.00s)");
    assert_line(text, "    cpu/node-a/socket0: 1,000.00 J (100.00 W avg; p50=100.00 p95=100.00 "
                      "p99=100.00 max=100.00 W)");
    free(text);
    json_decref(list);
}

/* §8: anti-phase GPUs (100/300 alternating) -> the node's min == max == 400 */
static void test_node_stats_on_summed_series(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_1_x.json",
           "{\"benchmark_start_time_unix\": 0.0, \"benchmark_end_time_unix\": 10.0, "
           "\"total_input_tokens\": 0, \"total_output_tokens\": 0}");
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    fputs(GPU_HDR, f);
    for (int t = 0; t <= 10; t++) {
        fprintf(f, "2,%d.0,%d,node-a,0,G0,%d.0,,\r\n", t, t, t % 2 ? 300 : 100);
        fprintf(f, "2,%d.0,%d,node-a,1,G1,%d.0,,\r\n", t, t, t % 2 ? 100 : 300);
    }
    fclose(f);
    tu_put("power/samples.csv", csv);
    free(csv);
    json_t *list = build(SERIES_EDGES_SNAP);
    const json_t *r = json_array_get(list, 0);
    const json_t *node = json_array_get(json_object_get(r, "gpu_per_node"), 0);
    assert_string_equal(json_string_value(json_object_get(node, "label")), "gpu/node-a");
    tu_assert_near(dnum(node, "min_w"), 400.0, 0);
    tu_assert_near(dnum(node, "max_w"), 400.0, 0);
    tu_assert_near(dnum(node, "joules"), 4000.0, 1e-9);
    const json_t *d0 = json_array_get(json_object_get(r, "gpu_per_device"), 0);
    tu_assert_near(dnum(d0, "min_w"), 100.0, 0);
    tu_assert_near(dnum(d0, "max_w"), 300.0, 0);
    /* no tokens: J/token and tok/s/W are null, the rates 0 */
    assert_true(json_is_null(json_object_get(r, "joules_per_output_token")));
    assert_true(json_is_null(json_object_get(r, "joules_per_total_token")));
    const json_t *pw = json_object_get(r, "perf_per_watt");
    tu_assert_near(dnum(pw, "output_tokens_per_second"), 0.0, 0);
    tu_assert_near(dnum(pw, "output_tokens_per_second_per_gpu_watt"), 0.0, 0);
    char *text = srt_report_text(list);
    assert_line(text, "  J/output-token: n/a");
    free(text);
    json_decref(list);
}

/* §8 roles (gpu0 prefill, gpu1 decode) and §8 GPU utilization (60 and 80 -> 70, max 80) */
static void test_roles_and_utilization(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_2_x.json",
           "{\"benchmark_start_time_unix\": 10, \"benchmark_end_time_unix\": 11, "
           "\"total_input_tokens\": 10, \"total_output_tokens\": 5}");
    tu_put("power/samples.csv", GPU_HDR "2,10.0,0,node-a,0,G0,100.0,60.0,\r\n"
                                        "2,10.0,0,node-a,1,G1,50.0,80.0,\r\n"
                                        "2,11.0,1,node-a,0,G0,110.0,,\r\n"
                                        "2,11.0,1,node-a,1,G1,55.0,,\r\n");
    tu_put("power/manifest.json",
           "{\"expected_devices\": ["
           "{\"hostname\": \"node-a\", \"gpu_index\": 0, \"assignments\": [{\"worker_role\": "
           "\"prefill\"}]},"
           "{\"hostname\": \"node-a\", \"gpu_index\": 1, \"assignments\": [{\"worker_role\": "
           "\"decode\"}]}]}");
    json_t *list = build(SERIES_EDGES_SNAP);
    const json_t *r = json_array_get(list, 0);
    const json_t *roles = json_object_get(r, "gpu_per_role");
    assert_int_equal(json_array_size(roles), 2);
    /* ordered by role name, then host */
    assert_string_equal(json_string_value(json_object_get(json_array_get(roles, 0), "label")),
                        "gpu/node-a/decode");
    tu_assert_near(dnum(json_array_get(roles, 0), "joules"), 52.5, 1e-12);
    tu_assert_near(dnum(json_array_get(roles, 1), "joules"), 105.0, 1e-12);
    tu_assert_near(dnum(r, "gpu_total_joules"), 157.5, 1e-12);
    const json_t *u = json_object_get(r, "gpu_utilization");
    /* two devices, then groups sorted by label: gpu/node-a, gpu/node-a/decode, .../prefill */
    assert_int_equal(json_array_size(u), 5);
    const char *labels[] = {"gpu/node-a/gpu0", "gpu/node-a/gpu1", "gpu/node-a", "gpu/node-a/decode",
                            "gpu/node-a/prefill"};
    const double means[] = {60, 80, 70, 80, 60};
    for (size_t i = 0; i < 5; i++) {
        const json_t *x = json_array_get(u, i);
        assert_string_equal(json_string_value(json_object_get(x, "label")), labels[i]);
        assert_string_equal(json_string_value(json_object_get(x, "column")), "gpu_util_pct");
        tu_assert_near(dnum(x, "mean"), means[i], 1e-12);
    }
    tu_assert_near(dnum(json_array_get(u, 2), "max"), 80.0, 0);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(u, 2), "samples")), 2);
    char *text = srt_report_text(list);
    assert_line(text, "    gpu/node-a/gpu0 utilization: gpu_util_pct mean=60.00 max=60.00");
    assert_line(text, "    gpu/node-a utilization: gpu_util_pct mean=70.00 max=80.00");
    assert_line(text, "    gpu/node-a/decode: 52.50 J (52.50 W avg; p50=52.50 p95=54.75 "
                      "p99=54.95 max=55.00 W)");
    free(text);
    json_decref(list);
}

/* §8 host v3 utilization: blank cells skipped; only t=15 inside [10,20] -> mean 0.5 */
static void test_cpu_utilization_window(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_2_x.json",
           "{\"benchmark_start_time_unix\": 10, \"benchmark_end_time_unix\": 20, "
           "\"total_input_tokens\": 10, \"total_output_tokens\": 5}");
    tu_put("cpu_power/samples.csv",
           "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
           "power_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,"
           "cpu_util_irq\n"
           "3,9.0,t,node-a,acpi,Grace Power Socket 0,0,90.0,90.0,0.9,,,,\n"
           "3,15.0,t,node-a,acpi,Grace Power Socket 0,0,90.0,90.0,0.5,,,,\n"
           "3,21.0,t,node-a,acpi,Grace Power Socket 0,0,90.0,90.0,0.7,,,,\n");
    json_t *list = build(SERIES_EDGES_SNAP);
    const json_t *r = json_array_get(list, 0);
    const json_t *u = json_object_get(r, "cpu_utilization");
    assert_int_equal(json_array_size(u), 2);
    tu_assert_near(dnum(json_array_get(u, 0), "mean"), 0.5, 0);
    assert_string_equal(json_string_value(json_object_get(json_array_get(u, 1), "label")),
                        "cpu/node-a");
    tu_assert_near(dnum(json_array_get(u, 1), "mean"), 0.5, 0);
    /* a CPU leg alone: no GPU warnings, no combined figures, gpu total sum([]) */
    assert_int_equal(json_array_size(json_object_get(r, "warnings")), 0);
    assert_true(json_is_null(get2(r, "perf_per_watt", "gpu_avg_power_w")));
    assert_true(json_is_integer(json_object_get(r, "gpu_total_joules")));
    json_decref(list);

    /* a window with no utilization sample: the warning, in the CPU place */
    tu_put("sa-bench_a/results_concurrency_2_x.json",
           "{\"benchmark_start_time_unix\": 16, \"benchmark_end_time_unix\": 20, "
           "\"total_input_tokens\": 10, \"total_output_tokens\": 5}");
    list = build(SERIES_EDGES_SNAP);
    r = json_array_get(list, 0);
    assert_int_equal(json_array_size(json_object_get(r, "cpu_utilization")), 0);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r, "warnings"), 0)),
                        "cpu/node-a/socket0 cpu_util_total: no samples inside the window, "
                        "utilization not reported");
    json_decref(list);
}

/* Any breakdown that fails aborts the report, with the series' label and srt-slurm's words. */
static void test_breakdown_error_aborts(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 100, \"benchmark_end_time_unix\": 120, "
           "\"total_input_tokens\": 1500, \"total_output_tokens\": 500}");
    put_flat_gpu("power/samples.csv", 100, 110, 400.0);
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    json_t *list = NULL;
    assert_int_equal(srt_report_build(&L, SERIES_EDGES_SNAP, &list, &E), -ENODATA);
    assert_null(list);
    assert_string_equal(
        E.msg, "gpu/node-a/gpu0: nearest sample to window end is 10.000s away, no coverage");
    carma_err_clear(&E);
    assert_int_equal(srt_report_build(&L, SERIES_EDGES_INTERPOLATE, &list, &E), -ENODATA);
    assert_string_equal(E.msg, "gpu/node-a/gpu0: last sample is 10.000s before window end, no "
                               "coverage");
}

/* The report of the log in tu_dir with CARMA_REPORT_THREADS=threads: its JSON text (the
 * caller frees), or NULL with *err the error's code and E its message. */
static char *build_text(const char *threads, enum series_edges edges, int *err)
{
    setenv("CARMA_REPORT_THREADS", threads, 1);
    srt_log_done(&L);
    carma_err_clear(&E);
    if (srt_log_open(&L, tu_dir, NULL, &E) < 0)
        fail_msg("srt_log_open: %s", E.msg);
    json_t *list = NULL;
    *err = srt_report_build(&L, edges, &list, &E);
    unsetenv("CARMA_REPORT_THREADS");
    if (*err < 0) {
        assert_null(list);
        return NULL;
    }
    char *text = json_dumps(list, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(list);
    assert_non_null(text);
    return text;
}

/*
 * Windows reported on several threads: the list is the one thread's byte for byte, whatever
 * the thread count (more threads than windows included); with two windows that fail, the error
 * is the first one's in source order, as the one-thread loop stops there.
 */
static void test_windows_on_threads(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    for (int c = 1; c <= 12; c++) {
        char rel[96], body[256];
        snprintf(rel, sizeof rel, "sa-bench_a/results_concurrency_%d_x.json", c);
        snprintf(body, sizeof body,
                 "{\"benchmark_start_time_unix\": %d.25, \"benchmark_end_time_unix\": %d.75, "
                 "\"total_input_tokens\": %d, \"total_output_tokens\": %d}",
                 100 + 15 * c, 110 + 15 * c, 1000 * c, 300 + c);
        tu_put(rel, body);
    }
    /* a power that changes every second, on two GPUs, and a CPU leg */
    char *csv = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&csv, &len);
    fputs(GPU_HDR, f);
    for (int t = 100; t <= 300; t++)
        for (int g = 0; g < 2; g++)
            fprintf(f, "2,%d.0,%d,node-a,%d,GPU-a%d,%.3f,%d.0,\r\n", t, t - 100, g, g,
                    200.0 + (t * 7 + g * 13) % 97 + 0.125 * g, (t + g) % 100);
    fclose(f);
    tu_put("power/samples.csv", csv);
    free(csv);
    put_flat_cpu(100, 300, 150.0);

    int err;
    char *one = build_text("1", SERIES_EDGES_SNAP, &err);
    assert_int_equal(err, 0);
    static const char *const counts[] = {"2", "3", "8", "64"};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (int edges = 0; edges < 2; edges++) {
            enum series_edges ed = edges ? SERIES_EDGES_INTERPOLATE : SERIES_EDGES_SNAP;
            char *a = build_text("1", ed, &err), *b = build_text(counts[i], ed, &err);
            assert_int_equal(err, 0);
            if (strcmp(a, b) != 0)
                fail_msg("%s threads, edges %d: the list differs from one thread's", counts[i],
                         edges);
            free(a);
            free(b);
        }
    assert_non_null(strstr(one, "\"concurrency\":12"));
    free(one);

    /* windows 2, 3 and 9 past the samples (2 and 3 are taken at once by the first threads):
     * window 2's error, on any thread count */
    static const int bad[] = {2, 3, 9};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[96], body[256];
        snprintf(rel, sizeof rel, "sa-bench_a/results_concurrency_%d_x.json", bad[i]);
        snprintf(body, sizeof body,
                 "{\"benchmark_start_time_unix\": %d, \"benchmark_end_time_unix\": %d, "
                 "\"total_input_tokens\": 1, \"total_output_tokens\": 1}",
                 300 + 100 * bad[i], 305 + 100 * bad[i]);
        tu_put(rel, body);
    }
    const char *want = "cpu/node-a/socket0: nearest sample to window start is 200.000s away, no "
                       "coverage";
    static const char *const all[] = {"1", "2", "3", "8", "8", "8", "8", "8"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_null(build_text(all[i], SERIES_EDGES_SNAP, &err));
        assert_int_equal(err, -ENODATA);
        if (strcmp(E.msg, want) != 0)
            fail_msg("%s threads: '%s', want '%s'", all[i], E.msg, want);
    }
}

/*
 * Edges: t=[0,1,2,10] w=[10,10,10,100], window [0,10]: snap integrates 460 J (no gap check);
 * interpolate refuses the 8 s gap. Window [0.5, 1.5] on a ramp: snap takes samples 0..1 or
 * 1..2, interpolate cuts exactly.
 */
static void test_edges(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 0.5, \"benchmark_end_time_unix\": 2.5, "
           "\"total_input_tokens\": 1, \"total_output_tokens\": 1}");
    tu_put("power/samples.csv", GPU_HDR "2,0.0,0,n,0,G,0.0,,\r\n"
                                        "2,1.0,1,n,0,G,100.0,,\r\n"
                                        "2,2.0,2,n,0,G,200.0,,\r\n"
                                        "2,3.0,3,n,0,G,300.0,,\r\n");
    json_t *list = build(SERIES_EDGES_INTERPOLATE);
    const json_t *d = json_array_get(json_object_get(json_array_get(list, 0), "gpu_per_device"), 0);
    /* the ramp w = 100 t integrated over [0.5, 2.5]: 50 (2.5^2 - 0.5^2) = 300 J */
    tu_assert_near(dnum(d, "joules"), 300.0, 1e-9);
    tu_assert_near(dnum(d, "avg_power_w"), 150.0, 1e-9);
    json_decref(list);
    list = build(SERIES_EDGES_SNAP);
    d = json_array_get(json_object_get(json_array_get(list, 0), "gpu_per_device"), 0);
    /* ties go to the earlier sample: 0.5 -> t=0, 2.5 -> t=2: trapezoid 0..2 = 200 J */
    tu_assert_near(dnum(d, "joules"), 200.0, 1e-9);
    tu_assert_near(dnum(d, "sample_start_unix"), 0.0, 0);
    tu_assert_near(dnum(d, "sample_end_unix"), 2.0, 0);
    json_decref(list);
}

/* The JSON text as srt-slurm writes it: keys in §6.7's order, indent 2, repr floats. */
static void test_json_key_order(void **state)
{
    (void)state;
    tu_put("benchmark.out", SA_OUT);
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 100, \"benchmark_end_time_unix\": 110, "
           "\"total_input_tokens\": 1500, \"total_output_tokens\": 500, \"duration\": 9.8}");
    put_flat_gpu("power/samples.csv", 100, 110, 400.0);
    json_t *list = build(SERIES_EDGES_SNAP);
    static const char *const keys[] = {"benchmark_type",
                                       "concurrency",
                                       "start_unix",
                                       "end_unix",
                                       "output_tokens",
                                       "input_tokens",
                                       "cpu_per_socket",
                                       "cpu_per_node",
                                       "cpu_total_joules",
                                       "gpu_per_device",
                                       "gpu_per_role",
                                       "gpu_per_node",
                                       "gpu_total_joules",
                                       "combined_total_joules",
                                       "joules_per_output_token",
                                       "joules_per_total_token",
                                       "timing",
                                       "perf_per_watt",
                                       "cpu_utilization",
                                       "gpu_utilization",
                                       "warnings"};
    const json_t *r = json_array_get(list, 0);
    const char *k;
    json_t *v;
    size_t i = 0;
    json_object_foreach((json_t *)r, k, v)
    {
        assert_true(i < sizeof keys / sizeof keys[0]);
        assert_string_equal(k, keys[i]);
        i++;
    }
    assert_int_equal(i, sizeof keys / sizeof keys[0]);
    char *js = pyjson_dumps(list, 2);
    assert_non_null(strstr(js, "\n    \"start_unix\": 100,\n"));
    assert_non_null(strstr(js, "\n    \"gpu_total_joules\": 4000.0,\n"));
    assert_non_null(strstr(js, "\n    \"cpu_per_socket\": [],\n"));
    assert_non_null(strstr(js, "\"duration_seconds\": 10\n"));
    assert_non_null(strstr(js, "\"joules_per_output_token\": 8.0,\n"));
    free(js);
    json_decref(list);
}

static int teardown(void **state)
{
    srt_log_done(&L);
    return tu_teardown(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_perf_per_watt_gpu_only, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_perf_per_watt_combined, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_stats_on_summed_series, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_roles_and_utilization, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_utilization_window, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_breakdown_error_aborts, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_windows_on_threads, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_key_order, tu_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

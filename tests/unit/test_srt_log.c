/*
 * Unit tests for srt/log: an srt-slurm log directory read as srt-slurm's
 * power_energy_report reads it (formats doc srt-slurm.md §6.2-§6.4, cases from its upstream
 * tests in §8): every discovery error message exactly, the benchmark type markers, windows and
 * tokens of both benchmark types (values passed through as stored, the reported timing, the
 * phase-log fallback), the series (labels, order, sums at bit-identical timestamps, role
 * membership, the CPU sensor choice, utilization), and each malformed input: a clear error
 * naming file and line, or the documented skip with its warning.
 *
 * The two fixture runs (tests/fixtures/srt/sabench and aiperf) are whole log directories; the
 * other cases are written into a scratch directory per test.
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/parse.h"
#include "srt/log.h"

#define GPU_HDR_V2                                                                                 \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"   \
    "sm_active\r\n"
#define GPU_HDR_V1                                                                                 \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w\r\n"
#define CPU_HDR_V1                                                                                 \
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\r\n"
#define HOST_HDR_V3                                                                                \
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"      \
    "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\n"
#define SA_RESULT                                                                                  \
    "{\"benchmark_start_time_unix\": 100, \"benchmark_end_time_unix\": 110.0, "                    \
    "\"total_input_tokens\": 1500, \"total_output_tokens\": 500, \"duration\": 9.8}\n"

static struct srt_log L;
static struct carma_err E;

/* A path below the scratch directory (one of a few rotating buffers). */
static const char *tp(const char *rel)
{
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", tu_dir, rel);
    return b;
}

static const char *fixture(const char *name)
{
    static char buf[1024];
    tu_fixture_path(buf, sizeof buf, name);
    return buf;
}

static void reset(void)
{
    srt_log_done(&L);
    carma_err_clear(&E);
}

/* A minimal sa-bench run below the scratch directory: benchmark.out and one result. */
static void put_sabench_run(void)
{
    tu_put("benchmark.out", "============ Serving Benchmark Result ============\n"
                            "Successful requests: 10\n");
    tu_put("sa-bench_a/results_concurrency_4_x.json", SA_RESULT);
}

static void assert_series(const struct srt_log_series *s, const char *label, size_t n,
                          const double *t, const double *w)
{
    assert_string_equal(s->label, label);
    if (s->n != n)
        fail_msg("%s: %zu samples, expected %zu", label, s->n, n);
    for (size_t i = 0; i < n; i++) {
        if (s->t[i] != t[i] || s->w[i] != w[i])
            fail_msg("%s[%zu] = (%.17g, %.17g), expected (%.17g, %.17g)", label, i, s->t[i],
                     s->w[i], t[i], w[i]);
    }
}

static void assert_util(const struct srt_log_util *u, const char *label, const char *column,
                        size_t n, const double *t, const double *v)
{
    assert_string_equal(u->label, label);
    assert_string_equal(u->column, column);
    if (u->n != n)
        fail_msg("%s %s: %zu samples, expected %zu", label, column, u->n, n);
    for (size_t i = 0; i < n; i++)
        if (u->t[i] != t[i] || u->v[i] != v[i])
            fail_msg("%s %s[%zu] = (%.17g, %.17g)", label, column, i, u->t[i], u->v[i]);
}

/* The warning containing needle (fails when there is none). */
static const char *warning_with(const char *needle)
{
    for (size_t i = 0; i < L.nwarnings; i++)
        if (strstr(L.warnings[i], needle))
            return L.warnings[i];
    for (size_t i = 0; i < L.nwarnings; i++)
        print_message("warning: %s\n", L.warnings[i]);
    fail_msg("no warning with '%s'", needle);
    return NULL;
}

/* Loads a GPU CSV written into the scratch dir (with manifest rel m, or none). */
static int load_gpu(const char *csv, const char *m, unsigned flags)
{
    reset();
    tu_put("g/samples.csv", csv);
    L.flags = flags;
    return srt_log_load_gpu(&L, tp("g/samples.csv"), m ? tp(m) : NULL, &E);
}

static int load_cpu(const char *csv, unsigned flags)
{
    reset();
    tu_put("cpu/samples.csv", csv);
    L.flags = flags;
    return srt_log_load_cpu(&L, tp("cpu/samples.csv"), &E);
}

static void assert_err(int r, int code, const char *msg)
{
    if (r != code)
        fail_msg("returned %d (%s), expected %d", r, E.msg, code);
    assert_string_equal(E.msg, msg);
}

/* ---- discovery (§6.2) ---- */

static void test_detect_markers(void **state)
{
    (void)state;
    enum srt_log_bench b;
    tu_put("a.out", "17:59:31.680 NOTICE   Phase profiling (profiling) started | target: 3600.0s "
                    "duration (runner.py:593)\n");
    assert_int_equal(srt_log_detect_bench(tp("a.out"), &b, &E), 0);
    assert_int_equal(b, SRT_LOG_BENCH_AIPERF);
    assert_string_equal(srt_log_bench_name(b), "aiperf");

    tu_put("s.out", "============ Serving Benchmark Result ============\n");
    assert_int_equal(srt_log_detect_bench(tp("s.out"), &b, &E), 0);
    assert_int_equal(b, SRT_LOG_BENCH_SA_BENCH);
    assert_string_equal(srt_log_bench_name(b), "sa-bench");
    tu_put("s2.out", "x\r\nSuccessful requests: 10\r\n");
    assert_int_equal(srt_log_detect_bench(tp("s2.out"), &b, &E), 0);
    assert_int_equal(b, SRT_LOG_BENCH_SA_BENCH);

    /* a line with both kinds counts as aiperf only (elif), as upstream */
    tu_put("one.out", "Phase x (profiling) complete; Successful requests: 3\n");
    assert_int_equal(srt_log_detect_bench(tp("one.out"), &b, &E), 0);
    assert_int_equal(b, SRT_LOG_BENCH_AIPERF);

    /* \r alone ends a line too (a progress bar), so the marker is found after it */
    tu_put("cr.out", "progress 10%\rprogress 100%\rPhase p (profiling) started\r");
    assert_int_equal(srt_log_detect_bench(tp("cr.out"), &b, &E), 0);
    assert_int_equal(b, SRT_LOG_BENCH_AIPERF);

    char want[1200];
    tu_put("both.out", "12:00:00.000 NOTICE Phase profiling (profiling) started\n"
                       "Successful requests: 10\n");
    snprintf(want, sizeof want, "%s: matched both aiperf and sa-bench markers", tp("both.out"));
    assert_err(srt_log_detect_bench(tp("both.out"), &b, &E), -EINVAL, want);

    tu_put("none.out", "nothing relevant here\n");
    snprintf(want, sizeof want, "%s: matched neither aiperf nor sa-bench markers", tp("none.out"));
    assert_err(srt_log_detect_bench(tp("none.out"), &b, &E), -EINVAL, want);

    /* near misses: no word before (profiling), "(warmup)", "Phase  x" */
    tu_put("near.out", "Phase  (profiling) started\nPhase warmup (warmup) started\n"
                       "Phase x (profiling)started\n");
    assert_int_equal(srt_log_detect_bench(tp("near.out"), &b, &E), -EINVAL);
}

static void test_discover_errors(void **state)
{
    (void)state;
    char want[1200];
    /* no benchmark.out */
    snprintf(want, sizeof want, "%s/benchmark.out: not found", tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, NULL, &E), -ENOENT, want);
    reset();
    /* benchmark.out is a directory: not a file */
    tu_mkdirs("d/benchmark.out/");
    snprintf(want, sizeof want, "%s/d/benchmark.out: not found", tu_dir);
    assert_err(srt_log_discover(&L, tp("d"), NULL, &E), -ENOENT, want);
    reset();

    /* no samples.csv anywhere (nodes/<host>.csv is never one) */
    put_sabench_run();
    tu_put("cpu_power/nodes/node-a.csv", HOST_HDR_V3);
    snprintf(want, sizeof want, "no power samples.csv (CPU or GPU) found below %s", tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, NULL, &E), -ENOENT, want);
    reset();

    /* two CPU candidates */
    tu_put("power/cpu/samples.csv", CPU_HDR_V1);
    tu_put("cpu_power/samples.csv", HOST_HDR_V3);
    snprintf(want, sizeof want,
             "multiple CPU power samples.csv found below %s: %s/cpu_power/samples.csv, "
             "%s/power/cpu/samples.csv; pick one with --cpu-samples",
             tu_dir, tu_dir, tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();

    /* --cpu-samples settles it; one that is not a file */
    struct srt_log_opts o = {.cpu_samples = tp("power/cpu/samples.csv")};
    assert_int_equal(srt_log_discover(&L, tu_dir, &o, &E), 0);
    assert_string_equal(L.cpu_csv, tp("power/cpu/samples.csv"));
    assert_null(L.gpu_csv);
    reset();
    o.cpu_samples = tp("nope//x.csv");
    snprintf(want, sizeof want, "%s/nope/x.csv: not found", tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, &o, &E), -ENOENT, want);
    reset();

    /* two GPU candidates: Python prints the list of PosixPath */
    tu_put("power/samples.csv", GPU_HDR_V1);
    tu_put("old's/samples.csv", GPU_HDR_V1);
    o.cpu_samples = tp("cpu_power/samples.csv");
    snprintf(want, sizeof want,
             "multiple GPU power samples.csv found below %s: [PosixPath(\"%s/old's/samples.csv\"), "
             "PosixPath('%s/power/samples.csv')]",
             tu_dir, tu_dir, tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, &o, &E), -EINVAL, want);
    reset();
}

static void test_discover_fixture_errors(void **state)
{
    (void)state;
    char dir[1024], want[2400];
    snprintf(dir, sizeof dir, "%s", fixture("srt/err-both-markers"));
    snprintf(want, sizeof want, "%s/benchmark.out: matched both aiperf and sa-bench markers", dir);
    assert_err(srt_log_discover(&L, dir, NULL, &E), -EINVAL, want);
    reset();

    snprintf(dir, sizeof dir, "%s", fixture("srt/err-neither"));
    snprintf(want, sizeof want, "%s/benchmark.out: matched neither aiperf nor sa-bench markers",
             dir);
    assert_err(srt_log_discover(&L, dir, NULL, &E), -EINVAL, want);
    reset();

    snprintf(dir, sizeof dir, "%s", fixture("srt/err-multi-cpu"));
    snprintf(want, sizeof want,
             "multiple CPU power samples.csv found below %s: %s/cpu_power/samples.csv, "
             "%s/power/cpu/samples.csv; pick one with --cpu-samples",
             dir, dir, dir);
    assert_err(srt_log_discover(&L, dir, NULL, &E), -EINVAL, want);
    reset();

    snprintf(dir, sizeof dir, "%s", fixture("srt/err-multi-gpu"));
    snprintf(want, sizeof want,
             "multiple GPU power samples.csv found below %s: [PosixPath('%s/old_run/power/"
             "samples.csv'), PosixPath('%s/power/samples.csv')]",
             dir, dir, dir);
    assert_err(srt_log_discover(&L, dir, NULL, &E), -EINVAL, want);
    reset();

    snprintf(dir, sizeof dir, "%s", fixture("srt/err-no-artifacts"));
    snprintf(want, sizeof want, "no sa-bench result artifacts found below %s", dir);
    assert_err(srt_log_discover(&L, dir, NULL, &E), -ENOENT, want);
    reset();

    snprintf(dir, sizeof dir, "%s", fixture("srt/err-missing-field"));
    assert_int_equal(srt_log_discover(&L, dir, NULL, &E), 0);
    snprintf(want, sizeof want,
             "%s/sa-bench_x/results_concurrency_2_a.json: missing required field "
             "'total_output_tokens'",
             dir);
    assert_err(srt_log_load_windows(&L, &E), -EINVAL, want);
    reset();
    assert_err(srt_log_open(&L, dir, NULL, &E), -EINVAL, want);
    reset();
}

static void test_discover_sources(void **state)
{
    (void)state;
    char want[1200];
    tu_put("benchmark.out", "18:00:00.000 NOTICE Phase profiling (profiling) started\n");
    tu_put("power/samples.csv", GPU_HDR_V2);
    snprintf(want, sizeof want, "no aiperf result artifacts found below %s", tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, NULL, &E), -ENOENT, want);
    reset();

    const char *rec = "{\"metadata\": {\"benchmark_phase\": \"profiling\", "
                      "\"request_start_ns\": 1, \"request_end_ns\": 2}}\n";
    tu_put("b/conc_10/aiperf_artifacts/profile_export.jsonl", rec);
    tu_put("a/conc_9/aiperf_artifacts/profile_export.jsonl", rec);
    tu_put("a-x/conc_10/aiperf_artifacts/profile_export.jsonl", rec);
    tu_put("a/b/conc_10/aiperf_artifacts/profile_export.jsonl", rec);
    tu_put("conc_007/aiperf_artifacts/profile_export.jsonl", rec);
    tu_put("conc_1x/aiperf_artifacts/profile_export.jsonl", rec); /* not \d+$ */
    tu_put("conc_/aiperf_artifacts/profile_export.jsonl", rec);   /* no digits */
    tu_put("conc_3/artifacts/profile_export.jsonl", rec);         /* wrong folder */
    tu_put("conc_5/aiperf_artifacts/profile_export.json", rec);   /* wrong name */
    tu_mkdirs("conc_6/aiperf_artifacts/profile_export.jsonl/");   /* a directory: exists */
    assert_int_equal(srt_log_discover(&L, tu_dir, NULL, &E), 0);
    assert_int_equal(L.type, SRT_LOG_BENCH_AIPERF);
    assert_int_equal(L.nsources, 6);
    static const struct {
        long long c;
        const char *rel;
    } want_src[] = {
        {6, "conc_6/aiperf_artifacts/profile_export.jsonl"},
        {7, "conc_007/aiperf_artifacts/profile_export.jsonl"},
        {9, "a/conc_9/aiperf_artifacts/profile_export.jsonl"},
        /* pathlib orders by parts: a/b/... < a-x/... < b/... ('/' < '-' does not matter) */
        {10, "a/b/conc_10/aiperf_artifacts/profile_export.jsonl"},
        {10, "a-x/conc_10/aiperf_artifacts/profile_export.jsonl"},
        {10, "b/conc_10/aiperf_artifacts/profile_export.jsonl"},
    };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(L.sources[i].concurrency, want_src[i].c);
        assert_string_equal(L.sources[i].path, tp(want_src[i].rel));
    }
    assert_string_equal(L.gpu_csv, tp("power/samples.csv"));
    assert_null(L.gpu_manifest);
    assert_null(L.cpu_csv);
    reset();

    /* sa-bench: results_concurrency_<N>_*.json directly inside a sa-bench_* folder only */
    put_sabench_run();
    tu_put("x/sa-bench_b/results_concurrency_12_y.json", SA_RESULT);
    tu_put("sa-bench_a/results_concurrency_8.json", SA_RESULT);       /* no '_' after N */
    tu_put("sa-bench_a/results_concurrency_2_x.jsonl", SA_RESULT);    /* not *.json */
    tu_put("sa-bench_a/sub/results_concurrency_3_x.json", SA_RESULT); /* not directly inside */
    tu_put("power/windows/results_concurrency_4_w.json", "{}");
    tu_put("sabench_c/results_concurrency_5_x.json", SA_RESULT); /* not sa-bench_* */
    tu_put("power/manifest.json", "{}");
    assert_int_equal(srt_log_discover(&L, tu_dir, NULL, &E), 0);
    assert_int_equal(L.type, SRT_LOG_BENCH_SA_BENCH);
    assert_int_equal(L.nsources, 2);
    assert_int_equal(L.sources[0].concurrency, 4);
    assert_string_equal(L.sources[0].path, tp("sa-bench_a/results_concurrency_4_x.json"));
    assert_int_equal(L.sources[1].concurrency, 12);
    assert_string_equal(L.sources[1].path, tp("x/sa-bench_b/results_concurrency_12_y.json"));
    assert_string_equal(L.gpu_manifest, tp("power/manifest.json"));
    assert_string_equal(L.benchmark_out, tp("benchmark.out"));
    reset();
}

static void test_discover_paths(void **state)
{
    (void)state;
    put_sabench_run();
    tu_put("power/samples.csv", GPU_HDR_V2);
    /* a hidden directory is walked: its samples.csv is a second GPU candidate; symlinks to it
     * (power/mirror, sa-bench_link) are not descended into, as rglob does not; but
     * sa-bench_link matches the sa-bench_* part of the pattern, which follows it */
    tu_put("power/.hidden/samples.csv", GPU_HDR_V2);
    tu_put("power/.hidden/results_concurrency_16_z.json", SA_RESULT);
    assert_int_equal(symlink(tp("power/.hidden"), tp("power/mirror")), 0);
    assert_int_equal(symlink("power/.hidden", tp("sa-bench_link")), 0);
    char want[1200];
    snprintf(want, sizeof want,
             "multiple GPU power samples.csv found below %s: [PosixPath('%s/power/.hidden/"
             "samples.csv'), PosixPath('%s/power/samples.csv')]",
             tu_dir, tu_dir, tu_dir);
    assert_err(srt_log_discover(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    assert_int_equal(unlink(tp("power/.hidden/samples.csv")), 0);

    /* the log dir printed as pathlib prints it */
    char dir[1100];
    snprintf(dir, sizeof dir, "%s//./", tu_dir);
    assert_int_equal(srt_log_discover(&L, dir, NULL, &E), 0);
    assert_string_equal(L.log_dir, tu_dir);
    assert_string_equal(L.gpu_csv, tp("power/samples.csv"));
    assert_int_equal(L.nsources, 2);
    assert_string_equal(L.sources[1].path, tp("sa-bench_link/results_concurrency_16_z.json"));
    reset();

    /* "." joins as Python does: "benchmark.out", "power/samples.csv" */
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tu_dir), 0);
    assert_int_equal(srt_log_discover(&L, ".", NULL, &E), 0);
    assert_string_equal(L.log_dir, ".");
    assert_string_equal(L.benchmark_out, "benchmark.out");
    assert_string_equal(L.gpu_csv, "power/samples.csv");
    assert_string_equal(L.sources[0].path, "sa-bench_a/results_concurrency_4_x.json");
    reset();
    assert_int_equal(unlink("benchmark.out"), 0);
    assert_err(srt_log_discover(&L, "./", NULL, &E), -ENOENT, "benchmark.out: not found");
    reset();
    assert_int_equal(chdir(cwd), 0);
}

/* ---- windows and tokens (§6.3) ---- */

static void test_window_sabench(void **state)
{
    (void)state;
    put_sabench_run();
    tu_put("power/samples.csv", GPU_HDR_V2);
    assert_int_equal(srt_log_discover(&L, tu_dir, NULL, &E), 0);
    assert_int_equal(srt_log_load_windows(&L, &E), 0);
    assert_int_equal(L.nwindows, 1);
    const struct srt_log_window *w = &L.windows[0];
    assert_int_equal(w->type, SRT_LOG_BENCH_SA_BENCH);
    assert_int_equal(w->concurrency, 4);
    /* values as stored: 100 stays an int, 110.0 a real */
    assert_true(json_is_integer(w->start));
    assert_int_equal(json_integer_value(w->start), 100);
    assert_true(json_is_real(w->end));
    assert_true(json_is_integer(w->output_tokens));
    assert_int_equal(json_integer_value(w->input_tokens), 1500);
    assert_true(w->start_unix == 100.0 && w->end_unix == 110.0);
    assert_true(w->output_tokens_n == 500.0 && w->input_tokens_n == 1500.0);
    assert_string_equal(w->reported.source, "sa-bench-json");
    assert_true(w->reported.has_start && w->reported.has_end && w->reported.has_duration);
    assert_true(w->reported.duration_s == 9.8);
    assert_null(w->reported.note);
    reset();

    /* no duration: a note; "duration": null likewise; a numeric string is float()ed */
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 1.5, \"benchmark_end_time_unix\": 2, "
           "\"total_input_tokens\": 3.0, \"total_output_tokens\": 4, \"duration\": null}");
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    w = &L.windows[0];
    assert_false(w->reported.has_duration);
    assert_string_equal(w->reported.note, "result JSON has no 'duration' field");
    assert_true(json_is_real(w->start) && json_is_integer(w->end));
    assert_true(json_is_real(w->input_tokens));
    reset();
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": 1, \"benchmark_end_time_unix\": 2, "
           "\"total_input_tokens\": 3, \"total_output_tokens\": 4, \"duration\": \"1.25\"}");
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    assert_true(L.windows[0].reported.duration_s == 1.25);
    reset();

    /* each required field, in srt-slurm's order */
    static const char *const keys[] = {"benchmark_start_time_unix", "benchmark_end_time_unix",
                                       "total_input_tokens", "total_output_tokens"};
    for (size_t k = 0; k < 4; k++) {
        char body[512] = "{", want[1200];
        for (size_t j = 0; j < 4; j++)
            if (j != k)
                snprintf(body + strlen(body), sizeof body - strlen(body), "%s\"%s\": 1",
                         strlen(body) > 1 ? ", " : "", keys[j]);
        strcat(body, "}");
        tu_put("sa-bench_a/results_concurrency_4_x.json", body);
        snprintf(want, sizeof want, "%s: missing required field '%s'",
                 tp("sa-bench_a/results_concurrency_4_x.json"), keys[k]);
        assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
        reset();
    }
    char want[1200];
    tu_put("sa-bench_a/results_concurrency_4_x.json", "[1, 2]");
    snprintf(want, sizeof want, "%s: not a JSON object",
             tp("sa-bench_a/results_concurrency_4_x.json"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    tu_put("sa-bench_a/results_concurrency_4_x.json",
           "{\"benchmark_start_time_unix\": \"100\", \"benchmark_end_time_unix\": 2, "
           "\"total_input_tokens\": 3, \"total_output_tokens\": 4}");
    snprintf(want, sizeof want, "%s: field 'benchmark_start_time_unix' is not a number",
             tp("sa-bench_a/results_concurrency_4_x.json"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    tu_put("sa-bench_a/results_concurrency_4_x.json", "{\"benchmark_start_time_unix\": NaN}");
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL);
    assert_non_null(strstr(E.msg, "invalid JSON (line 1"));
    reset();
    /* a negative token count is refused with the file and field, as a count that is not a
     * number is (no energy per token can come of it) */
    static const struct {
        const char *in, *out, *bad;
    } neg[] = {{"-1500", "500", "'total_input_tokens' is negative (-1500)"},
               {"1500", "-0.5", "'total_output_tokens' is negative (-0.5)"}};
    for (size_t k = 0; k < 2; k++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"benchmark_start_time_unix\": 1, \"benchmark_end_time_unix\": 2, "
                 "\"total_input_tokens\": %s, \"total_output_tokens\": %s}",
                 neg[k].in, neg[k].out);
        tu_put("sa-bench_a/results_concurrency_4_x.json", body);
        snprintf(want, sizeof want, "%s: field %s", tp("sa-bench_a/results_concurrency_4_x.json"),
                 neg[k].bad);
        assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
        reset();
    }
}

/* One source's window alone: the same window as srt_log_load_windows gives, and a broken
 * source fails alone. */
static void test_load_window_alone(void **state)
{
    (void)state;
    put_sabench_run();
    tu_put("sa-bench_a/results_concurrency_8_x.json", "{\"benchmark_start_time_unix\": 1");
    tu_put("power/samples.csv", GPU_HDR_V2);
    assert_int_equal(srt_log_discover(&L, tu_dir, NULL, &E), 0);
    assert_int_equal(L.nsources, 2);
    struct srt_log_window w;
    assert_int_equal(srt_log_load_window(&L, 0, &w, &E), 0);
    assert_int_equal(w.concurrency, 4);
    assert_ptr_equal(w.path, L.sources[0].path);
    assert_true(w.start_unix == 100.0 && w.end_unix == 110.0);
    assert_int_equal(json_integer_value(w.start), 100);
    srt_log_window_done(&w);
    assert_true(srt_log_load_window(&L, 1, &w, &E) < 0);
    assert_non_null(strstr(E.msg, "results_concurrency_8_x.json"));
    srt_log_window_done(&w); /* nothing held: safe */
    carma_err_clear(&E);
    assert_int_equal(srt_log_load_window(&L, 2, &w, &E), -EINVAL);
    /* all of them: the broken one stops the list */
    assert_true(srt_log_load_windows(&L, &E) < 0);
}

static const char *const AIPERF_REC =
    "{\"metadata\": {\"benchmark_phase\": \"%s\", \"request_start_ns\": %s, "
    "\"request_end_ns\": %s}%s}\n";

static void put_aiperf(const char *jsonl, const char *aggregate, const char *bench_out)
{
    tu_put("benchmark.out", bench_out ? bench_out
                                      : "17:59:31.680 NOTICE   Phase profiling (profiling) "
                                        "started | target: 3600.0s duration (runner.py:593)\n");
    tu_put("power/samples.csv", GPU_HDR_V2);
    tu_put("conc_4/aiperf_artifacts/profile_export.jsonl", jsonl);
    if (aggregate)
        tu_put("conc_4/aiperf_artifacts/profile_export_aiperf.json", aggregate);
}

static void test_window_aiperf(void **state)
{
    (void)state;
    /* §8: warmup (1, 2 ns), profiling (1e9, 2e9) and (0.5e9, 3e9), an error row (0, 999e9) */
    char jsonl[2048] = "";
    size_t o = 0;
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, AIPERF_REC, "warmup", "1", "2", "");
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, AIPERF_REC, "profiling", "1000000000",
                          "2000000000", "");
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, "\r\n   \n");
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, AIPERF_REC, "profiling", "500000000",
                          "3000000000", ", \"error\": null");
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, AIPERF_REC, "profiling", "0", "999000000000",
                          ", \"error\": {\"code\": 1}");
    o += (size_t)snprintf(jsonl + o, sizeof jsonl - o, "{\"error\": \"\", \"metadata\": {}}\n");
    put_aiperf(jsonl, "{\"total_osl\": {\"avg\": 42}, \"total_isl\": {\"avg\": 7}}", NULL);
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    const struct srt_log_window *w = &L.windows[0];
    assert_int_equal(w->type, SRT_LOG_BENCH_AIPERF);
    assert_true(w->start_unix == 0.5 && w->end_unix == 3.0);
    assert_true(json_is_real(w->start) && json_real_value(w->start) == 0.5);
    assert_true(json_is_real(w->end) && json_real_value(w->end) == 3.0);
    assert_true(json_is_integer(w->output_tokens) && json_integer_value(w->output_tokens) == 42);
    assert_true(w->output_tokens_n == 42.0 && w->input_tokens_n == 7.0);
    /* no reported figures in the aggregate: the phase log, one start and no complete */
    assert_string_equal(w->reported.source, "unavailable");
    assert_null(w->reported.note);
    reset();

    char want[1200];
    /* a negative token average: refused with the file and field */
    snprintf(jsonl, sizeof jsonl, AIPERF_REC, "profiling", "1", "2", "");
    put_aiperf(jsonl, "{\"total_osl\": {\"avg\": 42}, \"total_isl\": {\"avg\": -7}}", NULL);
    snprintf(want, sizeof want, "%s: 'total_isl.avg' is negative (-7)",
             tp("conc_4/aiperf_artifacts/profile_export_aiperf.json"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    /* no profiling record */
    snprintf(jsonl, sizeof jsonl, AIPERF_REC, "warmup", "1", "2", "");
    put_aiperf(jsonl, "{}", NULL);
    snprintf(want, sizeof want, "%s: no successful profiling-phase records",
             tp("conc_4/aiperf_artifacts/profile_export.jsonl"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    /* the aggregate missing */
    snprintf(jsonl, sizeof jsonl, AIPERF_REC, "profiling", "1", "2", "");
    put_aiperf(jsonl, NULL, NULL);
    unlink(tp("conc_4/aiperf_artifacts/profile_export_aiperf.json"));
    snprintf(want, sizeof want, "%s: not found (expected alongside %s)",
             tp("conc_4/aiperf_artifacts/profile_export_aiperf.json"),
             tp("conc_4/aiperf_artifacts/profile_export.jsonl"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -ENOENT, want);
    reset();
    /* the aggregate without total_isl.avg */
    put_aiperf(jsonl, "{\"total_osl\": {\"avg\": 1}, \"total_isl\": {}}", NULL);
    snprintf(want, sizeof want, "%s: missing 'total_isl.avg'",
             tp("conc_4/aiperf_artifacts/profile_export_aiperf.json"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
    /* a record that is not JSON, and one without request_end_ns: file and line */
    put_aiperf("\n{\"metadata\": {}}\n{oops\n", "{}", NULL);
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL);
    snprintf(want, sizeof want, "%s:3: invalid JSON",
             tp("conc_4/aiperf_artifacts/profile_export.jsonl"));
    assert_memory_equal(E.msg, want, strlen(want));
    reset();
    put_aiperf("{\"metadata\": {\"benchmark_phase\": \"profiling\", \"request_start_ns\": 5}}\n",
               "{}", NULL);
    snprintf(want, sizeof want, "%s:1: profiling record has no metadata.request_end_ns",
             tp("conc_4/aiperf_artifacts/profile_export.jsonl"));
    assert_err(srt_log_open(&L, tu_dir, NULL, &E), -EINVAL, want);
    reset();
}

static void test_window_aiperf_reported(void **state)
{
    (void)state;
    /* §8: benchmark_duration {"unit":"sec","avg":99.5}, naive local stamps 99.5 s apart,
     * records 1000..1100 s (this test runs with TZ=UTC) */
    char jsonl[512];
    snprintf(jsonl, sizeof jsonl, AIPERF_REC, "profiling", "1000000000000", "1100000000000", "");
    put_aiperf(jsonl,
               "{\"total_osl\": {\"avg\": 1.5}, \"total_isl\": {\"avg\": 2.5}, "
               "\"benchmark_duration\": {\"unit\": \"sec\", \"avg\": 99.5}, "
               "\"start_time\": \"2026-09-06T14:32:00.646759\", "
               "\"end_time\": \"2026-09-06T14:33:40.146759\"}",
               NULL);
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    const struct srt_log_window *w = &L.windows[0];
    assert_true(w->end_unix - w->start_unix == 100.0);
    assert_string_equal(w->reported.source, "aiperf-json");
    assert_true(w->reported.has_duration && w->reported.duration_s == 99.5);
    assert_true(w->reported.has_start && w->reported.has_end);
    assert_true(w->reported.end_unix - w->reported.start_unix == 99.5);
    assert_true(w->reported.start_unix == 1788705120.646759);
    assert_string_equal(w->reported.note,
                        "start/end are aiperf's naive local ISO stamps converted in this host's "
                        "timezone");
    reset();

    /* explicit offsets honoured; an unparseable stamp is null; a scalar duration */
    put_aiperf(jsonl,
               "{\"total_osl\": {\"avg\": 1}, \"total_isl\": {\"avg\": 2}, "
               "\"benchmark_duration\": 12, \"start_time\": \"2026-09-06T14:32:00+02:00\", "
               "\"end_time\": \"yesterday\"}",
               NULL);
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    w = &L.windows[0];
    assert_true(w->reported.has_start && w->reported.start_unix == 1788697920.0);
    assert_false(w->reported.has_end);
    assert_true(w->reported.duration_s == 12.0);
    reset();
}

static void test_phase_log(void **state)
{
    (void)state;
    struct srt_log_reported rep;
    /* §8: elapsed=1200.50s on the complete line */
    tu_put("p1.out", "22:09:07.432 NOTICE   Phase profiling (profiling) started | target\n"
                     "22:29:00.000 NOTICE   Phase profiling (profiling) sending complete\n"
                     "22:29:07.932 NOTICE   Phase profiling (profiling) complete elapsed=1200.50s "
                     "(runner.py:700)\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p1.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "aiperf-phase-log");
    assert_true(rep.has_duration && rep.duration_s == 1200.5);
    assert_false(rep.has_start || rep.has_end);
    assert_string_equal(rep.note,
                        "phase started 22:09:07.432, complete 22:29:07.932 (time-of-day only)");
    free(rep.note);
    /* no elapsed: the stamps, across midnight */
    tu_put("p2.out", "23:59:00.000 NOTICE\tPhase profiling (profiling) started\r\n"
                     "00:01:00.000 NOTICE Phase profiling (profiling) complete.\r\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p2.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "aiperf-phase-log");
    assert_true(rep.duration_s == 120.0);
    free(rep.note);
    /* two phases: unavailable, with the count */
    tu_put("p3.out", "10:00:00.000 NOTICE Phase profiling (profiling) started\n"
                     "10:01:00.000 NOTICE Phase profiling (profiling) complete elapsed=60.0s\n"
                     "10:02:00.000 NOTICE Phase profiling (profiling) started\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p3.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "unavailable");
    assert_string_equal(rep.note,
                        "2 profiling phases in p3.out; cannot pair them to one concurrency");
    free(rep.note);
    /* lines that do not match: no stamp at the start, "completed", a missing NOTICE */
    tu_put("p4.out", " 10:00:00.000 NOTICE Phase profiling (profiling) started\n"
                     "10:00:00.000 NOTICE Phase profiling (profiling) completed\n"
                     "10:00:00.000 INFO Phase profiling (profiling) started\n"
                     "10:00:00.00 NOTICE Phase profiling (profiling) started\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p4.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "unavailable");
    assert_null(rep.note);
    /* a stamp that is no time of day (hour 48): no duration (srt-slurm's arithmetic gives
     * -28769.5 s), said in the note; with elapsed= the stamps are not used */
    tu_put("p5.out", "48:59:31.680 NOTICE Phase profiling (profiling) started\n"
                     "17:00:02.180 NOTICE Phase profiling (profiling) complete\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p5.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "unavailable");
    assert_false(rep.has_duration);
    assert_string_equal(rep.note, "phase started 48:59:31.680, complete 17:00:02.180 in p5.out: "
                                  "not a time of day");
    free(rep.note);
    tu_put("p6.out", "10:00:00.000 NOTICE Phase profiling (profiling) started\n"
                     "10:00:61.500 NOTICE Phase profiling (profiling) complete elapsed=61.5s\n");
    assert_int_equal(srt_log_phase_log_timing(tp("p6.out"), &rep, &E), 0);
    assert_string_equal(rep.source, "aiperf-phase-log");
    assert_true(rep.has_duration && rep.duration_s == 61.5);
    free(rep.note);
    /* the fallback inside a window: aggregate without timing, one phase in benchmark.out */
    char jsonl[512];
    snprintf(jsonl, sizeof jsonl, AIPERF_REC, "profiling", "1000000000", "2000000000", "");
    put_aiperf(jsonl, "{\"total_osl\": {\"avg\": 1}, \"total_isl\": {\"avg\": 2}}",
               "22:09:07.432 NOTICE   Phase profiling (profiling) started\n"
               "22:29:07.932 NOTICE   Phase profiling (profiling) complete elapsed=1200.50s\n");
    assert_int_equal(srt_log_open(&L, tu_dir, NULL, &E), 0);
    assert_string_equal(L.windows[0].reported.source, "aiperf-phase-log");
    assert_true(L.windows[0].reported.duration_s == 1200.5);
    reset();
}

/* ---- the fixture runs ---- */

static void test_fixture_sabench(void **state)
{
    (void)state;
    char dir[1024], p[1200];
    snprintf(dir, sizeof dir, "%s", fixture("srt/sabench"));
    assert_int_equal(srt_log_open(&L, dir, NULL, &E), 0);
    assert_int_equal(L.type, SRT_LOG_BENCH_SA_BENCH);
    snprintf(p, sizeof p, "%s/power/cpu/samples.csv", dir);
    assert_string_equal(L.cpu_csv, p);
    snprintf(p, sizeof p, "%s/power/samples.csv", dir);
    assert_string_equal(L.gpu_csv, p);
    snprintf(p, sizeof p, "%s/power/manifest.json", dir);
    assert_string_equal(L.gpu_manifest, p);
    assert_int_equal(L.nsources, 2);
    assert_int_equal(L.nwindows, 2);

    const struct srt_log_window *w = &L.windows[0];
    assert_int_equal(w->concurrency, 4);
    snprintf(p, sizeof p,
             "%s/sa-bench_isl_1024_osl_128/results_concurrency_4_gpus_3_ctx_1_gen_1.json", dir);
    assert_string_equal(w->path, p);
    assert_true(json_is_real(w->start) && w->start_unix == 980.25);
    assert_true(json_is_integer(w->end) && json_integer_value(w->end) == 990);
    assert_true(json_is_real(w->output_tokens) && w->output_tokens_n == 5120.0);
    assert_true(json_is_integer(w->input_tokens) && w->input_tokens_n == 40960.0);
    assert_string_equal(w->reported.note, "result JSON has no 'duration' field");
    w = &L.windows[1];
    assert_int_equal(w->concurrency, 16);
    assert_true(json_is_integer(w->start) && json_is_real(w->end) && w->end_unix == 1010.5);
    assert_true(w->reported.has_duration && w->reported.duration_s == 10.25);

    /* GPU: v2, roles from the manifest */
    assert_true(L.gpu_loaded && L.gpu_roles_known);
    assert_int_equal(L.gpu_schema, 2);
    const double ta[] = {979.5, 985.0, 990.5, 1011.0}, tb[] = {979.75, 985.25, 990.75, 1011.25};
    assert_int_equal(L.gpu_devices.n, 3);
    assert_series(&L.gpu_devices.v[0], "gpu/node-a/gpu0", 4, ta,
                  (const double[]){100, 110, 120, 130});
    assert_series(&L.gpu_devices.v[1], "gpu/node-a/gpu1", 4, ta, (const double[]){50, 55, 60, 65});
    assert_series(&L.gpu_devices.v[2], "gpu/node-b/gpu0", 4, tb,
                  (const double[]){200, 210, 220, 230});
    assert_string_equal(L.gpu_devices.v[0].host, "node-a");
    assert_int_equal(L.gpu_devices.v[1].index, 1);
    assert_int_equal(L.gpu_devices.v[0].n_roles, 1);
    assert_string_equal(L.gpu_devices.v[0].roles[0], "prefill");
    assert_int_equal(L.gpu_devices.v[2].n_roles, 2);
    assert_string_equal(L.gpu_devices.v[2].roles[0], "decode");
    assert_string_equal(L.gpu_devices.v[2].roles[1], "prefill");
    assert_int_equal(L.gpu_nodes.n, 2);
    assert_series(&L.gpu_nodes.v[0], "gpu/node-a", 4, ta, (const double[]){150, 165, 180, 195});
    assert_series(&L.gpu_nodes.v[1], "gpu/node-b", 4, tb, (const double[]){200, 210, 220, 230});
    assert_int_equal(L.gpu_nodes.v[0].index, -1);
    /* roles: by role name, then host; node-b's GPU is in both */
    assert_int_equal(L.gpu_roles.n, 4);
    assert_series(&L.gpu_roles.v[0], "gpu/node-a/decode", 4, ta, (const double[]){50, 55, 60, 65});
    assert_series(&L.gpu_roles.v[1], "gpu/node-b/decode", 4, tb,
                  (const double[]){200, 210, 220, 230});
    assert_series(&L.gpu_roles.v[2], "gpu/node-a/prefill", 4, ta,
                  (const double[]){100, 110, 120, 130});
    assert_series(&L.gpu_roles.v[3], "gpu/node-b/prefill", 4, tb,
                  (const double[]){200, 210, 220, 230});
    assert_string_equal(L.gpu_roles.v[1].role, "decode");
    assert_string_equal(L.gpu_roles.v[1].host, "node-b");
    /* utilization: populated columns only */
    assert_int_equal(L.gpu_util.n, 3);
    assert_util(&L.gpu_util.v[0], "gpu/node-a/gpu0", "gpu_util_pct", 3,
                (const double[]){979.5, 990.5, 1011.0}, (const double[]){60, 70, 75});
    assert_int_equal(L.gpu_util.v[0].series, 0);
    assert_util(&L.gpu_util.v[1], "gpu/node-a/gpu1", "gpu_util_pct", 3,
                (const double[]){979.5, 985.0, 1011.0}, (const double[]){80, 85, 90});
    assert_util(&L.gpu_util.v[2], "gpu/node-a/gpu1", "sm_active", 3,
                (const double[]){979.5, 985.0, 1011.0}, (const double[]){0.5, 0.25, 0.75});
    assert_int_equal(L.gpu_util.v[2].series, 1);

    /* CPU: scraper v1, long; node-a ACPI (the Grace total chosen over its rails), node-b DCGM */
    assert_true(L.cpu_loaded);
    assert_false(L.cpu_wide);
    assert_string_equal(L.cpu_layout, "scraper-v1/host-v1");
    assert_int_equal(L.cpu_sockets.n, 4);
    const double tc[] = {979.6, 985.1, 1011.1};
    assert_series(&L.cpu_sockets.v[0], "cpu/node-a/socket0", 3, tc,
                  (const double[]){150, 151, 153});
    assert_string_equal(L.cpu_sockets.v[0].sensor, "Grace Power Socket 0");
    assert_int_equal(L.cpu_sockets.v[0].n_other, 2);
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[0], "CPU Power Socket 0");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[1], "SysIO Power Socket 0");
    assert_series(&L.cpu_sockets.v[1], "cpu/node-a/socket1", 3, tc,
                  (const double[]){140, 141, 143});
    const double td[] = {979.6 + 0.05, 985.1 + 0.05, 990.6 + 0.05, 1011.1 + 0.05};
    assert_series(&L.cpu_sockets.v[2], "cpu/node-b/socket0", 4, td,
                  (const double[]){43.878, 43.878, 43.878, 43.878});
    assert_string_equal(L.cpu_sockets.v[3].sensor, "CPU1:cpuPowerUsageW");
    assert_int_equal(L.cpu_sockets.v[3].n_other, 0);
    assert_int_equal(L.cpu_nodes.n, 2);
    assert_series(&L.cpu_nodes.v[0], "cpu/node-a", 3, tc, (const double[]){290, 292, 296});
    const double dsum = 43.878 + 52.35;
    assert_series(&L.cpu_nodes.v[1], "cpu/node-b", 4, td, (const double[]){dsum, dsum, dsum, dsum});
    assert_int_equal(L.cpu_util.n, 0);
    assert_int_equal(L.nwarnings, 0);
}

static void test_fixture_aiperf(void **state)
{
    (void)state;
    char dir[1024], p[1200];
    snprintf(dir, sizeof dir, "%s", fixture("srt/aiperf"));
    assert_int_equal(srt_log_open(&L, dir, NULL, &E), 0);
    assert_int_equal(L.type, SRT_LOG_BENCH_AIPERF);
    assert_null(L.gpu_csv);
    assert_false(L.gpu_loaded);
    snprintf(p, sizeof p, "%s/cpu_power/samples.csv", dir);
    assert_string_equal(L.cpu_csv, p);
    assert_int_equal(L.nwindows, 3);
    static const long long conc[] = {2, 8, 16};
    static const char *const rel[] = {"conc_2", "sweep/conc_8", "sweep/deep/conc_16"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(L.windows[i].concurrency, conc[i]);
        snprintf(p, sizeof p, "%s/%s/aiperf_artifacts/profile_export.jsonl", dir, rel[i]);
        assert_string_equal(L.windows[i].path, p);
    }
    const struct srt_log_window *w = &L.windows[0];
    assert_true(w->start_unix == 1000.0 && w->end_unix == 1030.0);
    assert_true(json_is_real(w->output_tokens) && w->output_tokens_n == 42.0);
    assert_true(json_is_integer(w->input_tokens) && w->input_tokens_n == 7.0);
    assert_string_equal(w->reported.source, "aiperf-json");
    assert_true(w->reported.has_duration && w->reported.duration_s == 29.5);
    assert_true(w->reported.has_start && w->reported.start_unix == 1000.25);
    assert_false(w->reported.has_end);
    w = &L.windows[1];
    assert_true(w->start_unix == 1100.0 && w->end_unix == 1134.5);
    assert_true(w->output_tokens_n == 1234.5 && w->input_tokens_n == 4321.25);
    assert_string_equal(w->reported.source, "unavailable");
    assert_string_equal(w->reported.note,
                        "2 profiling phases in benchmark.out; cannot pair them to one concurrency");
    w = &L.windows[2];
    assert_true(w->start_unix == 1200.0 && w->end_unix == 1210.0);
    assert_string_equal(w->reported.source, "aiperf-json");
    assert_true(w->reported.duration_s == 9.75 && !w->reported.has_start);

    /* host collector v3 */
    assert_string_equal(L.cpu_layout, "host-v3");
    assert_false(L.cpu_wide);
    assert_int_equal(L.cpu_sockets.n, 4);
    const double ta[] = {999.0, 1000.0, 1001.0, 1015.0, 1030.5};
    const double tb[] = {999.5, 1000.5, 1001.5, 1015.5, 1031.0};
    assert_series(&L.cpu_sockets.v[0], "cpu/node-a/socket0", 5, ta,
                  (const double[]){93.5, 94.5, 95.5, 96.5, 97.5});
    assert_string_equal(L.cpu_sockets.v[0].sensor, "CPU0:cpuSidePowerUsageW");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[0], "CPU0:cpuRailPowerUsageW");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[1], "CPU0:socPowerUsageW");
    assert_series(&L.cpu_sockets.v[1], "cpu/node-a/socket1", 5, ta,
                  (const double[]){95.25, 95.25, 95.25, 95.25, 95.25});
    assert_series(&L.cpu_sockets.v[2], "cpu/node-b/socket0", 5, tb,
                  (const double[]){120.5, 121.5, 122.5, 123.5, 124.5});
    /* node-a's totals: the `None` scrape (t=1015) is no sample */
    assert_int_equal(L.cpu_nodes.n, 2);
    assert_series(
        &L.cpu_nodes.v[0], "cpu/node-a", 4, (const double[]){999.0, 1000.0, 1001.0, 1030.5},
        (const double[]){93.5 + 95.25 + 0, 93.5 + 95.25 + 1, 93.5 + 95.25 + 2, 93.5 + 95.25 + 4});
    assert_series(&L.cpu_nodes.v[1], "cpu/node-b", 5, tb,
                  (const double[]){120.5 + 0 + 130.0, 120.5 + 1 + 130.0, 120.5 + 2 + 130.0,
                                   120.5 + 3 + 130.0, 120.5 + 4 + 130.0});
    snprintf(p, sizeof p,
             "%s/cpu_power/samples.csv:20: total_power_w 'None' (the host collector's missing "
             "aggregate) read as blank (4 such rows)",
             dir);
    assert_int_equal(L.nwarnings, 1);
    assert_string_equal(L.warnings[0], p);
    /* utilization: node-b only; columns by name; socket1 has one populated cell */
    assert_int_equal(L.cpu_util.n, 6);
    static const char *const cols[] = {"cpu_util_irq", "cpu_util_nice", "cpu_util_sys",
                                       "cpu_util_total", "cpu_util_user"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(L.cpu_util.v[i].label, "cpu/node-b/socket0");
        assert_string_equal(L.cpu_util.v[i].column, cols[i]);
        assert_int_equal(L.cpu_util.v[i].n, 5);
        assert_int_equal(L.cpu_util.v[i].series, 2);
    }
    assert_true(L.cpu_util.v[3].v[2] == 0.4 + 2 / 10.0);
    assert_util(&L.cpu_util.v[5], "cpu/node-b/socket1", "cpu_util_total", 1,
                (const double[]){1000.5}, (const double[]){0.2});
}

/* ---- series (§6.4) ---- */

static void test_gpu_roles_and_sums(void **state)
{
    (void)state;
    /* §8: gpu0 prefill 100/110 W, gpu1 decode 50/55 W at t=10/11 */
    tu_put("m.json", "{\"expected_devices\": ["
                     "{\"hostname\": \"node-a\", \"gpu_index\": 0, \"assignments\": "
                     "[{\"worker_role\": \"prefill\"}]},"
                     "{\"hostname\": \"node-a\", \"gpu_index\": 1, \"assignments\": "
                     "[{\"worker_role\": \"decode\"}]}]}");
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,10.0,0,node-a,0,u0,100.0\r\n"
                                         "1,10.0,0,node-a,1,u1,50.0\r\n"
                                         "1,11.0,1,node-a,0,u0,110.0\r\n"
                                         "1,11.0,1,node-a,1,u1,55.0\r\n",
                              "m.json", 0),
                     0);
    const double t[] = {10, 11};
    assert_series(&L.gpu_nodes.v[0], "gpu/node-a", 2, t, (const double[]){150, 165});
    assert_int_equal(L.gpu_roles.n, 2);
    assert_series(&L.gpu_roles.v[0], "gpu/node-a/decode", 2, t, (const double[]){50, 55});
    assert_series(&L.gpu_roles.v[1], "gpu/node-a/prefill", 2, t, (const double[]){100, 110});
    assert_int_equal(L.gpu_schema, 1);
    assert_int_equal(L.gpu_util.n, 0);

    /* only bit-identical timestamps are summed; out-of-order rows are sorted; a device with
     * equal timestamps keeps file order; hosts and indexes sort as strings and numbers */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,20.0,2,n1,10,u,1.0,,\r\n"
                                         "2,10.0,0,n1,2,u,2.0,,\r\n"
                                         "2,10.000000000000002,0,n1,10,u,4.0,,\r\n"
                                         "2,10.0,0,n0,0,u,8.0,,\r\n"
                                         "2,10.0,1,n1,2,u,16.0,,\r\n"
                                         "2,-0.0,3,n1,2,u,32.0,,\r\n"
                                         "2,0.0,3,n1,10,u,64.0,,\r\n",
                              NULL, 0),
                     0);
    assert_false(L.gpu_roles_known);
    assert_int_equal(L.gpu_roles.n, 0);
    assert_int_equal(L.gpu_devices.n, 3);
    assert_series(&L.gpu_devices.v[0], "gpu/n0/gpu0", 1, (const double[]){10}, (const double[]){8});
    assert_series(&L.gpu_devices.v[1], "gpu/n1/gpu2", 3, (const double[]){-0.0, 10, 10},
                  (const double[]){32, 2, 16});
    assert_series(&L.gpu_devices.v[2], "gpu/n1/gpu10", 3,
                  (const double[]){0.0, 10.000000000000002, 20}, (const double[]){64, 4, 1});
    assert_series(&L.gpu_nodes.v[1], "gpu/n1", 4, (const double[]){0.0, 10, 10.000000000000002, 20},
                  (const double[]){96, 18, 4, 1});
    /* -0.0 and 0.0 are one timestamp of the node (the first one's key kept); timestamps going
     * back in scrape_seq order are read, and warned about */
    assert_true(signbit(L.gpu_nodes.v[1].t[0]));
    assert_non_null(strstr(warning_with("timestamp_non_monotonic"), "(2 such rows)"));
    reset();

    /* manifest: a device in two roles counts in both; the last entry of a device wins;
     * a string gpu_index matches nothing (warned); empty expected_devices: no roles */
    tu_put("m.json", "{\"expected_devices\": ["
                     "{\"hostname\": \"h\", \"gpu_index\": 0, \"assignments\": "
                     "[{\"worker_role\": \"x\"}]},"
                     "{\"hostname\": \"h\", \"gpu_index\": 0, \"assignments\": "
                     "[{\"worker_role\": \"prefill\"}, {\"worker_role\": \"decode\"}, "
                     "{\"worker_role\": \"prefill\"}]},"
                     "{\"hostname\": \"h\", \"gpu_index\": \"1\", \"assignments\": "
                     "[{\"worker_role\": \"agg\"}]}]}");
    assert_int_equal(
        load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,1.0,0,h,1,u,5.0\r\n", "m.json", 0), 0);
    assert_int_equal(L.gpu_roles.n, 2);
    assert_series(&L.gpu_roles.v[0], "gpu/h/decode", 1, (const double[]){1}, (const double[]){10});
    assert_series(&L.gpu_roles.v[1], "gpu/h/prefill", 1, (const double[]){1}, (const double[]){10});
    assert_int_equal(L.gpu_devices.v[0].n_roles, 2);
    assert_int_equal(L.gpu_devices.v[1].n_roles, 0);
    warning_with("expected_devices[2].gpu_index is not a number");
    tu_put("m.json", "{\"schema_version\": 1}");
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n", "m.json", 0), 0);
    assert_true(L.gpu_roles_known);
    assert_int_equal(L.gpu_roles.n, 0);
    char want[1200];
    tu_put("m.json", "{\"expected_devices\": [{\"hostname\": \"h\", \"gpu_index\": 0}]}");
    snprintf(want, sizeof want, "%s: expected_devices[0] has no 'assignments'", tp("m.json"));
    assert_err(load_gpu(GPU_HDR_V1, "m.json", 0), -EINVAL, want);
    assert_false(L.gpu_loaded);
    tu_put("m.json", "{\"expected_devices\": [");
    assert_int_equal(load_gpu(GPU_HDR_V1, "m.json", 0), -EINVAL);
    assert_non_null(strstr(E.msg, "invalid JSON"));
    reset();
}

static void test_cpu_series(void **state)
{
    (void)state;
    /* §8 (v1): two sensor rows per timestamp with total 90/92 -> node [90, 92] (one value per
     * timestamp, not a sum); a blank total at t=10 -> only t=11 */
    assert_int_equal(load_cpu(CPU_HDR_V1 "1,1.0,h,dcgm,CPU0:cpuPowerUsageW,0,40.0,90.0\r\n"
                                         "1,1.0,h,dcgm,CPU1:cpuPowerUsageW,1,50.0,90.0\r\n"
                                         "1,2.0,h,dcgm,CPU0:cpuPowerUsageW,0,41.0,92.0\r\n"
                                         "1,2.0,h,dcgm,CPU1:cpuPowerUsageW,1,51.0,92.0\r\n",
                              0),
                     0);
    assert_series(&L.cpu_nodes.v[0], "cpu/h", 2, (const double[]){1, 2}, (const double[]){90, 92});
    assert_series(&L.cpu_sockets.v[1], "cpu/h/socket1", 2, (const double[]){1, 2},
                  (const double[]){50, 51});
    assert_int_equal(load_cpu(CPU_HDR_V1 "1,10.0,h,acpi,Grace Power Socket 0,0,90.0,\r\n"
                                         "1,11.0,h,acpi,Grace Power Socket 0,0,92.0,92.0\r\n",
                              0),
                     0);
    assert_series(&L.cpu_nodes.v[0], "cpu/h", 1, (const double[]){11}, (const double[]){92});
    assert_series(&L.cpu_sockets.v[0], "cpu/h/socket0", 2, (const double[]){10, 11},
                  (const double[]){90, 92});

    /* a blank socket_id: node total only; a repeated (sensor, time) overwrites; unsorted rows;
     * sockets sort by host then number (socket10 after socket2) */
    assert_int_equal(load_cpu(CPU_HDR_V1 "1,5.0,h,acpi,,,1.0,7.0\r\n"
                                         "1,3.0,h,acpi,Total Power socket 10,10,3.0,9.0\r\n"
                                         "1,2.0,h,acpi,Total Power socket 2,2,4.0,8.0\r\n"
                                         "1,3.0,h,acpi,Total Power socket 10,10,3.5,9.5\r\n"
                                         "1,1.0,g,acpi,Total Power socket 2,2,1.0,\r\n",
                              0),
                     0);
    assert_int_equal(L.cpu_sockets.n, 3);
    assert_string_equal(L.cpu_sockets.v[0].label, "cpu/g/socket2");
    assert_string_equal(L.cpu_sockets.v[1].label, "cpu/h/socket2");
    assert_series(&L.cpu_sockets.v[2], "cpu/h/socket10", 1, (const double[]){3},
                  (const double[]){3.5});
    assert_int_equal(L.cpu_nodes.n, 1);
    assert_series(&L.cpu_nodes.v[0], "cpu/h", 3, (const double[]){2, 3, 5},
                  (const double[]){8, 9.5, 7});

    /* #453: one sensor per socket, best rank, ties by name */
    assert_int_equal(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,SysIO Power Socket 0,0,9.5,\r\n"
                                         "1,1.0,h,acpi,CPU Power Socket 0,0,125.5,\r\n"
                                         "1,1.0,h,acpi,Module Power Socket 0,0,400.0,\r\n"
                                         "1,1.0,h,acpi,DRAM Power in uW socket 0,0,8.0,\r\n"
                                         "1,1.0,h,acpi,zz other,1,1.0,\r\n"
                                         "1,1.0,h,acpi,aa other,1,2.0,\r\n",
                              0),
                     0);
    assert_string_equal(L.cpu_sockets.v[0].sensor, "CPU Power Socket 0");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[0], "SysIO Power Socket 0");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[1], "DRAM Power in uW socket 0");
    assert_string_equal(L.cpu_sockets.v[0].other_sensors[2], "Module Power Socket 0");
    assert_string_equal(L.cpu_sockets.v[1].sensor, "aa other");
    assert_int_equal(L.cpu_nodes.n, 0);

    /* wide layout (scraper v2): power_w per row, whatever the sensor column says */
    assert_int_equal(
        load_cpu("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,"
                 "cpu_rail_w,soc_w,dram_w,total_power_w\r\n"
                 "2,1.0,h,acpi,CPU0:cpuSidePowerUsageW,0,93.0,48.0,5.0,,188.0\r\n"
                 "2,1.0,h,acpi,CPU1:cpuSidePowerUsageW,1,95.0,49.0,5.0,,188.0\r\n"
                 "2,2.0,h,acpi,CPU0:cpuRailPowerUsageW,0,94.0,48.0,5.0,,189.0\r\n",
                 0),
        0);
    assert_true(L.cpu_wide);
    assert_string_equal(L.cpu_layout, "scraper-v2");
    assert_series(&L.cpu_sockets.v[0], "cpu/h/socket0", 2, (const double[]){1, 2},
                  (const double[]){93, 94});
    assert_string_equal(L.cpu_sockets.v[0].sensor, "power_w");
    assert_series(&L.cpu_nodes.v[0], "cpu/h", 2, (const double[]){1, 2},
                  (const double[]){188, 189});

    /* §8 host v3 utilization: blank cells skipped */
    assert_int_equal(load_cpu(HOST_HDR_V3 "3,10.0,x,h,dcgm,CPU0:cpuPowerUsageW,0,1.0,2.0,,,,,\n"
                                          "3,10.0,x,h,dcgm,CPU1:cpuPowerUsageW,1,1.0,2.0,0.2,,,,\n"
                                          "3,15.0,x,h,dcgm,CPU0:cpuPowerUsageW,0,1.0,2.0,0.5,,,,\n",
                              0),
                     0);
    assert_int_equal(L.cpu_util.n, 2);
    assert_util(&L.cpu_util.v[0], "cpu/h/socket0", "cpu_util_total", 1, (const double[]){15},
                (const double[]){0.5});
    assert_util(&L.cpu_util.v[1], "cpu/h/socket1", "cpu_util_total", 1, (const double[]){10},
                (const double[]){0.2});
    assert_int_equal(L.cpu_util.v[1].series, 1);

    /* host v4 (wide with utilization) */
    assert_int_equal(
        load_cpu("schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,"
                 "power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,"
                 "cpu_util_nice,cpu_util_sys,cpu_util_irq\n"
                 "4,1.0,x,h,acpi,CPU0:cpuSidePowerUsageW,0,93.0,48.0,5.0,8.0,93.0,,,,,\n",
                 0),
        0);
    assert_string_equal(L.cpu_layout, "host-v4");
    assert_true(L.cpu_wide);
    reset();
}

static void test_sensor_rank(void **state)
{
    (void)state;
    static const struct {
        const char *sensor;
        int rank;
    } cases[] = {
        {"CPU0:cpuSidePowerUsageW", 0},
        {"anything:cpuSidePowerUsageW", 0},
        {"CPU1:cpuPowerUsageW", 1},
        {"CPU0:cpuRailPowerUsageW", 2},
        {"CPU0:socPowerUsageW", 3},
        {"CPU0:dramPowerUsageW", 4},
        {"CPU0:modulePowerUsageW", 5},
        {"Grace Power Socket 0", 0},
        {"Grace Power Socket 1 CPU Power", 0},
        {"Total Power socket 0", 0},
        {"total  input power IN uw socket 12", 0},
        {"Total Input Power socket 3", 0},
        {"CPU Rail Power in uW socket 1", 2},
        {"CPU Rail Input Power socket 0", 2},
        {"CPU Power Socket 0", 2},
        {"CPU Input Power Socket 0", 2},
        {"SoC Rail Power socket 0", 3},
        {"SysIO Power Socket 0", 3},
        {"DRAM Power socket 0", 4},
        {"DRAM Input Power in uW socket 1", 4},
        {"Module Power Socket 0", 5},
        {"CPU Rail Output Power in uW socket 0", 6},
        {"Total CPU Energy In uJ socket 0", 6},
        {"Module Socket A", 6},
        {"XGrace Power Socket 0", 6}, /* no word boundary before */
        {"Grace Power Socket 0x", 6}, /* none after the number */
        {"Grace Power Socket", 6},    /* no number */
        {"CPU Power Socket \"x", 6},
        {"", 6},
        {"CPU0:", 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (srt_log_sensor_rank(cases[i].sensor) != cases[i].rank)
            fail_msg("'%s': rank %d, expected %d", cases[i].sensor,
                     srt_log_sensor_rank(cases[i].sensor), cases[i].rank);
}

/* ---- malformed inputs ---- */

static void test_malformed(void **state)
{
    (void)state;
    char want[1200], g[1024], c[1024];
    snprintf(g, sizeof g, "%s", tp("g/samples.csv"));
    snprintf(c, sizeof c, "%s", tp("cpu/samples.csv"));

    /* a missing column: the header line and the row that needed it */
    snprintf(want, sizeof want, "%s:2: no column 'power_w' in the header (line 1)", g);
    assert_err(load_gpu("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid\n"
                        "1,1.0,0,h,0,u\n",
                        NULL, 0),
               -EINVAL, want);
    /* ... but a header alone is a leg without series, as upstream */
    assert_int_equal(load_gpu("timestamp_unix\n", NULL, 0), 0);
    assert_int_equal(L.gpu_devices.n, 0);
    assert_int_equal(L.gpu_schema, 0);
    snprintf(want, sizeof want, "%s:3: no column 'total_power_w' in the header (line 1)", c);
    assert_err(load_cpu("timestamp_unix,hostname,socket_id,power_w,sensor\n\n"
                        "1.0,h,0,5.0,s\n",
                        0),
               -EINVAL, want);

    /* CRLF and LF read the same */
    const char *lf = GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,h,0,u,11.0\n";
    assert_int_equal(load_gpu(lf, NULL, 0), 0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 2, (const double[]){1, 2},
                  (const double[]){10, 11});
    assert_int_equal(load_gpu("schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,"
                              "gpu_uuid,power_w\n1,1.0,0,h,0,u,10.0\r\n1,2.0,1,h,0,u,11.0",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 2, (const double[]){1, 2},
                  (const double[]){10, 11});
    assert_int_equal(L.nwarnings, 0); /* a whole last line without its line end is a row */

    /* a last line cut short: skipped with a warning */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,2.0,1,h,0", NULL, 0), 0);
    assert_int_equal(L.gpu_devices.v[0].n, 1);
    snprintf(want, sizeof want,
             "%s:3: the last line has no line end and 5 of 7 fields (cut short); skipped", g);
    assert_int_equal(L.nwarnings, 1);
    assert_string_equal(L.warnings[0], want);
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,2.0,1,\"h", NULL, 0), 0);
    warning_with("unterminated quoted field (cut short); skipped");
    /* the same short row in the middle: an error */
    snprintf(want, sizeof want, "%s:2: 5 fields, the header has 7", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,2.0,1,h,0\r\n1,1.0,0,h,0,u,10.0\r\n", NULL, 0), -EINVAL,
               want);
    snprintf(want, sizeof want, "%s:3: 8 fields, the header has 7", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,1.0,0,h,0,u,10.0,x\r\n", NULL, 0),
               -EINVAL, want);

    /* NaN, inf, None, empty, not an integer */
    snprintf(want, sizeof want, "%s:3: power_w 'nan' is not a finite number", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,2.0,1,h,0,u,nan\r\n", NULL, 0), -EINVAL,
               want);
    snprintf(want, sizeof want, "%s:2: timestamp_unix 'inf' is not a finite number", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,inf,0,h,0,u,10.0\r\n", NULL, 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: gpu_index '0.0' is not an integer", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0.0,u,10.0\r\n", NULL, 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: gpu_util_pct 'NaN' is not a finite number", g);
    assert_err(load_gpu(GPU_HDR_V2 "2,1.0,0,h,0,u,10.0,NaN,\r\n", NULL, 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: power_w 'None' is not a finite number", c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,None,\r\n", 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: power_w '' is not a finite number", c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,,\r\n", 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: cpu_util_sys 'x' is not a finite number", c);
    assert_err(load_cpu(HOST_HDR_V3 "3,1.0,x,h,dcgm,s,0,1.0,,,,,x,\n", 0), -EINVAL, want);
    /* None as total: blank, warned */
    assert_int_equal(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,5.0,None\r\n", 0), 0);
    assert_int_equal(L.cpu_nodes.n, 0);
    snprintf(want, sizeof want,
             "%s:2: total_power_w 'None' (the host collector's missing aggregate) read as blank",
             c);
    assert_string_equal(L.warnings[0], want);

    /* empty files */
    assert_int_equal(load_gpu("", NULL, 0), 0);
    assert_true(L.gpu_loaded);
    assert_int_equal(L.gpu_nodes.n, 0);
    snprintf(want, sizeof want, "%s: empty file (no header); no series", g);
    assert_string_equal(L.warnings[0], want);
    assert_int_equal(load_cpu("\r\n\n", 0), 0);
    assert_string_equal(L.cpu_layout, "empty");
    assert_int_equal(L.cpu_sockets.n, 0);

    /* quoting: a quoted field with a comma and a line end is one cell; a stray quote is an
     * error naming its line */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,\"h,\r\nx\",0,\"u\"\"\",10.0\r\n", NULL, 0), 0);
    assert_string_equal(L.gpu_devices.v[0].label, "gpu/h,\r\nx/gpu0");
    snprintf(want, sizeof want, "%s:3: stray quote inside an unquoted field", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n1,1.0,0,h\"x,0,u,10.0\r\n", NULL, 0),
               -EINVAL, want);
    /* a directory, a missing file */
    tu_mkdirs("dir.csv/");
    reset();
    assert_int_equal(srt_log_load_gpu(&L, tp("dir.csv"), NULL, &E), -EISDIR);
    assert_int_equal(srt_log_load_cpu(&L, tp("none.csv"), &E), -ENOENT);
    reset();
}

/* A host name (or CPU sensor) that is not UTF-8, and a power that would overflow the sums,
 * are errors naming the file and line (they were "out of memory" when the report's JSON could
 * not hold them). */
static void test_bad_names_and_powers(void **state)
{
    (void)state;
    char want[1200], g[1024], c[1024];
    snprintf(g, sizeof g, "%s", tp("g/samples.csv"));
    snprintf(c, sizeof c, "%s", tp("cpu/samples.csv"));

    /* by the fast line reader and by the row reader (a quoted cell), on a later line */
    snprintf(want, sizeof want,
             "%s:3: hostname is not valid UTF-8 (byte 0xff at offset 1 of the cell)", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,h\xff,0,u,11.0\n", NULL, 0),
               -EILSEQ, want);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,\"h\xff\",0,u,11.0\n", NULL, 0),
               -EILSEQ, want);
    /* an overlong form and a lone continuation byte */
    snprintf(want, sizeof want,
             "%s:2: hostname is not valid UTF-8 (byte 0xc0 at offset 0 of the cell)", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,\xc0\xaf,0,u,10.0\n", NULL, 0), -EILSEQ, want);
    snprintf(want, sizeof want,
             "%s:2: hostname is not valid UTF-8 (byte 0x80 at offset 2 of the cell)", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,ab\x80,0,u,10.0\n", NULL, 0), -EILSEQ, want);
    /* UTF-8 itself is a host name like any other */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h\xc3\xa9\xe2\x82\xac,0,u,10.0\n", NULL, 0), 0);
    assert_string_equal(L.gpu_devices.v[0].label, "gpu/h\xc3\xa9\xe2\x82\xac/gpu0");
    snprintf(want, sizeof want,
             "%s:2: hostname is not valid UTF-8 (byte 0xfe at offset 0 of the cell)", c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,\xfe,acpi,s,0,5.0,\r\n", 0), -EILSEQ, want);
    snprintf(want, sizeof want,
             "%s:3: sensor is not valid UTF-8 (byte 0xe2 at offset 1 of the cell)", c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,5.0,\r\n1,2.0,h,acpi,s\xe2\x82,0,5.0,\r\n", 0),
               -EILSEQ, want);

    /* 1e308 W on every row: finite, but its sums are not */
    snprintf(want, sizeof want, "%s:2: power_w 1e+308 W is no plausible power (over 1e+09 W)", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,1e308\n1,1.0,0,h,1,u,1e308\n", NULL, 0), -ERANGE,
               want);
    snprintf(want, sizeof want, "%s:3: power_w -2e+09 W is no plausible power (over 1e+09 W)", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,h,0,u,-2000000000\n", NULL, 0),
               -ERANGE, want);
    snprintf(want, sizeof want, "%s:2: power_w 1e+308 W is no plausible power (over 1e+09 W)", c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,1e308,\r\n", 0), -ERANGE, want);
    snprintf(want, sizeof want, "%s:2: total_power_w 1e+308 W is no plausible power (over 1e+09 W)",
             c);
    assert_err(load_cpu(CPU_HDR_V1 "1,1.0,h,acpi,s,0,5.0,1e308\r\n", 0), -ERANGE, want);
    /* 1 GW itself is read */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,1000000000\n", NULL, 0), 0);
    reset();
}

static void test_strict(void **state)
{
    (void)state;
    char want[1200], g[1024];
    snprintf(g, sizeof g, "%s", tp("g/samples.csv"));
    /* duplicates and timestamps going back: warned by default (the report reads them) */
    const char *csv = GPU_HDR_V2 "2,10.0,0,h,0,u,100.0,,\r\n"
                                 "2,11.0,1,h,0,u,100.0,,\r\n"
                                 "2,10.5,2,h,0,u,100.0,,\r\n"
                                 "2,12.0,1,h,0,u,100.0,,\r\n"
                                 "2,12.0,1,h,1,u,1.0,,\r\n";
    assert_int_equal(load_gpu(csv, NULL, 0), 0);
    assert_int_equal(L.gpu_devices.v[0].n, 4);
    snprintf(want, sizeof want,
             "%s:5: duplicate_sample_row: scrape_seq 1, h gpu 0 already at line 3 (srt-slurm's "
             "report adds both rows up)",
             g);
    assert_string_equal(warning_with("duplicate_sample_row"), want);
    snprintf(want, sizeof want,
             "%s:4: timestamp_non_monotonic: h gpu 0 at scrape_seq 2 is earlier than at "
             "scrape_seq 1 (line 5)",
             g);
    assert_string_equal(warning_with("timestamp_non_monotonic"), want);
    assert_series(&L.gpu_nodes.v[0], "gpu/h", 4, (const double[]){10, 10.5, 11, 12},
                  (const double[]){100, 100, 100, 101});
    /* SRT_LOG_STRICT: errors */
    assert_int_equal(load_gpu(csv, NULL, SRT_LOG_STRICT), -EINVAL);
    assert_non_null(strstr(E.msg, "duplicate_sample_row"));
    assert_false(L.gpu_loaded);
    snprintf(want, sizeof want,
             "%s:3: timestamp_non_monotonic: h gpu 0 at scrape_seq 1 is earlier than at "
             "scrape_seq 0 (line 2)",
             g);
    assert_err(
        load_gpu(GPU_HDR_V1 "1,10.0,0,h,0,u,1.0\r\n1,9.0,1,h,0,u,1.0\r\n", NULL, SRT_LOG_STRICT),
        -EINVAL, want);
    /* the schema generation: warned, or refused */
    assert_int_equal(load_gpu(GPU_HDR_V2 "1,10.0,0,h,0,u,1.0,,\r\n", NULL, 0), 0);
    warning_with("schema_version '1' in a v2 file");
    snprintf(want, sizeof want, "%s:2: samples_csv_malformed: schema_version '1' in a v2 file", g);
    assert_err(load_gpu(GPU_HDR_V2 "1,10.0,0,h,0,u,1.0,,\r\n", NULL, SRT_LOG_STRICT), -EINVAL,
               want);
    snprintf(want, sizeof want,
             "%s:1: samples_csv_header_mismatch: not srt-slurm's samples v1 or v2 header", g);
    assert_err(load_gpu("timestamp_unix,hostname,gpu_index,power_w\r\n1.0,h,0,1.0\r\n", NULL,
                        SRT_LOG_STRICT),
               -EINVAL, want);
    assert_int_equal(
        load_gpu("timestamp_unix,hostname,gpu_index,power_w\r\n1.0,h,0,1.0\r\n", NULL, 0), 0);
    assert_int_equal(L.gpu_schema, 0);
    snprintf(want, sizeof want, "%s:2: invalid_power_value: power_w '-1.0'", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,10.0,0,h,0,u,-1.0\r\n", NULL, SRT_LOG_STRICT), -EINVAL, want);
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,10.0,0,h,0,u,-1.0\r\n", NULL, 0), 0);
    /* an unusable scrape_seq turns the checks off, with a warning */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,10.0,x,h,0,u,1.0\r\n1,10.0,x,h,0,u,1.0\r\n", NULL, 0),
                     0);
    warning_with("scrape_seq 'x' is not a number; duplicate and monotonic checks skipped");
    /* CPU strict: a known header, the row's schema_version */
    assert_int_equal(load_cpu(CPU_HDR_V1 "2,1.0,h,acpi,s,0,1.0,\r\n", SRT_LOG_STRICT), -EINVAL);
    assert_non_null(strstr(E.msg, ":2: cpu_samples_csv_malformed: schema_version '2' in a v1"));
    assert_int_equal(
        load_cpu("timestamp_unix,hostname,socket_id,power_w,total_power_w\n", SRT_LOG_STRICT),
        -EINVAL);
    assert_non_null(strstr(E.msg, ":1: cpu_samples_csv_header_mismatch"));
    reset();
}

/* A file bigger than the 1 MiB read chunk: records cut across chunks, line numbers right. */
static void test_stream(void **state)
{
    (void)state;
    size_t rows = 70000; /* past RESERVE_AFTER: the series are sized from the file */
    size_t cap = rows * 64 + 4096;
    char *csv = malloc(cap);
    assert_non_null(csv);
    size_t o = (size_t)snprintf(csv, cap, GPU_HDR_V2), last = 0;
    for (size_t i = 0; i < rows; i++) {
        last = o;
        if (i == 30000) /* a quoted host with a line end inside: two lines, one record */
            o += (size_t)snprintf(csv + o, cap - o, "2,%zu.5,%zu,\"n\nq\",0,u,1.0,,\r\n", i, i);
        else
            o += (size_t)snprintf(csv + o, cap - o,
                                  "2,%zu.5,%zu,node-%zu,%zu,GPU-x,%zu.25,50.0,\r\n", i, i, i % 2,
                                  i % 4, i % 7);
    }
    assert_true(o > 2u << 20);
    assert_int_equal(load_gpu(csv, NULL, 0), 0);
    assert_int_equal(L.gpu_nodes.n, 3);
    size_t total = 0;
    for (size_t i = 0; i < L.gpu_devices.n; i++)
        total += L.gpu_devices.v[i].n;
    assert_int_equal(total, rows);
    assert_string_equal(L.gpu_devices.v[0].label, "gpu/n\nq/gpu0");
    assert_int_equal(L.gpu_util.n, L.gpu_devices.n - 1);
    /* a bad cell in the last row: its line is rows + 2 (header, plus the quoted line end) */
    snprintf(csv + last, cap - last, "2,1.0,1,h,0,u,oops,,\r\n");
    char want[1200];
    snprintf(want, sizeof want, "%s:%zu: power_w 'oops' is not a finite number",
             tp("g/samples.csv"), rows + 2);
    assert_err(load_gpu(csv, NULL, 0), -EINVAL, want);
    free(csv);
    reset();
}

/* ---- the fast paths: numbers, the in-place splitter, the in-stream checks ---- */

static uint64_t trng = 88172645463325252ull;

static uint64_t trand(void)
{
    trng ^= trng << 13;
    trng ^= trng >> 7;
    trng ^= trng << 17;
    return trng;
}

/* csv_split over a whole text gives what csv_parse gives: rows, fields, lines, errors. */
static void test_split_matches_parse(void **state)
{
    (void)state;
    static const char alphabet[] = "ab,,\"\r\n1";
    char text[64], copy[65];
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = trand() % 24;
        for (size_t i = 0; i < len; i++)
            text[i] = alphabet[trand() % (sizeof alphabet - 1)];
        struct csv_doc doc;
        struct carma_err e1 = {0}, e2 = {0};
        int r1 = csv_parse(text, len, "t", &doc, &e1);
        memcpy(copy, text, len);
        struct csv_fields f = {0};
        size_t pos = 0, line = 1, k = 0;
        int r2;
        while ((r2 = csv_split(copy, len, &pos, &line, "t", &f, &e2)) > 0) {
            if (r1 == 0) {
                if (k >= doc.n)
                    fail_msg("iteration %d: more rows than csv_parse", iter);
                const struct csv_row *a = &doc.rows[k];
                assert_int_equal(a->n, f.row.n);
                assert_int_equal(a->line, f.row.line);
                for (size_t j = 0; j < a->n; j++)
                    assert_string_equal(a->fields[j], f.row.fields[j]);
            }
            k++;
        }
        if (r1 < 0) {
            assert_int_equal(r2, r1);
            assert_string_equal(e1.msg, e2.msg);
        } else {
            assert_int_equal(r2, 0);
            assert_int_equal(k, doc.n);
            csv_doc_free(&doc);
        }
        csv_fields_free(&f);
    }
}

/* More malformed and unusual inputs: each an error naming file and line, or a documented
 * skip or warning, and the series still right. */
static void test_malformed_more(void **state)
{
    (void)state;
    char want[1200], g[1024];
    snprintf(g, sizeof g, "%s", tp("g/samples.csv"));

    /* None and NaN cells in the GPU CSV */
    snprintf(want, sizeof want, "%s:3: power_w 'None' is not a finite number", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,h,0,u,None\n", NULL, 0), -EINVAL,
               want);
    snprintf(want, sizeof want, "%s:2: timestamp_unix 'NaN' is not a finite number", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,NaN,0,h,0,u,10.0\n", NULL, 0), -EINVAL, want);
    snprintf(want, sizeof want, "%s:2: gpu_index 'None' is not an integer", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,None,u,10.0\n", NULL, 0), -EINVAL, want);
    /* a missing hostname column, met at the first row */
    snprintf(want, sizeof want, "%s:2: no column 'hostname' in the header (line 1)", g);
    assert_err(load_gpu("timestamp_unix,gpu_index,power_w\n1.0,0,5.0\n", NULL, 0), -EINVAL, want);

    /* LF, CRLF and CR alone, mixed in one file, with blank lines */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\r\n\r\n1,2.0,1,h,0,u,11.0\r"
                                         "1,3.0,2,h,0,u,12.0\n\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 3, (const double[]){1, 2, 3},
                  (const double[]){10, 11, 12});
    assert_int_equal(L.nwarnings, 0);

    /* a header alone: a leg without series; v2 recognised */
    assert_int_equal(load_gpu(GPU_HDR_V2, NULL, 0), 0);
    assert_true(L.gpu_loaded);
    assert_int_equal(L.gpu_devices.n + L.gpu_nodes.n + L.gpu_roles.n + L.gpu_util.n, 0);
    assert_int_equal(L.gpu_schema, 2);
    /* blank lines only: an empty file */
    assert_int_equal(load_gpu("\n\r\n\n", NULL, 0), 0);
    warning_with("empty file (no header); no series");

    /* timestamps out of order: sorted, equal ones in file order; the node sums them per
     * bit-identical timestamp */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,3.0,0,h,0,u,1.0\n"
                                         "1,1.0,1,h,0,u,2.0\n"
                                         "1,2.0,2,h,0,u,3.0\n"
                                         "1,1.0,3,h,0,u,4.0\n"
                                         "1,1.0,3,h,1,u,0.5\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 4, (const double[]){1, 1, 2, 3},
                  (const double[]){2, 4, 3, 1});
    assert_series(&L.gpu_nodes.v[0], "gpu/h", 3, (const double[]){1, 2, 3},
                  (const double[]){6.5, 3, 1});
    warning_with("timestamp_non_monotonic: h gpu 0 at scrape_seq 1 is earlier than at "
                 "scrape_seq 0");

    /* duplicate rows: read (the node adds both up), warned once with the count */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n"
                                         "1,1.0,0,h,0,u,10.0\n"
                                         "1,1.0,0,h,0,u,10.0\n"
                                         "1,1.0,0,h,1,u,10.0\n"
                                         "1,1.0,0,h,1,u,10.0\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_nodes.v[0], "gpu/h", 1, (const double[]){1}, (const double[]){50});
    snprintf(want, sizeof want,
             "%s:3: duplicate_sample_row: scrape_seq 0, h gpu 0 already at line 2 (srt-slurm's "
             "report adds both rows up) (3 such rows)",
             g);
    assert_string_equal(warning_with("duplicate_sample_row"), want);

    /* the checks per device, interleaved: gpu 1 goes back in scrape_seq (checked again from a
     * second pass), gpu 0 keeps its order; the warnings come device by device */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,1.0\n"
                                         "1,1.0,0,h,1,u,1.0\n"
                                         "1,2.0,1,h,0,u,1.0\n"
                                         "1,2.0,2,h,1,u,1.0\n"
                                         "1,0.5,2,h,0,u,1.0\n"
                                         "1,3.0,1,h,1,u,1.0\n"
                                         "1,4.0,2,h,1,u,1.0\n",
                              NULL, 0),
                     0);
    snprintf(want, sizeof want,
             "%s:6: timestamp_non_monotonic: h gpu 0 at scrape_seq 2 is earlier than at "
             "scrape_seq 1 (line 4) (2 such rows)",
             g);
    assert_string_equal(warning_with("timestamp_non_monotonic"), want);
    snprintf(want, sizeof want,
             "%s:8: duplicate_sample_row: scrape_seq 2, h gpu 1 already at line 5 (srt-slurm's "
             "report adds both rows up)",
             g);
    assert_string_equal(warning_with("duplicate_sample_row"), want);
    /* strict: the first device's first problem */
    snprintf(want, sizeof want,
             "%s:6: timestamp_non_monotonic: h gpu 0 at scrape_seq 2 is earlier than at "
             "scrape_seq 1 (line 4)",
             g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,1.0\n"
                                   "1,1.0,0,h,1,u,1.0\n"
                                   "1,2.0,1,h,0,u,1.0\n"
                                   "1,2.0,2,h,1,u,1.0\n"
                                   "1,0.5,2,h,0,u,1.0\n"
                                   "1,3.0,1,h,1,u,1.0\n",
                        NULL, SRT_LOG_STRICT),
               -EINVAL, want);

    /* a quoted field holding a comma and a line end, the last field of a CRLF file, and a
     * quoted number */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,\"1.0\",0,h,0,\"a,\r\nb\",\"10.0\"\r\n"
                                         "1,2.0,1,h,0,\"\",11.0\r\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 2, (const double[]){1, 2},
                  (const double[]){10, 11});
    /* unexpected text after a quoted field: its line */
    snprintf(want, sizeof want, "%s:4: unexpected text after a quoted field", g);
    assert_err(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,1.0,0,\"h\nx\"y,0,u,10.0\n", NULL, 0),
               -EINVAL, want);
    /* a truncated last line: LF file, cut inside a number (fewer fields) */
    assert_int_equal(load_gpu(GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,2.0,1,h", NULL, 0), 0);
    assert_int_equal(L.gpu_devices.v[0].n, 1);
    warning_with(":3: the last line has no line end and 4 of 7 fields (cut short); skipped");
    reset();
}

/* A very long line: a 3 MiB quoted cell across read chunks is one cell; one past
 * SRT_LOG_LINE_MAX is an error naming its line. */
static void test_long_line(void **state)
{
    (void)state;
    size_t big = 3u << 20;
    char *csv = malloc(big + 256);
    assert_non_null(csv);
    size_t o = (size_t)sprintf(csv, GPU_HDR_V1 "1,1.0,0,h,0,\"");
    memset(csv + o, 'x', big);
    csv[o + big / 2] = ','; /* a comma and a line end inside the quotes */
    csv[o + big / 2 + 1] = '\n';
    o += big;
    o += (size_t)sprintf(csv + o, "\",10.0\n1,2.0,1,h,0,u,11.0\n");
    assert_int_equal(load_gpu(csv, NULL, 0), 0);
    assert_series(&L.gpu_devices.v[0], "gpu/h/gpu0", 2, (const double[]){1, 2},
                  (const double[]){10, 11});
    free(csv);

    size_t huge = SRT_LOG_LINE_MAX + (1u << 20);
    csv = malloc(huge + 256);
    assert_non_null(csv);
    o = (size_t)sprintf(csv, GPU_HDR_V1 "1,1.0,0,h,0,u,10.0\n1,1.0,0,h,0,");
    memset(csv + o, 'x', huge);
    o += huge;
    sprintf(csv + o, ",10.0\n");
    char want[1200];
    snprintf(want, sizeof want, "%s:3: a record longer than %u bytes", tp("g/samples.csv"),
             SRT_LOG_LINE_MAX);
    assert_err(load_gpu(csv, NULL, 0), -EINVAL, want);
    free(csv);
    reset();
}

/*
 * A GPU column with a value on every row of its device shares the device's times (8 bytes a
 * sample); one with a blank cell has its own; an unsorted device sorts both the same way.
 */
static void test_util_shared_times(void **state)
{
    (void)state;
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,50.0,0.5\r\n"
                                         "2,10.0,0,a,1,u,10.0,1.0,\r\n"
                                         "2,11.0,1,a,0,u,110.0,60.0,\r\n"
                                         "2,11.0,1,a,1,u,11.0,2.0,\r\n"
                                         "2,12.0,2,a,0,u,120.0,70.0,0.7\r\n"
                                         "2,12.0,2,a,1,u,12.0,3.0,\r\n",
                              NULL, 0),
                     0);
    /* a/gpu0: gpu_util_pct on every row (shared), sm_active with blanks (own times) */
    assert_int_equal(L.gpu_util.n, 3);
    const double t3[] = {10, 11, 12};
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 3, t3,
                (const double[]){50, 60, 70});
    assert_true(L.gpu_util.v[0].t_shared);
    assert_ptr_equal(L.gpu_util.v[0].t, L.gpu_devices.v[0].t);
    assert_util(&L.gpu_util.v[1], "gpu/a/gpu0", "sm_active", 2, (const double[]){10, 12},
                (const double[]){0.5, 0.7});
    assert_false(L.gpu_util.v[1].t_shared);
    assert_util(&L.gpu_util.v[2], "gpu/a/gpu1", "gpu_util_pct", 3, t3, (const double[]){1, 2, 3});
    assert_true(L.gpu_util.v[2].t_shared);

    /* out of order: the device is sorted, its column (shared until then) is sorted alike */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,12.0,0,a,0,u,120.0,70.0,\r\n"
                                         "2,10.0,1,a,0,u,100.0,50.0,\r\n"
                                         "2,11.0,2,a,0,u,110.0,60.0,\r\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_devices.v[0], "gpu/a/gpu0", 3, t3, (const double[]){100, 110, 120});
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 3, t3,
                (const double[]){50, 60, 70});
    assert_false(L.gpu_util.v[0].t_shared);

    /* a blank only in the first row, then values: own times from the start */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,,\r\n"
                                         "2,11.0,1,a,0,u,110.0,60.0,\r\n"
                                         "2,12.0,2,a,0,u,120.0,70.0,\r\n",
                              NULL, 0),
                     0);
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 2, (const double[]){11, 12},
                (const double[]){60, 70});
    assert_false(L.gpu_util.v[0].t_shared);
}

/*
 * The GPUs of a host share each scrape's timestamp: a device that reported in every scrape
 * from the first holds its node series' times (not a copy); one that missed a scrape, or whose
 * node's times go back, has its own, with the same times and values as without sharing.
 */
static void test_host_shared_times(void **state)
{
    (void)state;
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,50.0,\r\n"
                                         "2,10.0,0,a,1,u,10.0,1.0,\r\n"
                                         "2,10.0,0,b,0,u,7.0,5.0,\r\n"
                                         "2,11.0,1,a,0,u,110.0,60.0,\r\n"
                                         "2,11.0,1,a,1,u,11.0,2.0,\r\n"
                                         "2,11.0,1,b,0,u,8.0,6.0,\r\n"
                                         "2,12.0,2,a,0,u,120.0,70.0,\r\n"
                                         "2,12.0,2,b,0,u,9.0,7.0,\r\n"
                                         "2,13.0,3,a,0,u,130.0,80.0,\r\n"
                                         "2,13.0,3,a,1,u,13.0,4.0,\r\n",
                              NULL, 0),
                     0);
    const double t4[] = {10, 11, 12, 13};
    assert_int_equal(L.gpu_nodes.n, 2);
    assert_series(&L.gpu_nodes.v[0], "gpu/a", 4, t4, (const double[]){110, 121, 120, 143});
    assert_series(&L.gpu_nodes.v[1], "gpu/b", 3, (const double[]){10, 11, 12},
                  (const double[]){7, 8, 9});
    assert_int_equal(L.gpu_devices.n, 3);
    assert_series(&L.gpu_devices.v[0], "gpu/a/gpu0", 4, t4, (const double[]){100, 110, 120, 130});
    assert_true(L.gpu_devices.v[0].t_shared);
    assert_ptr_equal(L.gpu_devices.v[0].t, L.gpu_nodes.v[0].t);
    /* a/gpu1 missed the scrape at 12: its own times from then */
    assert_series(&L.gpu_devices.v[1], "gpu/a/gpu1", 3, (const double[]){10, 11, 13},
                  (const double[]){10, 11, 13});
    assert_false(L.gpu_devices.v[1].t_shared);
    assert_ptr_not_equal(L.gpu_devices.v[1].t, L.gpu_nodes.v[0].t);
    assert_series(&L.gpu_devices.v[2], "gpu/b/gpu0", 3, (const double[]){10, 11, 12},
                  (const double[]){7, 8, 9});
    assert_true(L.gpu_devices.v[2].t_shared);
    assert_ptr_equal(L.gpu_devices.v[2].t, L.gpu_nodes.v[1].t);
    /* a utilization column shares its device's times, wherever they live */
    assert_int_equal(L.gpu_util.n, 3);
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 4, t4,
                (const double[]){50, 60, 70, 80});
    assert_ptr_equal(L.gpu_util.v[0].t, L.gpu_nodes.v[0].t);
    assert_util(&L.gpu_util.v[1], "gpu/a/gpu1", "gpu_util_pct", 3, (const double[]){10, 11, 13},
                (const double[]){1, 2, 4});
    assert_ptr_equal(L.gpu_util.v[1].t, L.gpu_devices.v[1].t);

    /* the node's times go back after a device stopped reporting: the node is sorted, the
     * device keeps the times it had */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,50.0,\r\n"
                                         "2,10.0,0,a,1,u,10.0,1.0,\r\n"
                                         "2,11.0,1,a,0,u,110.0,60.0,\r\n"
                                         "2,11.0,1,a,1,u,11.0,2.0,\r\n"
                                         "2,9.0,2,a,1,u,9.0,3.0,\r\n",
                              NULL, 0),
                     0);
    const double t3[] = {9, 10, 11};
    assert_series(&L.gpu_nodes.v[0], "gpu/a", 3, t3, (const double[]){9, 110, 121});
    assert_series(&L.gpu_devices.v[0], "gpu/a/gpu0", 2, (const double[]){10, 11},
                  (const double[]){100, 110});
    assert_false(L.gpu_devices.v[0].t_shared);
    assert_series(&L.gpu_devices.v[1], "gpu/a/gpu1", 3, t3, (const double[]){9, 10, 11});
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 2, (const double[]){10, 11},
                (const double[]){50, 60});
    assert_util(&L.gpu_util.v[1], "gpu/a/gpu1", "gpu_util_pct", 3, t3, (const double[]){3, 1, 2});

    /* a device first seen after its host's first scrape has its own times; a device keeps
     * sharing through a time another added first (a0@10, a1@10, a1@11, a0@11); a device that
     * goes on after its node's times went back; the same device twice at one time */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,1.0,\r\n"
                                         "2,11.0,1,a,1,u,11.0,2.0,\r\n"
                                         "2,11.0,1,a,0,u,110.0,3.0,\r\n"
                                         "2,12.0,2,a,0,u,120.0,4.0,\r\n"
                                         "2,12.0,2,a,1,u,12.0,5.0,\r\n"
                                         "2,9.0,3,a,1,u,9.0,6.0,\r\n"
                                         "2,13.0,4,a,0,u,130.0,7.0,\r\n"
                                         "2,13.0,5,a,0,u,131.0,8.0,\r\n",
                              NULL, 0),
                     0);
    assert_series(&L.gpu_nodes.v[0], "gpu/a", 5, (const double[]){9, 10, 11, 12, 13},
                  (const double[]){9, 100, 121, 132, 261});
    assert_series(&L.gpu_devices.v[0], "gpu/a/gpu0", 5, (const double[]){10, 11, 12, 13, 13},
                  (const double[]){100, 110, 120, 130, 131});
    assert_false(L.gpu_devices.v[0].t_shared); /* its node went unsorted, then sorted */
    assert_series(&L.gpu_devices.v[1], "gpu/a/gpu1", 3, (const double[]){9, 11, 12},
                  (const double[]){9, 11, 12});
    assert_false(L.gpu_devices.v[1].t_shared);
    assert_util(&L.gpu_util.v[0], "gpu/a/gpu0", "gpu_util_pct", 5,
                (const double[]){10, 11, 12, 13, 13}, (const double[]){1, 3, 4, 7, 8});
    assert_util(&L.gpu_util.v[1], "gpu/a/gpu1", "gpu_util_pct", 3, (const double[]){9, 11, 12},
                (const double[]){6, 2, 5});

    /* sharing through a time another device added first, nothing going back */
    assert_int_equal(load_gpu(GPU_HDR_V2 "2,10.0,0,a,0,u,100.0,,\r\n"
                                         "2,10.0,0,a,1,u,10.0,,\r\n"
                                         "2,11.0,1,a,1,u,11.0,,\r\n"
                                         "2,11.0,1,a,0,u,110.0,,\r\n",
                              NULL, 0),
                     0);
    assert_true(L.gpu_devices.v[0].t_shared && L.gpu_devices.v[1].t_shared);
    assert_series(&L.gpu_devices.v[0], "gpu/a/gpu0", 2, (const double[]){10, 11},
                  (const double[]){100, 110});
    assert_series(&L.gpu_devices.v[1], "gpu/a/gpu1", 2, (const double[]){10, 11},
                  (const double[]){10, 11});
}

/* ---- the GPU line fast path against the split rows (differential) ---- */

/* A growable text, for a snapshot of a load. */
struct text {
    char *s;
    size_t n, cap;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(k >= 0);
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = (t->n + (size_t)k + 1) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

static void text_series(struct text *t, const struct srt_log_series_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct srt_log_series *s = &set->v[i];
        text_add(t, "%s %s %lld %s n=%zu roles", s->label, s->host, s->index,
                 s->role ? s->role : "-", s->n);
        for (size_t j = 0; j < s->n_roles; j++)
            text_add(t, " %s", s->roles[j]);
        text_add(t, "\n");
        for (size_t j = 0; j < s->n; j++)
            text_add(t, " %a %a", s->t[j], s->w[j]);
        text_add(t, "\n");
    }
}

/* Everything a GPU load gives, as text (numbers in hex: bit for bit). */
static char *gpu_snapshot(int r)
{
    struct text t = {0};
    text_add(&t, "r=%d msg=%s schema=%d loaded=%d\n", r, r < 0 ? E.msg : "", L.gpu_schema,
             L.gpu_loaded);
    for (size_t i = 0; i < L.nwarnings; i++)
        text_add(&t, "warning %s\n", L.warnings[i]);
    text_series(&t, &L.gpu_devices);
    text_series(&t, &L.gpu_nodes);
    text_series(&t, &L.gpu_roles);
    for (size_t i = 0; i < L.gpu_util.n; i++) {
        const struct srt_log_util *u = &L.gpu_util.v[i];
        text_add(&t, "util %s %s %zu shared=%d n=%zu\n", u->label, u->column, u->series,
                 u->t_shared, u->n);
        for (size_t j = 0; j < u->n; j++)
            text_add(&t, " %a %a", u->t[j], u->v[j]);
        text_add(&t, "\n");
    }
    return t.s;
}

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)((rng_state >> 11) % n);
}

/* Whether the file being made may hold cells that are errors (else only odd, valid ones). */
static bool rnd_bad;

/* A number cell of one of many forms (mostly plain, sometimes odd, with rnd_bad bad). */
static void rnd_number(struct text *t, bool big)
{
    static const char *const odd[] = {"2e-30", "1e+5",   "1.5E-2",    "5.",
                                      ".5",    "-0",     "+2.5",      "-12.25",
                                      "1e22",  "1e23",   "9e-23",     "123e-25",
                                      "0.000", "1e0005", "00012.500", "0000000000000000000001.5",
                                      "1E2",   "0e5",    "1.e5",      "4.9e-324"};
    static const char *const bad[] = {"",      " 1",   "1 ",       "nan", "inf", "-inf",
                                      "1_000", "0x10", "1e400",    "1e",  "1e+", "abc",
                                      "1.2.3", "None", "Infinity", "1d5", "-",   "."};
    switch (rnd(10)) {
    case 0:
        if (rnd_bad && rnd(3) == 0)
            text_add(t, "%s", bad[rnd(sizeof bad / sizeof *bad)]);
        else
            text_add(t, "%s", odd[rnd(sizeof odd / sizeof *odd)]);
        break;
    case 1: /* long mantissas, past 15 and past 19 digits */
        text_add(t, "%u%09u.%09u", rnd(1000000), rnd(1000000000), rnd(1000000000));
        break;
    case 2:
        text_add(t, "%u", rnd(big ? 4000000000u : 1000));
        break;
    case 3:
        text_add(t, "%ue%s%u", rnd(100000), rnd(2) ? "-" : "", rnd(30));
        break;
    case 4:
        text_add(t, "0%u.%03u", rnd(100), rnd(1000));
        break;
    default:
        if (big)
            text_add(t, "17851%05u.%0*u", rnd(100000), (int)(1 + rnd(6)), rnd(100000));
        else
            text_add(t, "%u.%0*u", rnd(1000), (int)(1 + rnd(3)), rnd(100));
        break;
    }
}

/* An integer cell: mostly small plain digits, sometimes leading zeros, signs, 19 digits, and
 * with bad_ok (or rnd_bad) bad ones. */
static void rnd_int(struct text *t, unsigned v, bool bad_ok)
{
    static const char *const odd[] = {"01",
                                      "00",
                                      "-0",
                                      "-1",
                                      "123456789012345678",
                                      "1234567890123456789",
                                      "0000000000000000000003"};
    static const char *const bad[] = {
        "", "+1", "x", "1.0", " 2", "1e2", "18446744073709551616", "99999999999999999999"};
    if (rnd(25) != 0)
        text_add(t, "%u", v);
    else if ((bad_ok || rnd_bad) && rnd(2) == 0)
        text_add(t, "%s", bad[rnd(sizeof bad / sizeof *bad)]);
    else
        text_add(t, "%s", odd[rnd(sizeof odd / sizeof *odd)]);
}

static const char *const diff_cols[] = {"schema_version", "timestamp_unix", "scrape_seq",
                                        "hostname",       "gpu_index",      "gpu_uuid",
                                        "power_w",        "gpu_util_pct",   "sm_active"};
#define N_DIFF_COLS 9

/* One random GPU CSV into t (nrows data rows). */
static void rnd_gpu_csv(struct text *t, size_t nrows)
{
    /* columns: srt-slurm's v1/v2 header as is, or shuffled, some left out, extras added */
    int cols[N_DIFF_COLS + 3], ncols = 0;
    uint32_t layout = rnd(6);
    int nbase = layout == 1 ? 7 : N_DIFF_COLS;
    for (int i = 0; i < nbase; i++)
        if (layout <= 2 || rnd(12) != 0)
            cols[ncols++] = i;
    if (layout > 2) {
        for (int i = ncols - 1; i > 0; i--) {
            int j = (int)rnd((uint32_t)i + 1), x = cols[i];
            cols[i] = cols[j];
            cols[j] = x;
        }
        for (int k = (int)rnd(4); k > 0; k--) {
            int at = (int)rnd((uint32_t)ncols + 1);
            memmove(cols + at + 1, cols + at, (size_t)(ncols - at) * sizeof *cols);
            cols[at] = -1; /* an extra column */
            ncols++;
        }
    }
    bool crlf_file = rnd(2), quotes = rnd(4) == 0, odd_ends = rnd(4) == 0;
    rnd_bad = rnd(3) == 0;
    for (int i = 0; i < ncols; i++)
        text_add(t, "%s%s", i ? "," : "", cols[i] < 0 ? "extra" : diff_cols[cols[i]]);
    text_add(t, crlf_file ? "\r\n" : "\n");
    static const char *const hosts[] = {"node-a", "node-b", "nb", "", "node-a ", "x"};
    unsigned seq = 0, scrape_len = 1 + rnd(8);
    char ts[64] = "1785168098.009";
    for (size_t row = 0; row < nrows; row++) {
        if (row % scrape_len == 0) {
            seq += rnd(20) == 0 ? 0 : 1;
            if (rnd(30) == 0 && seq > 2)
                seq -= 2;
            struct text tt = {0};
            rnd_number(&tt, true);
            snprintf(ts, sizeof ts, "%s", tt.s);
            free(tt.s);
        }
        int nf = ncols;
        if (rnd_bad && rnd(100) == 0)
            nf += rnd(2) ? 1 : -1; /* a field too many or too few */
        for (int i = 0; i < nf; i++) {
            if (i)
                text_add(t, ",");
            bool q = quotes && rnd(10) == 0;
            if (q)
                text_add(t, "\"");
            int c = i < ncols ? cols[i] : -1;
            switch (c) {
            case 0:
                if (rnd(40) == 0)
                    rnd_int(t, rnd(4), true); /* only warned about */
                else
                    text_add(t, "%d", layout == 1 ? 1 : 2);
                break;
            case 1:
                text_add(t, "%s", rnd_bad && rnd(50) == 0 ? "" : ts);
                break;
            case 2:
                rnd_int(t, seq, true); /* only warned about */
                break;
            case 3:
                text_add(t, "%s", hosts[rnd(4) == 0 ? rnd(6) : (row / 3) % 2]);
                break;
            case 4:
                rnd_int(t, (unsigned)(row % scrape_len + (rnd(50) == 0 ? 70 : 0)), false);
                break;
            case 5:
                text_add(t, "GPU-%zu", row % scrape_len);
                break;
            case 6:
                rnd_number(t, false);
                break;
            case 7:
            case 8:
                if (rnd(3) == 0)
                    break; /* blank */
                rnd_number(t, false);
                break;
            default:
                text_add(t, "%s", rnd(2) ? "e" : "");
                break;
            }
            if (q)
                text_add(t, (c == 3 || c == 5 || c < 0) && rnd(5) == 0 ? "a\"\",\nb\"" : "\"");
        }
        bool last = row + 1 == nrows;
        if (last && rnd(3) == 0)
            break; /* no line end */
        uint32_t end = odd_ends ? rnd(8) : 7;
        text_add(t, "%s",
                 end == 0    ? "\r"
                 : end == 1  ? "\n\n"
                 : end == 2  ? "\r\n\r\n"
                 : end == 3  ? (crlf_file ? "\n" : "\r\n")
                 : crlf_file ? "\r\n"
                             : "\n");
    }
}

/* Loads the GPU CSV of len bytes (NULs allowed) written into g/samples.csv. */
static int load_gpu_n(const char *csv, size_t len, const char *m, unsigned flags)
{
    reset();
    tu_mkdirs("g/samples.csv");
    FILE *f = fopen(tp("g/samples.csv"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(csv, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    L.flags = flags;
    return srt_log_load_gpu(&L, tp("g/samples.csv"), m ? tp(m) : NULL, &E);
}

/*
 * Loads csv (len bytes) with the GPU line fast path on, then off (CARMA_SRTLOG_NO_FAST: every
 * row split by csv_split and read by gpu_row); both must give the same, bit for bit.
 */
static void gpu_same_both_ways_n(const char *csv, size_t len, const char *m, unsigned flags)
{
    unsetenv("CARMA_SRTLOG_NO_FAST");
    char *fast = gpu_snapshot(load_gpu_n(csv, len, m, flags));
    setenv("CARMA_SRTLOG_NO_FAST", "1", 1);
    char *slow = gpu_snapshot(load_gpu_n(csv, len, m, flags));
    unsetenv("CARMA_SRTLOG_NO_FAST");
    if (strcmp(fast, slow) != 0) {
        FILE *f = fopen(tp("diff.csv"), "wb");
        if (f) {
            fwrite(csv, 1, len, f);
            fclose(f);
        }
        print_message("fast:\n%.4000s\nsplit:\n%.4000s\n", fast, slow);
        fail_msg("the fast path differs (input kept in %s)", tp("diff.csv"));
    }
    free(fast);
    free(slow);
}

static void gpu_same_both_ways(const char *csv, const char *m, unsigned flags)
{
    gpu_same_both_ways_n(csv, strlen(csv), m, flags);
}

static void test_gpu_lines_differential(void **state)
{
    (void)state;
    tu_put("m.json", "{\"expected_devices\": ["
                     "{\"hostname\": \"node-a\", \"gpu_index\": 0, \"assignments\": "
                     "[{\"worker_role\": \"prefill\"}]},"
                     "{\"hostname\": \"node-b\", \"gpu_index\": 1, \"assignments\": "
                     "[{\"worker_role\": \"decode\"}, {\"worker_role\": \"agg\"}]}]}\n");
    /* what a line must not hide: a lone CR or a NUL in a cell that is not a number, a quote
     * (after a first data row: that one is always split, it reads the header's columns) */
#define ROW0 "2,9.0,0,a,0,u,100.0,50.0,\n"
    static const char *const cases[] = {
        GPU_HDR_V2 ROW0 "2,10.0,0,a,0,u\r,100.0,50.0,\n2,11.0,1,a,0,u,100.0,50.0,\n",
        GPU_HDR_V2 ROW0 "2,10.0,0,a\rb,0,u,100.0,50.0,\n2,11.0,1,a,0,u,100.0,50.0,\n",
        GPU_HDR_V2 ROW0 "2,10.0,0,a,0,u,100.0,50.0,\r\r\n2,11.0,1,a,0,u,100.0,50.0,\r\n",
        GPU_HDR_V2 ROW0 "2,10.0,0,a,0,u,100.0,50.0,\n\r\n\n2,11.0,1,a,0,u,100.0,50.0,\n",
        GPU_HDR_V2 ROW0 "2,10.0,0,a,0,\"u\",100.0,50.0,\n2,11.0,1,a,0,u,100.0,50.0,\n",
        GPU_HDR_V2 ROW0 "2,10.0,0,a,0,u,100.0,50.0,\n2,10.05,1,a,0,u,100.0,50.0,\n"
                        "2,10.0,2,a,0,u,100.0,50.0,\n2,10.0e0,3,a,0,u,1,2,\n2,10.0,4,a,0,u,1,2,3\n",
        GPU_HDR_V2 ROW0
        "2,10.0,0,a,0,u,100.0,50.0,\n2,10.0,1,a,0,u,100.0,50.0,\n2,10.0,1,a,0,u,1,,",
        GPU_HDR_V2 ROW0 "2,10.0,1,b,0,u,100.0,50.0,\n2,10.0,1,bb,0,u,1,2,\n2,10.0,1,b,0,u,1,2,\n"
                        "2,10.0,1,,0,u,1,2,\n2,10.0,1,b,0,u,1,2,\n2,10.0,1,a,0,u,1,2,\n",
        GPU_HDR_V1 "1,9.0,0,a,0,u,100.0\n1,10.0,0,a,0,u,100.0\n1,10.0,1,a,0,u,100.0\n"
                   "2,10.0,2,a,0,u,100.0\n1,10.0,3,a,0,u,100.0\n01,10.0,4,a,0,u,100.0\n"
                   "1,10.0,x,a,0,u,100.0\n1,9.0,6,a,0,u,100.0\n",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        gpu_same_both_ways(cases[i], NULL, 0);
        /* a NUL byte in a cell (host, uuid, a number, the last cell; a line the fast reader would
         * otherwise take whole) is refused by both readers with its line, as csv_split refuses it,
         * instead of cutting the cell there */
#define NUL_ROW(x)                                                                                 \
    {                                                                                              \
        x, sizeof x - 1                                                                            \
    }
    static const struct {
        const char *s;
        size_t n;
    } nul_rows[] = {
        NUL_ROW("2,10.0,0,a\0b,1,u,100.0,50.0,\n"), NUL_ROW("2,11.0,1,a,0,u\0v,100.0,50.0,\n"),
        NUL_ROW("2,11.0,1,a\0,1,u,100.0,50.0\0x,\n"), NUL_ROW("2,12.0,2,b,0,u,100.0,50.0,\0\n"),
        NUL_ROW("2,12.0,2,b,0,u,10\0.0,50.0,\r\n")};
#undef NUL_ROW
    for (size_t i = 0; i < sizeof nul_rows / sizeof *nul_rows; i++) {
        static const char head[] = GPU_HDR_V2 ROW0 "2,10.0,0,a,0,u,100.0,50.0,\n";
        static const char tail[] = "2,13.0,3,a,0,u,100.0,50.0,\n";
        char csv[512];
        size_t len = 0;
        memcpy(csv, head, sizeof head - 1);
        len += sizeof head - 1;
        memcpy(csv + len, nul_rows[i].s, nul_rows[i].n);
        len += nul_rows[i].n;
        memcpy(csv + len, tail, sizeof tail - 1);
        len += sizeof tail - 1;
        gpu_same_both_ways_n(csv, len, NULL, 0);
        char want[TU_DIR_MAX + 64];
        snprintf(want, sizeof want, "%s:4: a NUL byte (not text)", tp("g/samples.csv"));
        assert_err(load_gpu_n(csv, len, NULL, 0), -EINVAL, want);
        srt_log_done(&L);
    }
#undef ROW0

    rng_state = 0x9e3779b97f4a7c15u;
    for (int k = 0; k < 600; k++) {
        struct text t = {0};
        rnd_gpu_csv(&t, 1 + rnd(80));
        gpu_same_both_ways(t.s, k % 3 == 0 ? "m.json" : NULL, k % 17 == 0 ? SRT_LOG_STRICT : 0);
        free(t.s);
    }
    /* files past one read chunk (1 MiB) and past the row count that sizes the series */
    for (int k = 0; k < 3; k++) {
        struct text t = {0};
        rnd_gpu_csv(&t, 60000);
        gpu_same_both_ways(t.s, k == 0 ? "m.json" : NULL, 0);
        free(t.s);
    }
    /* the usual file: every line taken by the fast path, nothing else differs */
    struct text t = {0};
    text_add(&t, GPU_HDR_V2);
    for (unsigned i = 0; i < 40000; i++)
        text_add(&t, "2,%u.%03u,%u,node-%c,%u,GPU-%u,%u.%03u,%u.0,\r\n", 1785168098 + i / 16,
                 (i / 16) % 1000, i / 16, 'a' + (int)(i / 8) % 2, i % 8, i % 8, 100 + i % 500,
                 i % 1000, i % 100);
    gpu_same_both_ways(t.s, "m.json", 0);
    free(t.s);
}

/*
 * Loads csv (len bytes) with one thread (the sequential reader), then with threads threads
 * reading chunks of chunk bytes (CARMA_REPORT_THREADS, CARMA_REPORT_CHUNK): both must give the
 * same, bit for bit, messages included.
 */
static void gpu_same_threads_n(const char *csv, size_t len, const char *m, unsigned flags,
                               unsigned threads, unsigned chunk)
{
    char buf[32];
    setenv("CARMA_REPORT_THREADS", "1", 1);
    char *seq = gpu_snapshot(load_gpu_n(csv, len, m, flags));
    snprintf(buf, sizeof buf, "%u", threads);
    setenv("CARMA_REPORT_THREADS", buf, 1);
    snprintf(buf, sizeof buf, "%u", chunk);
    setenv("CARMA_REPORT_CHUNK", buf, 1);
    char *par = gpu_snapshot(load_gpu_n(csv, len, m, flags));
    unsetenv("CARMA_REPORT_THREADS");
    unsetenv("CARMA_REPORT_CHUNK");
    if (strcmp(seq, par) != 0) {
        FILE *f = fopen(tp("diff.csv"), "wb");
        if (f) {
            fwrite(csv, 1, len, f);
            fclose(f);
        }
        print_message("sequential:\n%.4000s\n%u threads, chunks of %u:\n%.4000s\n", seq, threads,
                      chunk, par);
        fail_msg("the parallel reader differs (input kept in %s)", tp("diff.csv"));
    }
    free(seq);
    free(par);
}

static void gpu_same_threads(const char *csv, const char *m, unsigned threads, unsigned chunk)
{
    gpu_same_threads_n(csv, strlen(csv), m, 0, threads, chunk);
}

/* One scrape (seq) of ngpu GPUs on host at ts into t, power w + gpu, line end eol. */
static void scrape_rows(struct text *t, unsigned seq, const char *host, const char *ts,
                        unsigned ngpu, unsigned w, const char *eol)
{
    for (unsigned g = 0; g < ngpu; g++)
        text_add(t, "2,%s,%u,%s,%u,GPU-%u,%u.%03u,%u.0,%s", ts, seq, host, g, g, w + g,
                 (seq * 37 + g * 101) % 1000, (seq + g) % 100, eol);
}

static void test_gpu_parallel(void **state)
{
    (void)state;
    tu_put("m.json", "{\"expected_devices\": ["
                     "{\"hostname\": \"node-a\", \"gpu_index\": 0, \"assignments\": "
                     "[{\"worker_role\": \"prefill\"}]},"
                     "{\"hostname\": \"node-a\", \"gpu_index\": 1, \"assignments\": "
                     "[{\"worker_role\": \"prefill\"}]},"
                     "{\"hostname\": \"node-b\", \"gpu_index\": 1, \"assignments\": "
                     "[{\"worker_role\": \"decode\"}, {\"worker_role\": \"agg\"}]}]}\n");
    /* the usual file (LF, then CRLF): every chunk size puts some scrape's rows (summed into the
     * node and role series) on both sides of a chunk boundary */
    for (int crlf = 0; crlf < 2; crlf++) {
        struct text t = {0};
        text_add(&t, GPU_HDR_V2);
        char ts[32];
        for (unsigned i = 0; i < 300; i++) {
            snprintf(ts, sizeof ts, "%u.%03u", 1785168098 + i, (i * 7) % 1000);
            scrape_rows(&t, i, i % 2 ? "node-b" : "node-a", ts, 1 + i % 5, 100 + i % 50,
                        crlf ? "\r\n" : "\n");
        }
        static const unsigned chunks[] = {1, 37, 50, 64, 101, 256, 1000, 4096};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
            for (unsigned th = 2; th <= 5; th += 3)
                gpu_same_threads(t.s, "m.json", th, chunks[c]);
        free(t.s);
    }
    /* hard cases among plain rows, at many places relative to the boundaries; after 1.1 MB of
     * plain rows, as the parallel reader starts only at a read buffer (1 MiB) without quotes */
    static const char *const odd[] = {
        "2,10.0,1,a,0,\"u,\nv\",100.0,50.0,\n",          /* a quoted line end */
        "2,10.0,1,\"node-a\",0,u,100.0,50.0,\n",         /* a quoted host (csv_split unquotes it) */
        "2,10.0,1,a,0,\"u\n2,10.0,1,a,0,u\",1.0,2.0,\n", /* the rest of it looks like a row */
        "2,10.0,1,a,0,u,1e400,50.0,\n",                  /* an error: not a finite number */
        "2,10.0,1,a,0,u,100.0,50.0\n",                   /* an error: a field short */
        "3,10.0,1,a,0,u,100.0,50.0,\n",                  /* a warning (schema_version) */
        "2,10.0,x,a,0,u,100.0,50.0,\n",                  /* scrape_seq not a number: checks off */
        "2,10.0,1,a,0,u,100.0,50.0,\r",                  /* a lone CR */
        "\n\r\n",                                        /* blank lines */
        "2,10.0,1,a\xff,0,u,100.0,50.0,\n",              /* a host that is not UTF-8 */
        "2,9.5,2,node-a,0,u,100.0,50.0,\n",              /* a time out of order (unsorted) */
        "2,10.0,2,node-a,0,u,100.0,50.0,\n",             /* a duplicate (seq 2 again) */
        "2,1e1,1,a,0,u,100.0,50.0,\n",                   /* a number off the fast path */
        "2,10.0,0,node-a,0,u,100.0,50.0,",               /* the last line without a line end */
    };
    for (size_t k = 0; k < sizeof odd / sizeof *odd; k++) {
        for (unsigned at = 24005 + (unsigned)k % 7; at < 24006 + (unsigned)k % 7; at++) {
            struct text t = {0};
            text_add(&t, GPU_HDR_V2);
            char ts[32];
            for (unsigned i = 0; i < 24070; i++) {
                if (i == at || (i == at + 40 && k != sizeof odd / sizeof *odd - 1))
                    text_add(&t, "%s", odd[k]); /* twice: a second one in a later chunk */
                if (k == sizeof odd / sizeof *odd - 1 && i == at)
                    break;
                snprintf(ts, sizeof ts, "%u.5", 1785168098 + i / 3);
                scrape_rows(&t, i / 3, i % 2 ? "node-b" : "node-a", ts, 1 + i % 3, 100,
                            i % 4 == 0 ? "\r\n" : "\n");
            }
            static const unsigned chunks[] = {61, 397, 4099};
            gpu_same_threads(t.s, k % 2 ? "m.json" : NULL, 2 + at % 3, chunks[k % 3]);
            free(t.s);
        }
    }
    /* an error in a later chunk and another in an earlier one: the earlier, in file order */
    {
        struct text t = {0};
        text_add(&t, GPU_HDR_V2);
        for (unsigned i = 0; i < 40; i++)
            text_add(&t, "2,%u.0,%u,node-a,0,u,%s,50.0,\n", 100 + i, i,
                     i == 30   ? "inf"
                     : i == 12 ? "nan"
                               : "100.0");
        gpu_same_threads(t.s, NULL, 4, 64);
        setenv("CARMA_REPORT_THREADS", "4", 1);
        setenv("CARMA_REPORT_CHUNK", "64", 1);
        char want[TU_DIR_MAX + 64];
        snprintf(want, sizeof want, "%s:14: power_w 'nan' is not a finite number",
                 tp("g/samples.csv"));
        assert_err(load_gpu_n(t.s, strlen(t.s), NULL, 0), -EINVAL, want);
        unsetenv("CARMA_REPORT_THREADS");
        unsetenv("CARMA_REPORT_CHUNK");
        srt_log_done(&L);
        free(t.s);
    }
    /* fewer lines than threads, a file of one chunk, strict */
    gpu_same_threads(GPU_HDR_V2 "2,10.0,0,a,0,u,1.0,2.0,\n2,10.0,0,a,1,u,1.0,2.0,\n", NULL, 8, 1);
    static const char two[] = GPU_HDR_V2 "2,10.0,0,a,0,u,1.0,2.0,\n2,11.0,1,a,0,u,1.0,2.0,\n";
    gpu_same_threads_n(two, sizeof two - 1, NULL, SRT_LOG_STRICT, 3, 4);
    /* the random files of the fast path's differential test: quotes with line ends, odd line
     * ends, bad cells, duplicates, scrape_seq going back, times out of order */
    rng_state = 0x2545f4914f6cdd1du;
    for (int k = 0; k < 300; k++) {
        struct text t = {0};
        rnd_gpu_csv(&t, 1 + rnd(120));
        gpu_same_threads(t.s, k % 3 == 0 ? "m.json" : NULL, 2 + rnd(4), 16 + rnd(300));
        free(t.s);
    }
}

static int group_teardown(void **state)
{
    (void)state;
    srt_log_done(&L);
    return 0;
}

static int teardown(void **state)
{
    srt_log_done(&L);
    return tu_teardown(state);
}

int main(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_detect_markers, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_parallel, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_errors, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_fixture_errors, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_sources, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_discover_paths, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_sabench, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_window_alone, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_aiperf, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_aiperf_reported, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_phase_log, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixture_sabench, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixture_aiperf, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_roles_and_sums, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_util_shared_times, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_lines_differential, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_series, tu_setup, teardown),
        cmocka_unit_test(test_sensor_rank),
        cmocka_unit_test_setup_teardown(test_malformed, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_names_and_powers, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream, tu_setup, teardown),
        cmocka_unit_test(test_split_matches_parse),
        cmocka_unit_test_setup_teardown(test_malformed_more, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_line, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_shared_times, tu_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}

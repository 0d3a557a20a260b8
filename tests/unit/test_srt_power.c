/*
 * Unit tests for srt/power: samples.csv byte for byte (header, rows, CRLF, µs
 * timestamps, blank and skipped cells, RFC 4180 quoting), a strict srt-slurm-style check of
 * every file written, manifest.json (keys in srt-slurm's order, values, SHA-256 computed
 * independently with sha256sum), errors that name the file, a failed write (file size limit)
 * that keeps the rows before it, and no allocation in the steady state.
 */
#include "testutil.h"

#include "alloccount.h"

#include <errno.h>
#include <glob.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/csv.h"
#include "core/file.h"
#include "srt/power.h"

/* ---- helpers ---- */

#define HEADER                                                                                     \
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,gpu_util_pct,"   \
    "sm_active\r\n"

static char text[1 << 20];

/* tu_dir/rel into buf. */
/* file_tmp_rand for the tests: always the same bits, so that every temporary name clashes */
static uint64_t one_rand(void)
{
    return 0xbeef;
}

static const char *in_dir(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", tu_dir, rel);
    return buf;
}

static const unsigned two_idx[] = {0, 1};
static const char *const two_uuid[] = {"GPU-aaaa", "GPU-bbbb"};

/* Options for two GPUs (0: GPU-aaaa, 1: GPU-bbbb) on host, writing to tu_dir/rel. */
static struct srt_power_opts two_gpus(char *dir, size_t cap, const char *rel, const char *host)
{
    struct srt_power_opts o = {
        .dir = in_dir(dir, cap, rel),
        .hostname = host,
        .run_name = "exp-1",
        .job_id = "123",
        .interval_s = 1.0,
        .producer_version = "0.1.0",
        .source_metric = "nvmlDeviceGetPowerUsage",
        .power_scope = "gpu_device_board_as_reported_by_nvml",
        .ndev = 2,
        .gpu_index = two_idx,
        .gpu_uuid = two_uuid,
    };
    return o;
}

static struct srt_power *open_ok(const struct srt_power_opts *o)
{
    struct carma_err e = {0};
    struct srt_power *p = srt_power_open(o, &e);
    if (!p)
        fail_msg("srt_power_open: %s", e.msg);
    return p;
}

static void end_ok(struct srt_power *p)
{
    struct carma_err e = {0};
    int r = srt_power_scrape_end(p, &e);
    if (r != 0)
        fail_msg("srt_power_scrape_end: %d %s", r, e.msg);
}

static void finish_ok(struct srt_power *p, const char *status)
{
    struct carma_err e = {0};
    int r = srt_power_finish(p, status, &e);
    if (r != 0)
        fail_msg("srt_power_finish: %d %s", r, e.msg);
}

/* The text of tu_dir/rel (in the static buffer text). */
static const char *slurp(const char *rel)
{
    char path[512];
    tu_slurp(in_dir(path, sizeof path, rel), text, sizeof text);
    return text;
}

/* tu_dir/rel parsed as JSON; fails the test when it is not. */
static json_t *load_json(const char *rel)
{
    char path[512];
    json_error_t je;
    json_t *j = json_load_file(in_dir(path, sizeof path, rel), 0, &je);
    if (!j)
        fail_msg("%s: %s (line %d)", path, je.text, je.line);
    return j;
}

/* The SHA-256 of tu_dir/rel as sha256sum prints it. */
static void sha256sum(const char *rel, char out[65])
{
    char cmd[600], path[512];
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", in_dir(path, sizeof path, rel));
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, 64, f);
    out[n] = '\0';
    assert_int_equal(pclose(f), 0);
    assert_int_equal(n, 64);
}

/* Asserts that obj's keys are exactly keys, in that order. */
static void assert_keys(const json_t *obj, const char *const *keys, size_t n)
{
    assert_true(json_is_object(obj));
    size_t i = 0;
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it), i++) {
        if (i >= n)
            fail_msg("extra key \"%s\"", json_object_iter_key(it));
        if (strcmp(json_object_iter_key(it), keys[i]) != 0)
            fail_msg("key %zu is \"%s\", want \"%s\"", i, json_object_iter_key(it), keys[i]);
    }
    if (i != n)
        fail_msg("%zu keys, want %zu", i, n);
}

#define ASSERT_KEYS(obj, ...)                                                                      \
    do {                                                                                           \
        const char *const k_[] = {__VA_ARGS__};                                                    \
        assert_keys(obj, k_, sizeof k_ / sizeof k_[0]);                                            \
    } while (0)

static const char *const manifest_keys[] = {
    "schema_version",
    "producer",
    "producer_version",
    "producer_git_commit",
    "source_metric",
    "unit",
    "power_scope",
    "samples_schema_version",
    "utilization_metrics",
    "timestamp_source",
    "job_id",
    "run_name",
    "sample_interval_seconds",
    "request_timeout_seconds",
    "max_scrape_duration_seconds",
    "required",
    "started_at_unix",
    "stopped_at_unix",
    "status",
    "publication_valid",
    "dcgm_exporter",
    "expected_devices",
    "observed_devices",
    "expected_windows",
    "scrape_count",
    "sample_row_count",
    "samples_sha256",
    "window_validations",
    "artifact_errors",
    "reason_codes",
};
#define N_MANIFEST_KEYS (sizeof manifest_keys / sizeof manifest_keys[0])

/*
 * Checks the top-level keys of tu_dir/rel in the bytes themselves (lines `  "key": ` of
 * json.dumps(indent=2)), and its text form: 2-space indent, final newline.
 */
static void check_manifest_text(const char *rel)
{
    const char *s = slurp(rel);
    size_t len = strlen(s);
    assert_true(len > 2);
    const char *start = "{\n  \"schema_version\": 1,\n  \"producer\": \"carma\",\n";
    assert_memory_equal(s, start, strlen(start));
    assert_memory_equal(s + len - 2, "}\n", 2);
    size_t k = 0;
    for (size_t at = 0; at < len;) {
        const char *line = s + at;
        const char *nl = strchr(line, '\n');
        at = nl ? (size_t)(nl - s) + 1 : len;
        if (strncmp(line, "  \"", 3) == 0) {
            const char *end = strchr(line + 3, '"');
            assert_non_null(end);
            if (k >= N_MANIFEST_KEYS)
                fail_msg("extra top-level key in %s", rel);
            size_t n = (size_t)(end - line - 3);
            if (strlen(manifest_keys[k]) != n || memcmp(line + 3, manifest_keys[k], n) != 0)
                fail_msg("top-level key %zu is %.*s, want %s", k, (int)n, line + 3,
                         manifest_keys[k]);
            assert_memory_equal(end, "\": ", 3);
            k++;
        }
    }
    assert_int_equal(k, N_MANIFEST_KEYS);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("\"%s\" is not a number", key);
    return json_number_value(v);
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        fail_msg("\"%s\" is not a string", key);
    return json_string_value(v);
}

static void assert_null_key(const json_t *o, const char *key)
{
    if (!json_is_null(json_object_get(o, key)))
        fail_msg("\"%s\" is not null", key);
}

static void assert_empty_array(const json_t *o, const char *key)
{
    const json_t *a = json_object_get(o, key);
    if (!json_is_array(a) || json_array_size(a) != 0)
        fail_msg("\"%s\" is not []", key);
}

static bool parse_double(const char *s, double *v)
{
    char *end;
    if (!*s)
        return false;
    errno = 0;
    *v = strtod(s, &end);
    return *end == '\0' && errno == 0 && isfinite(*v);
}

static bool parse_uint(const char *s, unsigned long long *v)
{
    char *end;
    if (!*s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return *end == '\0' && errno == 0;
}

/*
 * What srt-slurm's strict reader (read_samples) and its validator demand of a v2 samples.csv,
 * checked on tu_dir/rel: the v2 header, CRLF line ends, 9 fields and schema_version 2 in every
 * row, float timestamps, integer scrape_seq and gpu_index, finite power >= 0, utilization
 * blank or in range, one timestamp per scrape, scrape_seq 0, 1, 2, ... without gaps, no
 * duplicate (scrape_seq, hostname, gpu_index), no device whose timestamps decrease. Returns
 * the number of rows.
 */
static size_t check_strict(const char *rel)
{
    const char *s = slurp(rel);
    size_t len = strlen(s);
    assert_true(len >= strlen(HEADER));
    assert_memory_equal(s, HEADER, strlen(HEADER));
    assert_int_equal(s[len - 1], '\n');
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
            fail_msg("%s: bare LF at byte %zu", rel, i);

    struct csv_doc doc;
    struct carma_err e = {0};
    if (csv_parse(s, len, rel, &doc, &e) < 0)
        fail_msg("%s", e.msg);
    assert_true(doc.n >= 1);
    assert_int_equal(doc.rows[0].n, 9);

    struct seen {
        unsigned long long seq, gpu;
        char host[300];
        double ts;
    };
    static struct seen seen[4096];
    size_t nseen = 0;
    unsigned long long last_seq = 0;
    double seq_ts = 0;
    for (size_t r = 1; r < doc.n; r++) {
        const struct csv_row *row = &doc.rows[r];
        if (row->n != 9)
            fail_msg("%s:%zu: %zu fields", rel, row->line, row->n);
        char *const *f = row->fields;
        assert_string_equal(f[0], "2");
        double ts = 0, w = 0, v = 0;
        unsigned long long seq = 0, gpu = 0;
        if (!parse_double(f[1], &ts) || !parse_uint(f[2], &seq) || !parse_uint(f[4], &gpu) ||
            !parse_double(f[6], &w) || w < 0)
            fail_msg("%s:%zu: bad timestamp, seq, gpu_index or power", rel, row->line);
        if (*f[7] && (!parse_double(f[7], &v) || v < 0 || v > 100))
            fail_msg("%s:%zu: bad gpu_util_pct %s", rel, row->line, f[7]);
        if (*f[8] && (!parse_double(f[8], &v) || v < 0 || v > 1))
            fail_msg("%s:%zu: bad sm_active %s", rel, row->line, f[8]);
        if (r == 1) {
            assert_int_equal(seq, 0);
        } else if (seq == last_seq) {
            if (ts != seq_ts)
                fail_msg("%s:%zu: two timestamps in scrape %llu", rel, row->line, seq);
        } else if (seq != last_seq + 1) {
            fail_msg("%s:%zu: scrape_seq %llu after %llu", rel, row->line, seq, last_seq);
        }
        last_seq = seq;
        seq_ts = ts;
        for (size_t k = 0; k < nseen; k++) {
            if (seen[k].gpu != gpu || strcmp(seen[k].host, f[3]) != 0)
                continue;
            if (seen[k].seq == seq)
                fail_msg("%s:%zu: duplicate_sample_row", rel, row->line);
            if (seen[k].ts > ts)
                fail_msg("%s:%zu: timestamp_non_monotonic", rel, row->line);
        }
        assert_true(nseen < sizeof seen / sizeof seen[0]);
        seen[nseen].seq = seq;
        seen[nseen].gpu = gpu;
        seen[nseen].ts = ts;
        snprintf(seen[nseen].host, sizeof seen[nseen].host, "%s", f[3]);
        nseen++;
    }
    size_t rows = doc.n - 1;
    csv_doc_free(&doc);
    return rows;
}

/* ---- samples.csv ---- */

/* Three scrapes of two GPUs: the exact bytes. */
static void test_rows_golden(void **state)
{
    (void)state;
    char dir[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "power", "node-a");
    struct srt_power *p = open_ok(&o);
    assert_string_equal(slurp("power/samples.csv"), HEADER);

    srt_power_scrape_begin(p, 1785168098.123456);
    srt_power_row(p, 0, "GPU-aaaa", 400.0, 60, NAN);
    srt_power_row(p, 1, "GPU-bbbb", 350.25, 80.5, NAN);
    end_ok(p);
    srt_power_scrape_begin(p, 1785168099.5);
    srt_power_row(p, 0, "GPU-aaaa", 401.125, NAN, NAN);
    srt_power_row(p, 1, "GPU-bbbb", 0.0, 0, NAN);
    end_ok(p);
    srt_power_scrape_begin(p, 1785168100.000001);
    srt_power_row(p, 0, "GPU-aaaa", 123.4567891, 100, NAN);
    srt_power_row(p, 1, NULL, 7, 99.9999999, 0.25); /* the UUID given at open */
    end_ok(p);
    finish_ok(p, "complete");

    assert_string_equal(slurp("power/samples.csv"),
                        HEADER "2,1785168098.123456,0,node-a,0,GPU-aaaa,400.0,60.0,\r\n"
                               "2,1785168098.123456,0,node-a,1,GPU-bbbb,350.25,80.5,\r\n"
                               "2,1785168099.500000,1,node-a,0,GPU-aaaa,401.125,,\r\n"
                               "2,1785168099.500000,1,node-a,1,GPU-bbbb,0.0,0.0,\r\n"
                               "2,1785168100.000001,2,node-a,0,GPU-aaaa,123.456789,100.0,\r\n"
                               "2,1785168100.000001,2,node-a,1,GPU-bbbb,7.0,100.0,0.25\r\n");
    assert_int_equal(check_strict("power/samples.csv"), 6);
}

/* Out-of-range utilization is blank; rows with bad power, and a second row for one GPU in a
 * scrape, are skipped; a scrape left empty writes nothing and keeps its scrape_seq. */
static void test_blank_and_skipped(void **state)
{
    (void)state;
    char dir[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "p", "node-a");
    struct srt_power *p = open_ok(&o);

    srt_power_scrape_begin(p, 1000.5);
    srt_power_row(p, 0, "GPU-aaaa", NAN, 50, 0.5);
    srt_power_row(p, 1, "GPU-bbbb", -1, 50, 0.5);
    end_ok(p);
    srt_power_scrape_begin(p, 1000.75); /* no row at all */
    end_ok(p);
    assert_string_equal(slurp("p/samples.csv"), HEADER);

    srt_power_scrape_begin(p, 1001);
    srt_power_row(p, 0, "GPU-aaaa", 10, -0.5, 1.5);
    srt_power_row(p, 1, "GPU-bbbb", INFINITY, 50, 0.5);
    srt_power_row(p, 0, "GPU-aaaa", 20, 50, 0.5); /* duplicate: skipped */
    end_ok(p);
    srt_power_scrape_begin(p, 1002);
    srt_power_row(p, 0, "GPU-aaaa", -0.0, 100.0001, -0.0);
    srt_power_row(p, 1, "GPU-bbbb", 5, INFINITY, 1.0);
    end_ok(p);
    srt_power_scrape_begin(p, 1003);
    srt_power_row(p, 0, "GPU-aaaa", NAN, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");

    assert_string_equal(slurp("p/samples.csv"),
                        HEADER "2,1001.000000,0,node-a,0,GPU-aaaa,10.0,,\r\n"
                               "2,1002.000000,1,node-a,0,GPU-aaaa,0.0,,0.0\r\n"
                               "2,1002.000000,1,node-a,1,GPU-bbbb,5.0,,1.0\r\n");
    assert_int_equal(check_strict("p/samples.csv"), 3);
    json_t *m = load_json("p/manifest.json");
    assert_int_equal(num(m, "scrape_count"), 2);
    assert_int_equal(num(m, "sample_row_count"), 3);
    json_decref(m);
}

/* A host name and a UUID holding a comma or a quote are quoted as RFC 4180 says. */
static void test_quoting(void **state)
{
    (void)state;
    char dir[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "q", "node,a\"x");
    struct srt_power *p = open_ok(&o);
    srt_power_scrape_begin(p, 5);
    srt_power_row(p, 0, "GPU,0", 1.5, NAN, NAN);
    srt_power_row(p, 1, "GPU-bbbb", 2.5, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");
    assert_string_equal(slurp("q/samples.csv"),
                        HEADER "2,5.000000,0,\"node,a\"\"x\",0,\"GPU,0\",1.5,,\r\n"
                               "2,5.000000,0,\"node,a\"\"x\",1,GPU-bbbb,2.5,,\r\n");
    assert_int_equal(check_strict("q/samples.csv"), 2);

    struct csv_doc doc;
    struct carma_err e = {0};
    assert_int_equal(csv_parse(text, strlen(text), "q", &doc, &e), 0);
    assert_string_equal(doc.rows[1].fields[3], "node,a\"x");
    assert_string_equal(doc.rows[1].fields[5], "GPU,0");
    csv_doc_free(&doc);

    json_t *m = load_json("q/manifest.json");
    json_t *obs = json_object_get(m, "observed_devices");
    assert_int_equal(json_array_size(obs), 2);
    assert_string_equal(str(json_array_get(obs, 0), "hostname"), "node,a\"x");
    json_t *u = json_object_get(json_array_get(obs, 0), "gpu_uuids");
    assert_int_equal(json_array_size(u), 1); /* GPU-aaaa, given at open, never reached the file */
    assert_string_equal(json_string_value(json_array_get(u, 0)), "GPU,0");
    json_decref(m);
}

/* ---- manifest.json ---- */

/* At open: status "running", nothing observed, no digest, no stop time. */
static void test_manifest_running_at_open(void **state)
{
    (void)state;
    char dir[512], tmp[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "deep/er/power", "node-a");
    struct srt_power *p = open_ok(&o);
    check_manifest_text("deep/er/power/manifest.json");
    glob_t g;
    assert_int_equal(glob(in_dir(tmp, sizeof tmp, "deep/er/power/*.tmp.*"), GLOB_PERIOD, NULL, &g),
                     GLOB_NOMATCH);
    globfree(&g);

    json_t *m = load_json("deep/er/power/manifest.json");
    assert_keys(m, manifest_keys, N_MANIFEST_KEYS);
    assert_string_equal(str(m, "status"), "running");
    assert_null_key(m, "stopped_at_unix");
    assert_null_key(m, "samples_sha256");
    assert_true(json_is_false(json_object_get(m, "publication_valid")));
    assert_int_equal(num(m, "scrape_count"), 0);
    assert_int_equal(num(m, "sample_row_count"), 0);
    assert_empty_array(m, "observed_devices");
    assert_empty_array(m, "reason_codes");
    assert_int_equal(json_array_size(json_object_get(m, "expected_devices")), 2);
    json_decref(m);
    finish_ok(p, "failed");
}

/* The final manifest: every key in order, and every value. */
static void test_manifest_final(void **state)
{
    (void)state;
    char dir[512];
    static const unsigned idx[] = {2, 0, 1}; /* written sorted */
    static const char *const uuid[] = {"GPU-cccc", "GPU-aaaa", "GPU-bbbb"};
    static const struct srt_power_assignment as[] = {
        {.gpu_index = 0, .worker_role = "prefill", .worker_index = 0, .worker_process = "w0"},
        {.gpu_index = 1, .worker_role = "decode", .worker_index = 1, .worker_process = "w1"},
        {.gpu_index = 1, .worker_role = NULL, .worker_index = 2, .worker_process = NULL},
    };
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "power", "node-a");
    o.ndev = 3;
    o.gpu_index = idx;
    o.gpu_uuid = uuid;
    o.nassign = 3;
    o.assign = as;
    o.interval_s = 0.1;
    o.run_name = "exp-\xc3\xa9\\u00AB\x01";
    double before = (double)time(NULL) - 1;
    struct srt_power *p = open_ok(&o);
    double after_open = (double)time(NULL) + 1;

    srt_power_scrape_begin(p, 1785168098.123456);
    srt_power_row(p, 0, "GPU-aaaa", 400, 60, NAN);
    srt_power_row(p, 1, "GPU-bbbb", NAN, 60, NAN); /* skipped */
    end_ok(p);
    srt_power_scrape_begin(p, 1785168099.25);
    srt_power_row(p, 0, "GPU-aaaa", 401, NAN, NAN);
    srt_power_row(p, 1, "GPU-bbbb", 300, NAN, NAN);
    end_ok(p);
    srt_power_scrape_begin(p, 1785168100.5);
    srt_power_row(p, 0, "GPU-a2", 402, NAN, NAN); /* a second UUID for GPU 0 */
    srt_power_row(p, 1, "GPU-bbbb", 301, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");
    assert_int_equal(check_strict("power/samples.csv"), 5);

    check_manifest_text("power/manifest.json");
    const char *t = slurp("power/manifest.json");
    assert_non_null(strstr(t, "\n  \"expected_windows\": [],\n"));
    assert_non_null(strstr(t, "\n  \"dcgm_exporter\": null,\n"));
    assert_non_null(strstr(t, "\n  \"sample_interval_seconds\": 0.1,\n"));
    /* escapes as json.dumps writes them: lowercase hex, and a backslash is not an escape */
    assert_non_null(strstr(t, "\n  \"run_name\": \"exp-\\u00e9\\\\u00AB\\u0001\",\n"));

    json_t *m = load_json("power/manifest.json");
    assert_keys(m, manifest_keys, N_MANIFEST_KEYS);
    assert_int_equal(num(m, "schema_version"), 1);
    assert_true(json_is_integer(json_object_get(m, "schema_version")));
    assert_string_equal(str(m, "producer"), "carma");
    assert_string_equal(str(m, "producer_version"), "0.1.0");
    assert_null_key(m, "producer_git_commit");
    assert_string_equal(str(m, "source_metric"), "nvmlDeviceGetPowerUsage");
    assert_string_equal(str(m, "unit"), "W");
    assert_string_equal(str(m, "power_scope"), "gpu_device_board_as_reported_by_nvml");
    assert_int_equal(num(m, "samples_schema_version"), 2);

    json_t *um = json_object_get(m, "utilization_metrics");
    assert_int_equal(json_array_size(um), 2);
    ASSERT_KEYS(json_array_get(um, 0), "column", "source_metric", "unit");
    assert_string_equal(str(json_array_get(um, 0), "column"), "gpu_util_pct");
    assert_string_equal(str(json_array_get(um, 0), "source_metric"),
                        "nvmlDeviceGetUtilizationRates");
    assert_string_equal(str(json_array_get(um, 0), "unit"), "percent");
    assert_string_equal(str(json_array_get(um, 1), "column"), "sm_active");
    assert_string_equal(str(json_array_get(um, 1), "source_metric"), "DCGM_FI_PROF_SM_ACTIVE");
    assert_string_equal(str(json_array_get(um, 1), "unit"), "fraction");

    assert_string_equal(str(m, "timestamp_source"), "local_unix_clock");
    assert_string_equal(str(m, "job_id"), "123");
    assert_string_equal(str(m, "run_name"), "exp-\xc3\xa9\\u00AB\x01");
    tu_assert_near(num(m, "sample_interval_seconds"), 0.1, 0);
    assert_null_key(m, "request_timeout_seconds");
    assert_null_key(m, "max_scrape_duration_seconds");
    assert_true(json_is_false(json_object_get(m, "required")));
    double started = num(m, "started_at_unix"), stopped = num(m, "stopped_at_unix");
    assert_true(started >= before && started <= after_open);
    assert_true(stopped >= started && stopped <= (double)time(NULL) + 1);
    assert_string_equal(str(m, "status"), "complete");
    assert_true(json_is_true(json_object_get(m, "publication_valid")));
    assert_null_key(m, "dcgm_exporter");

    json_t *ed = json_object_get(m, "expected_devices");
    assert_int_equal(json_array_size(ed), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *d = json_array_get(ed, i);
        ASSERT_KEYS(d, "hostname", "gpu_index", "assignments");
        assert_string_equal(str(d, "hostname"), "node-a");
        assert_int_equal(num(d, "gpu_index"), i);
    }
    json_t *a0 = json_object_get(json_array_get(ed, 0), "assignments");
    json_t *a1 = json_object_get(json_array_get(ed, 1), "assignments");
    assert_int_equal(json_array_size(a0), 1);
    assert_int_equal(json_array_size(a1), 2);
    assert_empty_array(json_array_get(ed, 2), "assignments");
    ASSERT_KEYS(json_array_get(a0, 0), "worker_role", "worker_index", "worker_process",
                "het_group");
    assert_string_equal(str(json_array_get(a0, 0), "worker_role"), "prefill");
    assert_int_equal(num(json_array_get(a0, 0), "worker_index"), 0);
    assert_string_equal(str(json_array_get(a0, 0), "worker_process"), "w0");
    assert_null_key(json_array_get(a0, 0), "het_group");
    assert_string_equal(str(json_array_get(a1, 0), "worker_role"), "decode");
    assert_string_equal(str(json_array_get(a1, 0), "worker_process"), "w1");
    assert_string_equal(str(json_array_get(a1, 1), "worker_role"), "agg");
    assert_int_equal(num(json_array_get(a1, 1), "worker_index"), 2);
    assert_null_key(json_array_get(a1, 1), "worker_process");

    json_t *od = json_object_get(m, "observed_devices");
    assert_int_equal(json_array_size(od), 2); /* GPU 2 never got a row */
    json_t *g0 = json_array_get(od, 0), *g1 = json_array_get(od, 1);
    ASSERT_KEYS(g0, "hostname", "gpu_index", "gpu_uuids", "first_sample_time_unix",
                "last_sample_time_unix");
    assert_string_equal(str(g0, "hostname"), "node-a");
    assert_int_equal(num(g0, "gpu_index"), 0);
    json_t *u0 = json_object_get(g0, "gpu_uuids");
    assert_int_equal(json_array_size(u0), 2);
    assert_string_equal(json_string_value(json_array_get(u0, 0)), "GPU-aaaa");
    assert_string_equal(json_string_value(json_array_get(u0, 1)), "GPU-a2");
    tu_assert_near(num(g0, "first_sample_time_unix"), 1785168098.123456, 1e-7);
    tu_assert_near(num(g0, "last_sample_time_unix"), 1785168100.5, 1e-7);
    assert_int_equal(num(g1, "gpu_index"), 1);
    assert_int_equal(json_array_size(json_object_get(g1, "gpu_uuids")), 1);
    tu_assert_near(num(g1, "first_sample_time_unix"), 1785168099.25, 1e-7);
    tu_assert_near(num(g1, "last_sample_time_unix"), 1785168100.5, 1e-7);

    assert_empty_array(m, "expected_windows");
    assert_int_equal(num(m, "scrape_count"), 3);
    assert_int_equal(num(m, "sample_row_count"), 5);
#ifdef CARMA_HAVE_LIBCRYPTO
    char sha[65];
    sha256sum("power/samples.csv", sha);
    assert_string_equal(str(m, "samples_sha256"), sha);
#else
    assert_null_key(m, "samples_sha256");
#endif
    assert_empty_array(m, "window_validations");
    assert_empty_array(m, "artifact_errors");
    assert_empty_array(m, "reason_codes");
    json_decref(m);
}

/* hostname and job_id from the Slurm environment when the options leave them out. */
static void test_defaults_from_environment(void **state)
{
    (void)state;
    char dir[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "env", NULL);
    o.job_id = NULL;
    setenv("SLURMD_NODENAME", "node-z", 1);
    setenv("SLURM_JOB_ID", "777", 1);
    struct srt_power *p = open_ok(&o);
    unsetenv("SLURMD_NODENAME");
    unsetenv("SLURM_JOB_ID");
    srt_power_scrape_begin(p, 1);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");
    assert_string_equal(slurp("env/samples.csv"),
                        HEADER "2,1.000000,0,node-z,0,GPU-aaaa,1.0,,\r\n");
    json_t *m = load_json("env/manifest.json");
    assert_string_equal(str(m, "job_id"), "777");
    assert_string_equal(str(json_array_get(json_object_get(m, "expected_devices"), 0), "hostname"),
                        "node-z");
    json_decref(m);

    /* neither: the short host name, and a null job */
    char host[256];
    assert_int_equal(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = '\0';
    char *dot = strchr(host, '.');
    if (dot && dot != host)
        *dot = '\0';
    o = two_gpus(dir, sizeof dir, "env2", NULL);
    o.job_id = NULL;
    p = open_ok(&o);
    finish_ok(p, "complete");
    m = load_json("env2/manifest.json");
    assert_null_key(m, "job_id");
    assert_string_equal(str(json_array_get(json_object_get(m, "expected_devices"), 0), "hostname"),
                        host);
    json_decref(m);
}

/* publication_valid needs "complete", rows and no reason code. */
static void test_publication_invalid(void **state)
{
    (void)state;
    char dir[512];
    struct carma_err e = {0};

    /* no rows */
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "empty", "node-a");
    finish_ok(open_ok(&o), "complete");
    json_t *m = load_json("empty/manifest.json");
    assert_true(json_is_false(json_object_get(m, "publication_valid")));
    assert_int_equal(json_array_size(json_object_get(m, "reason_codes")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "reason_codes"), 0)),
                        "samples_empty");
    json_decref(m);

    /* the clock went back */
    o = two_gpus(dir, sizeof dir, "back", "node-a");
    struct srt_power *p = open_ok(&o);
    srt_power_scrape_begin(p, 100);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    end_ok(p);
    srt_power_scrape_begin(p, 99.5);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");
    m = load_json("back/manifest.json");
    assert_true(json_is_false(json_object_get(m, "publication_valid")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "reason_codes"), 0)),
                        "timestamp_non_monotonic");
    json_decref(m);

    /* rows, but "incomplete" */
    o = two_gpus(dir, sizeof dir, "inc", "node-a");
    p = open_ok(&o);
    srt_power_scrape_begin(p, 100);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    end_ok(p);
    finish_ok(p, "incomplete");
    m = load_json("inc/manifest.json");
    assert_string_equal(str(m, "status"), "incomplete");
    assert_true(json_is_false(json_object_get(m, "publication_valid")));
    assert_empty_array(m, "reason_codes");
    json_decref(m);

    /* a status outside srt-slurm's words is written "failed" */
    o = two_gpus(dir, sizeof dir, "bad", "node-a");
    assert_int_equal(srt_power_finish(open_ok(&o), "done", &e), -EINVAL);
    assert_non_null(strstr(e.msg, "done"));
    m = load_json("bad/manifest.json");
    assert_string_equal(str(m, "status"), "failed");
    json_decref(m);

    assert_int_equal(srt_power_finish(NULL, "complete", &e), 0);
}

/* ---- errors ---- */

/* Every failure at open names the path it failed on. */
static void test_open_errors_name_the_path(void **state)
{
    (void)state;
    char dir[512], want[600];
    struct carma_err e = {0};

    /* a directory below a regular file: ENOTDIR, even for root */
    tu_put("file", "x");
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "file/power", "node-a");
    assert_null(srt_power_open(&o, &e));
    assert_int_equal(e.code, -ENOTDIR);
    snprintf(want, sizeof want, "cannot create %s: %s", dir, strerror(ENOTDIR));
    assert_string_equal(e.msg, want);

    /* the directory is a regular file */
    o = two_gpus(dir, sizeof dir, "file", "node-a");
    assert_null(srt_power_open(&o, &e));
    assert_int_equal(e.code, -ENOTDIR);
    assert_non_null(strstr(e.msg, dir));

    /* samples.csv cannot be created */
    tu_mkdirs("d1/samples.csv/");
    o = two_gpus(dir, sizeof dir, "d1", "node-a");
    assert_null(srt_power_open(&o, &e));
    assert_int_equal(e.code, -EISDIR);
    snprintf(want, sizeof want, "cannot create %s/samples.csv: %s", dir, strerror(EISDIR));
    assert_string_equal(e.msg, want);

    /* manifest.json's temporary file: a new name, created with O_EXCL, so a link planted at a
     * fixed temporary name (as an earlier writer used) is never written through */
    char victim[512], planted[512];
    tu_mkdirs("d2/");
    tu_put("victim", "untouched\n");
    in_dir(victim, sizeof victim, "victim");
    assert_int_equal(symlink(victim, in_dir(planted, sizeof planted, "d2/.manifest.json.tmp")), 0);
    o = two_gpus(dir, sizeof dir, "d2", "node-a");
    struct srt_power *p2 = srt_power_open(&o, &e);
    assert_non_null(p2);
    assert_int_equal(srt_power_finish(p2, "complete", &e), 0);
    assert_string_equal(slurp("victim"), "untouched\n");
    struct stat lst;
    assert_int_equal(lstat(planted, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode)); /* left as it was, not renamed over manifest.json */
    assert_int_equal(lstat(in_dir(planted, sizeof planted, "d2/manifest.json"), &lst), 0);
    assert_true(S_ISREG(lst.st_mode));
    /* every temporary name taken: the error names manifest.json */
    uint64_t (*random_bits)(void) = file_tmp_rand;
    file_tmp_rand = one_rand;
    char taken[600];
    tu_mkdirs("d4/");
    snprintf(taken, sizeof taken, "d4/manifest.json.tmp.%d.%016llx", (int)getpid(),
             (unsigned long long)one_rand());
    tu_put(taken, "");
    o = two_gpus(dir, sizeof dir, "d4", "node-a");
    assert_null(srt_power_open(&o, &e));
    file_tmp_rand = random_bits;
    assert_int_equal(e.code, -EEXIST);
    snprintf(want, sizeof want, "cannot write %s/manifest.json: %s", dir, strerror(EEXIST));
    assert_string_equal(e.msg, want);

    /* bad options */
    static const unsigned dup[] = {3, 3};
    o = two_gpus(dir, sizeof dir, "d3", "node-a");
    o.gpu_index = dup;
    assert_null(srt_power_open(&o, &e));
    assert_int_equal(e.code, -EINVAL);
    static const struct srt_power_assignment stray = {.gpu_index = 9, .worker_process = "w9"};
    o = two_gpus(dir, sizeof dir, "d3", "node-a");
    o.nassign = 1;
    o.assign = &stray;
    assert_null(srt_power_open(&o, &e));
    assert_int_equal(e.code, -EINVAL);
    assert_non_null(strstr(e.msg, "w9"));
}

/* A write that fails (here: past the file size limit, as a full disk would) keeps the scrapes
 * before it, leaves no part of its own, is reported naming the file, does not advance
 * scrape_seq, and is listed in the final manifest. */
static void test_write_error(void **state)
{
    (void)state;
    char dir[512], csv[600];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "full", "node-a");
    snprintf(csv, sizeof csv, "%s/samples.csv", dir);
    struct srt_power *p = open_ok(&o);
    srt_power_scrape_begin(p, 10);
    srt_power_row(p, 0, NULL, 100, NAN, NAN);
    srt_power_row(p, 1, NULL, 200, NAN, NAN);
    end_ok(p);
    const char *good = HEADER "2,10.000000,0,node-a,0,GPU-aaaa,100.0,,\r\n"
                              "2,10.000000,0,node-a,1,GPU-bbbb,200.0,,\r\n";
    assert_string_equal(slurp("full/samples.csv"), good);

    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = strlen(good) + 30; /* the next scrape is cut short after 30 bytes */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct carma_err e = {0};
    srt_power_scrape_begin(p, 11);
    srt_power_row(p, 0, NULL, 101, NAN, NAN);
    srt_power_row(p, 1, NULL, 201, NAN, NAN);
    int r = srt_power_scrape_end(p, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(r, -EFBIG);
    assert_int_equal(e.code, -EFBIG);
    char want[800];
    snprintf(want, sizeof want, "cannot write %s: %s", csv, strerror(EFBIG));
    assert_memory_equal(e.msg, want, strlen(want));
    assert_string_equal(slurp("full/samples.csv"), good);

    srt_power_scrape_begin(p, 12);
    srt_power_row(p, 0, NULL, 102, NAN, NAN);
    end_ok(p);
    finish_ok(p, "incomplete");
    assert_int_equal(check_strict("full/samples.csv"), 3);
    char all[1024];
    snprintf(all, sizeof all, "%s%s", good, "2,12.000000,1,node-a,0,GPU-aaaa,102.0,,\r\n");
    assert_string_equal(slurp("full/samples.csv"), all);

    json_t *m = load_json("full/manifest.json");
    assert_string_equal(str(m, "status"), "incomplete");
    assert_true(json_is_false(json_object_get(m, "publication_valid")));
    assert_int_equal(num(m, "scrape_count"), 2);
    assert_int_equal(num(m, "sample_row_count"), 3);
    json_t *rc = json_object_get(m, "reason_codes");
    assert_int_equal(json_array_size(rc), 1);
    assert_string_equal(json_string_value(json_array_get(rc, 0)), "samples_write_failed");
    json_t *ae = json_object_get(m, "artifact_errors");
    assert_int_equal(json_array_size(ae), 1);
    ASSERT_KEYS(json_array_get(ae, 0), "path", "reason_codes");
    assert_string_equal(str(json_array_get(ae, 0), "path"), "samples.csv");
#ifdef CARMA_HAVE_LIBCRYPTO
    char sha[65];
    sha256sum("full/samples.csv", sha);
    assert_string_equal(str(m, "samples_sha256"), sha);
#endif
    json_decref(m);
}

/* scrape_end without scrape_begin is refused; rows outside a scrape are ignored. */
static void test_misuse(void **state)
{
    (void)state;
    char dir[512];
    struct carma_err e = {0};
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "mis", "node-a");
    struct srt_power *p = open_ok(&o);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    assert_int_equal(srt_power_scrape_end(p, &e), -EINVAL);
    srt_power_scrape_begin(p, NAN);
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    assert_int_equal(srt_power_scrape_end(p, &e), -EINVAL);
    srt_power_scrape_begin(p, 9.5e9); /* past int64 nanoseconds (2262): still written */
    srt_power_row(p, 0, NULL, 1, NAN, NAN);
    end_ok(p);
    finish_ok(p, "complete");
    assert_string_equal(slurp("mis/samples.csv"),
                        HEADER "2,9500000000.000000,0,node-a,0,GPU-aaaa,1.0,,\r\n");
}

/* ---- the steady state ---- */

/* Scrapes after the first allocate nothing (nor does the first, for GPUs known at open). */
static void test_no_allocation(void **state)
{
    (void)state;
#if !ALLOC_COUNT_AVAILABLE
    skip();
#else
    char dir[512];
    struct srt_power_opts o = two_gpus(dir, sizeof dir, "na", "node-a");
    struct srt_power *p = open_ok(&o);
    struct carma_err e = {0};

    alloc_count_start(); /* the hook counts: */
    free(strdup("x"));
    assert_int_equal(alloc_count_stop(), 1);

    int failures = 0;
    alloc_count_start();
    for (int i = 0; i < 2000; i++) {
        srt_power_scrape_begin(p, 1785168098.0 + i * 0.1);
        srt_power_row(p, 0, "GPU-aaaa", 300 + i % 7, i % 101, NAN);
        srt_power_row(p, 1, NULL, 250.125, NAN, 0.5);
        srt_power_row(p, 1, NULL, NAN, NAN, NAN);
        failures += srt_power_scrape_end(p, &e) != 0;
        srt_power_scrape_begin(p, 1785168098.05 + i * 0.1);
        failures += srt_power_scrape_end(p, &e) != 0;
    }
    int allocations = alloc_count_stop();
    assert_int_equal(failures, 0);
    assert_int_equal(allocations, 0);
    finish_ok(p, "complete");
    assert_int_equal(check_strict("na/samples.csv"), 4000);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows_golden, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_blank_and_skipped, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_quoting, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_manifest_running_at_open, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_manifest_final, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_defaults_from_environment, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_publication_invalid, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_open_errors_name_the_path, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_write_error, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_misuse, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_allocation, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

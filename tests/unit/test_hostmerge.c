/*
 * Unit tests for srt/hostmerge: the merge of srt-slurm's host collector files (a file whose
 * header is not the current one skipped, a row of the wrong width skipped, the sort by
 * (timestamp as a number, hostname, sensor), the rows kept byte for byte, QUOTE_MINIMAL), the
 * status and reason codes (a missing node, an error.json, a failed collector, an unfinished one,
 * empty), publication_valid both ways, the start-up gate's manifest and its verdict carried
 * into the merge, and node name lists, hand-worked.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "srt/hostmerge.h"

#define V3                                                                                         \
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"      \
    "total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n"
#define V4                                                                                         \
    "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,"      \
    "cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,"            \
    "cpu_util_sys,cpu_util_irq\r\n"

static size_t nwarn;
static char last_warn[1024];

static void warn(void *cls, const char *msg)
{
    (void)cls;
    nwarn++;
    snprintf(last_warn, sizeof last_warn, "%s", msg);
}

static void put_ready(const char *host)
{
    char rel[128];
    snprintf(rel, sizeof rel, "ready/%s.ready.json", host);
    tu_put(rel, "{}\n");
}

static void put_meta(const char *host, const char *status)
{
    char rel[128], text[256];
    snprintf(rel, sizeof rel, "nodes/%s.metadata.json", host);
    snprintf(text, sizeof text,
             "{\"hostname\": \"%s\", \"status\": \"%s\", \"ended_at_unix\": 9.5, "
             "\"requested_source\": \"acpi\", \"sample_interval_seconds\": 0.25}\n",
             host, status);
    tu_put(rel, text);
}

static const char *codes(const json_t *m, char *buf, size_t cap)
{
    size_t i, len = 0;
    json_t *x;
    buf[0] = '\0';
    json_array_foreach(json_object_get(m, "reason_codes"), i, x) len +=
        (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", json_string_value(x));
    return buf;
}

static struct hostmerge_opts opts(const struct hostmerge_names *expected, bool required)
{
    return (struct hostmerge_opts){.expected = expected,
                                   .required = required,
                                   .producer = "carma test",
                                   .now = 1000.5,
                                   .warn = warn};
}

static void test_sort_and_bytes(void **state)
{
    (void)state;
    /* b's file name sorts after a's, but its rows come first in time; at one time the
     * hostname, then the sensor orders; "10.0" sorts after "9.5" as numbers, not as text;
     * a quoted field keeps its quotes (it holds a comma); an unneeded quote goes */
    tu_put("nodes/a.csv", V3 "3,10.0,t,a,acpi,CPU0:z,0,1.0,2.0,,,,,\r\n"
                             "3,9.5,t,a,acpi,CPU0:y,0,1.0,2.0,,,,,\r\n"
                             "3,9.5,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n");
    tu_put("nodes/b.csv", V3 "3,9.5,\"t,1\",b,acpi,CPU0:a,0,3.0,3.0,,,,,\r\n"
                             "3,1e0,\"t\",b,acpi,CPU0:a,0,3.0,3.0,,,,,\n");
    put_ready("a");
    put_ready("b");
    put_meta("a", "complete");
    put_meta("b", "complete");
    struct hostmerge_opts o = opts(NULL, true);
    struct hostmerge_result r;
    struct carma_err e = {0};
    nwarn = 0;
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_int_equal(nwarn, 0);
    assert_int_equal(r.rows, 5);
    assert_true(r.publication_valid);
    char path[TU_DIR_MAX + 32];
    static char text[8192];
    snprintf(path, sizeof path, "%s/samples.csv", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_string_equal(text, V3 "3,1e0,t,b,acpi,CPU0:a,0,3.0,3.0,,,,,\r\n"
                                 "3,9.5,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n"
                                 "3,9.5,t,a,acpi,CPU0:y,0,1.0,2.0,,,,,\r\n"
                                 "3,9.5,\"t,1\",b,acpi,CPU0:a,0,3.0,3.0,,,,,\r\n"
                                 "3,10.0,t,a,acpi,CPU0:z,0,1.0,2.0,,,,,\r\n");
    assert_string_equal(json_string_value(json_object_get(r.manifest, "status")), "complete");
    assert_string_equal(json_string_value(json_object_get(r.manifest, "requested_source")), "acpi");
    tu_assert_near(json_real_value(json_object_get(r.manifest, "sample_interval_seconds")), 0.25,
                   0);
    /* the manifest as the host collector writes it: sort_keys, indent 2, a final newline */
    snprintf(path, sizeof path, "%s/manifest.json", tu_dir);
    tu_slurp(path, text, sizeof text);
    assert_non_null(strstr(text, "{\n  \"expected_nodes\": [\n    \"a\",\n    \"b\"\n  ],\n"));
    assert_non_null(strstr(text, "\n  \"updated_at_unix\": 1000.5\n}\n"));
    assert_non_null(strstr(text, "\"publication_valid\": true,\n"));
    json_decref(r.manifest);
}

static void test_malformed(void **state)
{
    (void)state;
    tu_put("nodes/a.csv", V3 "3,1.0,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n"
                             "3,2.0,t,a,acpi,CPU0:x,0,1.0,2.0,,,,\r\n" /* 13 fields */
                             "3,nope,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n"
                             "3,3.0,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n"
                             "3,4.0,t,a,ac");                                /* torn */
    tu_put("nodes/b.csv", V4 "4,1.0,t,b,acpi,CPU0:x,0,1.0,,,,1.0,,,,,\r\n"); /* v4: not current */
    put_ready("a");
    put_ready("b");
    put_meta("a", "complete");
    put_meta("b", "complete");
    struct hostmerge_opts o = opts(NULL, false);
    struct hostmerge_result r;
    struct carma_err e = {0};
    char buf[512];
    nwarn = 0;
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_int_equal(r.rows, 2);
    assert_int_equal(r.rows_skipped, 3);
    assert_int_equal(r.files_skipped, 1);
    assert_int_equal(r.files_read, 1);
    assert_int_equal(nwarn, 4);
    assert_false(r.publication_valid);
    assert_string_equal(codes(r.manifest, buf, sizeof buf),
                        "cpu_samples_malformed,cpu_node_samples_missing");
    assert_string_equal(json_string_value(json_object_get(r.manifest, "status")), "incomplete");
    json_decref(r.manifest);

    /* schema 4: b's file is the current one, a's is not */
    o.schema = 4;
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_int_equal(r.rows, 1);
    assert_int_equal(r.files_skipped, 1);
    assert_non_null(strstr(last_warn, "a.csv:1: not the current header"));
    json_decref(r.manifest);
    o.schema = 5;
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), -EINVAL);
}

static void test_reasons(void **state)
{
    (void)state;
    struct hostmerge_names exp = {0};
    struct carma_err e = {0};
    assert_int_equal(hostmerge_names_parse(&exp, "c,a,b,a", &e), 0);
    assert_int_equal(exp.n, 3);
    assert_string_equal(exp.v[0], "a");
    assert_string_equal(exp.v[2], "c");
    tu_put("nodes/a.csv", V3 "3,1.0,t,a,acpi,CPU0:x,0,1.0,2.0,,,,,\r\n");
    put_ready("a");
    put_meta("a", "complete");
    /* b: no source (error.json, metadata failed); c: nothing at all */
    tu_put("ready/b.error.json", "{\"hostname\": \"b\", \"error\": \"no source\"}\n");
    put_meta("b", "failed");
    struct hostmerge_opts o = opts(&exp, true);
    struct hostmerge_result r;
    char buf[512];
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_false(r.publication_valid);
    assert_string_equal(codes(r.manifest, buf, sizeof buf),
                        "cpu_power_source_unavailable,cpu_node_samples_missing,"
                        "cpu_collector_failed");
    json_t *fp = json_object_get(r.manifest, "failed_processes");
    assert_int_equal(json_array_size(fp), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(fp, 0), "hostname")), "b");
    json_t *miss = json_object_get(r.manifest, "missing_nodes");
    assert_int_equal(json_array_size(miss), 2);
    json_decref(r.manifest);

    /* the gate ran and said running: no start-up code now, even though b has error.json */
    struct hostmerge_names ab = {0};
    assert_int_equal(hostmerge_names_parse(&ab, "a", &e), 0);
    enum hostmerge_ready st[1];
    assert_int_equal(hostmerge_ready_poll(tu_dir, &ab, st, &e), 0);
    assert_int_equal(st[0], HOSTMERGE_READY);
    assert_int_equal(hostmerge_gate_write(tu_dir, &o, &ab, st, true, &e), 0);
    o.expected = NULL;                /* the gate's: a */
    tu_put("ready/b.error.json", ""); /* still there */
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_string_equal(codes(r.manifest, buf, sizeof buf), "cpu_collector_failed");
    json_decref(r.manifest);

    /* an unfinished collector (no ended_at_unix) and --interrupted: interrupted */
    tu_put("nodes/b.metadata.json", "{\"hostname\": \"b\"}\n");
    assert_int_equal(unlink(strcat(strcpy(buf, tu_dir), "/ready/b.error.json")), 0);
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_string_equal(codes(r.manifest, buf, sizeof buf), "interrupted");
    assert_false(r.publication_valid);
    json_decref(r.manifest);
    tu_put("nodes/b.metadata.json", "{\"hostname\": \"b\", \"status\": \"complete\", "
                                    "\"ended_at_unix\": 3.0}\n");
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_true(r.publication_valid);
    json_decref(r.manifest);
    o.interrupted = true;
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_string_equal(codes(r.manifest, buf, sizeof buf), "interrupted");
    json_decref(r.manifest);
    hostmerge_names_free(&exp);
    hostmerge_names_free(&ab);
}

static void test_gate(void **state)
{
    (void)state;
    struct hostmerge_names n = {0};
    struct carma_err e = {0};
    assert_int_equal(hostmerge_names_parse(&n, "x,y", &e), 0);
    assert_int_equal(hostmerge_names_parse(&n, "x,,y", &e), -EINVAL);
    assert_int_equal(hostmerge_names_parse(&n, "../x", &e), -EINVAL);
    enum hostmerge_ready st[2];
    struct hostmerge_opts o = opts(NULL, false);
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/manifest.json", tu_dir);
    put_ready("x");
    assert_int_equal(hostmerge_ready_poll(tu_dir, &n, st, &e), 0);
    assert_int_equal(st[0], HOSTMERGE_READY);
    assert_int_equal(st[1], HOSTMERGE_WAITING);
    assert_int_equal(hostmerge_gate_write(tu_dir, &o, &n, st, false, &e), 0);
    json_t *m = json_load_file(path, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "starting");
    json_decref(m);
    assert_int_equal(hostmerge_gate_write(tu_dir, &o, &n, st, true, &e), 0);
    m = json_load_file(path, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "failed");
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "reason_codes"), 0)),
                        "cpu_power_startup_timeout");
    json_decref(m);
    tu_put("ready/y.error.json", "{}\n");
    assert_int_equal(hostmerge_ready_poll(tu_dir, &n, st, &e), 0);
    assert_int_equal(st[1], HOSTMERGE_ERROR);
    assert_int_equal(hostmerge_gate_write(tu_dir, &o, &n, st, true, &e), 0);
    m = json_load_file(path, 0, NULL);
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "reason_codes"), 0)),
                        "cpu_power_source_unavailable");
    json_decref(m);
    /* the merge carries the failed start on; no rows at all: empty too */
    struct hostmerge_result r;
    char buf[512];
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_string_equal(codes(r.manifest, buf, sizeof buf),
                        "cpu_power_source_unavailable,cpu_node_samples_missing,cpu_samples_empty,"
                        "cpu_collector_failed");
    assert_string_equal(json_string_value(json_object_get(r.manifest, "status")), "incomplete");
    json_decref(r.manifest);
    /* a merge again, after y's markers changed: the gate's verdict stays (startup_status) */
    tu_put("ready/y.ready.json", "{}\n");
    snprintf(buf, sizeof buf, "%s/ready/y.error.json", tu_dir);
    assert_int_equal(unlink(buf), 0);
    assert_int_equal(hostmerge_run(tu_dir, &o, &r, &e), 0);
    assert_string_equal(codes(r.manifest, buf, sizeof buf),
                        "cpu_power_source_unavailable,cpu_node_samples_missing,cpu_samples_empty");
    assert_string_equal(json_string_value(json_object_get(r.manifest, "startup_status")), "failed");
    json_decref(r.manifest);
    /* every node ready: running */
    assert_int_equal(hostmerge_ready_poll(tu_dir, &n, st, &e), 0);
    assert_int_equal(hostmerge_gate_write(tu_dir, &o, &n, st, true, &e), 0);
    m = json_load_file(path, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "running");
    assert_int_equal(json_array_size(json_object_get(m, "reason_codes")), 0);
    json_decref(m);
    hostmerge_names_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sort_and_bytes, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_malformed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_reasons, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_gate, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

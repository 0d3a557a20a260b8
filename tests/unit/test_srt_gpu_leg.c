/*
 * Unit tests for srt/gpu_leg: what srt/power and srt/gpu write alike of srt-slurm's GPU power
 * leg. Hand-worked bytes: a row's prefix (µs as seconds with 6 decimals), rows with a quoted
 * host, blank UUID and blank riders out of range, numbers with at least one decimal; a device's
 * UUIDs and first/last sample; the manifest's running and final forms (reason codes, artifact
 * errors, publication_valid) and the expected and observed devices built with the helpers.
 * The order of the manifest's keys in its bytes is test_srt_power's check (one manifest writer
 * serves both legs).
 */
#include "testutil.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srt/gpu_leg.h"

static void test_prefix(void **state)
{
    (void)state;
    char s[SRT_GPU_LEG_PREFIX_MAX];
    size_t n = srt_gpu_leg_prefix(s, 1796000000123456LL, 7);
    assert_int_equal(n, strlen("2,1796000000.123456,7,"));
    assert_memory_equal(s, "2,1796000000.123456,7,", n);
    n = srt_gpu_leg_prefix(s, 5, 0);
    assert_int_equal(n, strlen("2,0.000005,0,"));
    assert_memory_equal(s, "2,0.000005,0,", n);
    n = srt_gpu_leg_prefix(s, 1000000, 18446744073709551615ULL);
    assert_int_equal(n, strlen("2,1.000000,18446744073709551615,"));
    assert_memory_equal(s, "2,1.000000,18446744073709551615,", n);
}

static void test_row(void **state)
{
    (void)state;
    struct csv_buf host = {0}, b = {0};
    assert_int_equal(csv_buf_field(&host, "node,1", 1), 0);
    char p[SRT_GPU_LEG_PREFIX_MAX];
    size_t pn = srt_gpu_leg_prefix(p, 2500000, 3);
    assert_int_equal(srt_gpu_leg_row(&b, p, pn, &host, 3, "GPU-a", 300, 150, 0.5), 0);
    assert_int_equal(srt_gpu_leg_row(&b, p, pn, &host, 0, NULL, 12.5, NAN, NAN), 0);
    assert_int_equal(srt_gpu_leg_row(&b, p, pn, &host, 1, "G\"1", 0, 100.0 / 3, 1), 0);
    assert_int_equal(srt_gpu_leg_row(&b, p, pn, &host, 2, "x", 1e-7, -1, -0.0), 0);
    assert_int_equal(srt_gpu_leg_row(&b, p, pn, &host, 9, "y", 8999999999999.5, 100, 1.0000001), 0);
    assert_string_equal(b.data, "2,2.500000,3,\"node,1\",3,GPU-a,300.0,,0.5\r\n"
                                "2,2.500000,3,\"node,1\",0,,12.5,,\r\n"
                                "2,2.500000,3,\"node,1\",1,\"G\"\"1\",0.0,33.333333,1.0\r\n"
                                "2,2.500000,3,\"node,1\",2,x,0.0,,0.0\r\n"
                                "2,2.500000,3,\"node,1\",9,y,8999999999999.5,100.0,\r\n");
    assert_int_equal(b.len, strlen(b.data));
    csv_buf_free(&host);
    csv_buf_free(&b);
}

static void test_dev(void **state)
{
    (void)state;
    struct srt_gpu_leg_dev d = {.gpu_index = 4};
    assert_int_equal(srt_gpu_leg_dev_uuid(&d, "A"), 0);
    assert_int_equal(srt_gpu_leg_dev_uuid(&d, "B"), 1);
    assert_int_equal(srt_gpu_leg_dev_uuid(&d, "A"), 0);
    assert_int_equal(d.nuuid, 2);
    assert_false(d.uuid_written[0] || d.uuid_written[1]);
    srt_gpu_leg_dev_written(&d, 20, 1);
    srt_gpu_leg_dev_written(&d, 10, -1);
    srt_gpu_leg_dev_written(&d, 15, -1);
    assert_int_equal(d.rows, 3);
    assert_int_equal(d.first_us, 10);
    assert_int_equal(d.last_us, 20);
    assert_false(d.uuid_written[0]);
    assert_true(d.uuid_written[1]);
    char name[8];
    for (int i = 2; i < SRT_GPU_LEG_UUIDS; i++) {
        snprintf(name, sizeof name, "U%d", i);
        assert_int_equal(srt_gpu_leg_dev_uuid(&d, name), i);
    }
    assert_int_equal(srt_gpu_leg_dev_uuid(&d, "one too many"), -1);
    srt_gpu_leg_dev_free(&d);
    assert_int_equal(d.nuuid, 0);
}

static json_t *load(const char *path, char *text, size_t cap)
{
    tu_slurp(path, text, cap);
    json_error_t je;
    json_t *m = json_loads(text, 0, &je);
    assert_non_null(m);
    return m;
}

static void test_manifest(void **state)
{
    (void)state;
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/manifest.json", tu_dir);
    static char text[1 << 14];
    struct carma_err e = {0};

    struct srt_gpu_leg_dev d = {.gpu_index = 1};
    int u = srt_gpu_leg_dev_uuid(&d, "GPU-1");
    assert_int_equal(srt_gpu_leg_dev_uuid(&d, "GPU-unwritten"), 1);
    srt_gpu_leg_dev_written(&d, 1500000, u);
    srt_gpu_leg_dev_written(&d, 2250000, u);

    bool ok = true;
    json_t *exp = json_array();
    json_t *as = srt_gpu_leg_expected(exp, "h1", 1, &ok);
    srt_gpu_leg_assignment(as, "agg", 2, NULL, &ok);
    srt_gpu_leg_assignment(as, "decode", 3, "w3", &ok);
    json_t *obs = json_array();
    srt_gpu_leg_observed(obs, "h1", &d, &ok);
    assert_true(ok);
    struct srt_gpu_leg_manifest m = {
        .producer = "carma",
        .source_metric = "sm",
        .power_scope = NULL,
        .util_metric = "um",
        .timestamp_source = "ts",
        .job_id = "9",
        .interval_s = 0.5,
        .timeout_s = NAN,
        .started_us = 1000000,
        .scrapes = 2,
        .rows = 2,
        .write_failed = true,
        .expected = exp,
        .observed = obs,
    };
    /* running: no stop time, no reason codes nor artifact errors yet */
    assert_int_equal(srt_gpu_leg_manifest_write(&m, "running", false, 0, NULL, path, &e), 0);
    assert_null(m.expected);
    json_t *j = load(path, text, sizeof text);
    /* srt-slurm's 30 keys (their order in the bytes is test_srt_power's check_manifest_text) */
    assert_int_equal(json_object_size(j), 30);
    assert_string_equal(json_string_value(json_object_get(j, "producer")), "carma");
    assert_true(json_is_null(json_object_get(j, "power_scope")));
    assert_true(json_is_null(json_object_get(j, "request_timeout_seconds")));
    assert_true(json_is_null(json_object_get(j, "stopped_at_unix")));
    assert_true(json_is_false(json_object_get(j, "publication_valid")));
    assert_int_equal(json_array_size(json_object_get(j, "artifact_errors")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "reason_codes")), 0);
    json_t *um = json_array_get(json_object_get(j, "utilization_metrics"), 0);
    assert_string_equal(json_string_value(json_object_get(um, "source_metric")), "um");
    json_t *ed = json_array_get(json_object_get(j, "expected_devices"), 0);
    assert_string_equal(json_string_value(json_object_get(ed, "hostname")), "h1");
    json_t *a1 = json_array_get(json_object_get(ed, "assignments"), 1);
    assert_string_equal(json_string_value(json_object_get(a1, "worker_role")), "decode");
    assert_int_equal(json_integer_value(json_object_get(a1, "worker_index")), 3);
    assert_string_equal(json_string_value(json_object_get(a1, "worker_process")), "w3");
    json_t *a0 = json_array_get(json_object_get(ed, "assignments"), 0);
    assert_true(json_is_null(json_object_get(a0, "worker_process")));
    json_t *od = json_array_get(json_object_get(j, "observed_devices"), 0);
    json_t *uu = json_object_get(od, "gpu_uuids");
    assert_int_equal(json_array_size(uu), 1); /* the unwritten UUID is left out */
    assert_string_equal(json_string_value(json_array_get(uu, 0)), "GPU-1");
    tu_assert_near(json_real_value(json_object_get(od, "first_sample_time_unix")), 1.5, 0);
    tu_assert_near(json_real_value(json_object_get(od, "last_sample_time_unix")), 2.25, 0);
    json_decref(j);

    /* final, after a failed write: not valid, samples_write_failed twice over */
    m.expected = json_array();
    m.observed = json_array();
    assert_int_equal(srt_gpu_leg_manifest_write(&m, "complete", true, 4000000, "ab12", path, &e),
                     0);
    j = load(path, text, sizeof text);
    tu_assert_near(json_real_value(json_object_get(j, "stopped_at_unix")), 4, 0);
    assert_string_equal(json_string_value(json_object_get(j, "samples_sha256")), "ab12");
    assert_true(json_is_false(json_object_get(j, "publication_valid")));
    json_t *rc = json_object_get(j, "reason_codes");
    assert_int_equal(json_array_size(rc), 1);
    assert_string_equal(json_string_value(json_array_get(rc, 0)), "samples_write_failed");
    json_t *ae = json_array_get(json_object_get(j, "artifact_errors"), 0);
    assert_string_equal(json_string_value(json_object_get(ae, "path")), "samples.csv");
    json_decref(j);

    /* final, clean: valid; with no rows and out of order: not, both codes in order */
    m.write_failed = false;
    m.expected = json_array();
    m.observed = json_array();
    assert_int_equal(srt_gpu_leg_manifest_write(&m, "complete", true, 4000000, NULL, path, &e), 0);
    j = load(path, text, sizeof text);
    assert_true(json_is_true(json_object_get(j, "publication_valid")));
    assert_true(json_is_null(json_object_get(j, "samples_sha256")));
    json_decref(j);
    m.rows = 0;
    m.non_monotonic = true;
    m.expected = json_array();
    m.observed = json_array();
    assert_int_equal(srt_gpu_leg_manifest_write(&m, "complete", true, 4000000, NULL, path, &e), 0);
    j = load(path, text, sizeof text);
    assert_true(json_is_false(json_object_get(j, "publication_valid")));
    rc = json_object_get(j, "reason_codes");
    assert_int_equal(json_array_size(rc), 2);
    assert_string_equal(json_string_value(json_array_get(rc, 0)), "timestamp_non_monotonic");
    assert_string_equal(json_string_value(json_array_get(rc, 1)), "samples_empty");
    json_decref(j);

    /* a missing device array (out of memory) writes no manifest */
    m.expected = NULL;
    m.observed = json_array();
    assert_int_equal(srt_gpu_leg_manifest_write(&m, "complete", true, 0, NULL, path, &e), -ENOMEM);
    srt_gpu_leg_dev_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_row),
        cmocka_unit_test(test_dev),
        cmocka_unit_test_setup_teardown(test_manifest, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

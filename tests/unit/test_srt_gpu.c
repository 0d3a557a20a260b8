/*
 * Unit tests for srt/gpu: srt-slurm's GPU power leg of many hosts (carma collect --srt-gpu).
 * Hand-worked rows: the midpoint of a request's start and settle as the row time (shared by
 * the host's GPUs), the collector's cycle as scrape_seq shared by every host (a cycle without
 * rows leaves its number out), utilization riders blank when out of range, MIG readings and a
 * second reading of one GPU skipped, two targets of one node as one host, expected devices
 * from each host's first scrape with rows and observed devices from the rows written; the
 * readings of a dcgm-exporter body and of a carma exporter body; the steady state allocates
 * nothing.
 */
#include "testutil.h"

#include "alloccount.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/dcgm.h"
#include "collect/promparse.h"
#include "srt/gpu.h"

#define S  1000000000LL /* ns per s */
#define T0 (1796000000LL * S)

static char text[1 << 16];

static const char *slurp(const char *rel)
{
    char path[TU_DIR_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_slurp(path, text, sizeof text);
    return text;
}

static struct srt_gpu *open_writer(const char *const *nodes, size_t n)
{
    char dir[TU_DIR_MAX + 16];
    snprintf(dir, sizeof dir, "%s/power", tu_dir);
    struct srt_gpu_opts o = {
        .dir = dir,
        .nodes = nodes,
        .nnodes = n,
        .interval_s = 1,
        .timeout_s = 0.95,
        .producer_version = "9.9",
        .job_id = "77",
    };
    struct carma_err e = {0};
    struct srt_gpu *w = srt_gpu_open(&o, &e);
    assert_non_null(w);
    return w;
}

static struct srt_gpu_reading rd(unsigned gpu, const char *uuid, double w, double util, double sm)
{
    return (struct srt_gpu_reading){gpu, uuid, false, w, util, sm};
}

static json_t *manifest(void)
{
    json_error_t je;
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/power/manifest.json", tu_dir);
    json_t *m = json_load_file(path, 0, &je);
    assert_non_null(m);
    return m;
}

static void test_rows(void **state)
{
    (void)state;
    /* targets: n1's dcgm-exporter, n2's dcgm-exporter, n1's carma exporter (one host n1) */
    const char *nodes[] = {"n1", "n2", "n1"};
    struct srt_gpu *w = open_writer(nodes, 3);
    struct carma_err e = {0};

    /* cycle 4: n1's request 0.000..0.200 s -> 0.100; n2's 0.010..0.031 -> 0.0205 */
    srt_gpu_cycle_begin(w, 4);
    struct srt_gpu_reading a[] = {
        rd(0, "GPU-a0", 400, 50, NAN),
        rd(1, "GPU-a1", 350.5, 101, 0.25), /* util out of range: blank */
        {1, "GPU-a1", true, 60, 10, 0.1},  /* MIG: skipped */
        rd(1, "GPU-a1x", 999, 10, 0.1),    /* a second reading of GPU 1: skipped */
        rd(2, "GPU-a2", -1, 10, NAN),      /* negative power: skipped */
        rd(3, NULL, 120, -0.5, 1.5),       /* no UUID; both riders blank */
    };
    srt_gpu_host(w, 0, T0, T0 + 200000000, SRT_GPU_SOURCE_DCGM, a, 6);
    struct srt_gpu_reading b[] = {rd(0, "GPU-b0", 0, 0, 0)};
    srt_gpu_host(w, 1, T0 + 10000000, T0 + 31000000, SRT_GPU_SOURCE_DCGM, b, 1);
    /* n1's carma exporter: GPU 0 again (skipped), GPU 4 new, at n1's time of this cycle */
    struct srt_gpu_reading c[] = {rd(0, "GPU-a0", 1, 1, NAN), rd(4, "GPU-a4", 75.25, 100, NAN)};
    srt_gpu_host(w, 2, T0 + 300000000, T0 + 500000000, SRT_GPU_SOURCE_CARMA, c, 2);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);

    /* cycle 5: nobody answers: nothing written */
    srt_gpu_cycle_begin(w, 5);
    srt_gpu_host(w, 1, T0 + S, T0 + S, SRT_GPU_SOURCE_DCGM, NULL, 0);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);

    /* cycle 6: n2 only, a GPU it did not have at first (observed, not expected); 1.5..2.5 */
    srt_gpu_cycle_begin(w, 6);
    struct srt_gpu_reading dd[] = {rd(0, "GPU-b0", 10, 20, 0.5), rd(7, "GPU-b7", 1, NAN, NAN)};
    srt_gpu_host(w, 1, T0 + 3 * S / 2, T0 + 5 * S / 2, SRT_GPU_SOURCE_DCGM, dd, 2);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);
    assert_int_equal(srt_gpu_rows(w), 7);

    /* steady state: a cycle of GPUs already seen allocates nothing */
    alloc_count_start();
    srt_gpu_cycle_begin(w, 7);
    srt_gpu_host(w, 1, T0 + 3 * S, T0 + 3 * S + 2000, SRT_GPU_SOURCE_DCGM, dd, 2);
    int allocs = alloc_count_stop();
    assert_int_equal(allocs, 0);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);

    assert_int_equal(srt_gpu_finish(w, "complete", &e), 0);

    const char *s = slurp("power/samples.csv");
    assert_string_equal(
        s, "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
           "gpu_util_pct,sm_active\r\n"
           "2,1796000000.100000,4,n1,0,GPU-a0,400.0,50.0,\r\n"
           "2,1796000000.100000,4,n1,1,GPU-a1,350.5,,0.25\r\n"
           "2,1796000000.100000,4,n1,3,,120.0,,\r\n"
           "2,1796000000.020500,4,n2,0,GPU-b0,0.0,0.0,0.0\r\n"
           "2,1796000000.100000,4,n1,4,GPU-a4,75.25,100.0,\r\n"
           "2,1796000002.000000,6,n2,0,GPU-b0,10.0,20.0,0.5\r\n"
           "2,1796000002.000000,6,n2,7,GPU-b7,1.0,,\r\n"
           "2,1796000003.000001,7,n2,0,GPU-b0,10.0,20.0,0.5\r\n"
           "2,1796000003.000001,7,n2,7,GPU-b7,1.0,,\r\n");

    json_t *m = manifest();
    assert_string_equal(json_string_value(json_object_get(m, "status")), "complete");
    assert_true(json_is_true(json_object_get(m, "publication_valid")));
    assert_int_equal(json_integer_value(json_object_get(m, "scrape_count")), 3);
    assert_int_equal(json_integer_value(json_object_get(m, "sample_row_count")), 9);
    assert_string_equal(json_string_value(json_object_get(m, "source_metric")),
                        "DCGM_FI_DEV_POWER_USAGE+carma_power_watts");
    assert_string_equal(json_string_value(json_object_get(m, "job_id")), "77");
    assert_int_equal(strlen(json_string_value(json_object_get(m, "samples_sha256"))), 64);
    /* expected: n1's first scrape with rows (GPUs 0, 1, 3 of its dcgm-exporter: the first
     * target of n1 that gave rows in that cycle), n2's (GPU 0); sorted by host, index */
    json_t *ex = json_object_get(m, "expected_devices");
    assert_int_equal(json_array_size(ex), 4);
    static const char *const ehost[] = {"n1", "n1", "n1", "n2"};
    static const int eidx[] = {0, 1, 3, 0}, ework[] = {0, 0, 0, 1};
    for (size_t i = 0; i < 4; i++) {
        json_t *d = json_array_get(ex, i);
        assert_string_equal(json_string_value(json_object_get(d, "hostname")), ehost[i]);
        assert_int_equal(json_integer_value(json_object_get(d, "gpu_index")), eidx[i]);
        json_t *as = json_array_get(json_object_get(d, "assignments"), 0);
        assert_string_equal(json_string_value(json_object_get(as, "worker_role")), "agg");
        assert_int_equal(json_integer_value(json_object_get(as, "worker_index")), ework[i]);
    }
    /* observed: every (host, GPU) with a row: n1 0 1 3 4, n2 0 7 */
    json_t *ob = json_object_get(m, "observed_devices");
    assert_int_equal(json_array_size(ob), 6);
    static const char *const ohost[] = {"n1", "n1", "n1", "n1", "n2", "n2"};
    static const int oidx[] = {0, 1, 3, 4, 0, 7};
    static const double ofirst[] = {1796000000.1, 1796000000.1,    1796000000.1,
                                    1796000000.1, 1796000000.0205, 1796000002.0};
    static const double olast[] = {1796000000.1, 1796000000.1,      1796000000.1,
                                   1796000000.1, 1796000003.000001, 1796000003.000001};
    for (size_t i = 0; i < 6; i++) {
        json_t *d = json_array_get(ob, i);
        assert_string_equal(json_string_value(json_object_get(d, "hostname")), ohost[i]);
        assert_int_equal(json_integer_value(json_object_get(d, "gpu_index")), oidx[i]);
        tu_assert_near(json_real_value(json_object_get(d, "first_sample_time_unix")), ofirst[i],
                       1e-6);
        tu_assert_near(json_real_value(json_object_get(d, "last_sample_time_unix")), olast[i],
                       1e-6);
    }
    /* GPU 1 of n1: only the UUID of the row written */
    json_t *u = json_object_get(json_array_get(ob, 1), "gpu_uuids");
    assert_int_equal(json_array_size(u), 1);
    assert_string_equal(json_string_value(json_array_get(u, 0)), "GPU-a1");
    assert_int_equal(json_array_size(json_object_get(json_array_get(ob, 2), "gpu_uuids")), 0);
    json_decref(m);
}

static void test_status(void **state)
{
    (void)state;
    const char *nodes[] = {"n1"};
    struct srt_gpu *w = open_writer(nodes, 1);
    json_t *m = manifest();
    assert_string_equal(json_string_value(json_object_get(m, "status")), "running");
    assert_true(json_is_null(json_object_get(m, "stopped_at_unix")));
    json_decref(m);
    struct carma_err e = {0};
    /* a time going back for a device: the row is not written, the code is listed */
    srt_gpu_cycle_begin(w, 0);
    struct srt_gpu_reading a[] = {rd(0, "U", 1, NAN, NAN)};
    srt_gpu_host(w, 0, T0 + 2 * S, T0 + 2 * S, SRT_GPU_SOURCE_CARMA, a, 1);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);
    srt_gpu_cycle_begin(w, 1);
    srt_gpu_host(w, 0, T0 + S, T0 + S, SRT_GPU_SOURCE_CARMA, a, 1);
    assert_int_equal(srt_gpu_cycle_end(w, &e), 0);
    assert_int_equal(srt_gpu_rows(w), 1);
    assert_int_equal(srt_gpu_finish(w, "complete", &e), 0);
    m = manifest();
    assert_false(json_is_true(json_object_get(m, "publication_valid")));
    json_t *rc = json_object_get(m, "reason_codes");
    assert_int_equal(json_array_size(rc), 1);
    assert_string_equal(json_string_value(json_array_get(rc, 0)), "timestamp_non_monotonic");
    assert_string_equal(json_string_value(json_object_get(m, "source_metric")),
                        "carma_power_watts");
    json_decref(m);

    /* no rows: samples_empty; a bad status is written as failed */
    w = open_writer(nodes, 1);
    assert_int_equal(srt_gpu_finish(w, "interrupted", &e), -EINVAL);
    m = manifest();
    assert_string_equal(json_string_value(json_object_get(m, "status")), "failed");
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "reason_codes"), 0)),
                        "samples_empty");
    json_decref(m);
}

static void parse(const char *body, struct prom_doc *doc)
{
    struct carma_err e = {0};
    assert_int_equal(prom_parse(body, strlen(body), NULL, doc, &e), 0);
}

static void test_readings(void **state)
{
    (void)state;
    /* dcgm-exporter: lowercase labels, a MIG row, a blank utilization */
    static const char dcgm_body[] =
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",uuid=\"GPU-x\",hostname=\"pod\"} 250.500000\n"
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",uuid=\"GPU-y\",GPU_I_PROFILE=\"1g.10gb\","
        "GPU_I_ID=\"2\",hostname=\"pod\"} 99.000000\n"
        "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",uuid=\"GPU-x\",hostname=\"pod\"} 9223372036854775794\n"
        "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",uuid=\"GPU-x\",hostname=\"pod\"} 0.125000\n";
    struct prom_doc doc = {0};
    parse(dcgm_body, &doc);
    static struct dcgm_scrape d;
    dcgm_parse(&doc, &d);
    static struct srt_gpu_reading r[SRT_GPU_READINGS_MAX];
    assert_int_equal(srt_gpu_from_dcgm(&d, r), 2);
    assert_int_equal(r[0].gpu_index, 0);
    assert_string_equal(r[0].uuid, "GPU-x");
    assert_false(r[0].mig);
    tu_assert_near(r[0].power_w, 250.5, 0);
    assert_true(isnan(r[0].gpu_util_pct));
    tu_assert_near(r[0].sm_active, 0.125, 0);
    assert_true(r[1].mig);
    prom_doc_free(&doc);

    /* a carma exporter: the GPU channels (kind gpu, domain total), UUID and utilization from
     * carma_gpu_utilization_ratio; a utilization given twice is ambiguous */
    static const char carma_body[] =
        "carma_power_watts{node=\"n\",channel=\"rapl/package-0\",source=\"rapl\",kind=\"cpu\","
        "domain=\"total\",method=\"measured\",socket=\"0\"} 50\n"
        "carma_power_watts{node=\"n\",channel=\"nvml/gpu0\",source=\"nvml\",kind=\"gpu\","
        "domain=\"total\",method=\"measured\",socket=\"0\"} 349.5\n"
        "carma_power_watts{node=\"n\",channel=\"nvml/gpu1\",source=\"nvml\",kind=\"gpu\","
        "domain=\"total\",method=\"measured\",socket=\"1\"} 120.25\n"
        "carma_power_watts{node=\"n\",channel=\"x\",source=\"nvml\",kind=\"gpu\","
        "domain=\"component\",method=\"measured\",socket=\"1\"} 7\n"
        "carma_gpu_utilization_ratio{node=\"n\",gpu=\"0\",uuid=\"GPU-0000\"} 0.8\n"
        "carma_gpu_utilization_ratio{node=\"n\",gpu=\"1\",uuid=\"GPU-0001\"} 0.5\n"
        "carma_gpu_utilization_ratio{node=\"n\",gpu=\"1\",uuid=\"GPU-0001\"} 0.6\n";
    parse(carma_body, &doc);
    assert_int_equal(srt_gpu_from_carma(&doc, r, SRT_GPU_READINGS_MAX), 2);
    assert_int_equal(r[0].gpu_index, 0);
    assert_string_equal(r[0].uuid, "GPU-0000");
    tu_assert_near(r[0].power_w, 349.5, 0);
    tu_assert_near(r[0].gpu_util_pct, 80, 1e-12);
    assert_true(isnan(r[0].sm_active));
    assert_int_equal(r[1].gpu_index, 1);
    tu_assert_near(r[1].power_w, 120.25, 0);
    assert_true(isnan(r[1].gpu_util_pct));
    assert_int_equal(srt_gpu_from_carma(&doc, r, 1), 1); /* bounded */
    prom_doc_free(&doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_status, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_readings, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for sources/nvml against the fake NVML of tests/fakes (libfake-nvml.so, path in
 * $CARMA_FAKE_NVML; the tests are skipped when it is unset): channels and labels of two GPUs,
 * the energy counter checked against power x time, the gauge fallback without a counter, MIG,
 * processes and utilization, and every way the library can be unusable (absent, lacking a
 * call, nvmlInit failing, no GPU, a GPU lost mid-run).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fsroot.h"
#include "sources/nvml.h"
#include "sources/source.h"
#include "testutil.h"

struct probed {
    struct fsroot root;
    struct channel_set *set;
    struct source src;
    int r;
};

/* The fake library's path, or skips the test. */
static const char *fake_lib(void)
{
    const char *lib = getenv("CARMA_FAKE_NVML");
    if (!lib || !lib[0])
        skip();
    return lib;
}

/* Probes nvml with library lib and the scenario file tests/fakes/nvml/<scenario>.scenario. */
static struct probed *probe_with(const char *lib, const char *scenario)
{
    char path[512];
    char rel[128];
    snprintf(rel, sizeof rel, "../fakes/nvml/%s.scenario", scenario);
    tu_fixture_path(path, sizeof path, rel);
    setenv("CARMA_FAKE_NVML_SCENARIO", path, 1);
    setenv("CARMA_NVML_LIBRARY", lib, 1);
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    p->r = tu_probe(&p->src, &nvml_source_ops, &p->root, "/", p->set);
    if (p->r > 0)
        p->src.count = p->set->n - p->src.first;
    return p;
}

static void probed_free(struct probed *p)
{
    tu_unprobe(&p->src, &p->root);
    free(p->set);
    free(p);
    unsetenv("CARMA_NVML_LIBRARY");
    unsetenv("CARMA_FAKE_NVML_SCENARIO");
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_two_gpus(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "two");
    assert_int_equal(p->r, 2);
    assert_int_equal(p->set->n, 2);
    for (int i = 0; i < 2; i++) {
        const struct channel *c = &p->set->ch[i];
        char name[32];
        snprintf(name, sizeof name, "nvml/gpu%d", i);
        assert_string_equal(c->name, name);
        assert_string_equal(c->source, "nvml");
        assert_int_equal(c->kind, KIND_GPU);
        assert_int_equal(c->domain, DOMAIN_TOTAL);
        assert_int_equal(c->method, METHOD_MEASURED);
        assert_int_equal(c->form, FORM_COUNTER);
        assert_int_equal(c->socket, i);
        assert_int_equal(c->parent, -1);
        assert_true(c->counter_range == 0);
        tu_assert_near(c->counter_unit_j, 1e-3, 0);
    }
    assert_string_equal(p->set->ch[0].label, "NVIDIA H200 GPU-0000");
    assert_string_equal(p->set->ch[1].label, "NVIDIA H200 GPU-0001");
    assert_string_equal(p->src.note, "");

    struct reading a[2], b[2];
    nvml_source_ops.read(&p->src, a);
    double t0 = mono_s();
    tu_pause_ms(300);
    nvml_source_ops.read(&p->src, b);
    double t1 = mono_s();
    const double watts[2] = {350.0, 120.5};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(a[i].valid, READING_ENERGY | READING_POWER);
        assert_int_equal(b[i].valid, READING_ENERGY | READING_POWER);
        assert_int_equal(b[i].err, 0);
        tu_assert_near(b[i].power_w, watts[i], 1e-9);
        assert_true(b[i].energy_raw >= a[i].energy_raw);
        double j = (double)(b[i].energy_raw - a[i].energy_raw) * 1e-3;
        double want = watts[i] * (t1 - t0);
        tu_assert_near(j, want, 0.02 * want);
    }
    probed_free(p);
}

static void test_processes_and_utilization(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "two");
    assert_int_equal(p->r, 2);
    struct nvml_proc pr[8];
    int n = nvml_device_processes(&p->src, 0, pr, 8);
    assert_int_equal(n, 2);
    assert_int_equal(pr[0].pid, 4242);
    assert_true(pr[0].used_mem_bytes == 1024ULL << 20);
    assert_int_equal(pr[0].sm_util_pct, 75);
    assert_int_equal(pr[1].pid, 4343);
    assert_true(pr[1].used_mem_bytes == UINT64_MAX);
    assert_int_equal(nvml_device_processes(&p->src, 1, pr, 8), 0);
    assert_int_equal(nvml_device_processes(&p->src, 7, pr, 8), -EINVAL);
    assert_int_equal(nvml_device_processes(&p->src, 0, pr, 1), 1);

    struct nvml_util u;
    assert_int_equal(nvml_device_utilization(&p->src, 0, &u), 0);
    assert_int_equal(u.gpu_pct, 80);
    assert_int_equal(u.mem_pct, 40);
    probed_free(p);
}

/* The library named lib in the fake's directory (libfake-nvml-nosym.so, libfake-nvml-v2.so). */
static void sibling_lib(char *buf, size_t cap, const char *lib, const char *name)
{
    snprintf(buf, cap, "%s", lib);
    char *slash = strrchr(buf, '/');
    size_t dir = slash ? (size_t)(slash - buf) + 1 : 0;
    snprintf(buf + dir, cap - dir, "%s", name);
}

/* UUIDs, and a driver with only the _v2 process call: the same processes */
static void test_uuid_and_v2_only(void **state)
{
    (void)state;
    char v2[1024];
    sibling_lib(v2, sizeof v2, fake_lib(), "libfake-nvml-v2.so");
    struct probed *p = probe_with(v2, "two");
    assert_int_equal(p->r, 2);
    assert_string_equal(nvml_device_uuid(&p->src, 0), "GPU-0000");
    assert_string_equal(nvml_device_uuid(&p->src, 1), "GPU-0001");
    assert_null(nvml_device_uuid(&p->src, 2));
    struct nvml_proc pr[8];
    assert_int_equal(nvml_device_processes(&p->src, 0, pr, 8), 2);
    assert_int_equal(pr[0].pid, 4242);
    assert_int_equal(pr[0].sm_util_pct, 75);
    /* asked again: NVML gives the samples since the last call, the figures stay */
    assert_int_equal(nvml_device_processes(&p->src, 0, pr, 8), 2);
    assert_int_equal(pr[0].sm_util_pct, 75);
    probed_free(p);
    struct source none = {0};
    assert_null(nvml_device_uuid(&none, 0));
}

/* power fields: two component channels beside GPU 0's counter, read as gauges */
static void test_power_fields(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "fields");
    assert_int_equal(p->r, 4);
    const struct channel *c = p->set->ch;
    assert_string_equal(c[0].name, "nvml/gpu0");
    assert_int_equal(c[0].domain, DOMAIN_TOTAL);
    assert_string_equal(c[1].name, "nvml/gpu0/power_instant");
    assert_string_equal(c[2].name, "nvml/gpu0/power_average");
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(c[i].domain, DOMAIN_COMPONENT);
        assert_int_equal(c[i].parent, 0);
        assert_int_equal(c[i].form, FORM_GAUGE);
        assert_int_equal(c[i].kind, KIND_GPU);
        assert_non_null(strstr(c[i].path, "nvmlDeviceGetFieldValues"));
    }
    assert_true(c[2].gauge_window_ns == 1000000000LL);
    assert_string_equal(c[3].name, "nvml/gpu1");
    struct reading rd[4];
    p->src.ops->read(&p->src, rd);
    assert_int_equal(rd[1].valid, READING_POWER);
    tu_assert_near(rd[1].power_w, 250, 1e-9);
    tu_assert_near(rd[2].power_w, 250, 1e-9);
    assert_int_equal(rd[3].valid, READING_ENERGY | READING_POWER);
    tu_assert_near(rd[3].power_w, 90, 1e-9);
    probed_free(p);
}

static void test_no_energy_gauge(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "noenergy");
    assert_int_equal(p->r, 1);
    const struct channel *c = &p->set->ch[0];
    assert_string_equal(c->name, "nvml/gpu0");
    assert_int_equal(c->form, FORM_GAUGE);
    assert_string_equal(c->label, "Tesla P100-PCIE-16GB GPU-p100");
    assert_non_null(strstr(p->src.note, "no energy counter"));
    struct reading rd[1];
    nvml_source_ops.read(&p->src, rd);
    assert_int_equal(rd[0].valid, READING_POWER);
    tu_assert_near(rd[0].power_w, 200.0, 1e-9);
    probed_free(p);
}

static void test_mig_note(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "mig");
    assert_int_equal(p->r, 1);
    assert_string_equal(p->set->ch[0].name, "nvml/gpu0");
    assert_non_null(strstr(p->src.note, "MIG instances are not split"));
    probed_free(p);
}

static void test_library_missing(void **state)
{
    (void)state;
    struct probed *p = probe_with("/nonexistent/libnvidia-ml.so.1", "two");
    assert_int_equal(p->r, -ENOENT);
    assert_int_equal(p->set->n, 0);
    assert_non_null(strstr(p->src.reason, "not found (no NVIDIA driver; set CARMA_NVML_LIBRARY "
                                          "to its path)"));
    probed_free(p);
}

static void test_symbol_missing(void **state)
{
    (void)state;
    const char *lib = fake_lib();
    char nosym[1024];
    snprintf(nosym, sizeof nosym, "%s", lib);
    char *slash = strrchr(nosym, '/');
    size_t dir = slash ? (size_t)(slash - nosym) + 1 : 0;
    snprintf(nosym + dir, sizeof nosym - dir, "libfake-nvml-nosym.so");
    struct probed *p = probe_with(nosym, "two");
    assert_int_equal(p->r, -EINVAL);
    assert_non_null(strstr(p->src.reason, "nvmlInit_v2"));
    assert_non_null(strstr(p->src.reason, "nvmlInit)"));
    probed_free(p);
}

static void test_init_error(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "initerr");
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "nvmlInit failed: Driver Not Loaded"));
    probed_free(p);
}

static void test_no_gpu(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "nogpu");
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "no GPU"));
    probed_free(p);
}

static void test_gpu_lost(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "lost");
    assert_int_equal(p->r, 2);
    struct reading rd[2];
    nvml_source_ops.read(&p->src, rd);
    assert_int_equal(rd[0].valid, READING_ENERGY | READING_POWER);
    tu_pause_ms(300);
    nvml_source_ops.read(&p->src, rd);
    assert_int_equal(rd[0].valid, 0);
    assert_int_equal(rd[0].err, -ENODEV);
    assert_int_equal(rd[1].valid, READING_ENERGY | READING_POWER);
    tu_assert_near(rd[1].power_w, 100.0, 1e-9);
    struct nvml_proc pr[1];
    assert_int_equal(nvml_device_processes(&p->src, 0, pr, 1), -ENODEV);
    probed_free(p);
}

static void test_not_below_fixture_root(void **state)
{
    (void)state;
    unsetenv("CARMA_NVML_LIBRARY");
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    char dir[512];
    tu_fixture_path(dir, sizeof dir, "intel-2s");
    p->r = tu_probe(&p->src, &nvml_source_ops, &p->root, dir, p->set);
    assert_int_equal(p->r, -ENOENT);
    assert_int_equal(p->set->n, 0);
    assert_non_null(strstr(p->src.reason, "CARMA_NVML_LIBRARY"));
    probed_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_gpus),         cmocka_unit_test(test_processes_and_utilization),
        cmocka_unit_test(test_no_energy_gauge),  cmocka_unit_test(test_mig_note),
        cmocka_unit_test(test_library_missing),  cmocka_unit_test(test_symbol_missing),
        cmocka_unit_test(test_init_error),       cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_gpu_lost),         cmocka_unit_test(test_not_below_fixture_root),
        cmocka_unit_test(test_uuid_and_v2_only), cmocka_unit_test(test_power_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for sources/dcgm against the fake DCGM of tests/fakes (libdcgm.so.4, path in
 * $CARMA_FAKE_DCGM; the tests are skipped when it is unset): the channels of two Grace sockets
 * and two GPUs with hand-worked values (values returned in reverse order and in the order
 * asked), missing and blank sensors, utilization missing on the first read after the watch, a
 * GPU lost mid-run, the CPU rail as a component when the CPU is measured already, and every way
 * DCGM can be unusable (library absent, a call missing, embedded start refused, no sysmon,
 * nothing to read); the sampling path allocates nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsroot.h"
#include "sources/dcgm.h"
#include "sources/nvml.h"
#include "sources/source.h"
#include "alloccount.h"
#include "testutil.h"

struct probed {
    struct fsroot root;
    struct channel_set *set;
    struct source src;
    int r;
};

static const char *lib_env(const char *var)
{
    const char *lib = getenv(var);
    if (!lib || !lib[0])
        skip();
    return lib;
}

static const char *fake_lib(void)
{
    return lib_env("CARMA_FAKE_DCGM");
}

/* Probes dcgm with library lib and tests/fakes/dcgm/<scenario>.scenario; measured_cpu: an
 * earlier source measured the CPU. */
static struct probed *probe_ctx(const char *lib, const char *scenario, bool measured_cpu)
{
    char path[512];
    char rel[128];
    snprintf(rel, sizeof rel, "../fakes/dcgm/%s.scenario", scenario);
    tu_fixture_path(path, sizeof path, rel);
    setenv("CARMA_FAKE_DCGM_SCENARIO", path, 1);
    setenv("CARMA_DCGM_LIBRARY", lib, 1);
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    tu_open_root(&p->root, "/");
    p->src.ops = &dcgm_source_ops;
    struct probe_ctx ctx = {.root = &p->root, .set = p->set, .have_measured_cpu = measured_cpu};
    p->r = dcgm_source_ops.probe(&p->src, &ctx);
    p->src.status = p->r > 0 ? 0 : p->r;
    return p;
}

static struct probed *probe_with(const char *lib, const char *scenario)
{
    return probe_ctx(lib, scenario, false);
}

static void probed_free(struct probed *p)
{
    tu_unprobe(&p->src, &p->root);
    free(p->set);
    free(p);
    unsetenv("CARMA_DCGM_LIBRARY");
    unsetenv("CARMA_FAKE_DCGM_SCENARIO");
}

static void check_channel(const struct channel *c, const char *name, enum channel_kind kind,
                          const char *zone, int socket, enum channel_domain domain,
                          enum channel_form form)
{
    assert_string_equal(c->name, name);
    assert_string_equal(c->source, "dcgm");
    assert_int_equal(c->kind, kind);
    assert_string_equal(c->zone, zone);
    assert_int_equal(c->socket, socket);
    assert_int_equal(c->domain, domain);
    assert_int_equal(c->form, form);
    assert_int_equal(c->method, METHOD_MEASURED);
    assert_int_equal(c->parent, -1);
}

/* grace.scenario: 151.25/22.5/310.75 W on socket 0; 98.5 W (no SysIO, blank module) on socket
 * 1; GPU 0 at 350.5 W with a counter of 1000000 + 35050 mJ per update (one at probe, one per
 * read); GPU 1 at 120 W without a counter. */
static void check_grace(struct probed *p)
{
    assert_int_equal(p->r, 6);
    assert_int_equal(p->set->n, 6);
    check_channel(&p->set->ch[0], "dcgm/cpu0", KIND_CPU, "cpu_rail", 0, DOMAIN_TOTAL, FORM_GAUGE);
    assert_string_equal(p->set->ch[0].label, "DCGM CPU 0 power: CPU rail only, not SoC/SysIO/DRAM");
    check_channel(&p->set->ch[1], "dcgm/cpu0/sysio", KIND_SOC, "sysio", 0, DOMAIN_COMPONENT,
                  FORM_GAUGE);
    check_channel(&p->set->ch[2], "dcgm/cpu0/module", KIND_SOC, "module", 0, DOMAIN_COMPONENT,
                  FORM_GAUGE);
    check_channel(&p->set->ch[3], "dcgm/cpu1", KIND_CPU, "cpu_rail", 1, DOMAIN_TOTAL, FORM_GAUGE);
    check_channel(&p->set->ch[4], "dcgm/gpu0", KIND_GPU, "gpu", 0, DOMAIN_TOTAL, FORM_COUNTER);
    tu_assert_near(p->set->ch[4].counter_unit_j, 1e-3, 0);
    check_channel(&p->set->ch[5], "dcgm/gpu1", KIND_GPU, "gpu", 1, DOMAIN_TOTAL, FORM_GAUGE);
    assert_non_null(strstr(p->src.note, "CPU 0: DCGM measures the CPU rail only"));
    assert_non_null(strstr(p->src.note, "GPU 1 has no energy counter"));

    /* utilization: the probe's read was the first after the watch, so none yet */
    struct dcgm_cpu_util u;
    assert_int_equal(dcgm_source_cpu_util(&p->src, 0, &u), -ENODATA);

    struct reading a[6], b[6];
    dcgm_source_ops.read(&p->src, a);
    dcgm_source_ops.read(&p->src, b);
    const double watts[4] = {151.25, 22.5, 310.75, 98.5};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(b[i].valid, READING_POWER);
        assert_int_equal(b[i].err, 0);
        tu_assert_near(b[i].power_w, watts[i], 0);
    }
    assert_int_equal(a[4].valid, READING_ENERGY | READING_POWER);
    assert_true(a[4].energy_raw == 1070100u); /* 1000000 + 2 x 35050 */
    assert_true(b[4].energy_raw == 1105150u); /* 1000000 + 3 x 35050 */
    tu_assert_near(b[4].power_w, 350.5, 0);
    assert_int_equal(b[5].valid, READING_POWER);
    tu_assert_near(b[5].power_w, 120.0, 0);

    assert_int_equal(dcgm_source_cpu_util(&p->src, 0, &u), 0);
    tu_assert_near(u.total, 0.5, 0);
    tu_assert_near(u.user, 0.375, 0);
    tu_assert_near(u.nice, 0.0, 0);
    tu_assert_near(u.sys, 0.125, 0);
    tu_assert_near(u.irq, 0.0, 0);
    assert_int_equal(dcgm_source_cpu_util(&p->src, 1, &u), 0);
    tu_assert_near(u.total, 0.25, 0);
    assert_int_equal(dcgm_source_cpu_util(&p->src, 2, &u), -EINVAL);

    /* GPU 0: 80 %, SM active 0.625; GPU 1 has neither; CPU 0 is not a GPU */
    struct dcgm_gpu_util g;
    assert_int_equal(dcgm_source_gpu_util(&p->src, 0, &g), 0);
    tu_assert_near(g.gpu_pct, 80.0, 0);
    tu_assert_near(g.sm_active, 0.625, 0);
    assert_int_equal(dcgm_source_gpu_util(&p->src, 1, &g), -ENODATA);
    assert_int_equal(dcgm_source_gpu_util(&p->src, 2, &g), -EINVAL);
}

static void test_grace(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "grace");
    check_grace(p);
    probed_free(p);
}

/* Probing twice in one process: the field-group names differ (DCGM refuses a duplicate), and
 * the second probe reads the same values. */
static void test_twice(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "grace");
    check_grace(p);
    probed_free(p);
    p = probe_with(fake_lib(), "grace");
    check_grace(p);
    probed_free(p);
}

/* The values in the order asked are matched as well as reversed ones. */
static void test_given_order(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "given");
    assert_int_equal(p->r, 4);
    assert_string_equal(p->set->ch[0].name, "dcgm/cpu0");
    assert_string_equal(p->set->ch[3].name, "dcgm/gpu0");
    struct reading r[4];
    dcgm_source_ops.read(&p->src, r);
    tu_assert_near(r[0].power_w, 151.25, 0);
    tu_assert_near(r[1].power_w, 22.5, 0);
    tu_assert_near(r[2].power_w, 310.75, 0);
    assert_true(r[3].energy_raw == 1070100u);
    probed_free(p);
}

/* With the CPU measured already (hwmon's socket total), the CPU rail is a component. */
static void test_rail_component(void **state)
{
    (void)state;
    struct probed *p = probe_ctx(fake_lib(), "grace", true);
    assert_int_equal(p->r, 6);
    assert_int_equal(p->set->ch[0].domain, DOMAIN_COMPONENT);
    assert_int_equal(p->set->ch[3].domain, DOMAIN_COMPONENT);
    assert_int_equal(p->set->ch[4].domain, DOMAIN_TOTAL);
    assert_non_null(strstr(p->src.note, "component of the CPU measured already"));
    probed_free(p);
}

/* Beside the fake NVML (two.scenario: GPU-0000, GPU-0001), probed first as the sampler does:
 * the GPU NVML reads already (the same UUID) gets no dcgm channel, one NVML does not see is a
 * total, one without a UUID a component. */
static void test_nvml_twin(void **state)
{
    (void)state;
    const char *lib = fake_lib();
    const char *nvml = lib_env("CARMA_FAKE_NVML");
    char path[512];
    tu_fixture_path(path, sizeof path, "../fakes/nvml/two.scenario");
    setenv("CARMA_FAKE_NVML_SCENARIO", path, 1);
    setenv("CARMA_NVML_LIBRARY", nvml, 1);
    tu_fixture_path(path, sizeof path, "../fakes/dcgm/nvmltwin.scenario");
    setenv("CARMA_FAKE_DCGM_SCENARIO", path, 1);
    setenv("CARMA_DCGM_LIBRARY", lib, 1);
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    tu_open_root(&p->root, "/");
    struct source src[2] = {{.ops = &nvml_source_ops}, {.ops = &dcgm_source_ops}};
    struct probe_ctx ctx = {.root = &p->root, .set = p->set, .probed = src};
    int rn = nvml_source_ops.probe(&src[0], &ctx);
    assert_true(rn > 0);
    src[0].status = 0;
    src[0].count = p->set->n - src[0].first;
    int n_nvml = (int)p->set->n;
    int g1 = tu_channel_index(p->set, "nvml/gpu1");
    assert_true(g1 >= 0);
    ctx.n_probed = 1;
    p->r = dcgm_source_ops.probe(&src[1], &ctx);
    assert_int_equal(p->r, 2);
    assert_int_equal(src[1].first, (size_t)n_nvml);
    assert_int_equal(tu_channel_index(p->set, "dcgm/gpu0"), -1);
    int d1 = tu_channel_index(p->set, "dcgm/gpu1");
    int d2 = tu_channel_index(p->set, "dcgm/gpu2");
    assert_int_equal(d1, n_nvml);
    assert_int_equal(d2, n_nvml + 1);
    assert_int_equal(p->set->ch[d1].domain, DOMAIN_TOTAL);
    assert_int_equal(p->set->ch[d1].form, FORM_COUNTER);
    assert_string_equal(p->set->ch[d1].label, "DCGM GPU 1 GPU-9999");
    assert_int_equal(p->set->ch[d2].domain, DOMAIN_COMPONENT);
    assert_int_equal(p->set->ch[d2].form, FORM_GAUGE);
    assert_non_null(strstr(src[1].note, "GPU 0 (GPU-0001) is read by NVML as nvml/gpu1"));
    assert_non_null(strstr(src[1].note, "GPU 1 (GPU-9999) is not one NVML reads"));
    assert_non_null(strstr(src[1].note, "GPU 2: DCGM gave no UUID"));
    src[1].status = 0;
    assert_string_equal(dcgm_source_gpu_uuid(&src[1], 1), "GPU-9999");
    assert_string_equal(dcgm_source_gpu_uuid(&src[1], 2), "");
    assert_null(dcgm_source_gpu_uuid(&src[1], 0));
    /* the tick reads: GPU 1's counter after two updates (probe, read): 9000 + 2 x 9 mJ */
    struct reading r[2];
    dcgm_source_ops.read(&src[1], r);
    assert_true(r[0].valid & READING_ENERGY);
    assert_true(r[0].energy_raw == 9018u);
    assert_true(r[1].valid == READING_POWER);
    assert_true(r[1].power_w == 60.0);
    dcgm_source_ops.close(&src[1]);
    nvml_source_ops.close(&src[0]);
    fsroot_close(&p->root);
    free(p->set);
    free(p);
    unsetenv("CARMA_NVML_LIBRARY");
    unsetenv("CARMA_FAKE_NVML_SCENARIO");
    unsetenv("CARMA_DCGM_LIBRARY");
    unsetenv("CARMA_FAKE_DCGM_SCENARIO");
}

/* --dcgm-host: connected to the host engine the scenario names; another address is refused
 * with the fix in words. */
static void test_hostengine(void **state)
{
    (void)state;
    const char *lib = fake_lib();
    char path[512];
    tu_fixture_path(path, sizeof path, "../fakes/dcgm/hostengine.scenario");
    setenv("CARMA_FAKE_DCGM_SCENARIO", path, 1);
    setenv("CARMA_DCGM_LIBRARY", lib, 1);
    for (int k = 0; k < 2; k++) {
        struct fsroot root;
        struct channel_set *set = calloc(1, sizeof *set);
        assert_non_null(set);
        tu_open_root(&root, "/");
        struct source src = {.ops = &dcgm_source_ops};
        struct probe_ctx ctx = {
            .root = &root, .set = set, .dcgm_host = k == 0 ? "10.1.2.3:5555" : "10.9.9.9"};
        int r = dcgm_source_ops.probe(&src, &ctx);
        if (k == 0) {
            assert_int_equal(r, 1);
            assert_string_equal(set->ch[0].name, "dcgm/gpu0");
        } else {
            assert_int_equal(r, -EIO);
            assert_non_null(strstr(src.reason, "cannot connect to nv-hostengine at 10.9.9.9"));
            assert_non_null(strstr(src.reason, "systemctl start nvidia-dcgm"));
        }
        src.status = r > 0 ? 0 : r;
        tu_unprobe(&src, &root);
        free(set);
    }
    unsetenv("CARMA_DCGM_LIBRARY");
    unsetenv("CARMA_FAKE_DCGM_SCENARIO");
}

static void test_no_sysmon(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "nosysmon");
    assert_int_equal(p->r, 1);
    assert_string_equal(p->set->ch[0].name, "dcgm/gpu0");
    assert_non_null(strstr(p->src.note, "sysmon module is not loaded"));
    struct reading r[1];
    dcgm_source_ops.read(&p->src, r);
    assert_true(r[0].energy_raw == 5200u); /* 5000 + 2 x 100 */
    tu_assert_near(r[0].power_w, 200.0, 0);
    probed_free(p);
}

/* A GPU lost mid-run: its value is missing with -ENODEV, never 0 W; the other GPU reads on. */
/* Profiling off: the watch with SM activity is refused, so carma watches again without it; GPU
 * utilization reads, SM activity is missing (NAN), and the note says why. */
static void test_no_profiling(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "noprof");
    assert_int_equal(p->r, 1);
    assert_non_null(strstr(p->src.note, "SM activity (field 1002) is not read"));
    assert_non_null(strstr(p->src.note, "DCGM error -36"));
    struct reading r[1];
    dcgm_source_ops.read(&p->src, r);
    assert_true(r[0].valid == (READING_ENERGY | READING_POWER));
    assert_true(r[0].energy_raw == 4050u);
    struct dcgm_gpu_util u;
    assert_int_equal(dcgm_source_gpu_util(&p->src, 0, &u), 0);
    assert_true(u.gpu_pct == 40.0);
    assert_true(isnan(u.sm_active));
    probed_free(p);
}

static void test_gpu_lost(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "lost");
    assert_int_equal(p->r, 2);
    struct reading r[2];
    dcgm_source_ops.read(&p->src, r);
    assert_int_equal(r[0].valid, READING_ENERGY | READING_POWER);
    assert_true(r[0].energy_raw == 1060u); /* 1000 + 2 x 30 */
    dcgm_source_ops.read(&p->src, r);
    assert_int_equal(r[0].valid, 0);
    assert_int_equal(r[0].err, -ENODEV);
    assert_int_equal(r[1].valid, READING_ENERGY | READING_POWER);
    assert_true(r[1].energy_raw == 2030u); /* 2000 + 3 x 10 */
    tu_assert_near(r[1].power_w, 100.0, 0);
    probed_free(p);
}

static void test_refused(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "refused");
    assert_int_equal(p->r, -EIO);
    assert_int_equal(p->set->n, 0);
    assert_non_null(strstr(p->src.reason, "embedded DCGM engine refused to start"));
    assert_non_null(strstr(p->src.reason, "DCGM error -7"));
    probed_free(p);
}

static void test_empty(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "empty");
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "no CPU entity and no GPU"));
    assert_non_null(strstr(p->src.reason, "sysmon"));
    probed_free(p);
}

static void test_no_sensor(void **state)
{
    (void)state;
    struct probed *p = probe_with(fake_lib(), "nosensor");
    assert_int_equal(p->r, -ENOENT);
    assert_int_equal(p->set->n, 0);
    assert_non_null(strstr(p->src.reason, "DCGM gives no power reading"));
    assert_non_null(strstr(p->src.reason, "CPU 0 has no CPU power reading"));
    probed_free(p);
}

static void test_missing_call(void **state)
{
    (void)state;
    struct probed *p = probe_with(lib_env("CARMA_FAKE_DCGM_NOSYM"), "grace");
    assert_int_equal(p->r, -EINVAL);
    assert_non_null(strstr(p->src.reason, "lacks the DCGM call dcgmEntitiesGetLatestValues"));
    probed_free(p);
}

static void test_absent(void **state)
{
    (void)state;
    struct probed *p = probe_with("/nonexistent/libdcgm.so.4", "grace");
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "/nonexistent/libdcgm.so.4 not found"));
    probed_free(p);
}

/* A tick (one update and one latest-values call) allocates nothing. */
static void test_read_allocates_nothing(void **state)
{
    (void)state;
    if (!ALLOC_COUNT_AVAILABLE)
        skip();
    struct probed *p = probe_with(fake_lib(), "grace");
    assert_int_equal(p->r, 6);
    struct reading r[6];
    alloc_count_start();
    for (int i = 0; i < 100; i++)
        dcgm_source_ops.read(&p->src, r);
    assert_int_equal(alloc_count_stop(), 0);
    /* 1000000 + 101 x 35050 mJ: the probe's update and the 100 reads' */
    assert_true(r[4].energy_raw == 4540050u);
    probed_free(p);
}

/* Below a --root other than "/", DCGM is not consulted unless CARMA_DCGM_LIBRARY names it. */
static void test_fixture_root(void **state)
{
    (void)state;
    unsetenv("CARMA_DCGM_LIBRARY");
    char dir[512];
    tu_fixture_path(dir, sizeof dir, "grace");
    struct fsroot root;
    struct channel_set *set = calloc(1, sizeof *set);
    assert_non_null(set);
    struct source src;
    int r = tu_probe(&src, &dcgm_source_ops, &root, dir, set);
    assert_int_equal(r, -ENOENT);
    assert_int_equal(set->n, 0);
    assert_non_null(strstr(src.reason, "DCGM is not read below --root"));
    assert_non_null(strstr(src.reason, "CARMA_DCGM_LIBRARY"));
    tu_unprobe(&src, &root);
    free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grace),        cmocka_unit_test(test_twice),
        cmocka_unit_test(test_given_order),  cmocka_unit_test(test_rail_component),
        cmocka_unit_test(test_no_sysmon),    cmocka_unit_test(test_nvml_twin),
        cmocka_unit_test(test_hostengine),   cmocka_unit_test(test_no_profiling),
        cmocka_unit_test(test_gpu_lost),     cmocka_unit_test(test_refused),
        cmocka_unit_test(test_empty),        cmocka_unit_test(test_no_sensor),
        cmocka_unit_test(test_missing_call), cmocka_unit_test(test_absent),
        cmocka_unit_test(test_fixture_root), cmocka_unit_test(test_read_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

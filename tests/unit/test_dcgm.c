/*
 * Unit tests for collect/dcgm: dcgm-exporter bodies (as its renderer prints them, the examples
 * of the formats doc) read into per-GPU readings. Both label spellings, two GPUs with their
 * families interleaved in different orders, a body without SM_ACTIVE, an A30 in MIG mode, the
 * int64 and double sentinels, values out of range, duplicates, bad labels, the CPU family's
 * 0.000000, a carma exporter's body (not dcgm), and more GPUs and MIG instances than the bounds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/dcgm.h"

static struct dcgm_scrape scrape; /* too large for a test's stack frame to be polite */

static void parse_ok(const char *body, struct prom_doc *doc)
{
    struct carma_err e = {0};
    int rc = prom_parse(body, strlen(body), NULL, doc, &e);
    if (rc != 0)
        fail_msg("prom_parse: %d (%s)", rc, e.msg);
}

/* Exact equality, NAN equal to NAN. */
static void check_num(const char *what, double got, double want)
{
    if (isnan(want) ? !isnan(got) : memcmp(&got, &want, sizeof got) != 0)
        fail_msg("%s: %.17g, want %.17g", what, got, want);
}

static void check_str(const char *what, const char *got, const char *want)
{
    if (!want ? got != NULL : !got || strcmp(got, want) != 0)
        fail_msg("%s: \"%s\", want \"%s\"", what, got ? got : "(null)", want ? want : "(null)");
}

static void check_reading(const struct dcgm_reading *r, unsigned gpu, const char *uuid,
                          double power_w, double energy_j, double util, double sm)
{
    assert_int_equal(r->gpu_index, gpu);
    check_str("uuid", r->uuid, uuid);
    check_num("power_w", r->power_w, power_w);
    check_num("energy_j", r->energy_j, energy_j);
    check_num("gpu_util_pct", r->gpu_util_pct, util);
    check_num("sm_active", r->sm_active, sm);
}

static void check_counts(size_t dropped, size_t blank, size_t out_of_range, size_t duplicates,
                         size_t bad_labels, size_t cpu_zero)
{
    assert_int_equal(scrape.dropped, dropped);
    assert_int_equal(scrape.blank, blank);
    assert_int_equal(scrape.out_of_range, out_of_range);
    assert_int_equal(scrape.duplicates, duplicates);
    assert_int_equal(scrape.bad_labels, bad_labels);
    assert_int_equal(scrape.cpu_zero, cpu_zero);
}

/* An older exporter (UUID, Hostname): two GPUs, families one after another, but the GPUs in a
 * different order in each; no SM_ACTIVE (default counters), so it is NAN. */
static const char body_upper[] =
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-7ad09335-aadb-19c3-e3a8\",device=\"nvidia0\","
    "modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} "
    "37\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1b2c3d4e-aadb-19c3-e3a9\",device=\"nvidia1\","
    "modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 0\n"
    "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-1b2c3d4e-aadb-19c3-e3a9\",device=\"nvidia1\","
    "modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} "
    "24.512000\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-7ad09335-aadb-19c3-e3a8\",device=\"nvidia0\","
    "modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} "
    "61.025000\n"
    "# HELP DCGM_FI_DEV_SM_CLOCK SM frequency (in MHz).\n"
    "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
    "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-7ad09335-aadb-19c3-e3a8\",device=\"nvidia0\","
    "modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} "
    "1695\n"
    "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-7ad09335-aadb-19c3-e3a8\","
    "device=\"nvidia0\",modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\","
    "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 4335301032\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-1b2c3d4e-aadb-19c3-e3a9\","
    "device=\"nvidia1\",modelName=\"NVIDIA RTX A5000\",Hostname=\"k8s-gpu1\","
    "DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 123456789\n";

static void test_upper_labels(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok(body_upper, &doc);
    assert_true(dcgm_is_body(&doc));
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.n, 2);
    assert_int_equal(scrape.ngpus, 2);
    assert_int_equal(scrape.nmig, 0);
    check_counts(0, 0, 0, 0, 0, 0);

    const struct dcgm_reading *a = &scrape.r[0], *b = &scrape.r[1];
    check_reading(a, 0, "GPU-7ad09335-aadb-19c3-e3a8", 61.025, 4335301.032, 37, NAN);
    check_str("hostname", a->hostname, "k8s-gpu1");
    check_str("device", a->device, "nvidia0");
    check_str("model", a->model, "NVIDIA RTX A5000");
    check_str("pci_bus_id", a->pci_bus_id, NULL);
    assert_false(a->mig);
    check_str("mig_profile", a->mig_profile, NULL);
    check_reading(b, 1, "GPU-1b2c3d4e-aadb-19c3-e3a9", 24.512, 123456.789, 0, NAN);
    check_str("device", b->device, "nvidia1");
    check_num("device_power_w", scrape.device_power_w, 61.025 + 24.512);
    prom_doc_free(&doc);
}

/* dcgm-exporter HEAD (uuid, hostname) with the profiling counter on, labels in another order,
 * families interleaved GPU by GPU; GPU 1 has an int64 sentinel for its energy, a double one
 * for SM_ACTIVE and a utilization of 101; the CPU families (one a missing sensor) are not
 * readings. */
static const char body_lower[] =
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
    "# TYPE DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT gauge\n"
    "DCGM_FI_PROF_SM_ACTIVE{modelName=\"NVIDIA H100 80GB HBM3\",gpu=\"1\",device=\"nvidia1\","
    "pci_bus_id=\"00000000:19:00.0\",uuid=\"GPU-bbbb\",hostname=\"node-b\"} "
    "140737488355328.000000\n"
    "DCGM_FI_DEV_POWER_USAGE{hostname=\"node-b\",uuid=\"GPU-bbbb\",gpu=\"1\",device=\"nvidia1\","
    "pci_bus_id=\"00000000:19:00.0\",modelName=\"NVIDIA H100 80GB HBM3\"} 412.250000\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",uuid=\"GPU-bbbb\",hostname=\"node-b\"} "
    "9223372036854775794\n"
    "DCGM_FI_DEV_GPU_UTIL{uuid=\"GPU-bbbb\",gpu=\"1\",hostname=\"node-b\"} 101\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",uuid=\"GPU-aaaa\",hostname=\"node-b\",pci_bus_id="
    "\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
    "container=\"\",namespace=\"\",pod=\"\"} 100\n"
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",uuid=\"GPU-aaaa\",hostname=\"node-b\"} 0.812500\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{uuid=\"GPU-aaaa\",gpu=\"0\"} 98765432101\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",uuid=\"GPU-aaaa\"} 0.000000\n"
    "DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT{cpu=\"0\",hostname=\"node-b\"} 0.000000\n"
    "DCGM_FI_DEV_CPU_POWER_UTIL_CURRENT{cpu=\"1\",hostname=\"node-b\"} 31.427000\n"
    "DCGM_FI_DEV_CPU_UTIL_TOTAL{cpu=\"0\",hostname=\"node-b\"} 0.000000\n";

static void test_lower_labels(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok(body_lower, &doc);
    assert_true(dcgm_is_body(&doc));
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.n, 2);
    assert_int_equal(scrape.ngpus, 2);
    check_counts(0, 2, 1, 0, 0, 1);

    const struct dcgm_reading *b = &scrape.r[0], *a = &scrape.r[1];
    check_reading(b, 1, "GPU-bbbb", 412.25, NAN, NAN, NAN);
    check_str("hostname", b->hostname, "node-b");
    check_str("pci_bus_id", b->pci_bus_id, "00000000:19:00.0");
    check_str("model", b->model, "NVIDIA H100 80GB HBM3");
    check_reading(a, 0, "GPU-aaaa", 0, 98765432.101, 100, 0.8125);
    check_str("pci_bus_id", a->pci_bus_id, "00000000:18:00.0");
    check_num("device_power_w", scrape.device_power_w, 412.25 + 0.0);
    prom_doc_free(&doc);
}

/* An A30 split into MIG instances (GPU_I_PROFILE, GPU_I_ID) beside a whole GPU: the instances
 * are readings of their own, flagged, and out of the device figure. */
static const char body_mig[] =
    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-265c9814-6156-355b-e589-ff2064894f16\","
    "device=\"nvidia0\",modelName=\"NVIDIA A30\",GPU_I_PROFILE=\"1g.6gb\",GPU_I_ID=\"3\","
    "Hostname=\"yg-data-k8s-gpu-a30-node-test-test0003.mt\"} 52.636000\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-265c9814-6156-355b-e589-ff2064894f16\","
    "device=\"nvidia0\",modelName=\"NVIDIA A30\",GPU_I_PROFILE=\"2g.12gb\",GPU_I_ID=\"1\","
    "Hostname=\"yg-data-k8s-gpu-a30-node-test-test0003.mt\"} 52.636000\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116\","
    "device=\"nvidia1\",modelName=\"NVIDIA A30\","
    "Hostname=\"yg-data-k8s-gpu-a30-node-test-test0003.mt\"} 30.125000\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=\"1\",gpu=\"0\",UUID=\"GPU-265c9814-6156-355b-e589-"
    "ff2064894f16\","
    "GPU_I_PROFILE=\"2g.12gb\"} 12\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-265c9814-6156-355b-e589-ff2064894f16\","
    "GPU_I_PROFILE=\"1g.6gb\",GPU_I_ID=\"3\"} 5\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-265c9814-6156-355b-e589-ff2064894f16\","
    "GPU_I_PROFILE=\"1g.6gb\",GPU_I_ID=\"x\"} 5\n"
    "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-6bf47ca9-ad3e-15db-beed-"
    "1079a7d74116\","
    "device=\"nvidia1\",container=\"\",namespace=\"\",pod=\"\"} 4335301032\n";

static void test_mig(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok(body_mig, &doc);
    assert_true(dcgm_is_body(&doc));
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.n, 3);
    assert_int_equal(scrape.ngpus, 1);
    assert_int_equal(scrape.nmig, 2);
    check_counts(0, 0, 0, 0, 1, 0);

    const char *u0 = "GPU-265c9814-6156-355b-e589-ff2064894f16";
    const struct dcgm_reading *m3 = &scrape.r[0], *m1 = &scrape.r[1], *g1 = &scrape.r[2];
    check_reading(m3, 0, u0, 52.636, NAN, 5, NAN);
    assert_true(m3->mig);
    assert_int_equal(m3->mig_id, 3);
    check_str("mig_profile", m3->mig_profile, "1g.6gb");
    check_reading(m1, 0, u0, 52.636, NAN, 12, NAN);
    assert_true(m1->mig);
    assert_int_equal(m1->mig_id, 1);
    check_str("mig_profile", m1->mig_profile, "2g.12gb");
    check_reading(g1, 1, "GPU-6bf47ca9-ad3e-15db-beed-1079a7d74116", 30.125, 4335301.032, NAN, NAN);
    assert_false(g1->mig);
    check_str("hostname", g1->hostname, "yg-data-k8s-gpu-a30-node-test-test0003.mt");
    check_num("device_power_w", scrape.device_power_w, 30.125);
    prom_doc_free(&doc);
}

/* Odd values and labels: non-finite and negative power, negative SM activity, a duplicated
 * utilization (dropped, the other fields kept), gpu labels that are not indexes, two UUIDs
 * on one index (two readings), a GPU without UUID, a double sentinel for power. */
static const char body_odd[] =
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} NaN\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} -1.5\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"2\",UUID=\"GPU-c\"} +Inf\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",UUID=\"GPU-d\"} 140737488355328.000000\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"3\",UUID=\"GPU-e\"} 140737488355327.5\n"
    "DCGM_FI_DEV_POWER_USAGE{gpu=\"4\"} 75.5\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 50\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 60\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 70\n"
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-a\"} -0.25\n"
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-b\"} 1\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-a\"} 140737488355328\n"
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-b\"} -5\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"-1\",UUID=\"GPU-f\"} 1\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"x\",UUID=\"GPU-f\"} 1\n"
    "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-f\"} 1\n";

static void test_odd(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok(body_odd, &doc);
    assert_true(dcgm_is_body(&doc));
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.n, 6);
    /* NaN, -1.5, +Inf, -0.25, -5 out of range; the 2^47 power blank; two duplicates */
    check_counts(0, 1, 5, 2, 3, 0);
    check_reading(&scrape.r[0], 0, "GPU-a", NAN, 140737488355.328, NAN, NAN);
    check_reading(&scrape.r[1], 1, "GPU-b", NAN, NAN, NAN, 1);
    check_reading(&scrape.r[2], 2, "GPU-c", NAN, NAN, NAN, NAN);
    check_reading(&scrape.r[3], 3, "GPU-d", NAN, NAN, NAN, NAN);
    check_reading(&scrape.r[4], 3, "GPU-e", 140737488355327.5, NAN, NAN, NAN);
    check_reading(&scrape.r[5], 4, NULL, 75.5, NAN, NAN, NAN);
    check_num("device_power_w", scrape.device_power_w, 140737488355327.5 + 75.5);
    prom_doc_free(&doc);
}

/* carma's own exporter is not dcgm-exporter; neither is an empty body; a lone TYPE line is. */
static void test_not_dcgm(void **state)
{
    (void)state;
    struct prom_doc doc;
    parse_ok("# HELP carma_power_watts Power (W).\n"
             "# TYPE carma_power_watts gauge\n"
             "carma_power_watts{channel=\"gpu0\",kind=\"gpu\",source=\"nvml\"} 61.5\n"
             "carma_energy_joules_total{channel=\"gpu0\",kind=\"gpu\",source=\"nvml\"} 1234.5\n"
             "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1695\n",
             &doc);
    assert_false(dcgm_is_body(&doc));
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.n, 0);
    check_counts(0, 0, 0, 0, 0, 0);
    check_num("device_power_w", scrape.device_power_w, NAN);
    prom_doc_free(&doc);

    parse_ok("", &doc);
    assert_false(dcgm_is_body(&doc));
    prom_doc_free(&doc);
    assert_false(dcgm_is_body(NULL));
    dcgm_parse(NULL, &scrape);
    assert_int_equal(scrape.n, 0);

    parse_ok("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n", &doc);
    assert_true(dcgm_is_body(&doc));
    prom_doc_free(&doc);
}

/* 66 GPUs with two families each, then 449 MIG instances: the bounds keep the first 64 GPUs
 * and 448 instances, and count the samples of the rest. */
static void test_bounds(void **state)
{
    (void)state;
    size_t cap = 1 << 20, len = 0;
    char *body = malloc(cap);
    assert_non_null(body);
    for (int f = 0; f < 2; f++)
        for (int g = 0; g < DCGM_GPUS_MAX + 2; g++)
            len +=
                (size_t)snprintf(body + len, cap - len, "%s{gpu=\"%d\",UUID=\"GPU-%d\"} %d\n",
                                 f ? "DCGM_FI_DEV_GPU_UTIL" : "DCGM_FI_DEV_POWER_USAGE", g, g, g);
    for (int m = 0; m < DCGM_MIG_MAX + 1; m++)
        len += (size_t)snprintf(body + len, cap - len,
                                "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",UUID=\"GPU-%d\","
                                "GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"%d\"} 50\n",
                                m / 7, m / 7, m % 7);
    assert_true(len < cap);
    struct prom_doc doc;
    struct carma_err e = {0};
    assert_int_equal(prom_parse(body, len, NULL, &doc, &e), 0);
    dcgm_parse(&doc, &scrape);
    assert_int_equal(scrape.ngpus, DCGM_GPUS_MAX);
    assert_int_equal(scrape.nmig, DCGM_MIG_MAX);
    assert_int_equal(scrape.n, DCGM_READINGS_MAX);
    check_counts(2 + 2 + 1, 0, 0, 0, 0, 0);
    double sum = 0;
    for (int g = 0; g < DCGM_GPUS_MAX; g++) {
        char uuid[16];
        snprintf(uuid, sizeof uuid, "GPU-%d", g);
        check_reading(&scrape.r[g], (unsigned)g, uuid, g, NAN, g, NAN);
        sum += g;
    }
    check_num("device_power_w", scrape.device_power_w, sum);
    const struct dcgm_reading *last = &scrape.r[DCGM_READINGS_MAX - 1];
    assert_true(last->mig);
    assert_int_equal(last->gpu_index, (DCGM_MIG_MAX - 1) / 7);
    assert_int_equal(last->mig_id, (DCGM_MIG_MAX - 1) % 7);
    prom_doc_free(&doc);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_upper_labels), cmocka_unit_test(test_lower_labels),
        cmocka_unit_test(test_mig),          cmocka_unit_test(test_odd),
        cmocka_unit_test(test_not_dcgm),     cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

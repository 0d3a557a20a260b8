/*
 * Unit tests for sources/rapl: the channels each fixture tree gives (names, kinds, zones,
 * domains, parents, sockets, counter ranges), how zones nest, the CVE-2020-8694 reason for
 * an unreadable energy_uj, and what a read makes of good and bad counter files.
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

#include "core/fsroot.h"
#include "sampler/sampler.h"
#include "sources/source.h"
#include "testutil.h"

extern const struct source_ops rapl_source_ops;

#define PC "sys/class/powercap/"

/* A probed rapl source on a root directory. */
struct probed {
    struct fsroot root;
    struct channel_set *set;
    struct source src;
    int r; /* what probe returned */
};

static struct probed *probe_dir(const char *dir)
{
    struct probed *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->set = calloc(1, sizeof *p->set);
    assert_non_null(p->set);
    p->r = tu_probe(&p->src, &rapl_source_ops, &p->root, dir, p->set);
    return p;
}

static struct probed *probe_fixture(const char *name)
{
    char dir[512];
    tu_fixture_path(dir, sizeof dir, name);
    return probe_dir(dir);
}

static void probed_free(struct probed *p)
{
    tu_unprobe(&p->src, &p->root);
    free(p->set);
    free(p);
}

/* What one channel must be; parent by name ("" for none). */
struct want {
    const char *name;
    enum channel_kind kind;
    const char *zone;
    enum channel_domain domain;
    const char *parent;
    int socket;
    uint64_t range;
    const char *path;
};

static void check_channels(const struct channel_set *set, const struct want *w, size_t n)
{
    assert_int_equal(set->n, n);
    for (size_t i = 0; i < n; i++) {
        const struct channel *c = &set->ch[i];
        assert_string_equal(c->name, w[i].name);
        assert_string_equal(c->source, "rapl");
        assert_int_equal(c->kind, w[i].kind);
        assert_string_equal(c->zone, w[i].zone);
        assert_int_equal(c->domain, w[i].domain);
        if (w[i].parent[0]) {
            assert_true(c->parent >= 0 && (size_t)c->parent < set->n);
            assert_string_equal(set->ch[c->parent].name, w[i].parent);
        } else {
            assert_int_equal(c->parent, -1);
        }
        assert_int_equal(c->socket, w[i].socket);
        assert_int_equal(c->form, FORM_COUNTER);
        assert_true(c->counter_range == w[i].range);
        assert_true(c->counter_unit_j == 1e-6);
        assert_int_equal(c->method, METHOD_MEASURED);
        assert_string_equal(c->path, w[i].path);
        /* the label is the zone's own name: the last part of the channel name */
        assert_string_equal(c->label, strrchr(c->name, '/') + 1);
    }
}

static void test_intel_2s(void **state)
{
    (void)state;
    struct probed *p = probe_fixture("intel-2s");
    assert_int_equal(p->r, 6);
    assert_int_equal(p->src.first, 0);
    assert_int_equal(p->src.count, 6);
    static const struct want w[] = {
        {"rapl/package-0", KIND_CPU, "package", DOMAIN_TOTAL, "", 0, 262143328850ULL,
         PC "intel-rapl:0/energy_uj"},
        {"rapl/package-0/core", KIND_CPU, "core", DOMAIN_COMPONENT, "rapl/package-0", 0,
         262143328850ULL, PC "intel-rapl:0:0/energy_uj"},
        {"rapl/package-0/dram", KIND_DRAM, "dram", DOMAIN_TOTAL, "", 0, 65712999613ULL,
         PC "intel-rapl:0:1/energy_uj"},
        {"rapl/package-1", KIND_CPU, "package", DOMAIN_TOTAL, "", 1, 262143328850ULL,
         PC "intel-rapl:1/energy_uj"},
        {"rapl/package-1/core", KIND_CPU, "core", DOMAIN_COMPONENT, "rapl/package-1", 1,
         262143328850ULL, PC "intel-rapl:1:0/energy_uj"},
        {"rapl/package-1/dram", KIND_DRAM, "dram", DOMAIN_TOTAL, "", 1, 65712999613ULL,
         PC "intel-rapl:1:1/energy_uj"},
    };
    check_channels(p->set, w, 6);

    struct reading rd[6];
    memset(rd, 0xff, sizeof rd);
    rapl_source_ops.read(&p->src, rd);
    static const uint64_t v[] = {81234567890ULL, 41234567890ULL, 9234567890ULL,
                                 71234567890ULL, 31234567890ULL, 8234567890ULL};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(rd[i].valid, READING_ENERGY);
        assert_int_equal(rd[i].err, 0);
        assert_true(rd[i].energy_raw == v[i]);
    }
    probed_free(p);
}

static void test_amd_server(void **state)
{
    (void)state;
    struct probed *p = probe_fixture("amd-server");
    assert_int_equal(p->r, 4);
    static const struct want w[] = {
        {"rapl/package-0", KIND_CPU, "package", DOMAIN_TOTAL, "", 0, 65532610987ULL,
         PC "intel-rapl:0/energy_uj"},
        {"rapl/package-0/core", KIND_CPU, "core", DOMAIN_COMPONENT, "rapl/package-0", 0,
         65532610987ULL, PC "intel-rapl:0:0/energy_uj"},
        {"rapl/package-1", KIND_CPU, "package", DOMAIN_TOTAL, "", 1, 65532610987ULL,
         PC "intel-rapl:1/energy_uj"},
        {"rapl/package-1/core", KIND_CPU, "core", DOMAIN_COMPONENT, "rapl/package-1", 1,
         65532610987ULL, PC "intel-rapl:1:0/energy_uj"},
    };
    check_channels(p->set, w, 4);
    struct reading rd[4];
    rapl_source_ops.read(&p->src, rd);
    assert_true(rd[0].energy_raw == 51234567890ULL);
    assert_true(rd[3].energy_raw == 11234567890ULL);
    probed_free(p);
}

static void test_laptop_psys(void **state)
{
    (void)state;
    struct probed *p = probe_fixture("laptop");
    /* intel-rapl-mmio:0 mirrors package-0: not a channel */
    assert_int_equal(p->r, 6);
    static const struct want w[] = {
        {"rapl/package-0", KIND_CPU, "package", DOMAIN_COMPONENT, "rapl/psys", 0, 262143328850ULL,
         PC "intel-rapl:0/energy_uj"},
        {"rapl/package-0/core", KIND_CPU, "core", DOMAIN_COMPONENT, "rapl/package-0", 0,
         262143328850ULL, PC "intel-rapl:0:0/energy_uj"},
        {"rapl/package-0/uncore", KIND_SOC, "uncore", DOMAIN_COMPONENT, "rapl/package-0", 0,
         262143328850ULL, PC "intel-rapl:0:1/energy_uj"},
        {"rapl/package-0/graphics", KIND_GPU, "graphics", DOMAIN_COMPONENT, "rapl/package-0", 0,
         262143328850ULL, PC "intel-rapl:0:2/energy_uj"},
        {"rapl/package-0/dram", KIND_DRAM, "dram", DOMAIN_COMPONENT, "rapl/psys", 0,
         262143328850ULL, PC "intel-rapl:0:3/energy_uj"},
        {"rapl/psys", KIND_SYSTEM, "psys", DOMAIN_TOTAL, "", -1, 262143328850ULL,
         PC "intel-rapl:1/energy_uj"},
    };
    check_channels(p->set, w, 6);
    for (size_t i = 0; i < p->set->n; i++)
        assert_null(strstr(p->set->ch[i].path, "mmio"));
    /* exactly one total: psys */
    int totals = 0;
    for (size_t i = 0; i < p->set->n; i++)
        totals += channel_is_total(p->set, i);
    assert_int_equal(totals, 1);
    struct reading rd[6];
    rapl_source_ops.read(&p->src, rd);
    assert_true(rd[0].energy_raw == 12345678901ULL);
    assert_true(rd[3].energy_raw == 45678901ULL);
    assert_true(rd[5].energy_raw == 23456789012ULL);
    probed_free(p);
}

static void test_vm_empty_absent(void **state)
{
    (void)state;
    struct probed *p = probe_fixture("vm-empty");
    assert_int_equal(p->r, -ENOENT);
    assert_int_equal(p->set->n, 0);
    assert_non_null(strstr(p->src.reason, "no RAPL zones under sys/class/powercap"));
    assert_non_null(strstr(p->src.reason, "modprobe intel_rapl_msr"));
    probed_free(p);
}

/* A zone written below tu_dir: its name, and its energy_uj and range unless NULL. */
static void zone(const char *dir, const char *name, const char *energy, const char *range)
{
    char rel[300];
    snprintf(rel, sizeof rel, PC "%s/name", dir);
    tu_put(rel, name);
    if (energy) {
        snprintf(rel, sizeof rel, PC "%s/energy_uj", dir);
        tu_put(rel, energy);
    }
    if (range) {
        snprintf(rel, sizeof rel, PC "%s/max_energy_range_uj", dir);
        tu_put(rel, range);
    }
}

/* A package whose energy_uj root alone may read: the channel is missing, the reason names
 * the file and the CVE, its subzones keep their names and sockets. */
static void test_eacces_one_zone(void **state)
{
    (void)state;
    setenv("CARMA_FAULT", "eacces:sys/class/powercap/intel-rapl:0/energy_uj", 1);
    struct probed *p = probe_fixture("intel-2s");
    assert_int_equal(p->r, 5);
    assert_int_equal(tu_channel_index(p->set, "rapl/package-0"), -1);
    /* the source is usable: the skipped file is a note, not a reason */
    assert_string_equal(p->src.reason, "");
    assert_non_null(strstr(p->src.note, "cannot read sys/class/powercap/intel-rapl:0/energy_uj"));
    assert_non_null(strstr(p->src.note, "CVE-2020-8694"));
    assert_non_null(strstr(p->src.note, "root"));

    int core = tu_channel_index(p->set, "rapl/package-0/core");
    int dram = tu_channel_index(p->set, "rapl/package-0/dram");
    assert_int_equal(core, 0);
    assert_int_equal(dram, 1);
    assert_int_equal(p->set->ch[core].socket, 0);
    assert_int_equal(p->set->ch[core].domain, DOMAIN_COMPONENT);
    assert_int_equal(p->set->ch[core].parent, -1); /* the package is no channel here */
    assert_int_equal(p->set->ch[dram].socket, 0);
    assert_int_equal(p->set->ch[dram].domain, DOMAIN_TOTAL);
    int pkg1 = tu_channel_index(p->set, "rapl/package-1");
    assert_int_equal(pkg1, 2);
    assert_int_equal(p->set->ch[tu_channel_index(p->set, "rapl/package-1/core")].parent, pkg1);

    /* names stay unique */
    for (size_t i = 0; i < p->set->n; i++)
        for (size_t j = i + 1; j < p->set->n; j++)
            assert_string_not_equal(p->set->ch[i].name, p->set->ch[j].name);

    /* the fds left match the channels: reads land in the right slots */
    struct reading rd[5];
    rapl_source_ops.read(&p->src, rd);
    assert_true(rd[0].energy_raw == 41234567890ULL);
    assert_true(rd[1].energy_raw == 9234567890ULL);
    assert_true(rd[2].energy_raw == 71234567890ULL);
    probed_free(p);
    unsetenv("CARMA_FAULT");
}

static void test_eacces_all(void **state)
{
    (void)state;
    setenv("CARMA_FAULT",
           "eacces:" PC "intel-rapl:0/energy_uj;eacces:" PC "intel-rapl:0:0/energy_uj;"
           "eacces:" PC "intel-rapl:0:1/energy_uj;eacces:" PC "intel-rapl:1/energy_uj;"
           "eacces:" PC "intel-rapl:1:0/energy_uj;eacces:" PC "intel-rapl:1:1/energy_uj",
           1);
    struct probed *p = probe_fixture("intel-2s");
    assert_int_equal(p->r, -EACCES);
    assert_int_equal(p->src.count, 0);
    assert_non_null(strstr(p->src.reason, "CVE-2020-8694"));
    assert_non_null(strstr(p->src.reason, PC "intel-rapl:0/energy_uj"));
    /* said once, not once per zone */
    const char *first = strstr(p->src.reason, "CVE-2020-8694");
    assert_null(strstr(first + 1, "CVE-2020-8694"));
    probed_free(p);

    /* through the sampler: kept with its status and reason, no channel */
    char dir[512];
    tu_fixture_path(dir, sizeof dir, "intel-2s");
    struct sampler_opts o = {.root = dir, .sources = "rapl"};
    struct carma_err e = {0};
    struct sampler *s = sampler_new(&o, &e);
    assert_non_null(s);
    assert_int_equal(s->nsrc, 1);
    assert_int_equal(s->src[0].status, -EACCES);
    assert_int_equal(s->set.n, 0);
    assert_non_null(strstr(s->src[0].reason, "CVE-2020-8694"));
    sampler_free(s);
    unsetenv("CARMA_FAULT");
}

static void test_no_powercap(void **state)
{
    (void)state;
    tu_put("proc/stat", "cpu  1 2 3 4\n");
    struct probed *p = probe_dir(tu_dir);
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "no RAPL zones"));
    probed_free(p);

    /* an empty powercap directory (or one with only mmio zones) is absent too */
    tu_mkdirs(PC);
    p = probe_dir(tu_dir);
    assert_int_equal(p->r, -ENOENT);
    probed_free(p);
    zone("intel-rapl-mmio:0", "package-0", "5", "100");
    p = probe_dir(tu_dir);
    assert_int_equal(p->r, -ENOENT);
    assert_int_equal(p->set->n, 0);
    probed_free(p);

    /* zones whose energy_uj is missing (not denied): -ENOENT with its own reason */
    zone("intel-rapl:0", "package-0", NULL, "100");
    p = probe_dir(tu_dir);
    assert_int_equal(p->r, -ENOENT);
    assert_non_null(strstr(p->src.reason, "none has a readable energy_uj"));
    probed_free(p);
}

/* Top zones numbered past 9 sort between 1 and 1:0; every subzone still finds its package. */
static void test_many_packages_and_unknown_zone(void **state)
{
    (void)state;
    zone("intel-rapl:1", "package-1", "10", "1000");
    zone("intel-rapl:1:0", "core", "11", "1000");
    zone("intel-rapl:10", "package-10", "20", "2000");
    zone("intel-rapl:10:0", "core", "21", "2000");
    zone("intel-rapl:10:1", "dram", "22", NULL);
    zone("intel-rapl:10:2", "mystery", "23", "2000");
    struct probed *p = probe_dir(tu_dir);
    assert_int_equal(p->r, 6);
    int pkg1 = tu_channel_index(p->set, "rapl/package-1");
    int pkg10 = tu_channel_index(p->set, "rapl/package-10");
    assert_true(pkg1 >= 0 && pkg10 >= 0);
    assert_int_equal(p->set->ch[pkg10].socket, 10);
    int c1 = tu_channel_index(p->set, "rapl/package-1/core");
    int c10 = tu_channel_index(p->set, "rapl/package-10/core");
    assert_int_equal(p->set->ch[c1].parent, pkg1);
    assert_int_equal(p->set->ch[c1].socket, 1);
    assert_int_equal(p->set->ch[c10].parent, pkg10);
    assert_int_equal(p->set->ch[c10].socket, 10);
    int d10 = tu_channel_index(p->set, "rapl/package-10/dram");
    assert_true(d10 >= 0);
    assert_true(p->set->ch[d10].counter_range == 0); /* unknown range */
    int m = tu_channel_index(p->set, "rapl/package-10/mystery");
    assert_true(m >= 0);
    assert_int_equal(p->set->ch[m].kind, KIND_OTHER);
    assert_string_equal(p->set->ch[m].zone, "other");
    assert_int_equal(p->set->ch[m].domain, DOMAIN_COMPONENT);
    assert_int_equal(p->set->ch[m].parent, pkg10);
    assert_int_equal(p->set->ch[m].socket, 10);

    struct reading rd[6];
    rapl_source_ops.read(&p->src, rd);
    assert_true(rd[c10].energy_raw == 21);
    assert_true(rd[m].energy_raw == 23);
    probed_free(p);
}

/* Bad counter content is an invalid reading with -EINVAL, never a value. */
static void test_read_invalid(void **state)
{
    (void)state;
    tu_copy_fixture("amd-server");
    struct probed *p = probe_dir(tu_dir);
    assert_int_equal(p->r, 4);
    static const char *const bad[] = {
        "abc\n",
        "",
        "\n",
        "-5\n",
        "12 34\n",
        "18446744073709551616\n",
        "1234567890123456789012345678901234567890\n", /* longer than the read buffer */
    };
    struct reading rd[4];
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tu_put(PC "intel-rapl:0/energy_uj", bad[k]);
        memset(rd, 0, sizeof rd);
        rd[0].valid = READING_ENERGY;
        rd[0].energy_raw = 77;
        rapl_source_ops.read(&p->src, rd);
        assert_int_equal(rd[0].valid, 0);
        assert_int_equal(rd[0].err, -EINVAL);
        /* the others are unaffected */
        assert_int_equal(rd[1].valid, READING_ENERGY);
        assert_true(rd[1].energy_raw == 21234567890ULL);
    }
    tu_put(PC "intel-rapl:0/energy_uj", "18446744073709551615\n");
    rapl_source_ops.read(&p->src, rd);
    assert_int_equal(rd[0].valid, READING_ENERGY);
    assert_int_equal(rd[0].err, 0);
    assert_true(rd[0].energy_raw == UINT64_MAX);
    probed_free(p);
}

/* enodev@N: a sensor that vanishes after N reads reports -ENODEV. */
static void test_read_enodev(void **state)
{
    (void)state;
    setenv("CARMA_FAULT", "enodev@2:" PC "intel-rapl:1:0/energy_uj", 1);
    struct probed *p = probe_fixture("amd-server");
    assert_int_equal(p->r, 4);
    struct reading rd[4];
    for (int k = 0; k < 2; k++) {
        rapl_source_ops.read(&p->src, rd);
        assert_int_equal(rd[3].valid, READING_ENERGY);
        assert_true(rd[3].energy_raw == 11234567890ULL);
    }
    rapl_source_ops.read(&p->src, rd);
    assert_int_equal(rd[3].valid, 0);
    assert_int_equal(rd[3].err, -ENODEV);
    assert_int_equal(rd[2].valid, READING_ENERGY);
    probed_free(p);
    unsetenv("CARMA_FAULT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intel_2s),
        cmocka_unit_test(test_amd_server),
        cmocka_unit_test(test_laptop_psys),
        cmocka_unit_test(test_vm_empty_absent),
        cmocka_unit_test_setup_teardown(test_eacces_one_zone, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_eacces_all, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_powercap, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_many_packages_and_unknown_zone, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_invalid, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_read_enodev, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for sources/hwmon: the OEM label table, probing the grace and acpi-meter fixture
 * trees, and trees built here for bad contents, faults, aliases and the device exceptions
 * (amdgpu, amd_energy).
 *
 * Behaviour asserted beyond the header: a second socket total of the same socket (another
 * naming of the same sensor) is a component of the first, never a total; classified labels
 * only count on power_meter devices; the value path of an alias is the side it was found on
 * (hwmonX/ before device/); value files larger than the read buffer are bad content
 * (-EINVAL), like non-numbers.
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
#include <unistd.h>

#include "sources/hwmon.h"
#include "testutil.h"

static struct channel_set set;

#define ROOT_MAX   256 /* a fixture's directory */
#define PATH_MAX_T 512 /* a file below it */

/* ---- helpers ---- */

struct probed {
    struct fsroot root;
    struct source s;
    int ret;
    int fds_before;
};

/*
 * Probes hwmon at path with an empty set (or one holding `before` channels already), with
 * CARMA_FAULT set to fault for the probe (unset when NULL); CARMA_FAULT is unset afterwards.
 */
static void probe_at(struct probed *p, const char *path, size_t before, const char *fault)
{
    memset(p, 0, sizeof *p);
    p->fds_before = tu_count_fds();
    set.n = 0;
    for (size_t i = 0; i < before; i++) {
        int idx = channel_set_add(&set);
        assert_true(idx >= 0);
        snprintf(set.ch[idx].name, sizeof set.ch[idx].name, "dummy/%zu", i);
        set.ch[idx].source = "dummy";
    }
    if (fault)
        setenv("CARMA_FAULT", fault, 1);
    else
        unsetenv("CARMA_FAULT");
    p->ret = tu_probe(&p->s, &hwmon_source_ops, &p->root, path, &set);
    unsetenv("CARMA_FAULT");
}

/* probe_at() on fixture tree name, without faults. */
static void probe_fixture(struct probed *p, const char *name, size_t before)
{
    char path[ROOT_MAX];
    tu_fixture_path(path, sizeof path, name);
    probe_at(p, path, before, NULL);
}

static void probed_done(struct probed *p)
{
    tu_unprobe(&p->s, &p->root);
    hwmon_source_ops.close(&p->s);                   /* twice is safe */
    assert_int_equal(tu_count_fds(), p->fds_before); /* every fd opened at probe was closed */
}

/* Index of the channel named name in the set, or -1. */
static int find(const char *name)
{
    return tu_channel_index(&set, name);
}

/* Index of name, failing the test when it is absent. */
static int must_find(const char *name)
{
    int i = find(name);
    if (i < 0)
        fail_msg("no channel %s", name);
    return i;
}

/* A symbolic link rel below tu_dir to target, made with its directories. */
static void link_to(const char *rel, const char *target)
{
    char path[PATH_MAX_T];
    snprintf(path, sizeof path, "%s/%s", tu_dir, rel);
    tu_mkdirs(rel);
    assert_int_equal(symlink(target, path), 0);
}

/* A power_meter device hwmon<n> below tu_dir, with the value on hwmonX/ and the OEM text under
 * device/. */
static void put_meter(int n, const char *oem, const char *value)
{
    char rel[256];
    snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d/name", n);
    tu_put(rel, "power_meter\n");
    snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d/power1_average", n);
    tu_put(rel, value);
    if (oem) {
        char text[256];
        snprintf(text, sizeof text, "%s\n", oem);
        snprintf(rel, sizeof rel, "sys/class/hwmon/hwmon%d/device/power1_oem_info", n);
        tu_put(rel, text);
    }
}

/* Two meters: the socket 0 total at 150 W (hwmon0), a CPU rail at 125.5 W (hwmon1). */
static void two_meters(void)
{
    put_meter(0, "Grace Power Socket 0", "150000000\n");
    put_meter(1, "CPU Power Socket 0", "125500000\n");
}

static void read_all(struct probed *p, struct reading *out)
{
    hwmon_source_ops.read(&p->s, out);
}

/* ---- classification ---- */

static void test_classify_table(void **state)
{
    (void)state;
    static const struct {
        const char *label;
        enum hwmon_oem_kind kind;
        int socket;
    } cases[] = {
        /* every form of the table */
        {"Grace Power Socket 0", HWMON_OEM_TOTAL, 0},
        {"Total Power socket 1", HWMON_OEM_TOTAL, 1},
        {"Total Power in uW socket 0", HWMON_OEM_TOTAL, 0},
        {"Total Input Power socket 1", HWMON_OEM_TOTAL, 1},
        {"Total Input Power in uW socket 0", HWMON_OEM_TOTAL, 0},
        {"CPU Rail Power socket 0", HWMON_OEM_CPU_RAIL, 0},
        {"CPU Rail Power in uW socket 1", HWMON_OEM_CPU_RAIL, 1},
        {"CPU Rail Input Power socket 0", HWMON_OEM_CPU_RAIL, 0},
        {"CPU Rail Input Power in uW socket 1", HWMON_OEM_CPU_RAIL, 1},
        {"CPU Power Socket 0", HWMON_OEM_CPU_RAIL, 0},
        {"SoC Rail Power socket 1", HWMON_OEM_SOC, 1},
        {"SoC Rail Power in uW socket 0", HWMON_OEM_SOC, 0},
        {"SoC Rail Input Power socket 1", HWMON_OEM_SOC, 1},
        {"SoC Rail Input Power in uW socket 0", HWMON_OEM_SOC, 0},
        {"SysIO Power Socket 1", HWMON_OEM_SOC, 1},
        {"DRAM Power socket 0", HWMON_OEM_DRAM, 0},
        {"DRAM Power in uW socket 1", HWMON_OEM_DRAM, 1},
        {"DRAM Input Power socket 0", HWMON_OEM_DRAM, 0},
        {"DRAM Input Power in uW socket 1", HWMON_OEM_DRAM, 1},
        /* other */
        {"CPU Rail Output Power in uW socket 0", HWMON_OEM_OTHER, -1},
        {"Total CPU Energy In uJ socket 0", HWMON_OEM_OTHER, -1},
        {"Chipthrot DDR Throttle socket 0", HWMON_OEM_OTHER, -1},
        {"Module Socket A", HWMON_OEM_OTHER, -1},
        {"Module Power Socket 0", HWMON_OEM_OTHER, -1},
        {"", HWMON_OEM_OTHER, -1},
        {"socket 0", HWMON_OEM_OTHER, -1},
        {"power1", HWMON_OEM_OTHER, -1},
        /* first match wins, in needle order */
        {"Grace Power Socket 1 CPU Power", HWMON_OEM_TOTAL, 1},
        {"CPU Power Socket 2 Grace Power Socket 3", HWMON_OEM_TOTAL, 3},
        {"CPU Power Socket \"x", HWMON_OEM_OTHER, -1},
        /* a needle without digits passes to the next needle */
        {"Grace Power Socket x CPU Power Socket 3", HWMON_OEM_CPU_RAIL, 3},
        /* only the first occurrence of a needle counts */
        {"CPU Power Socket x CPU Power Socket 3", HWMON_OEM_OTHER, -1},
        /* no space, or nothing, after the needle */
        {"Grace Power Socket", HWMON_OEM_OTHER, -1},
        {"Grace Power Socket ", HWMON_OEM_OTHER, -1},
        {"DRAM Power socket0", HWMON_OEM_OTHER, -1},
        {"Grace Power Socket -1", HWMON_OEM_OTHER, -1},
        {"Grace Power Socket +1", HWMON_OEM_OTHER, -1},
        /* case and whitespace */
        {"GRACE POWER SOCKET 12", HWMON_OEM_TOTAL, 12},
        {"grace power socket 3", HWMON_OEM_TOTAL, 3},
        {"Total  Input\tPower in uW   socket 1", HWMON_OEM_TOTAL, 1},
        {"SoC Rail Power In UW Socket 2", HWMON_OEM_SOC, 2},
        {"DRAM\nPower\r\nsocket\t\t7", HWMON_OEM_DRAM, 7},
        {"  Grace Power Socket 0  ", HWMON_OEM_TOTAL, 0},
        /* the maximal run of digits, whatever follows it */
        {"Grace Power Socket 007", HWMON_OEM_TOTAL, 7},
        {"Grace Power Socket 1x", HWMON_OEM_TOTAL, 1},
        {"Grace Power Socket 1.5", HWMON_OEM_TOTAL, 1},
        {"Grace Power Socket 4095", HWMON_OEM_TOTAL, 4095},
        {"Grace Power Socket 4096", HWMON_OEM_OTHER, -1},
        {"Grace Power Socket 99999999999999999999999", HWMON_OEM_OTHER, -1},
        {"Grace Power Socket 99999999999 CPU Power Socket 1", HWMON_OEM_CPU_RAIL, 1},
        /* a needle anywhere in the text */
        {"Node Grace Power Socket 0 (avg)", HWMON_OEM_TOTAL, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum hwmon_oem_kind kind = (enum hwmon_oem_kind) - 1;
        int socket = -2;
        int r = hwmon_classify_oem(cases[i].label, &kind, &socket);
        if (r != (cases[i].kind != HWMON_OEM_OTHER) || kind != cases[i].kind ||
            socket != cases[i].socket)
            fail_msg("\"%s\": got %d %s/%d, want %s/%d", cases[i].label, r,
                     hwmon_oem_kind_name(kind), socket, hwmon_oem_kind_name(cases[i].kind),
                     cases[i].socket);
    }
}

static void test_classify_null(void **state)
{
    (void)state;
    enum hwmon_oem_kind kind = HWMON_OEM_DRAM;
    int socket = 9;
    assert_int_equal(hwmon_classify_oem(NULL, &kind, &socket), -EINVAL);
    assert_int_equal(kind, HWMON_OEM_DRAM);
    assert_int_equal(socket, 9);
    assert_string_equal(hwmon_oem_kind_name(HWMON_OEM_TOTAL), "total");
    assert_string_equal(hwmon_oem_kind_name(HWMON_OEM_CPU_RAIL), "cpu_rail");
    assert_string_equal(hwmon_oem_kind_name(HWMON_OEM_SOC), "soc");
    assert_string_equal(hwmon_oem_kind_name(HWMON_OEM_DRAM), "dram");
    assert_string_equal(hwmon_oem_kind_name(HWMON_OEM_OTHER), "other");
    assert_string_equal(hwmon_oem_kind_name((enum hwmon_oem_kind)42), "other");
}

/* ---- fixtures ---- */

struct want {
    const char *name;
    enum channel_kind kind;
    const char *zone;
    enum channel_domain domain;
    int socket;
    const char *parent; /* NULL: -1 */
    const char *label;
    const char *path; /* below sys/class/hwmon/ */
    double watts;
    int64_t window_ns;
};

#define S0  "hwmon/power_meter/socket0/"
#define S1  "hwmon/power_meter/socket1/"
#define PM  "hwmon/power_meter/"
#define W50 50000000

/* The grace fixture in probe order: hwmon dirs sorted as strings (hwmon10 before hwmon2). */
static const struct want grace[] = {
    {PM "hwmon0/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL, "Module Power Socket 0",
     "hwmon0/device/power1_average", 412.5, W50},
    {S0 "total", KIND_CPU, "total", DOMAIN_TOTAL, 0, NULL, "Grace Power Socket 0",
     "hwmon1/device/power1_average", 150.0, W50},
    {S0 "total.hwmon10.power1", KIND_CPU, "total", DOMAIN_COMPONENT, 0, S0 "total",
     "Total Power socket 0", "hwmon10/power1_average", 150.25, W50},
    {S0 "total.hwmon11.power1", KIND_CPU, "total", DOMAIN_COMPONENT, 0, S0 "total",
     "Total Input Power socket 0", "hwmon11/power1_average", 149.75, W50},
    {S0 "cpu_rail", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 0, S0 "total",
     "CPU Rail Power socket 0", "hwmon12/power1_average", 125.25, W50},
    {S1 "cpu_rail", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 1, S1 "total",
     "CPU Rail Power in uW socket 1", "hwmon13/power1_average", 118.25, W50},
    {S0 "cpu_rail.hwmon14.power1", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 0, S0 "total",
     "CPU Rail Input Power socket 0", "hwmon14/power1_average", 125.75, W50},
    {S1 "cpu_rail.hwmon15.power1", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 1, S1 "total",
     "CPU Rail Input Power in uW socket 1", "hwmon15/power1_average", 117.75, W50},
    {S0 "soc", KIND_SOC, "soc", DOMAIN_COMPONENT, 0, S0 "total", "SoC Rail Power socket 0",
     "hwmon16/power1_average", 9.5, W50},
    {S1 "soc", KIND_SOC, "soc", DOMAIN_COMPONENT, 1, S1 "total", "SoC Rail Power in uW socket 1",
     "hwmon17/power1_average", 9.25, W50},
    {S0 "soc.hwmon18.power1", KIND_SOC, "soc", DOMAIN_COMPONENT, 0, S0 "total",
     "SoC Rail Input Power socket 0", "hwmon18/power1_average", 9.75, W50},
    {S1 "soc.hwmon19.power1", KIND_SOC, "soc", DOMAIN_COMPONENT, 1, S1 "total",
     "SoC Rail Input Power in uW socket 1", "hwmon19/power1_average", 9.0, W50},
    {S0 "cpu_rail.hwmon2.power1", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 0, S0 "total",
     "CPU Power Socket 0", "hwmon2/power1_average", 125.5, W50},
    {S0 "dram", KIND_DRAM, "dram", DOMAIN_COMPONENT, 0, S0 "total", "DRAM Power socket 0",
     "hwmon20/power1_average", 8.0, W50},
    {S1 "dram", KIND_DRAM, "dram", DOMAIN_COMPONENT, 1, S1 "total", "DRAM Power in uW socket 1",
     "hwmon21/power1_average", 7.5, W50},
    {S0 "dram.hwmon22.power1", KIND_DRAM, "dram", DOMAIN_COMPONENT, 0, S0 "total",
     "DRAM Input Power socket 0", "hwmon22/power1_average", 8.25, W50},
    {S1 "dram.hwmon23.power1", KIND_DRAM, "dram", DOMAIN_COMPONENT, 1, S1 "total",
     "DRAM Input Power in uW socket 1", "hwmon23/power1_average", 7.25, W50},
    {PM "hwmon24/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL,
     "CPU Rail Output Power in uW socket 0", "hwmon24/power1_average", 118.5, W50},
    {PM "hwmon25/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL,
     "Total CPU Energy In uJ socket 0", "hwmon25/power1_average", 1.234567, W50},
    {PM "hwmon26/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL,
     "Chipthrot DDR Throttle socket 0", "hwmon26/power1_average", 0.0, W50},
    {PM "hwmon27/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL, "Module Socket A",
     "hwmon27/power1_average", 205.0, W50},
    {S0 "soc.hwmon3.power1", KIND_SOC, "soc", DOMAIN_COMPONENT, 0, S0 "total",
     "SysIO Power Socket 0", "hwmon3/power1_average", 9.5, W50},
    {PM "hwmon4/power1", KIND_OTHER, "other", DOMAIN_COMPONENT, -1, NULL, "Module Power Socket 1",
     "hwmon4/device/power1_average", 398.0, W50},
    {S1 "total", KIND_CPU, "total", DOMAIN_TOTAL, 1, NULL, "Grace Power Socket 1",
     "hwmon5/power1_input", 141.25, 0},
    {S1 "cpu_rail.hwmon6.power1", KIND_CPU, "cpu_rail", DOMAIN_COMPONENT, 1, S1 "total",
     "CPU Power Socket 1", "hwmon6/power1_average", 118.0, W50},
    {S1 "soc.hwmon7.power1", KIND_SOC, "soc", DOMAIN_COMPONENT, 1, S1 "total",
     "SysIO Power Socket 1", "hwmon7/power1_average", 9.25, W50},
    {S1 "total.hwmon8.power1", KIND_CPU, "total", DOMAIN_COMPONENT, 1, S1 "total",
     "Total Power in uW socket 1", "hwmon8/power1_average", 141.0, W50},
    {S1 "total.hwmon9.power1", KIND_CPU, "total", DOMAIN_COMPONENT, 1, S1 "total",
     "Total  Input Power in uW socket 1", "hwmon9/power1_average", 141.5, W50},
};

static void check_wants(struct probed *p, const struct want *w, size_t n)
{
    assert_int_equal(p->ret, (int)n);
    assert_int_equal(p->s.count, n);
    assert_int_equal(set.n, p->s.first + n);
    struct reading r[64];
    assert_true(n <= 64);
    memset(r, 0xa5, sizeof r);
    read_all(p, r);
    for (size_t i = 0; i < n; i++) {
        const struct channel *ch = &set.ch[p->s.first + i];
        char path[CHANNEL_PATH_MAX];
        snprintf(path, sizeof path, "sys/class/hwmon/%s", w[i].path);
        if (strcmp(ch->name, w[i].name) != 0)
            fail_msg("channel %zu: name %s, want %s", i, ch->name, w[i].name);
        assert_string_equal(ch->source, "hwmon");
        assert_int_equal(ch->kind, w[i].kind);
        assert_string_equal(ch->zone, w[i].zone);
        assert_int_equal(ch->domain, w[i].domain);
        assert_int_equal(ch->socket, w[i].socket);
        assert_int_equal(ch->parent, w[i].parent ? must_find(w[i].parent) : -1);
        assert_string_equal(ch->label, w[i].label);
        assert_string_equal(ch->path, path);
        assert_int_equal(ch->form, FORM_GAUGE);
        assert_int_equal(ch->method, METHOD_MEASURED);
        assert_int_equal(ch->gauge_window_ns, w[i].window_ns);
        assert_int_equal(r[i].valid, READING_POWER);
        assert_int_equal(r[i].err, 0);
        assert_float_equal(r[i].power_w, w[i].watts, 1e-9);
    }
}

static void test_probe_grace(void **state)
{
    (void)state;
    struct probed p;
    probe_fixture(&p, "grace", 3);
    assert_int_equal(p.s.first, 3);
    check_wants(&p, grace, sizeof grace / sizeof grace[0]);
    assert_string_equal(p.s.reason, "");

    /* The node figure: the socket totals only (150 + 141.25), never the rails. */
    struct reading r[64];
    read_all(&p, r);
    double node = 0;
    size_t totals = 0;
    for (size_t i = 0; i < p.s.count; i++) {
        if (channel_is_total(&set, p.s.first + i)) {
            node += r[i].power_w;
            totals++;
        }
    }
    assert_int_equal(totals, 2);
    assert_float_equal(node, 291.25, 1e-9);

    /* Every naming variant was read: no channel left out, all names distinct. */
    for (size_t i = 0; i < set.n; i++)
        for (size_t j = i + 1; j < set.n; j++)
            assert_string_not_equal(set.ch[i].name, set.ch[j].name);
    probed_done(&p);
}

static void test_probe_acpi_meter(void **state)
{
    (void)state;
    struct probed p;
    probe_fixture(&p, "acpi-meter", 0);
    static const struct want w[] = {
        {PM "hwmon1", KIND_SYSTEM, "system", DOMAIN_TOTAL, -1, NULL, "power1",
         "hwmon1/power1_average", 345.0, 1000000000},
    };
    check_wants(&p, w, 1);
    assert_string_equal(p.s.reason, "");
    probed_done(&p);
}

/* ---- trees built here ---- */

static void test_bad_contents(void **state)
{
    (void)state;
    static const struct {
        const char *content;
        int err;
        double watts;
    } cases[] = {
        {"abc\n", -EINVAL, 0},
        {"", -EINVAL, 0},
        {"\n", -EINVAL, 0},
        {"99999999999999999999999\n", -EINVAL, 0},
        {"-5\n", -EINVAL, 0},
        {"12.5\n", -EINVAL, 0},
        {"1e6\n", -EINVAL, 0},
        {"150000000 W\n", -EINVAL, 0},
        {"11111111111111111111111111111111111111111111111111111111111111111111111111111\n", -EINVAL,
         0},
        {"0000150000000\n", 0, 150.0},
        {" 42 \n", 0, 0.000042},
        {"18446744073709551615\n", 0, 18446744073709.551615},
        {"0\n", 0, 0.0},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    for (int i = 0; i < N; i++)
        put_meter(i, NULL, cases[i].content);

    struct probed p;
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, N);
    struct reading r[N];
    for (int round = 0; round < 2; round++) {
        memset(r, 0xa5, sizeof r);
        read_all(&p, r);
        for (int i = 0; i < N; i++) {
            char name[64];
            snprintf(name, sizeof name, PM "hwmon%d", i);
            int idx = must_find(name) - (int)p.s.first;
            assert_int_equal(set.ch[p.s.first + idx].kind, KIND_SYSTEM);
            if (r[idx].err != cases[i].err)
                fail_msg("\"%s\": err %d, want %d", cases[i].content, r[idx].err, cases[i].err);
            if (cases[i].err) {
                assert_int_equal(r[idx].valid, 0);
            } else {
                assert_int_equal(r[idx].valid, READING_POWER);
                assert_float_equal(r[idx].power_w, cases[i].watts, 1e-6);
            }
        }
    }
    probed_done(&p);
}

static void test_vanishing_file(void **state)
{
    (void)state;
    two_meters();

    struct probed p;
    probe_at(&p, tu_dir, 0, "enodev@1:sys/class/hwmon/hwmon0/power1_average");
    assert_int_equal(p.ret, 2);
    assert_string_equal(set.ch[0].name, S0 "total");
    struct reading r[2];
    read_all(&p, r);
    assert_int_equal(r[0].valid, READING_POWER);
    assert_float_equal(r[0].power_w, 150.0, 1e-9);
    for (int round = 0; round < 3; round++) {
        memset(r, 0xa5, sizeof r);
        read_all(&p, r);
        assert_int_equal(r[0].valid, 0);
        assert_int_equal(r[0].err, -ENODEV);
        assert_int_equal(r[1].valid, READING_POWER);
        assert_int_equal(r[1].err, 0);
        assert_float_equal(r[1].power_w, 125.5, 1e-9);
    }
    probed_done(&p);
}

static void test_unreadable_file(void **state)
{
    (void)state;
    two_meters();

    /* One of two unreadable: the other is kept, the reason names the file. */
    struct probed p;
    probe_at(&p, tu_dir, 0, "eacces:sys/class/hwmon/hwmon0/power1_average");
    assert_int_equal(p.ret, 1);
    assert_string_equal(set.ch[0].name, S0 "cpu_rail");
    assert_int_equal(set.ch[0].parent, -1);
    /* a usable source carries its warnings as a note, not as a reason */
    assert_string_equal(p.s.reason, "");
    assert_non_null(strstr(p.s.note, "sys/class/hwmon/hwmon0/power1_average"));
    assert_non_null(strstr(p.s.note, strerror(EACCES)));
    assert_non_null(strstr(p.s.note, "root"));
    assert_non_null(strstr(p.s.note, "no socket total for socket 0"));
    probed_done(&p);

    /* The only channel unreadable: the probe fails with -EACCES and the fix. */
    probe_at(&p, tu_dir, 0,
             "eacces:sys/class/hwmon/hwmon0/power1_average;"
             "eacces:sys/class/hwmon/hwmon1/power1_average");
    assert_int_equal(p.ret, -EACCES);
    assert_int_equal(p.s.count, 0);
    assert_int_equal(set.n, 0);
    assert_null(p.s.priv);
    assert_non_null(strstr(p.s.reason, "sys/class/hwmon/hwmon0/power1_average"));
    assert_non_null(strstr(p.s.reason, "run carma as root"));
    assert_non_null(strstr(p.s.reason, "1 more"));
    probed_done(&p);
}

static void test_absent_and_empty(void **state)
{
    (void)state;
    struct probed p;

    /* No sys/class/hwmon at all. */
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, -ENOENT);
    assert_int_equal(p.s.count, 0);
    assert_non_null(strstr(p.s.reason, "no hwmon devices"));
    probed_done(&p);

    /* sys/class/hwmon without devices. */
    tu_mkdirs("sys/class/hwmon/");
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 0);
    assert_non_null(strstr(p.s.reason, "lists no hwmon devices"));
    probed_done(&p);

    /* Devices, none with power or energy (labels without values do not count). */
    tu_put("sys/class/hwmon/hwmon0/name", "acpitz\n");
    tu_put("sys/class/hwmon/hwmon0/temp1_input", "27800\n");
    tu_put("sys/class/hwmon/hwmon1/name", "coretemp\n");
    tu_put("sys/class/hwmon/hwmon1/temp1_input", "41000\n");
    tu_put("sys/class/hwmon/hwmon1/power1_label", "not a value\n");
    tu_put("sys/class/hwmon/hwmon1/power1_average_interval_max", "1000\n");
    tu_put("sys/class/hwmon/notahwmon/power1_average", "1000\n");
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 0);
    assert_int_equal(p.s.count, 0);
    assert_string_equal(p.s.reason, "2 hwmon devices, none reports power or energy");
    probed_done(&p);

    /* close on a source that was never probed */
    struct source s = {.ops = &hwmon_source_ops};
    hwmon_source_ops.close(&s);
}

/* Upstream case: 11 OEM domains incl. output, energy and throttle rails -> 8 classified,
 * node figure 150 + 160 = 310. */
static void test_upstream_eleven_domains(void **state)
{
    (void)state;
    static const struct {
        const char *oem;
        const char *value;
    } meters[] = {
        {"Grace Power Socket 0", "150000000\n"},
        {"CPU Power Socket 0", "125500000\n"},
        {"SysIO Power Socket 0", "9500000\n"},
        {"DRAM Power socket 0", "8000000\n"},
        {"CPU Rail Output Power in uW socket 0", "120000000\n"},
        {"Total CPU Energy In uJ socket 0", "5000000\n"},
        {"Chipthrot DDR Throttle socket 0", "0\n"},
        {"Total Input Power in uW socket 1", "160000000\n"},
        {"CPU Rail Input Power in uW socket 1", "130000000\n"},
        {"SoC Rail Input Power in uW socket 1", "10000000\n"},
        {"DRAM Input Power in uW socket 1", "9000000\n"},
    };
    for (size_t i = 0; i < sizeof meters / sizeof meters[0]; i++)
        put_meter((int)i, meters[i].oem, meters[i].value);
    struct probed p;
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 11);
    struct reading r[11];
    read_all(&p, r);
    size_t classified = 0;
    double node = 0;
    for (size_t i = 0; i < 11; i++) {
        if (strcmp(set.ch[i].zone, "other") != 0)
            classified++;
        if (channel_is_total(&set, i))
            node += r[i].power_w;
    }
    assert_int_equal(classified, 8);
    assert_float_equal(node, 310.0, 1e-9);
    assert_float_equal(r[must_find(S0 "cpu_rail")].power_w, 125.5, 1e-9);
    assert_float_equal(r[must_find(S0 "soc")].power_w, 9.5, 1e-9);
    assert_int_equal(set.ch[must_find(S1 "dram")].parent, must_find(S1 "total"));
    probed_done(&p);
}

static void test_aliases(void **state)
{
    (void)state;
    /* hwmon0 is an alias without a label of hwmon1's labelled file: hwmon1 is kept. */
    tu_put("sys/class/hwmon/hwmon0/name", "power_meter\n");
    link_to("sys/class/hwmon/hwmon0/power1_average", "../hwmon1/device/power1_average");
    tu_put("sys/class/hwmon/hwmon1/device/name", "power_meter\n");
    tu_put("sys/class/hwmon/hwmon1/device/power1_average", "150000000\n");
    tu_put("sys/class/hwmon/hwmon1/device/power1_oem_info", "Grace Power Socket 0\n");
    /* hwmon2 and hwmon3: the same unlabelled file twice: the first is kept. */
    tu_put("sys/class/hwmon/hwmon2/name", "ina2xx\n");
    tu_put("sys/class/hwmon/hwmon2/power1_input", "5000000\n");
    tu_put("sys/class/hwmon/hwmon3/name", "ina2xx\n");
    link_to("sys/class/hwmon/hwmon3/power1_input", "../hwmon2/power1_input");
    /* hwmon4: the value on both sides, one file (the Rust exporter's alias case). */
    tu_put("sys/class/hwmon/hwmon4/device/name", "power_meter\n");
    tu_put("sys/class/hwmon/hwmon4/device/power1_average", "125500000\n");
    tu_put("sys/class/hwmon/hwmon4/device/power1_oem_info", "CPU Power Socket 0\n");
    link_to("sys/class/hwmon/hwmon4/power1_average", "device/power1_average");

    struct probed p;
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 3);
    int t = must_find(S0 "total");
    assert_string_equal(set.ch[t].path, "sys/class/hwmon/hwmon1/device/power1_average");
    int o = must_find("hwmon/ina2xx/hwmon2/power1");
    assert_int_equal(find("hwmon/ina2xx/hwmon3/power1"), -1);
    assert_int_equal(set.ch[o].kind, KIND_OTHER);
    assert_int_equal(set.ch[o].domain, DOMAIN_COMPONENT);
    assert_string_equal(set.ch[o].label, "power1");
    assert_int_equal(set.ch[o].gauge_window_ns, 0);
    int c = must_find(S0 "cpu_rail");
    assert_int_equal(set.ch[c].parent, t);
    assert_string_equal(set.ch[c].label, "CPU Power Socket 0");
    struct reading r[3];
    read_all(&p, r);
    assert_float_equal(r[t].power_w, 150.0, 1e-9);
    assert_float_equal(r[o].power_w, 5.0, 1e-9);
    assert_float_equal(r[c].power_w, 125.5, 1e-9);
    assert_string_equal(p.s.reason, "");
    probed_done(&p);
}

static void test_labels_and_duplicates(void **state)
{
    (void)state;
    /* The same OEM text three times: three channels, distinct names, one total. */
    for (int i = 0; i < 3; i++)
        put_meter(i, "Grace Power Socket 0", "150000000\n");
    /* powerN_label when there is no oem_info; oem_info wins over it. */
    tu_put("sys/class/hwmon/hwmon3/name", "power_meter\n");
    tu_put("sys/class/hwmon/hwmon3/power1_input", "141250000\n");
    tu_put("sys/class/hwmon/hwmon3/power1_label", "Total Power socket 3\n");
    put_meter(4, "DRAM Power socket 3", "8000000\n");
    tu_put("sys/class/hwmon/hwmon4/power1_label", "Total Power socket 4\n");
    /* A classified text on another device means nothing. */
    tu_put("sys/class/hwmon/hwmon5/name", "some dev/x\n");
    tu_put("sys/class/hwmon/hwmon5/power1_input", "1000000\n");
    tu_put("sys/class/hwmon/hwmon5/power1_label", "Grace Power Socket 9\n");
    /* A power_meter with two unlabelled channels: neither is the node's meter. */
    tu_put("sys/class/hwmon/hwmon6/name", "power_meter\n");
    tu_put("sys/class/hwmon/hwmon6/power1_average", "100000000\n");
    tu_put("sys/class/hwmon/hwmon6/power2_average", "200000000\n");
    /* No name at all. */
    tu_put("sys/class/hwmon/hwmon7/power1_input", "2000000\n");

    struct probed p;
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 9);
    int t = must_find(S0 "total");
    assert_int_equal(set.ch[t].domain, DOMAIN_TOTAL);
    for (int i = 1; i < 3; i++) {
        char name[96];
        snprintf(name, sizeof name, S0 "total.hwmon%d.power1", i);
        int d = must_find(name);
        assert_int_equal(set.ch[d].domain, DOMAIN_COMPONENT);
        assert_int_equal(set.ch[d].parent, t);
        assert_int_equal(set.ch[d].socket, 0);
    }
    int t3 = must_find("hwmon/power_meter/socket3/total");
    assert_int_equal(set.ch[t3].domain, DOMAIN_TOTAL);
    assert_string_equal(set.ch[t3].label, "Total Power socket 3");
    assert_int_equal(set.ch[t3].gauge_window_ns, 0);
    int d3 = must_find("hwmon/power_meter/socket3/dram");
    assert_int_equal(set.ch[d3].parent, t3);
    assert_string_equal(set.ch[d3].label, "DRAM Power socket 3");
    assert_int_equal(find("hwmon/power_meter/socket4/total"), -1);
    int x = must_find("hwmon/some_dev_x/hwmon5/power1");
    assert_int_equal(set.ch[x].kind, KIND_OTHER);
    assert_int_equal(set.ch[x].socket, -1);
    assert_string_equal(set.ch[x].label, "Grace Power Socket 9");
    assert_int_equal(set.ch[must_find(PM "hwmon6/power1")].kind, KIND_OTHER);
    assert_int_equal(set.ch[must_find(PM "hwmon6/power2")].kind, KIND_OTHER);
    assert_int_equal(set.ch[must_find("hwmon/unknown/hwmon7/power1")].kind, KIND_OTHER);
    probed_done(&p);
}

static void test_amd_devices(void **state)
{
    (void)state;
    tu_put("sys/class/hwmon/hwmon0/name", "amd_energy\n");
    tu_put("sys/class/hwmon/hwmon0/energy1_input", "1000\n");
    tu_put("sys/class/hwmon/hwmon0/energy1_label", "Ecore000\n");
    tu_put("sys/class/hwmon/hwmon0/energy2_input", "2000\n");
    tu_put("sys/class/hwmon/hwmon0/energy2_label", "Ecore001\n");
    tu_put("sys/class/hwmon/hwmon0/energy3_input", "123456789012\n");
    tu_put("sys/class/hwmon/hwmon0/energy3_label", "Esocket0\n");
    tu_put("sys/class/hwmon/hwmon1/name", "amdgpu\n");
    tu_put("sys/class/hwmon/hwmon1/power1_average", "35000000\n");
    tu_put("sys/class/hwmon/hwmon1/power1_label", "PPT\n");
    tu_put("sys/class/hwmon/hwmon2/name", "amdgpu\n");
    tu_put("sys/class/hwmon/hwmon2/power1_average", "15000000\n");
    tu_put("sys/class/hwmon/hwmon2/power1_label", "slowPPT\n");
    tu_put("sys/class/hwmon/hwmon2/power2_input", "18000000\n");
    tu_put("sys/class/hwmon/hwmon2/power2_label", "fastPPT\n");

    struct probed p;
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 6);
    int c0 = must_find("hwmon/amd_energy/hwmon0/energy1");
    int c1 = must_find("hwmon/amd_energy/hwmon0/energy2");
    int sk = must_find("hwmon/amd_energy/hwmon0/energy3");
    assert_int_equal(set.ch[sk].kind, KIND_CPU);
    assert_int_equal(set.ch[sk].domain, DOMAIN_TOTAL);
    assert_int_equal(set.ch[sk].socket, 0);
    assert_int_equal(set.ch[sk].form, FORM_COUNTER);
    assert_true(set.ch[sk].counter_unit_j == 1e-6);
    assert_true(set.ch[sk].counter_range == 0);
    assert_string_equal(set.ch[sk].label, "Esocket0");
    assert_string_equal(set.ch[sk].path, "sys/class/hwmon/hwmon0/energy3_input");
    for (int i = 0; i < 2; i++) {
        const struct channel *ch = &set.ch[i ? c1 : c0];
        assert_int_equal(ch->kind, KIND_CPU);
        assert_int_equal(ch->domain, DOMAIN_COMPONENT);
        assert_int_equal(ch->parent, sk);
        assert_int_equal(ch->socket, 0);
        assert_int_equal(ch->form, FORM_COUNTER);
    }
    int g = must_find("hwmon/amdgpu/hwmon1/power1");
    assert_int_equal(set.ch[g].kind, KIND_GPU);
    assert_int_equal(set.ch[g].domain, DOMAIN_TOTAL);
    assert_int_equal(set.ch[g].parent, -1);
    int slow = must_find("hwmon/amdgpu/hwmon2/power1");
    int fast = must_find("hwmon/amdgpu/hwmon2/power2");
    assert_int_equal(set.ch[slow].domain, DOMAIN_TOTAL);
    assert_int_equal(set.ch[fast].domain, DOMAIN_COMPONENT);
    assert_int_equal(set.ch[fast].parent, slow);
    assert_int_equal(set.ch[fast].kind, KIND_GPU);

    struct reading r[6];
    read_all(&p, r);
    assert_int_equal(r[sk].valid, READING_ENERGY);
    assert_true(r[sk].energy_raw == 123456789012ULL);
    assert_int_equal(r[c0].valid, READING_ENERGY);
    assert_true(r[c0].energy_raw == 1000);
    assert_int_equal(r[g].valid, READING_POWER);
    assert_float_equal(r[g].power_w, 35.0, 1e-9);
    probed_done(&p);

    /* Two sockets: a core cannot be placed. */
    tu_put("sys/class/hwmon/hwmon0/energy4_input", "5\n");
    tu_put("sys/class/hwmon/hwmon0/energy4_label", "Esocket1\n");
    probe_at(&p, tu_dir, 0, NULL);
    assert_int_equal(p.ret, 7);
    c0 = must_find("hwmon/amd_energy/hwmon0/energy1");
    assert_int_equal(set.ch[c0].parent, -1);
    assert_int_equal(set.ch[c0].socket, -1);
    assert_int_equal(set.ch[must_find("hwmon/amd_energy/hwmon0/energy4")].socket, 1);
    probed_done(&p);
}

static void test_set_full(void **state)
{
    (void)state;
    struct probed p;
    probe_fixture(&p, "grace", CHANNELS_MAX - 2);
    assert_int_equal(p.ret, 2);
    assert_int_equal(set.n, CHANNELS_MAX);
    assert_non_null(strstr(p.s.note, "26 hwmon channels were left out"));
    struct reading r[2];
    read_all(&p, r);
    assert_float_equal(r[1].power_w, 150.0, 1e-9);
    probed_done(&p);

    probe_fixture(&p, "grace", CHANNELS_MAX);
    assert_int_equal(p.ret, -ENOSPC);
    assert_null(p.s.priv);
    probed_done(&p);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_table),
        cmocka_unit_test(test_classify_null),
        cmocka_unit_test(test_probe_grace),
        cmocka_unit_test(test_probe_acpi_meter),
        T(test_bad_contents),
        T(test_vanishing_file),
        T(test_unreadable_file),
        T(test_absent_and_empty),
        T(test_upstream_eleven_domains),
        T(test_aliases),
        T(test_labels_and_duplicates),
        T(test_amd_devices),
        cmocka_unit_test(test_set_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

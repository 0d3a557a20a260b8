/*
 * Unit tests for srt/cpu: srt-slurm's scrape parser (formats doc §5.6: ACPI first, type
 * and socket re-derived from oem_info, DCGM otherwise, ACPI wins, the total rules, its worked
 * example), the CPU samples.csv v1 byte for byte (CRLF, µs timestamps, total_power_w repeated
 * or blank, RFC 4180 quoting, nodes in the order given), cpu_manifest.json (srt-slurm's keys in
 * its order, per-node counts and modes), errors that name the file, a failed write that keeps
 * the cycles before it, and no allocation in the steady state.
 *
 * The parser reads a parsed body (struct prom_doc); most documents here are built by hand, so
 * that those tests do not depend on the text parser; the exporters' own bodies go through it.
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
#include <unistd.h>

#include "srt/cpu.h"
#include "sources/hwmon.h"

/* ---- documents built by hand ---- */

#define DOC_SAMPLES 64
#define DOC_LABELS  8

static struct prom_label doc_labels[DOC_SAMPLES][DOC_LABELS];
static struct prom_sample doc_samples[DOC_SAMPLES];
static struct prom_doc doc;

static void doc_reset(void)
{
    memset(&doc, 0, sizeof doc);
    doc.samples = doc_samples;
}

/* Adds sample name{labels} value; labels is "k=v;k=v" ('=' and ';' not in values). */
static void doc_add(const char *name, const char *labels, double value)
{
    static char store[DOC_SAMPLES][512];
    assert_true(doc.nsamples < DOC_SAMPLES);
    size_t i = doc.nsamples++;
    struct prom_sample *s = &doc_samples[i];
    memset(s, 0, sizeof *s);
    s->name = name;
    s->value = value;
    s->labels = doc_labels[i];
    s->line = i + 1;
    s->family = SIZE_MAX;
    snprintf(store[i], sizeof store[i], "%s", labels);
    char *p = store[i];
    while (*p) {
        assert_true(s->nlabels < DOC_LABELS);
        char *eq = strchr(p, '=');
        assert_non_null(eq);
        *eq = '\0';
        char *end = strchr(eq + 1, ';');
        if (end)
            *end = '\0';
        doc_labels[i][s->nlabels].name = p;
        doc_labels[i][s->nlabels].value = eq + 1;
        s->nlabels++;
        p = end ? end + 1 : eq + 1 + strlen(eq + 1);
    }
}

/* The Rust exporter's ACPI line: sensor, type, socket, oem_info, source="acpi". */
static void acpi(const char *sensor, const char *type, const char *socket, const char *oem,
                 double w)
{
    char l[400];
    snprintf(l, sizeof l, "sensor=%s;type=%s;socket=%s;oem_info=%s;source=acpi", sensor, type,
             socket, oem);
    doc_add("cpu_power_acpi_watts", l, w);
}

static void dcgm(const char *socket, double w)
{
    char l[100];
    snprintf(l, sizeof l, "socket=%s;source=dcgm", socket);
    doc_add("cpu_power_dcgm_watts", l, w);
}

static struct srt_cpu_scrape sc;

static void parse(void)
{
    srt_cpu_parse(&doc, &sc);
}

static void assert_reading(size_t i, const char *oem, int socket, enum hwmon_oem_kind kind,
                           double w)
{
    assert_true(i < sc.n);
    if (oem)
        assert_string_equal(sc.r[i].oem_info, oem);
    else
        assert_null(sc.r[i].oem_info);
    assert_int_equal(sc.r[i].socket, socket);
    assert_int_equal(sc.r[i].kind, (int)kind);
    tu_assert_near(sc.r[i].power_w, w, 0);
}

/* ---- the parser ---- */

/* §5.6's worked example: cpu_rail 48.1 + soc 5.2 + total 93.4 + other 1.0 -> 3 readings,
 * total_power_w 93.4; without the total line: no total (a blank cell). */
static void test_parse_worked_example(void **state)
{
    (void)state;
    doc_reset();
    acpi("hwmon0/power1", "cpu_rail", "0", "CPU Power Socket 0", 48.1);
    acpi("hwmon0/power2", "soc", "0", "SysIO Power Socket 0", 5.2);
    acpi("hwmon0/power3", "total", "0", "Grace Power Socket 0", 93.4);
    acpi("hwmon0/power4", "other", "", "Module Socket A", 1.0);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 3);
    assert_reading(0, "CPU Power Socket 0", 0, HWMON_OEM_CPU_RAIL, 48.1);
    assert_reading(1, "SysIO Power Socket 0", 0, HWMON_OEM_SOC, 5.2);
    assert_reading(2, "Grace Power Socket 0", 0, HWMON_OEM_TOTAL, 93.4);
    assert_true(sc.has_total);
    tu_assert_near(sc.total_power_w, 93.4, 0);

    doc_reset();
    acpi("hwmon0/power1", "cpu_rail", "0", "CPU Power Socket 0", 48.1);
    acpi("hwmon0/power2", "soc", "0", "SysIO Power Socket 0", 5.2);
    acpi("hwmon0/power4", "other", "", "Module Socket A", 1.0);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 2);
    assert_false(sc.has_total);
}

/* Totals of every socket add up; rails never do. Generic Total/DRAM labels: total 88. */
static void test_parse_totals(void **state)
{
    (void)state;
    doc_reset();
    acpi("hwmon0/power1", "total", "0", "Grace Power Socket 0", 150);
    acpi("hwmon0/power2", "cpu_rail", "0", "CPU Power Socket 0", 125.5);
    acpi("hwmon1/power1", "total", "1", "Grace Power Socket 1", 160);
    acpi("hwmon1/power2", "dram", "1", "DRAM Power Socket 1", 9.5);
    parse();
    assert_int_equal(sc.n, 4);
    tu_assert_near(sc.total_power_w, 310, 0);

    doc_reset();
    acpi("hwmon0/power1", "total", "0", "Total Power in uW socket 0", 88);
    acpi("hwmon0/power2", "dram", "0", "DRAM Power in uW socket 0", 8);
    parse();
    assert_int_equal(sc.n, 2);
    tu_assert_near(sc.total_power_w, 88, 0);
}

/* A type outside total/cpu_rail/soc/dram or a bad socket label: kind and socket come from the
 * oem_info text (the Python fallback exporter's grace/cpu/sysio, an older exporter's "other");
 * what still does not classify, and values that are not finite or are negative, are dropped. */
static void test_parse_rederive(void **state)
{
    (void)state;
    doc_reset();
    /* the Python fallback exporter: no sensor label, its own type words */
    doc_add("cpu_power_acpi_watts", "type=grace;socket=0;oem_info=Grace Power Socket 0;source=acpi",
            150);
    doc_add("cpu_power_acpi_watts", "type=cpu;socket=0;oem_info=CPU Power Socket 0;source=acpi",
            70);
    doc_add("cpu_power_acpi_watts", "type=sysio;socket=0;oem_info=SysIO Power Socket 0;source=acpi",
            9);
    /* an older exporter: type="other", socket "" for the Input forms */
    acpi("hwmon1/power1", "other", "", "Total Input Power in uW socket 1", 140);
    acpi("hwmon1/power2", "other", "", "CPU Rail Input Power in uW socket 1", 60);
    acpi("hwmon1/power3", "other", "", "SoC Rail Input Power socket 1", 11);
    acpi("hwmon1/power4", "other", "", "DRAM Input Power in uW socket 1", 7);
    acpi("hwmon1/power5", "other", "", "CPU Rail Output Power in uW socket 1", 55); /* dropped */
    /* a valid type with a bad socket: re-derived from the text, kind included */
    acpi("hwmon2/power1", "cpu_rail", "x", "Total Power socket 2", 120);
    acpi("hwmon2/power2", "total", "-1", "no socket here", 1); /* dropped */
    /* bad values */
    acpi("hwmon3/power1", "total", "3", "Grace Power Socket 3", -1);
    acpi("hwmon3/power2", "total", "3", "Grace Power Socket 3", NAN);
    acpi("hwmon3/power3", "total", "3", "Grace Power Socket 3", INFINITY);
    /* no oem_info: a valid type and socket suffice, the sensor is empty */
    doc_add("cpu_power_acpi_watts", "type=total;socket=4;source=acpi", 99);
    doc_add("cpu_power_acpi_watts", "type=other;socket=4;source=acpi", 1); /* dropped */
    /* another family is not read */
    doc_add("carma_power_watts", "channel=rapl/package-0", 33);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 9);
    assert_reading(0, "Grace Power Socket 0", 0, HWMON_OEM_TOTAL, 150);
    assert_reading(1, "CPU Power Socket 0", 0, HWMON_OEM_CPU_RAIL, 70);
    assert_reading(2, "SysIO Power Socket 0", 0, HWMON_OEM_SOC, 9);
    assert_reading(3, "Total Input Power in uW socket 1", 1, HWMON_OEM_TOTAL, 140);
    assert_reading(4, "CPU Rail Input Power in uW socket 1", 1, HWMON_OEM_CPU_RAIL, 60);
    assert_reading(5, "SoC Rail Input Power socket 1", 1, HWMON_OEM_SOC, 11);
    assert_reading(6, "DRAM Input Power in uW socket 1", 1, HWMON_OEM_DRAM, 7);
    assert_reading(7, "Total Power socket 2", 2, HWMON_OEM_TOTAL, 120);
    assert_reading(8, "", 4, HWMON_OEM_TOTAL, 99);
    tu_assert_near(sc.total_power_w, 150 + 140 + 120 + 99, 1e-9);
}

/* DCGM: one reading per socket, named CPU<socket>:cpuPowerUsageW by the writer, the total is
 * the sum of every socket (43.878 + 52.35 = 96.228); a bad socket or value is dropped. */
static void test_parse_dcgm(void **state)
{
    (void)state;
    doc_reset();
    dcgm("0", 43.878);
    dcgm("1", 52.35);
    dcgm("", 10);
    dcgm("2", NAN);
    dcgm("3", -2);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_DCGM);
    assert_int_equal(sc.n, 2);
    assert_reading(0, NULL, 0, -1, 43.878);
    assert_reading(1, NULL, 1, -1, 52.35);
    assert_true(sc.has_total);
    tu_assert_near(sc.total_power_w, 43.878 + 52.35, 0);
}

/* Both families: ACPI wins. An ACPI family with nothing usable: DCGM is read. Neither, or an
 * unparseable body: unknown, no reading. */
static void test_parse_mode(void **state)
{
    (void)state;
    doc_reset();
    dcgm("0", 43.878);
    acpi("hwmon0/power1", "total", "0", "Grace Power Socket 0", 93.4);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 1);
    tu_assert_near(sc.total_power_w, 93.4, 0);

    doc_reset();
    acpi("hwmon0/power4", "other", "", "Module Socket A", 1.0);
    dcgm("0", 43.878);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_DCGM);
    assert_int_equal(sc.n, 1);

    doc_reset();
    doc_add("carma_power_watts", "channel=rapl/package-0", 33);
    parse();
    assert_int_equal(sc.mode, SRT_CPU_MODE_UNKNOWN);
    assert_int_equal(sc.n, 0);
    assert_false(sc.has_total);

    srt_cpu_parse(NULL, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_UNKNOWN);
    assert_int_equal(sc.n, 0);

    assert_string_equal(srt_cpu_mode_name(SRT_CPU_MODE_ACPI), "acpi");
    assert_string_equal(srt_cpu_mode_name(SRT_CPU_MODE_DCGM), "dcgm");
    assert_string_equal(srt_cpu_mode_name(SRT_CPU_MODE_UNKNOWN), "unknown");
}

/* More readings than SRT_CPU_READINGS_MAX: the rest are counted as dropped. */
static void test_parse_cap(void **state)
{
    (void)state;
    static struct prom_label l[SRT_CPU_READINGS_MAX + 10][3];
    static struct prom_sample s[SRT_CPU_READINGS_MAX + 10];
    for (size_t i = 0; i < SRT_CPU_READINGS_MAX + 10; i++) {
        l[i][0] = (struct prom_label){"type", "total"};
        l[i][1] = (struct prom_label){"socket", "0"};
        l[i][2] = (struct prom_label){"oem_info", "Grace Power Socket 0"};
        s[i] = (struct prom_sample){
            .name = "cpu_power_acpi_watts", .labels = l[i], .nlabels = 3, .value = 1};
    }
    struct prom_doc d = {.samples = s, .nsamples = SRT_CPU_READINGS_MAX + 10};
    srt_cpu_parse(&d, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, SRT_CPU_READINGS_MAX);
    assert_int_equal(sc.dropped, 10);
}

/* ---- bodies as the exporters serve them, through the text parser ---- */

/* srt-slurm's Rust exporter (formats doc §5.2), ACPI and DCGM, and its Python fallback exporter
 * (§5.5: no sensor label, grace/cpu/sysio types), parsed by prom_parse. */
static void test_parse_exporter_bodies(void **state)
{
    (void)state;
    static const char rust_acpi[] =
        "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
        "# TYPE cpu_power_acpi_watts gauge\n"
        "cpu_power_acpi_watts{sensor=\"hwmon0/power1\",type=\"cpu_rail\",socket=\"0\","
        "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 48.100000\n"
        "cpu_power_acpi_watts{sensor=\"hwmon1/power1\",type=\"soc\",socket=\"0\","
        "oem_info=\"SysIO Power Socket 0\",source=\"acpi\"} 5.200000\n"
        "cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"0\","
        "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 93.400000\n"
        "cpu_power_acpi_watts{sensor=\"hwmon3/power1\",type=\"other\",socket=\"\","
        "oem_info=\"Module Socket A\",source=\"acpi\"} 1.000000\n";
    static const char rust_dcgm[] =
        "# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field 1130 (W).\n"
        "# TYPE cpu_power_dcgm_watts gauge\n"
        "cpu_power_dcgm_watts{socket=\"0\",source=\"dcgm\"} 43.878000\n"
        "cpu_power_dcgm_watts{socket=\"1\",source=\"dcgm\"} 52.350000\n";
    static const char python_fallback[] =
        "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
        "# TYPE cpu_power_acpi_watts gauge\n"
        "cpu_power_acpi_watts{type=\"grace\",socket=\"0\",oem_info=\"Grace Power Socket 0\","
        "source=\"acpi\"} 150.0\n"
        "cpu_power_acpi_watts{type=\"cpu\",socket=\"0\",oem_info=\"CPU Power Socket 0\","
        "source=\"acpi\"} 125.5\n"
        "cpu_power_acpi_watts{type=\"sysio\",socket=\"0\",oem_info=\"SysIO Power Socket 0\","
        "source=\"acpi\"} 9.5\n";
    struct prom_doc d = {0};
    struct carma_err e = {0};

    assert_int_equal(prom_parse(rust_acpi, strlen(rust_acpi), NULL, &d, &e), 0);
    srt_cpu_parse(&d, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 3);
    assert_reading(0, "CPU Power Socket 0", 0, HWMON_OEM_CPU_RAIL, 48.1);
    assert_reading(1, "SysIO Power Socket 0", 0, HWMON_OEM_SOC, 5.2);
    assert_reading(2, "Grace Power Socket 0", 0, HWMON_OEM_TOTAL, 93.4);
    tu_assert_near(sc.total_power_w, 93.4, 0);
    prom_doc_free(&d);

    assert_int_equal(prom_parse(rust_dcgm, strlen(rust_dcgm), NULL, &d, &e), 0);
    srt_cpu_parse(&d, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_DCGM);
    assert_int_equal(sc.n, 2);
    tu_assert_near(sc.total_power_w, 43.878 + 52.35, 0);
    prom_doc_free(&d);

    assert_int_equal(prom_parse(python_fallback, strlen(python_fallback), NULL, &d, &e), 0);
    srt_cpu_parse(&d, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_ACPI);
    assert_int_equal(sc.n, 3);
    assert_reading(0, "Grace Power Socket 0", 0, HWMON_OEM_TOTAL, 150);
    assert_reading(1, "CPU Power Socket 0", 0, HWMON_OEM_CPU_RAIL, 125.5);
    assert_reading(2, "SysIO Power Socket 0", 0, HWMON_OEM_SOC, 9.5);
    tu_assert_near(sc.total_power_w, 150, 0);
    prom_doc_free(&d);

    /* "malformed" and "": mode unknown, no reading (an unparseable body is no doc at all) */
    assert_true(prom_parse("malformed", 9, NULL, &d, &e) < 0);
    srt_cpu_parse(NULL, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_UNKNOWN);
    prom_doc_free(&d);
    assert_int_equal(prom_parse("", 0, NULL, &d, &e), 0);
    srt_cpu_parse(&d, &sc);
    assert_int_equal(sc.mode, SRT_CPU_MODE_UNKNOWN);
    assert_int_equal(sc.n, 0);
    prom_doc_free(&d);
}

/* ---- the writer ---- */

#define HEADER                                                                                     \
    "schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w\r\n"

static char text[1 << 20];

static const char *in_dir(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", tu_dir, rel);
    return buf;
}

static const char *slurp(const char *rel)
{
    char path[512];
    tu_slurp(in_dir(path, sizeof path, rel), text, sizeof text);
    return text;
}

static json_t *load_json(const char *rel)
{
    char path[512];
    json_error_t je;
    json_t *j = json_load_file(in_dir(path, sizeof path, rel), 0, &je);
    if (!j)
        fail_msg("%s: %s (line %d)", path, je.text, je.line);
    return j;
}

static struct srt_cpu *open_ok(const char *rel, const char *const *nodes, size_t n)
{
    char dir[512];
    struct carma_err e = {0};
    struct srt_cpu *w = srt_cpu_open(in_dir(dir, sizeof dir, rel), nodes, n, &e);
    if (!w)
        fail_msg("srt_cpu_open: %s", e.msg);
    return w;
}

static void end_ok(struct srt_cpu *w)
{
    struct carma_err e = {0};
    int r = srt_cpu_cycle_end(w, &e);
    if (r != 0)
        fail_msg("srt_cpu_cycle_end: %d %s", r, e.msg);
}

static void finish_ok(struct srt_cpu *w)
{
    struct carma_err e = {0};
    int r = srt_cpu_finish(w, &e);
    if (r != 0)
        fail_msg("srt_cpu_finish: %d %s", r, e.msg);
}

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

static int64_t sec(double s)
{
    return (int64_t)llround(s * 1e6) * 1000; /* whole µs, as the files keep them */
}

/* The rows of a cycle of three nodes, byte for byte: ACPI with a total (repeated on each
 * row), ACPI without (blank), DCGM (sum of the sockets), a failed poll (no row), each node
 * with the timestamp it was given, in the order given; a second cycle appended. */
static void test_rows_golden(void **state)
{
    (void)state;
    static const char *const nodes[] = {"node-a", "node-b", "node-c", "node-d"};
    struct srt_cpu *w = open_ok("power/cpu", nodes, 4);
    assert_string_equal(slurp("power/cpu/samples.csv"), HEADER);

    static struct srt_cpu_scrape a, b, c;
    doc_reset();
    acpi("hwmon0/power1", "cpu_rail", "0", "CPU Power Socket 0", 48.1);
    acpi("hwmon0/power2", "soc", "0", "SysIO Power Socket 0", 5.2);
    acpi("hwmon0/power3", "total", "0", "Grace Power Socket 0", 93.4);
    acpi("hwmon0/power4", "other", "", "Module Socket A", 1.0);
    acpi("hwmon1/power3", "total", "1", "Grace Power Socket 1", 100);
    srt_cpu_parse(&doc, &a);

    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 0, sec(1785168098.25), &a);
    /* node-b: ACPI rails only */
    static struct prom_label lb[2][4] = {
        {{"type", "cpu_rail"}, {"socket", "0"}, {"oem_info", "CPU Power Socket 0"}},
        {{"type", "soc"}, {"socket", "0"}, {"oem_info", "SysIO, \"rev 2\" Socket 0"}},
    };
    static struct prom_sample sb[2];
    sb[0] = (struct prom_sample){
        .name = "cpu_power_acpi_watts", .labels = lb[0], .nlabels = 3, .value = 50};
    sb[1] = (struct prom_sample){
        .name = "cpu_power_acpi_watts", .labels = lb[1], .nlabels = 3, .value = 0.000001};
    struct prom_doc db = {.samples = sb, .nsamples = 2};
    srt_cpu_parse(&db, &b);
    assert_int_equal(b.n, 2);
    srt_cpu_node(w, 1, sec(1785168098.5), &b);
    /* node-c: DCGM */
    static struct prom_label lc[2][2] = {{{"socket", "0"}, {"source", "dcgm"}},
                                         {{"socket", "1"}, {"source", "dcgm"}}};
    static struct prom_sample scs[2];
    scs[0] = (struct prom_sample){
        .name = "cpu_power_dcgm_watts", .labels = lc[0], .nlabels = 2, .value = 43.878};
    scs[1] = (struct prom_sample){
        .name = "cpu_power_dcgm_watts", .labels = lc[1], .nlabels = 2, .value = 52.35};
    struct prom_doc dc = {.samples = scs, .nsamples = 2};
    srt_cpu_parse(&dc, &c);
    srt_cpu_node(w, 2, sec(1785168098.75), &c);
    srt_cpu_node(w, 3, sec(1785168098.8), NULL);
    end_ok(w);

    const char *cycle1 =
        "1,1785168098.250000,node-a,acpi,CPU Power Socket 0,0,48.1,193.4\r\n"
        "1,1785168098.250000,node-a,acpi,SysIO Power Socket 0,0,5.2,193.4\r\n"
        "1,1785168098.250000,node-a,acpi,Grace Power Socket 0,0,93.4,193.4\r\n"
        "1,1785168098.250000,node-a,acpi,Grace Power Socket 1,1,100.0,193.4\r\n"
        "1,1785168098.500000,node-b,acpi,CPU Power Socket 0,0,50.0,\r\n"
        "1,1785168098.500000,node-b,acpi,\"SysIO, \"\"rev 2\"\" Socket 0\",0,0.000001,\r\n"
        "1,1785168098.750000,node-c,dcgm,CPU0:cpuPowerUsageW,0,43.878,96.228\r\n"
        "1,1785168098.750000,node-c,dcgm,CPU1:cpuPowerUsageW,1,52.35,96.228\r\n";
    char want[4096];
    snprintf(want, sizeof want, "%s%s", HEADER, cycle1);
    assert_string_equal(slurp("power/cpu/samples.csv"), want);
    assert_int_equal(srt_cpu_rows(w), 8);

    /* a cycle where only node-c answers, then an empty cycle (no write at all) */
    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 2, sec(1785168099.75), &c);
    end_ok(w);
    srt_cpu_cycle_begin(w);
    end_ok(w);
    snprintf(want, sizeof want, "%s%s%s", HEADER, cycle1,
             "1,1785168099.750000,node-c,dcgm,CPU0:cpuPowerUsageW,0,43.878,96.228\r\n"
             "1,1785168099.750000,node-c,dcgm,CPU1:cpuPowerUsageW,1,52.35,96.228\r\n");
    assert_string_equal(slurp("power/cpu/samples.csv"), want);
    finish_ok(w);
}

/* cpu_manifest.json: srt-slurm's keys in its order, at open (stopped_at_unix null) and at
 * finish; per node its resolved mode (of its last scrape with rows), polls and errors (a poll
 * without rows is an error; a host listed twice is one entry with both listings' counts). */
static void test_manifest(void **state)
{
    (void)state;
    static const char *const nodes[] = {"node-b", "node-a", "node-b", "node-c"};
    struct srt_cpu *w = open_ok("m", nodes, 4);
    json_t *m = load_json("m/cpu_manifest.json");
    ASSERT_KEYS(m, "schema_version", "producer", "producer_git_commit", "started_at_unix",
                "stopped_at_unix", "nodes");
    assert_int_equal(json_integer_value(json_object_get(m, "schema_version")), 1);
    assert_string_equal(json_string_value(json_object_get(m, "producer")), "carma");
    assert_true(json_is_null(json_object_get(m, "producer_git_commit")));
    assert_true(json_is_real(json_object_get(m, "started_at_unix")));
    assert_true(json_is_null(json_object_get(m, "stopped_at_unix")));
    ASSERT_KEYS(json_object_get(m, "nodes"), "node-b", "node-a", "node-c");
    json_decref(m);
    /* Python's json.dumps(indent=2) layout */
    assert_non_null(strstr(slurp("m/cpu_manifest.json"), "{\n  \"schema_version\": 1,\n"));

    static struct srt_cpu_scrape acpi_sc, dcgm_sc, none_sc;
    doc_reset();
    acpi("hwmon0/power3", "total", "0", "Grace Power Socket 0", 93.4);
    srt_cpu_parse(&doc, &acpi_sc);
    static struct prom_label lc[1][2] = {{{"socket", "0"}, {"source", "dcgm"}}};
    static struct prom_sample scs[1];
    scs[0] = (struct prom_sample){
        .name = "cpu_power_dcgm_watts", .labels = lc[0], .nlabels = 2, .value = 43.878};
    struct prom_doc dc = {.samples = scs, .nsamples = 1};
    srt_cpu_parse(&dc, &dcgm_sc);
    srt_cpu_parse(NULL, &none_sc);

    for (int i = 0; i < 3; i++) {
        srt_cpu_cycle_begin(w);
        srt_cpu_node(w, 0, sec(100 + i), &acpi_sc);            /* node-b */
        srt_cpu_node(w, 1, sec(100 + i), &none_sc);            /* node-a: parsed, nothing */
        srt_cpu_node(w, 2, sec(100 + i), i ? NULL : &dcgm_sc); /* node-b again */
        /* node-c: abandoned polls are not reported */
        end_ok(w);
    }
    finish_ok(w);
    m = load_json("m/cpu_manifest.json");
    assert_true(json_is_real(json_object_get(m, "stopped_at_unix")));
    assert_true(json_real_value(json_object_get(m, "stopped_at_unix")) >=
                json_real_value(json_object_get(m, "started_at_unix")));
    json_t *n = json_object_get(m, "nodes");
    ASSERT_KEYS(n, "node-b", "node-a", "node-c");
    json_t *b = json_object_get(n, "node-b");
    ASSERT_KEYS(b, "resolved_mode", "scrape_count", "error_count");
    assert_string_equal(json_string_value(json_object_get(b, "resolved_mode")), "dcgm");
    assert_int_equal(json_integer_value(json_object_get(b, "scrape_count")), 6);
    assert_int_equal(json_integer_value(json_object_get(b, "error_count")), 2);
    json_t *a = json_object_get(n, "node-a");
    assert_string_equal(json_string_value(json_object_get(a, "resolved_mode")), "unknown");
    assert_int_equal(json_integer_value(json_object_get(a, "scrape_count")), 3);
    assert_int_equal(json_integer_value(json_object_get(a, "error_count")), 3);
    json_t *c = json_object_get(n, "node-c");
    assert_string_equal(json_string_value(json_object_get(c, "resolved_mode")), "unknown");
    assert_int_equal(json_integer_value(json_object_get(c, "scrape_count")), 0);
    assert_int_equal(json_integer_value(json_object_get(c, "error_count")), 0);
    json_decref(m);
    /* no temporary file left behind */
    char path[512];
    glob_t g;
    assert_int_equal(glob(in_dir(path, sizeof path, "m/*.tmp.*"), GLOB_PERIOD, NULL, &g),
                     GLOB_NOMATCH);
    globfree(&g);
}

/* Errors name the file: a directory that cannot be made, a samples.csv that cannot be made. */
static void test_open_errors(void **state)
{
    (void)state;
    char dir[512], want[1200];
    struct carma_err e = {0};
    static const char *const nodes[] = {"node-a"};

    tu_put("afile", "x\n");
    assert_null(srt_cpu_open(in_dir(dir, sizeof dir, "afile/cpu"), nodes, 1, &e));
    assert_int_equal(e.code, -ENOTDIR);
    snprintf(want, sizeof want, "cannot create %s: %s", dir, strerror(ENOTDIR));
    assert_string_equal(e.msg, want);

    tu_mkdirs("d/samples.csv/");
    assert_null(srt_cpu_open(in_dir(dir, sizeof dir, "d"), nodes, 1, &e));
    assert_int_equal(e.code, -EISDIR);
    snprintf(want, sizeof want, "cannot create %s/samples.csv: %s", dir, strerror(EISDIR));
    assert_string_equal(e.msg, want);

    static const char *const empty[] = {""};
    assert_null(srt_cpu_open(in_dir(dir, sizeof dir, "e"), empty, 1, &e));
    assert_int_equal(e.code, -EINVAL);
    assert_null(srt_cpu_open("", nodes, 1, &e));
    assert_int_equal(e.code, -EINVAL);

    /* misuse: a cycle end without a begin; a node outside a cycle is ignored */
    struct srt_cpu *w = open_ok("ok", nodes, 1);
    assert_int_equal(srt_cpu_cycle_end(w, &e), -EINVAL);
    srt_cpu_parse(NULL, &sc);
    srt_cpu_node(w, 0, sec(1), &sc);
    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 7, sec(1), &sc); /* no such node */
    end_ok(w);
    finish_ok(w);
    assert_string_equal(slurp("ok/samples.csv"), HEADER);
    assert_int_equal(srt_cpu_finish(NULL, &e), 0);
}

/* A write that fails (past the file size limit, as a full disk would) keeps the cycles before
 * it, leaves no part of its own, names the file, and later cycles are written again. */
static void test_write_error(void **state)
{
    (void)state;
    static const char *const nodes[] = {"n1"};
    struct srt_cpu *w = open_ok("full", nodes, 1);
    doc_reset();
    acpi("hwmon0/power1", "total", "0", "Grace Power Socket 0", 150);
    acpi("hwmon0/power2", "cpu_rail", "0", "CPU Power Socket 0", 70);
    parse();
    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 0, sec(10), &sc);
    end_ok(w);
    const char *good = HEADER "1,10.000000,n1,acpi,Grace Power Socket 0,0,150.0,150.0\r\n"
                              "1,10.000000,n1,acpi,CPU Power Socket 0,0,70.0,150.0\r\n";
    assert_string_equal(slurp("full/samples.csv"), good);

    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = strlen(good) + 30;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    struct carma_err e = {0};
    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 0, sec(11), &sc);
    int r = srt_cpu_cycle_end(w, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(r, -EFBIG);
    char path[512], want[800];
    snprintf(want, sizeof want, "cannot write %s: %s",
             in_dir(path, sizeof path, "full/samples.csv"), strerror(EFBIG));
    assert_memory_equal(e.msg, want, strlen(want));
    assert_string_equal(slurp("full/samples.csv"), good);
    assert_int_equal(srt_cpu_rows(w), 2);

    srt_cpu_cycle_begin(w);
    srt_cpu_node(w, 0, sec(12), &sc);
    end_ok(w);
    char all[1024];
    snprintf(all, sizeof all, "%s%s", good,
             "1,12.000000,n1,acpi,Grace Power Socket 0,0,150.0,150.0\r\n"
             "1,12.000000,n1,acpi,CPU Power Socket 0,0,70.0,150.0\r\n");
    assert_string_equal(slurp("full/samples.csv"), all);
    assert_int_equal(srt_cpu_rows(w), 4);
    finish_ok(w);
}

/* Cycles after the first allocate nothing, parsing included. */
static void test_no_allocation(void **state)
{
    (void)state;
#if !ALLOC_COUNT_AVAILABLE
    skip();
#else
    static const char *const nodes[] = {"node-a", "node-b"};
    struct srt_cpu *w = open_ok("na", nodes, 2);
    struct carma_err e = {0};
    doc_reset();
    acpi("hwmon0/power1", "cpu_rail", "0", "CPU Power Socket 0", 48.1);
    acpi("hwmon0/power2", "soc", "0", "SysIO Power Socket 0", 5.2);
    acpi("hwmon0/power3", "total", "0", "Grace Power Socket 0", 93.4);
    acpi("hwmon1/power3", "total", "1", "Grace Power Socket 1", 100);

    alloc_count_start();
    free(strdup("x"));
    assert_int_equal(alloc_count_stop(), 1);

    /* the first cycle may size the buffer */
    srt_cpu_cycle_begin(w);
    parse();
    srt_cpu_node(w, 0, sec(1), &sc);
    srt_cpu_node(w, 1, sec(1), &sc);
    end_ok(w);

    int failures = 0;
    alloc_count_start();
    for (int i = 0; i < 2000; i++) {
        srt_cpu_cycle_begin(w);
        parse();
        srt_cpu_node(w, 0, sec(2 + i), &sc);
        srt_cpu_node(w, 1, sec(2 + i), i % 3 ? &sc : NULL);
        failures += srt_cpu_cycle_end(w, &e) != 0;
    }
    int allocations = alloc_count_stop();
    assert_int_equal(failures, 0);
    assert_int_equal(allocations, 0);
    finish_ok(w);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_worked_example),
        cmocka_unit_test(test_parse_totals),
        cmocka_unit_test(test_parse_rederive),
        cmocka_unit_test(test_parse_dcgm),
        cmocka_unit_test(test_parse_mode),
        cmocka_unit_test(test_parse_cap),
        cmocka_unit_test(test_parse_exporter_bodies),
        cmocka_unit_test_setup_teardown(test_rows_golden, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_manifest, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_open_errors, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_write_error, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_allocation, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

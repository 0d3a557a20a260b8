/*
 * Unit tests for serve/metrics: the exporter's text in the Prometheus format, byte for byte
 * (label escaping, number formats, the histogram's cumulative buckets, missing readings left
 * out), srt-slurm's cpu_power_acpi_watts and cpu_power_dcgm_watts lines against its format
 * document and the choice between them (--srt-source), energy that stays
 * monotonic across a counter wrap and a reset (a fixture tree rewritten between ticks), GPU
 * utilization from the fake NVML, buffers reused from render to render, and the snapshot store
 * (which snapshot the publisher may reuse, and many readers against one publisher).
 *
 * Most tests build a sampler by hand (channels and their states), as the exporter would see
 * it after a tick; the others probe a copy of a fixture tree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/sampler.h"
#include "serve/metrics.h"
#include "sources/dcgm.h"
#include "testutil.h"

/* ---- helpers ---- */

/* A sampler made by hand: no root, no source; free it with free(). */
static struct sampler *hand_sampler(void)
{
    struct sampler *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->timerfd = -1;
    return s;
}

static int hand_channel(struct sampler *s, const char *name, const char *source,
                        enum channel_kind kind, enum channel_domain domain, int socket)
{
    int i = channel_set_add(&s->set);
    assert_true(i >= 0);
    struct channel *c = &s->set.ch[i];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->source = source;
    c->kind = kind;
    c->domain = domain;
    c->socket = socket;
    c->parent = -1;
    c->method = METHOD_MEASURED;
    s->st[i].watts = NAN;
    return i;
}

static void set_reading(struct sampler *s, int i, double watts, double energy_j, uint64_t invalid)
{
    s->st[i].tick_valid = isfinite(watts);
    s->st[i].watts = watts;
    s->st[i].energy_j = energy_j;
    s->st[i].invalid = invalid;
}

/* Renders s into a NUL-terminated string (free it). */
static char *render(struct metrics_renderer *r, const struct sampler *s,
                    const struct metrics_self *self)
{
    struct metrics_buf b = {0};
    assert_int_equal(metrics_render(r, s, self, &b), 0);
    char *text = malloc(b.len + 1);
    assert_non_null(text);
    memcpy(text, b.data, b.len);
    text[b.len] = '\0';
    metrics_buf_done(&b);
    return text;
}

static struct metrics_renderer *renderer(const struct sampler *s, bool compat)
{
    struct metrics_opts o = {.node = "node-1", .version = "9.9.9", .compat_srtctl = compat};
    struct carma_err e = {0};
    struct metrics_renderer *r = metrics_renderer_new(s, &o, &e);
    if (!r)
        fail_msg("metrics_renderer_new: %s", e.msg);
    return r;
}

static void assert_text(const char *got, const char *want)
{
    if (strcmp(got, want) == 0)
        return;
    size_t k = 0;
    while (got[k] && got[k] == want[k])
        k++;
    size_t from = k > 60 ? k - 60 : 0;
    fail_msg("texts differ at byte %zu:\n--- got ...%.120s\n--- want ...%.120s", k, got + from,
             want + from);
}

/* The value of the line that starts with prefix (name and labels), or NAN. */
static double value_of(const char *text, const char *prefix)
{
    size_t pl = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, prefix, pl) == 0 && p[pl] == ' ')
            return strtod(p + pl + 1, NULL);
    return NAN;
}

/* ---- escaping ---- */

static char *escaped(const char *v)
{
    struct metrics_buf b = {0};
    metrics_escape_label(&b, v);
    assert_false(b.oom);
    char *s = calloc(1, b.len + 1);
    assert_non_null(s);
    if (b.len)
        memcpy(s, b.data, b.len);
    metrics_buf_done(&b);
    return s;
}

static void test_escape(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"", ""},
        {"a\\b", "a\\\\b"},
        {"say \"hi\"", "say \\\"hi\\\""},
        {"two\nlines\n", "two\\nlines\\n"},
        {"\\\"\n", "\\\\\\\"\\n"},
        {"tab\there", "tab\there"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8c", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x8c"},
        /* not UTF-8: a lone continuation byte, a Latin-1 byte, an overlong '/', a surrogate */
        {"x\x80y", "x\xef\xbf\xbdy"},
        {"\xe9t\xe9", "\xef\xbf\xbdt\xef\xbf\xbd"},
        {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"cut \xe2\x82", "cut \xef\xbf\xbd\xef\xbf\xbd"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = escaped(cases[i].in);
        if (strcmp(got, cases[i].out) != 0)
            fail_msg("case %zu: got '%s', want '%s'", i, got, cases[i].out);
        free(got);
    }
    /* a long value is cut at METRICS_LABEL_VALUE_MAX bytes, never inside a character */
    char longv[METRICS_LABEL_VALUE_MAX + 8];
    memset(longv, 'a', sizeof longv);
    longv[sizeof longv - 1] = '\0';
    char *got = escaped(longv);
    assert_int_equal(strlen(got), METRICS_LABEL_VALUE_MAX);
    free(got);
    memset(longv, 'a', sizeof longv);
    memcpy(longv + METRICS_LABEL_VALUE_MAX - 1, "\xc3\xa9", 2); /* é across the cut */
    longv[sizeof longv - 1] = '\0';
    got = escaped(longv);
    assert_int_equal(strlen(got), METRICS_LABEL_VALUE_MAX - 1);
    assert_int_equal(strspn(got, "a"), METRICS_LABEL_VALUE_MAX - 1);
    free(got);
}

/* ---- the whole text of a small snapshot ---- */

static const char expected_small[] =
    "# HELP carma_build_info carma's version, as a label; the value is always 1.\n"
    "# TYPE carma_build_info gauge\n"
    "carma_build_info{version=\"9.9.9\"} 1\n"
    "# HELP carma_power_watts Power of the channel over the last sampling interval, in watts (a "
    "missing reading leaves the line out).\n"
    "# TYPE carma_power_watts gauge\n"
    "carma_power_watts{node=\"node-1\",channel=\"rapl/package-0\",source=\"rapl\",kind=\"cpu\","
    "domain=\"total\",method=\"measured\",socket=\"0\"} 31.25\n"
    "carma_power_watts{node=\"node-1\",channel=\"rapl/package-0/dram\",source=\"rapl\","
    "kind=\"dram\",domain=\"total\",method=\"measured\",socket=\"0\"} 4.5\n"
    "# HELP carma_energy_joules_total Energy of the channel since the exporter started, in "
    "joules (counters integrated across wraps, resets skipped; gauges by the trapezoid rule).\n"
    "# TYPE carma_energy_joules_total counter\n"
    "carma_energy_joules_total{node=\"node-1\",channel=\"rapl/package-0\",source=\"rapl\","
    "kind=\"cpu\",domain=\"total\",method=\"measured\",socket=\"0\"} 1234.5\n"
    "carma_energy_joules_total{node=\"node-1\",channel=\"odd \\\"name\\\"\\\\with\\nx\","
    "source=\"hwmon\",kind=\"other\",domain=\"component\",method=\"measured\",socket=\"\"} "
    "2.000001\n"
    "carma_energy_joules_total{node=\"node-1\",channel=\"rapl/package-0/dram\",source=\"rapl\","
    "kind=\"dram\",domain=\"total\",method=\"measured\",socket=\"0\"} 9876543.21\n"
    "# HELP carma_node_power_watts Power of the node over the last sampling interval, in watts: "
    "the sum of the channels that do not overlap (left out when one of them is missing).\n"
    "# TYPE carma_node_power_watts gauge\n"
    "carma_node_power_watts{node=\"node-1\",method=\"measured\"} 35.75\n"
    "# HELP carma_node_energy_joules_total Energy of the node since the exporter started, in "
    "joules: the sum of the channels that do not overlap.\n"
    "# TYPE carma_node_energy_joules_total counter\n"
    "carma_node_energy_joules_total{node=\"node-1\",method=\"measured\"} 9877777.71\n"
    "# HELP carma_cpu_utilization_ratio CPU time of the node spent in each mode since the "
    "previous reading of proc/stat, as a fraction of all CPU time (total = every busy mode).\n"
    "# TYPE carma_cpu_utilization_ratio gauge\n"
    "carma_cpu_utilization_ratio{node=\"node-1\",mode=\"total\"} 0.5\n"
    "carma_cpu_utilization_ratio{node=\"node-1\",mode=\"user\"} 0.25\n"
    "carma_cpu_utilization_ratio{node=\"node-1\",mode=\"nice\"} 0\n"
    "carma_cpu_utilization_ratio{node=\"node-1\",mode=\"system\"} 0.125\n"
    "carma_cpu_utilization_ratio{node=\"node-1\",mode=\"irq\"} 0.125\n"
    "# HELP carma_read_errors_total Readings of the channel that were missing: the sensor could "
    "not be read or gave no valid value.\n"
    "# TYPE carma_read_errors_total counter\n"
    "carma_read_errors_total{node=\"node-1\",channel=\"rapl/package-0\"} 0\n"
    "carma_read_errors_total{node=\"node-1\",channel=\"odd \\\"name\\\"\\\\with\\nx\"} 3\n"
    "carma_read_errors_total{node=\"node-1\",channel=\"rapl/package-0/dram\"} 0\n"
    "# HELP carma_sample_duration_seconds Time the exporter took to read every channel and "
    "render the metrics, per sample.\n"
    "# TYPE carma_sample_duration_seconds histogram\n"
    "carma_sample_duration_seconds_bucket{le=\"0.00001\"} 1\n"
    "carma_sample_duration_seconds_bucket{le=\"0.000025\"} 1\n"
    "carma_sample_duration_seconds_bucket{le=\"0.00005\"} 2\n"
    "carma_sample_duration_seconds_bucket{le=\"0.0001\"} 2\n"
    "carma_sample_duration_seconds_bucket{le=\"0.00025\"} 2\n"
    "carma_sample_duration_seconds_bucket{le=\"0.0005\"} 2\n"
    "carma_sample_duration_seconds_bucket{le=\"0.001\"} 2\n"
    "carma_sample_duration_seconds_bucket{le=\"0.0025\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.005\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.01\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.025\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.05\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.1\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"0.25\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"1\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"5\"} 3\n"
    "carma_sample_duration_seconds_bucket{le=\"+Inf\"} 4\n"
    "carma_sample_duration_seconds_sum 7.002035\n"
    "carma_sample_duration_seconds_count 4\n"
    "# HELP carma_scrapes_total Requests for /metrics the exporter has answered, as of the latest "
    "sample.\n"
    "# TYPE carma_scrapes_total counter\n"
    "carma_scrapes_total 42\n"
    "# HELP carma_last_sample_timestamp_seconds Time of the latest sample, in seconds since the "
    "Unix epoch.\n"
    "# TYPE carma_last_sample_timestamp_seconds gauge\n"
    "carma_last_sample_timestamp_seconds 1796032424.837549\n";

static struct sampler *small_sampler(void)
{
    struct sampler *s = hand_sampler();
    int a = hand_channel(s, "rapl/package-0", "rapl", KIND_CPU, DOMAIN_TOTAL, 0);
    int b = hand_channel(s, "odd \"name\"\\with\nx", "hwmon", KIND_OTHER, DOMAIN_COMPONENT, -1);
    int c = hand_channel(s, "rapl/package-0/dram", "rapl", KIND_DRAM, DOMAIN_TOTAL, 0);
    set_reading(s, a, 31.25, 1234.5, 0);
    set_reading(s, b, NAN, 2.000001, 3); /* missing this tick: no power line */
    set_reading(s, c, 4.5, 9876543.21, 0);
    s->have_util = true;
    s->util.primed = true;
    s->util.valid = true;
    s->util.util_total = 0.5;
    s->util.util_user = 0.25;
    s->util.util_nice = 0;
    s->util.util_sys = 0.125;
    s->util.util_irq = 0.125;
    s->ticks = 3;
    s->real_now = 1796032424837549123LL;
    return s;
}

static void test_render_small(void **state)
{
    (void)state;
    struct sampler *s = small_sampler();
    struct metrics_renderer *r = renderer(s, false);
    struct metrics_hist h = {0};
    metrics_hist_observe(&h, 5000);       /* 5 us */
    metrics_hist_observe(&h, 30000);      /* 30 us */
    metrics_hist_observe(&h, 2000000);    /* 2 ms */
    metrics_hist_observe(&h, 7000000000); /* 7 s: above every bound, +Inf only */
    struct metrics_self self = {.sample_duration = &h, .scrapes = 42};
    char *text = render(r, s, &self);
    assert_text(text, expected_small);
    free(text);

    /* a node channel missing: the node power line goes, the node energy stays */
    set_reading(s, 2, NAN, 9876543.21, 1);
    text = render(r, s, &self);
    assert_null(strstr(text, "carma_node_power_watts{"));
    assert_non_null(strstr(text, "carma_node_energy_joules_total{node=\"node-1\",method="
                                 "\"measured\"} 9877777.71\n"));
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* Before any sample: every family's HELP and TYPE, no timestamp, an empty histogram. */
static void test_render_empty_state(void **state)
{
    (void)state;
    struct sampler *s = hand_sampler();
    int i = hand_channel(s, "model/cpu0", "model", KIND_CPU, DOMAIN_TOTAL, 0);
    s->set.ch[i].method = METHOD_ESTIMATED;
    struct metrics_renderer *r = renderer(s, false);
    char *text = render(r, s, NULL);
    assert_non_null(strstr(text, "# TYPE carma_power_watts gauge\n# HELP carma_energy"));
    assert_non_null(strstr(text, "carma_node_energy_joules_total{node=\"node-1\",method="
                                 "\"estimated\"} 0\n"));
    assert_non_null(strstr(text, "carma_sample_duration_seconds_bucket{le=\"+Inf\"} 0\n"
                                 "carma_sample_duration_seconds_sum 0\n"
                                 "carma_sample_duration_seconds_count 0\n"));
    assert_non_null(strstr(text, "carma_scrapes_total 0\n"));
    assert_null(strstr(text, "\ncarma_last_sample_timestamp_seconds "));
    assert_null(strstr(text, "carma_cpu_utilization_ratio")); /* no proc/stat */
    assert_null(strstr(text, "cpu_power_acpi_watts"));
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* The second render into the same buffer reuses its memory. */
static void test_render_reuses_buffer(void **state)
{
    (void)state;
    struct sampler *s = small_sampler();
    struct metrics_renderer *r = renderer(s, true);
    struct metrics_buf b = {0};
    assert_int_equal(metrics_render(r, s, NULL, &b), 0);
    char *data = b.data;
    size_t cap = b.cap, len = b.len;
    assert_true(len > 0 && len <= cap);
    for (int k = 0; k < 100; k++) {
        s->st[0].energy_j += 1.0;
        assert_int_equal(metrics_render(r, s, NULL, &b), 0);
        assert_ptr_equal(b.data, data);
        assert_int_equal(b.cap, cap);
    }
    metrics_buf_done(&b);
    metrics_renderer_free(r);
    free(s);
}

/* ---- srt-slurm compatibility ---- */

/* shared/formats/srt-slurm.md §5.2, the ACPI example, byte for byte. */
static const char srt_doc_example[] =
    "# HELP cpu_power_acpi_watts Grace CPU power rail reading from ACPI hwmon (W).\n"
    "# TYPE cpu_power_acpi_watts gauge\n"
    "cpu_power_acpi_watts{sensor=\"hwmon0/power1\",type=\"cpu_rail\",socket=\"0\",oem_info=\"CPU "
    "Power Socket 0\",source=\"acpi\"} 150.000000\n";

static int acpi_channel(struct sampler *s, const char *name, const char *zone, int socket,
                        const char *label, const char *path, double watts)
{
    int i = hand_channel(s, name, "hwmon", KIND_CPU, DOMAIN_COMPONENT, socket);
    struct channel *c = &s->set.ch[i];
    snprintf(c->zone, sizeof c->zone, "%s", zone);
    snprintf(c->label, sizeof c->label, "%s", label);
    snprintf(c->path, sizeof c->path, "%s", path);
    set_reading(s, i, watts, 0, 0);
    return i;
}

static void test_compat_doc_example(void **state)
{
    (void)state;
    struct sampler *s = hand_sampler();
    acpi_channel(s, "hwmon/power_meter/socket0/cpu_rail", "cpu_rail", 0, "CPU Power Socket 0",
                 "sys/class/hwmon/hwmon0/device/power1_average", 150.0);
    /* not power_meter channels: never in the family */
    acpi_channel(s, "hwmon/coretemp/hwmon3/power1", "other", -1, "power1",
                 "sys/class/hwmon/hwmon3/power1_input", 3.0);
    hand_channel(s, "rapl/package-0", "rapl", KIND_CPU, DOMAIN_TOTAL, 0);
    struct metrics_renderer *r = renderer(s, true);
    assert_int_equal(metrics_renderer_compat_count(r), 1);
    char *text = render(r, s, NULL);
    const char *fam = strstr(text, "# HELP cpu_power_acpi_watts");
    assert_non_null(fam);
    assert_text(fam, srt_doc_example);
    free(text);
    metrics_renderer_free(r);

    /* without --compat srtctl the family is not there */
    r = renderer(s, false);
    assert_int_equal(metrics_renderer_compat_count(r), 0);
    text = render(r, s, NULL);
    assert_null(strstr(text, "cpu_power_acpi_watts"));
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* Order (hwmon directory, then channel, as strings), types, sockets, escaping, 6 decimals,
 * missing and negative readings left out. */
static void test_compat_lines(void **state)
{
    (void)state;
    struct sampler *s = hand_sampler();
    acpi_channel(s, "hwmon/power_meter/socket1/total", "total", 1, "Grace Power Socket 1",
                 "sys/class/hwmon/hwmon2/power1_input", 141.25);
    acpi_channel(s, "hwmon/power_meter/hwmon10/power1", "other", -1, "Module \"A\"\\x",
                 "sys/class/hwmon/hwmon10/device/power1_average", 0.0000004);
    acpi_channel(s, "hwmon/power_meter/hwmon1", "system", -1, "power1",
                 "sys/class/hwmon/hwmon1/power1_average", 345.1234567);
    acpi_channel(s, "hwmon/power_meter/socket0/soc", "soc", 0, "SysIO Power Socket 0",
                 "sys/class/hwmon/hwmon1/power2_average", 9.5);
    acpi_channel(s, "hwmon/power_meter/socket0/dram", "dram", 0, "DRAM Power socket 0",
                 "sys/class/hwmon/hwmon1/power10_average", NAN);
    acpi_channel(s, "hwmon/power_meter/socket0/total", "total", 0, "Total Power socket 0",
                 "sys/class/hwmon/hwmon3/power1_average", -1.0);
    struct metrics_renderer *r = renderer(s, true);
    assert_int_equal(metrics_renderer_compat_count(r), 6);
    char *text = render(r, s, NULL);
    const char *fam = strstr(text, "# TYPE cpu_power_acpi_watts gauge\n");
    assert_non_null(fam);
    assert_text(fam + strlen("# TYPE cpu_power_acpi_watts gauge\n"),
                "cpu_power_acpi_watts{sensor=\"hwmon1/power1\",type=\"other\",socket=\"\","
                "oem_info=\"power1\",source=\"acpi\"} 345.123457\n"
                "cpu_power_acpi_watts{sensor=\"hwmon1/power2\",type=\"soc\",socket=\"0\","
                "oem_info=\"SysIO Power Socket 0\",source=\"acpi\"} 9.500000\n"
                "cpu_power_acpi_watts{sensor=\"hwmon10/power1\",type=\"other\",socket=\"\","
                "oem_info=\"Module \\\"A\\\"\\\\x\",source=\"acpi\"} 0.000000\n"
                "cpu_power_acpi_watts{sensor=\"hwmon2/power1\",type=\"total\",socket=\"1\","
                "oem_info=\"Grace Power Socket 1\",source=\"acpi\"} 141.250000\n");
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* The grace fixture through the real hwmon source: every power_meter channel, in order. */
static void test_compat_grace_fixture(void **state)
{
    (void)state;
    tu_copy_fixture("grace");
    struct sampler_opts o = {.root = tu_dir, .sources = "hwmon", .model = {.idle_w = -1}};
    struct sampler *s = tu_sampler_new(&o);
    sampler_tick(s);
    struct metrics_renderer *r = renderer(s, true);
    assert_int_equal(metrics_renderer_compat_count(r), 28);
    char *text = render(r, s, NULL);
    const char *fam = strstr(text, "# TYPE cpu_power_acpi_watts gauge\n");
    assert_non_null(fam);
    fam += strlen("# TYPE cpu_power_acpi_watts gauge\n");
    /* the first three in hwmon0, hwmon1, hwmon10 order */
    static const char first3[] =
        "cpu_power_acpi_watts{sensor=\"hwmon0/power1\",type=\"other\",socket=\"\","
        "oem_info=\"Module Power Socket 0\",source=\"acpi\"} 412.500000\n"
        "cpu_power_acpi_watts{sensor=\"hwmon1/power1\",type=\"total\",socket=\"0\","
        "oem_info=\"Grace Power Socket 0\",source=\"acpi\"} 150.000000\n"
        "cpu_power_acpi_watts{sensor=\"hwmon10/power1\",type=\"total\",socket=\"0\","
        "oem_info=\"Total Power socket 0\",source=\"acpi\"} 150.250000\n";
    assert_int_equal(strncmp(fam, first3, sizeof first3 - 1), 0);
    /* the "input" layout (power1_input only) and the alias are there once each */
    assert_non_null(strstr(fam, "{sensor=\"hwmon5/power1\",type=\"total\",socket=\"1\","
                                "oem_info=\"Grace Power Socket 1\",source=\"acpi\"} 141.250000\n"));
    assert_non_null(strstr(fam, "{sensor=\"hwmon2/power1\",type=\"cpu_rail\",socket=\"0\","
                                "oem_info=\"CPU Power Socket 0\",source=\"acpi\"} 125.500000\n"));
    size_t lines = 0;
    for (const char *p = fam; (p = strstr(p, "cpu_power_acpi_watts{")) != NULL; p++)
        lines++;
    assert_int_equal(lines, 28);
    /* the node: the two Grace socket totals */
    tu_assert_near(value_of(text, "carma_node_power_watts{node=\"node-1\",method=\"measured\"}"),
                   291.25, 1e-9);
    free(text);
    metrics_renderer_free(r);
    sampler_free(s);
}

/* shared/formats/srt-slurm.md §5.2, the DCGM example, byte for byte. */
static const char srt_dcgm_doc_example[] =
    "# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field 1130 (W).\n"
    "# TYPE cpu_power_dcgm_watts gauge\n"
    "cpu_power_dcgm_watts{socket=\"0\",source=\"dcgm\"} 43.878000\n";

static struct metrics_renderer *dcgm_renderer(const struct sampler *s)
{
    struct metrics_opts o = {.node = "node-1",
                             .version = "9.9.9",
                             .compat_srtctl = true,
                             .srt_family = METRICS_SRT_DCGM};
    struct carma_err e = {0};
    struct metrics_renderer *r = metrics_renderer_new(s, &o, &e);
    if (!r)
        fail_msg("metrics_renderer_new: %s", e.msg);
    return r;
}

static int dcgm_channel(struct sampler *s, const char *name, enum channel_kind kind, int socket,
                        double watts)
{
    int i = hand_channel(s, name, "dcgm", kind, DOMAIN_TOTAL, socket);
    set_reading(s, i, watts, 0, 0);
    return i;
}

static void test_compat_dcgm_doc_example(void **state)
{
    (void)state;
    struct sampler *s = hand_sampler();
    dcgm_channel(s, "dcgm/cpu0", KIND_CPU, 0, 43.878);
    struct metrics_renderer *r = dcgm_renderer(s);
    assert_int_equal(metrics_renderer_compat_count(r), 1);
    char *text = render(r, s, NULL);
    const char *fam = strstr(text, "# HELP cpu_power_dcgm_watts");
    assert_non_null(fam);
    assert_text(fam, srt_dcgm_doc_example);
    assert_null(strstr(text, "cpu_power_acpi_watts"));
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* The CPU rails only (not SysIO, module, GPU or ACPI channels), in socket order; invalid,
 * non-finite, zero and negative readings left out of that refresh only. */
static void test_compat_dcgm_lines(void **state)
{
    (void)state;
    struct sampler *s = hand_sampler();
    int c3 = dcgm_channel(s, "dcgm/cpu3", KIND_CPU, 3, 0.0);
    int c1 = dcgm_channel(s, "dcgm/cpu1", KIND_CPU, 1, 98.5);
    dcgm_channel(s, "dcgm/cpu0/sysio", KIND_SOC, 0, 22.5);
    dcgm_channel(s, "dcgm/cpu0/module", KIND_SOC, 0, 310.75);
    dcgm_channel(s, "dcgm/gpu0", KIND_GPU, 0, 350.5);
    int c2 = dcgm_channel(s, "dcgm/cpu2", KIND_CPU, 2, NAN);
    int c10 = dcgm_channel(s, "dcgm/cpu10", KIND_CPU, 10, 0.0000004);
    int c0 = dcgm_channel(s, "dcgm/cpu0", KIND_CPU, 0, 151.25);
    acpi_channel(s, "hwmon/power_meter/socket0/total", "total", 0, "Grace Power Socket 0",
                 "sys/class/hwmon/hwmon1/power1_average", 150.0);
    struct metrics_renderer *r = dcgm_renderer(s);
    assert_int_equal(metrics_renderer_compat_count(r), 5);
    char *text = render(r, s, NULL);
    assert_null(strstr(text, "cpu_power_acpi_watts"));
    const char *fam = strstr(text, "# HELP cpu_power_dcgm_watts");
    assert_non_null(fam);
    assert_text(fam, "# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field "
                     "1130 (W).\n"
                     "# TYPE cpu_power_dcgm_watts gauge\n"
                     "cpu_power_dcgm_watts{socket=\"0\",source=\"dcgm\"} 151.250000\n"
                     "cpu_power_dcgm_watts{socket=\"1\",source=\"dcgm\"} 98.500000\n"
                     "cpu_power_dcgm_watts{socket=\"10\",source=\"dcgm\"} 0.000000\n");
    free(text);
    /* the next refresh: socket 0 invalid, 1 infinite, 2 and 3 back, 10 negative */
    set_reading(s, c0, NAN, 0, 1);
    s->st[c1].watts = INFINITY;
    set_reading(s, c2, 7.0000006, 0, 0);
    set_reading(s, c3, 1e-9, 0, 0);
    set_reading(s, c10, -2.0, 0, 0);
    text = render(r, s, NULL);
    fam = strstr(text, "# HELP cpu_power_dcgm_watts");
    assert_non_null(fam);
    assert_text(fam, "# HELP cpu_power_dcgm_watts Grace CPU instantaneous power via DCGM field "
                     "1130 (W).\n"
                     "# TYPE cpu_power_dcgm_watts gauge\n"
                     "cpu_power_dcgm_watts{socket=\"2\",source=\"dcgm\"} 7.000001\n"
                     "cpu_power_dcgm_watts{socket=\"3\",source=\"dcgm\"} 0.000000\n");
    free(text);
    metrics_renderer_free(r);
    free(s);
}

/* --srt-source: the family chosen on the readings at start, and the messages. */
static const struct source_ops fake_hwmon_ops = {.name = "hwmon"};
static const struct source_ops fake_dcgm_ops = {.name = "dcgm"};

static struct source *hand_source(struct sampler *s, const struct source_ops *ops, int status,
                                  const char *reason)
{
    struct source *src = &s->src[s->nsrc++];
    src->ops = ops;
    src->status = status;
    snprintf(src->reason, sizeof src->reason, "%s", reason);
    return src;
}

static int choose(const struct sampler *s, enum metrics_srt_source want,
                  struct metrics_srt_choice *c, struct carma_err *e)
{
    carma_err_clear(e);
    return metrics_srt_choose(s, want, c, e);
}

static void test_srt_choose(void **state)
{
    (void)state;
    struct metrics_srt_choice c;
    struct carma_err e = {0};
    struct sampler *s = hand_sampler();
    snprintf(s->root.path, sizeof s->root.path, "fx");
    hand_source(s, &fake_hwmon_ops, 0, "");
    struct source *dsrc = hand_source(s, &fake_dcgm_ops, 0, "");
    int tot = acpi_channel(s, "hwmon/power_meter/socket0/total", "total", 0, "Grace Power Socket 0",
                           "sys/class/hwmon/hwmon1/power1_average", 150.0);
    acpi_channel(s, "hwmon/power_meter/socket0/cpu_rail", "cpu_rail", 0, "CPU Power Socket 0",
                 "sys/class/hwmon/hwmon2/power1_average", 120.0);
    int d0 = dcgm_channel(s, "dcgm/cpu0", KIND_CPU, 0, 43.878);
    int d1 = dcgm_channel(s, "dcgm/cpu1", KIND_CPU, 1, 0.0);
    dcgm_channel(s, "dcgm/cpu0/module", KIND_SOC, 0, 300.0);

    /* auto: a socket total reads > 0: ACPI */
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_AUTO, &c, &e), 0);
    assert_int_equal(c.family, METRICS_SRT_ACPI);
    assert_string_equal(
        c.why, "--srt-source auto: 1 of 1 ACPI socket-total sensors read a positive value");
    /* acpi and dcgm as asked */
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_ACPI, &c, &e), 0);
    assert_int_equal(c.family, METRICS_SRT_ACPI);
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), 0);
    assert_int_equal(c.family, METRICS_SRT_DCGM);
    assert_string_equal(c.why, "--srt-source dcgm: DCGM reads a positive value on 1 of 2 CPU "
                               "sockets");
    /* the total reads 0 (a CPU rail's 120 W does not count): DCGM */
    set_reading(s, tot, 0.0, 0, 0);
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_AUTO, &c, &e), 0);
    assert_int_equal(c.family, METRICS_SRT_DCGM);
    assert_string_equal(c.why, "--srt-source auto: no ACPI socket-total sensor reads a positive "
                               "value (1 read 0 or nothing); DCGM reads a positive value on 1 "
                               "of 2 CPU sockets");
    /* DCGM reads nothing positive either */
    set_reading(s, d0, NAN, 0, 1);
    s->st[d0].last_err = -EOPNOTSUPP;
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), -ENODATA);
    assert_string_equal(e.msg, "--srt-source dcgm: DCGM yielded no live data: dcgm/cpu0 no "
                               "reading (Operation not supported), dcgm/cpu1 0.000000 W");
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_AUTO, &c, &e), -ENODATA);
    assert_string_equal(e.msg, "--srt-source auto: neither ACPI nor DCGM reads: no ACPI "
                               "socket-total sensor reads a positive value (1 read 0 or "
                               "nothing); DCGM yielded no live data: dcgm/cpu0 no reading "
                               "(Operation not supported), dcgm/cpu1 0.000000 W");
    /* acpi does not look */
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_ACPI, &c, &e), 0);
    assert_int_equal(c.family, METRICS_SRT_ACPI);
    set_reading(s, d1, 12.5, 0, 0);
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), 0);

    /* the dcgm source unusable: its reason; no reading at probe: no live data */
    dsrc->status = -ENOENT;
    snprintf(dsrc->reason, sizeof dsrc->reason, "libdcgm.so.4 not found");
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), -ENODEV);
    assert_string_equal(e.msg, "--srt-source dcgm: DCGM unavailable: libdcgm.so.4 not found");
    snprintf(dsrc->reason, sizeof dsrc->reason, "%s: CPU 0 has no CPU power reading",
             DCGM_SRC_NO_READING);
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), -ENODATA);
    assert_string_equal(e.msg, "--srt-source dcgm: DCGM yielded no live data: CPU 0 has no CPU "
                               "power reading");
    /* --sources without dcgm */
    s->nsrc = 1;
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_DCGM, &c, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "--sources leaves out"));
    assert_int_equal(choose(s, METRICS_SRT_SOURCE_AUTO, &c, &e), -ENODATA);
    assert_string_equal(e.msg, "--srt-source auto: neither ACPI nor DCGM reads: no ACPI "
                               "socket-total sensor reads a positive value (1 read 0 or "
                               "nothing); no DCGM: the dcgm source is not in --sources");
    free(s);
}

/* ---- energy across a wrap and a reset ---- */

#define PKG0      "sys/class/powercap/intel-rapl:0/energy_uj"
#define PKG_RANGE 262143328850ULL

static void test_energy_monotonic_wrap(void **state)
{
    (void)state;
    tu_copy_fixture("intel-2s");
    tu_put_u64(PKG0, PKG_RANGE - 500000);
    struct sampler_opts o = {.root = tu_dir, .sources = "rapl", .model = {.idle_w = -1}};
    struct sampler *s = tu_sampler_new(&o);
    struct metrics_renderer *r = renderer(s, false);
    const char *key = "carma_energy_joules_total{node=\"node-1\",channel=\"rapl/package-0\","
                      "source=\"rapl\",kind=\"cpu\",domain=\"total\",method=\"measured\","
                      "socket=\"0\"}";
    const char *node = "carma_node_energy_joules_total{node=\"node-1\",method=\"measured\"}";
    /* the counter: up to the range, wrapped, on, back to 0 (a reset: skipped), on */
    static const uint64_t values[] = {700000, 900000, 0, 2000000};
    static const double want[] = {1.2, 1.4, 1.4, 3.4};
    sampler_tick(s);
    char *text = render(r, s, NULL);
    double prev = value_of(text, key), prev_node = value_of(text, node);
    tu_assert_near(prev, 0.0, 1e-12);
    free(text);
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
        tu_put_u64(PKG0, values[k]);
        tu_pause_ms(3);
        sampler_tick(s);
        text = render(r, s, NULL);
        double j = value_of(text, key), jn = value_of(text, node);
        tu_assert_near(j, want[k], 1e-6);
        assert_true(j >= prev);
        assert_true(jn >= prev_node);
        prev = j;
        prev_node = jn;
        free(text);
    }
    assert_int_equal(s->st[0].wraps, 1);
    assert_int_equal(s->st[0].resets, 1);
    metrics_renderer_free(r);
    sampler_free(s);
}

/* ---- GPUs through the fake NVML ---- */

static void test_gpu_utilization(void **state)
{
    (void)state;
    const char *lib = getenv("CARMA_FAKE_NVML");
    if (!lib || !lib[0])
        skip();
    char scenario[512];
    tu_fixture_path(scenario, sizeof scenario, "../fakes/nvml/two.scenario");
    setenv("CARMA_FAKE_NVML_SCENARIO", scenario, 1);
    setenv("CARMA_NVML_LIBRARY", lib, 1);
    tu_copy_fixture("vm-empty");
    struct sampler_opts o = {.root = tu_dir, .sources = "nvml", .model = {.idle_w = -1}};
    struct sampler *s = tu_sampler_new(&o);
    sampler_tick(s);
    struct metrics_renderer *r = renderer(s, false);
    char *text = render(r, s, NULL);
    tu_assert_near(
        value_of(text, "carma_gpu_utilization_ratio{node=\"node-1\",gpu=\"0\",uuid=\"GPU-0000\"}"),
        0.8, 1e-9);
    tu_assert_near(value_of(text, "carma_gpu_memory_utilization_ratio{node=\"node-1\",gpu=\"0\","
                                  "uuid=\"GPU-0000\"}"),
                   0.4, 1e-9);
    assert_non_null(strstr(text, "carma_gpu_utilization_ratio{node=\"node-1\",gpu=\"1\","
                                 "uuid=\"GPU-0001\"} "));
    assert_non_null(strstr(text, "# TYPE carma_gpu_memory_utilization_ratio gauge\n"));
    free(text);
    metrics_renderer_free(r);
    sampler_free(s);
    unsetenv("CARMA_NVML_LIBRARY");
    unsetenv("CARMA_FAKE_NVML_SCENARIO");
}

/* ---- the store ---- */

static void test_store_reuse(void **state)
{
    (void)state;
    struct metrics_store st;
    metrics_store_init(&st);
    assert_null(metrics_store_acquire(&st));
    struct metrics_snapshot *a = metrics_store_begin(&st);
    assert_non_null(a);
    /* not published: handed out again */
    assert_ptr_equal(metrics_store_begin(&st), a);
    metrics_store_publish(&st, a);
    struct metrics_snapshot *held = metrics_store_acquire(&st);
    assert_ptr_equal(held, a);
    assert_int_equal(atomic_load(&a->refs), 1);
    /* the latest is never handed out */
    struct metrics_snapshot *b = metrics_store_begin(&st);
    assert_non_null(b);
    assert_ptr_not_equal(b, a);
    metrics_store_publish(&st, b);
    /* a is no longer the latest but still referenced: a third one */
    struct metrics_snapshot *c = metrics_store_begin(&st);
    assert_ptr_not_equal(c, a);
    assert_ptr_not_equal(c, b);
    metrics_snapshot_release(held);
    assert_int_equal(atomic_load(&a->refs), 0);
    /* released: reused */
    assert_ptr_equal(metrics_store_begin(&st), a);
    assert_int_equal(st.n, 3);
    /* every slot held: NULL, never more than the maximum */
    struct metrics_snapshot *refs[METRICS_SNAPSHOTS_MAX];
    size_t n = 0;
    for (;;) {
        struct metrics_snapshot *x = metrics_store_begin(&st);
        if (!x)
            break;
        metrics_store_publish(&st, x);
        refs[n++] = metrics_store_acquire(&st);
        assert_true(n <= METRICS_SNAPSHOTS_MAX);
    }
    assert_int_equal(st.n, METRICS_SNAPSHOTS_MAX);
    for (size_t k = 0; k < n; k++)
        metrics_snapshot_release(refs[k]);
    assert_non_null(metrics_store_begin(&st));
    metrics_store_done(&st);
    assert_int_equal(st.n, 0);
}

/* Readers check that a snapshot they hold never changes: every byte of its text is the
 * publication number it was rendered with, and its length follows from that number. */
struct stress {
    struct metrics_store st;
    atomic_bool stop;
    atomic_ulong reads, bad;
};

static size_t stress_len(unsigned char v)
{
    return 64 + (size_t)v * 3;
}

static void *stress_reader(void *arg)
{
    struct stress *x = arg;
    while (!atomic_load(&x->stop)) {
        struct metrics_snapshot *s = metrics_store_acquire(&x->st);
        if (!s)
            continue;
        unsigned char v = (unsigned char)s->text.data[0];
        bool ok = s->text.len == stress_len(v);
        for (int pass = 0; pass < 2 && ok; pass++)
            for (size_t k = 0; k < s->text.len && ok; k++)
                ok = (unsigned char)s->text.data[k] == v;
        if (!ok)
            atomic_fetch_add(&x->bad, 1);
        atomic_fetch_add(&x->reads, 1);
        metrics_snapshot_release(s);
    }
    return NULL;
}

static void test_store_stress(void **state)
{
    (void)state;
    struct stress *x = calloc(1, sizeof *x);
    assert_non_null(x);
    metrics_store_init(&x->st);
    enum { READERS = 4, PUBLISH = 20000 };
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, stress_reader, x), 0);
    size_t skipped = 0;
    /* at least PUBLISH publications, and on until the readers (which a busy machine may not
     * schedule at first) have read 1000 snapshots, for at most 20 s */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned k = 1;; k++) {
        if (k > PUBLISH) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (atomic_load(&x->reads) >= 1000 || now.tv_sec - t0.tv_sec > 20)
                break;
        }
        struct metrics_snapshot *s = metrics_store_begin(&x->st);
        if (!s) {
            skipped++;
            continue;
        }
        unsigned char v = (unsigned char)(k % 251);
        struct metrics_buf *b = &s->text;
        size_t len = stress_len(v);
        if (b->cap < len) {
            free(b->data);
            b->data = malloc(1024);
            assert_non_null(b->data);
            b->cap = 1024;
        }
        b->len = 0;
        /* written slowly, byte by byte, so that a reader that kept a snapshot being rewritten
         * would see it */
        for (size_t i = 0; i < len; i++)
            b->data[b->len++] = (char)v;
        metrics_store_publish(&x->st, s);
    }
    atomic_store(&x->stop, true);
    for (int i = 0; i < READERS; i++)
        pthread_join(t[i], NULL);
    print_message("# %lu reads, %zu publications skipped, %zu snapshots\n",
                  (unsigned long)atomic_load(&x->reads), skipped, x->st.n);
    assert_int_equal(atomic_load(&x->bad), 0);
    assert_true(atomic_load(&x->reads) > 0);
    assert_true(x->st.n <= METRICS_SNAPSHOTS_MAX);
    metrics_store_done(&x->st);
    free(x);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tu_setup, tu_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_render_small),
        cmocka_unit_test(test_render_empty_state),
        cmocka_unit_test(test_render_reuses_buffer),
        cmocka_unit_test(test_compat_doc_example),
        cmocka_unit_test(test_compat_lines),
        T(test_compat_grace_fixture),
        cmocka_unit_test(test_compat_dcgm_doc_example),
        cmocka_unit_test(test_compat_dcgm_lines),
        cmocka_unit_test(test_srt_choose),
        T(test_energy_monotonic_wrap),
        T(test_gpu_utilization),
        cmocka_unit_test(test_store_reuse),
        cmocka_unit_test(test_store_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

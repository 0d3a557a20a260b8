/*
 * Unit tests for srt/host: srt-slurm's host collector files (formats doc §3.2) byte for byte:
 * timestamp_local as Python's isoformat in several time zones (an offset with seconds, the
 * microseconds left out when 0), the rows of schema 3 and 4 (sensor order, total_power_w rules,
 * a blank total where srt-slurm writes `None`, utilization for DCGM only, quoting of the host),
 * the sensors chosen from a channel set, the metadata (sorted keys, counts, status), the ready
 * and error markers, and no allocation in the steady state.
 */
#include "testutil.h"

#include "alloccount.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "srt/host.h"

#define T_NS 1788308943627448000LL /* 2026-09-02T00:29:03.627448Z */

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void check_local(const char *tz, int64_t ns, const char *want)
{
    set_tz(tz);
    char buf[64];
    size_t n = srt_host_local_time(buf, sizeof buf, ns);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

static void test_local_time(void **state)
{
    (void)state;
    check_local("PST8PDT,M3.2.0,M11.1.0", T_NS, "2026-09-01T17:29:03.627448-07:00");
    check_local("PST8PDT,M3.2.0,M11.1.0", 1788308943000000000LL, "2026-09-01T17:29:03-07:00");
    check_local("PST8PDT,M3.2.0,M11.1.0", 1798761600250000000LL,
                "2026-12-31T16:00:00.250000-08:00");
    check_local("<+0530>-5:30", 1788308943000001000LL, "2026-09-02T05:59:03.000001+05:30");
    check_local("<XYZ>-0:30:15", 1788308943500000000LL, "2026-09-02T00:59:18.500000+00:30:15");
    check_local("UTC0", T_NS, "2026-09-02T00:29:03.627448+00:00");
    /* the nanoseconds below a µs are dropped, as timestamp_unix drops them */
    check_local("UTC0", T_NS + 999, "2026-09-02T00:29:03.627448+00:00");
    char small[8];
    assert_int_equal(srt_host_local_time(small, sizeof small, T_NS), 0);
}

static const struct srt_host_sensor acpi[] = {
    {"CPU0:cpuRailPowerUsageW", 0, HWMON_OEM_CPU_RAIL, 0},
    {"CPU0:cpuSidePowerUsageW", 0, HWMON_OEM_TOTAL, 1},
    {"CPU0:dramPowerUsageW", 0, HWMON_OEM_DRAM, 2},
    {"CPU1:cpuSidePowerUsageW", 1, HWMON_OEM_TOTAL, 3},
    {"CPU1:socPowerUsageW", 1, HWMON_OEM_SOC, 4},
};
#define NACPI (sizeof acpi / sizeof acpi[0])

static void acpi_values(struct srt_host_value *v)
{
    static const double w[NACPI] = {125.25, 150.0, 8.0, 141.25, 9.25};
    for (size_t i = 0; i < NACPI; i++) {
        v[i] = (struct srt_host_value){.valid = true, .power_w = w[i]};
        for (int k = 0; k < SRT_HOST_UTIL; k++)
            v[i].util[k] = 0.5; /* ACPI rows never show it */
    }
}

static void rows_eq(int schema, enum srt_host_source src, const char *host,
                    const struct srt_host_sensor *s, const struct srt_host_value *v, size_t n,
                    int want_rows, const char *want)
{
    struct csv_buf b = {0}, h = {0};
    assert_int_equal(csv_buf_field(&h, host, 1), 0);
    int r = srt_host_rows(&b, schema, src, h.data, T_NS, s, v, n);
    assert_int_equal(r, want_rows);
    assert_string_equal(b.len ? b.data : "", want);
    assert_int_equal(b.len, strlen(want));
    csv_buf_free(&b);
    csv_buf_free(&h);
}

#define PFX3 "3,1788308943.627448,2026-09-02T00:29:03.627448+00:00,"
#define PFX4 "4,1788308943.627448,2026-09-02T00:29:03.627448+00:00,"

static void test_rows_acpi_v3(void **state)
{
    (void)state;
    set_tz("UTC0");
    struct srt_host_value v[NACPI];
    acpi_values(v);
    rows_eq(3, SRT_HOST_ACPI, "node-a", acpi, v, NACPI, 5,
            PFX3 "node-a,acpi,CPU0:cpuRailPowerUsageW,0,125.25,291.25,,,,,\r\n" PFX3
                 "node-a,acpi,CPU0:cpuSidePowerUsageW,0,150.0,291.25,,,,,\r\n" PFX3
                 "node-a,acpi,CPU0:dramPowerUsageW,0,8.0,291.25,,,,,\r\n" PFX3
                 "node-a,acpi,CPU1:cpuSidePowerUsageW,1,141.25,291.25,,,,,\r\n" PFX3
                 "node-a,acpi,CPU1:socPowerUsageW,1,9.25,291.25,,,,,\r\n");
    /* a socket total that did not read: its row is left out and the total is blank (srt-slurm
     * writes None there) */
    v[3].valid = false;
    v[0].valid = false; /* a rail that did not read: only its row goes */
    rows_eq(3, SRT_HOST_ACPI, "a,b", acpi, v, NACPI, 3,
            PFX3 "\"a,b\",acpi,CPU0:cpuSidePowerUsageW,0,150.0,,,,,,\r\n" PFX3
                 "\"a,b\",acpi,CPU0:dramPowerUsageW,0,8.0,,,,,,\r\n" PFX3
                 "\"a,b\",acpi,CPU1:socPowerUsageW,1,9.25,,,,,,\r\n");
    /* nothing read: a read failure, no row */
    for (size_t i = 0; i < NACPI; i++)
        v[i].valid = false;
    rows_eq(3, SRT_HOST_ACPI, "node-a", acpi, v, NACPI, 0, "");
}

static void test_rows_acpi_v4(void **state)
{
    (void)state;
    set_tz("UTC0");
    struct srt_host_value v[NACPI];
    acpi_values(v);
    rows_eq(4, SRT_HOST_ACPI, "node-a", acpi, v, NACPI, 2,
            PFX4 "node-a,acpi,CPU0:cpuSidePowerUsageW,0,150.0,125.25,,8.0,291.25,,,,,\r\n" PFX4
                 "node-a,acpi,CPU1:cpuSidePowerUsageW,1,141.25,,9.25,,291.25,,,,,\r\n");
    /* a socket without its total is dropped (a rail never stands in); the total is the sum of
     * the rows */
    v[1].valid = false;
    rows_eq(4, SRT_HOST_ACPI, "node-a", acpi, v, NACPI, 1,
            PFX4 "node-a,acpi,CPU1:cpuSidePowerUsageW,1,141.25,,9.25,,141.25,,,,,\r\n");
    v[3].valid = false;
    rows_eq(4, SRT_HOST_ACPI, "node-a", acpi, v, NACPI, 0, "");
}

static void test_rows_dcgm(void **state)
{
    (void)state;
    set_tz("UTC0");
    const struct srt_host_sensor d[] = {
        {"CPU0:cpuPowerUsageW", 0, HWMON_OEM_TOTAL, 0},
        {"CPU1:cpuPowerUsageW", 1, HWMON_OEM_TOTAL, 1},
    };
    struct srt_host_value v[2] = {
        {true, 43.878, {0.5, 0.375, 0, 0.125, 0}},
        {true, 52.35, {0.25, NAN, NAN, NAN, 0.0625}},
    };
    rows_eq(3, SRT_HOST_DCGM, "h", d, v, 2, 2,
            PFX3 "h,dcgm,CPU0:cpuPowerUsageW,0,43.878,96.228,0.5,0.375,0.0,0.125,0.0\r\n" PFX3
                 "h,dcgm,CPU1:cpuPowerUsageW,1,52.35,96.228,0.25,,,,0.0625\r\n");
    rows_eq(4, SRT_HOST_DCGM, "h", d, v, 2, 2,
            PFX4 "h,dcgm,CPU0:cpuPowerUsageW,0,43.878,,,,96.228,0.5,0.375,0.0,0.125,0.0\r\n" PFX4
                 "h,dcgm,CPU1:cpuPowerUsageW,1,52.35,,,,96.228,0.25,,,,0.0625\r\n");
    /* DCGM: the total of the valid sockets */
    v[0].valid = false;
    rows_eq(3, SRT_HOST_DCGM, "h", d, v, 2, 1,
            PFX3 "h,dcgm,CPU1:cpuPowerUsageW,1,52.35,52.35,0.25,,,,0.0625\r\n");
}

static void test_headers(void **state)
{
    (void)state;
    assert_string_equal(srt_host_header(3),
                        "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,"
                        "socket_id,power_w,total_power_w,cpu_util_total,cpu_util_user,"
                        "cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n");
    assert_string_equal(srt_host_header(4),
                        "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,"
                        "socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,"
                        "cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n");
    assert_null(srt_host_header(2));
    assert_null(srt_host_header(5));
}

static void add_ch(struct channel_set *set, const char *name, const char *source, const char *label,
                   const char *path)
{
    int i = channel_set_add(set);
    assert_true(i >= 0);
    struct channel *c = &set->ch[i];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->source = source;
    snprintf(c->label, sizeof c->label, "%s", label);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->gauge_window_ns = 50000000;
}

static struct channel_set set;

static void grace_set(void)
{
    memset(&set, 0, sizeof set);
    add_ch(&set, "hwmon/power_meter/hwmon0/power1", "hwmon", "Module Power Socket 0",
           "sys/class/hwmon/hwmon0/device/power1_average");
    add_ch(&set, "hwmon/power_meter/socket0/total", "hwmon", "Grace Power Socket 0",
           "sys/class/hwmon/hwmon1/device/power1_average");
    add_ch(&set, "hwmon/power_meter/socket0/total.hwmon10.power1", "hwmon", "Total Power socket 0",
           "sys/class/hwmon/hwmon10/power1_average");
    add_ch(&set, "hwmon/power_meter/socket10/cpu_rail", "hwmon", "CPU Rail Power socket 10",
           "sys/class/hwmon/hwmon12/power1_average");
    add_ch(&set, "hwmon/power_meter/socket2/dram", "hwmon", "DRAM Power socket 2",
           "sys/class/hwmon/hwmon20/power1_average");
    add_ch(&set, "rapl/package-0", "rapl", "package-0", "sys/class/powercap/intel-rapl:0");
    add_ch(&set, "dcgm/cpu1", "dcgm", "", "DCGM field 1130");
    add_ch(&set, "dcgm/cpu1/sysio", "dcgm", "", "DCGM field 1132");
    add_ch(&set, "dcgm/cpu0", "dcgm", "", "DCGM field 1130");
    add_ch(&set, "dcgm/gpu0", "dcgm", "", "DCGM field 156");
}

static void test_sensors(void **state)
{
    (void)state;
    grace_set();
    struct srt_host_sensor s[SRT_HOST_SENSORS_MAX];
    size_t n = srt_host_sensors(&set, SRT_HOST_ACPI, s, SRT_HOST_SENSORS_MAX);
    assert_int_equal(n, 3);
    /* plain string order: CPU10 before CPU2 */
    assert_string_equal(s[0].name, "CPU0:cpuSidePowerUsageW");
    assert_int_equal(s[0].channel, 1);
    assert_int_equal(s[0].kind, HWMON_OEM_TOTAL);
    assert_string_equal(s[1].name, "CPU10:cpuRailPowerUsageW");
    assert_int_equal(s[1].socket, 10);
    assert_string_equal(s[2].name, "CPU2:dramPowerUsageW");
    assert_true(srt_host_has_total(s, n));
    assert_false(srt_host_has_total(s + 1, 2));
    n = srt_host_sensors(&set, SRT_HOST_DCGM, s, SRT_HOST_SENSORS_MAX);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].name, "CPU0:cpuPowerUsageW");
    assert_int_equal(s[0].channel, 8);
    assert_string_equal(s[1].name, "CPU1:cpuPowerUsageW");
    assert_int_equal(s[1].socket, 1);
    /* the cap is kept */
    assert_int_equal(srt_host_sensors(&set, SRT_HOST_ACPI, s, 1), 1);
}

static json_t *load(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    assert_non_null(j);
    return j;
}

static void test_writer(void **state)
{
    (void)state;
    set_tz("UTC0");
    grace_set();
    struct srt_host_sensor s[SRT_HOST_SENSORS_MAX];
    size_t n = srt_host_sensors(&set, SRT_HOST_ACPI, s, SRT_HOST_SENSORS_MAX);
    char nodes[4200], path[4300];
    snprintf(nodes, sizeof nodes, "%s/cpu_power/nodes", tu_dir);
    struct srt_host_opts o = {
        .nodes_dir = nodes,
        .host = "gh-01",
        .schema = 3,
        .source = SRT_HOST_ACPI,
        .requested_source = "auto",
        .interval_ns = 100000000,
        .started_ns = 1788308943500000000LL,
        .set = &set,
        .sensors = s,
        .n = n,
        .root = "/",
    };
    struct carma_err e = {0};
    struct srt_host *w = srt_host_open(&o, &e);
    assert_non_null(w);
    snprintf(path, sizeof path, "%s/gh-01.metadata.json", nodes);
    char buf[16384];
    tu_slurp(path, buf, sizeof buf);
    /* sorted keys, two-space indent, the started metadata only */
    const char *want_start = "{\n"
                             "  \"aggregate_scope\": \"cpu_side_socket_total\",\n"
                             "  \"available_power_domains\": [\n"
                             "    {\n"
                             "      \"name\": \"Module Power Socket 0\",\n"
                             "      \"path\": \"/sys/class/hwmon/hwmon0/device/power1_average\"\n"
                             "    },\n";
    assert_memory_equal(buf, want_start, strlen(want_start));
    json_t *m = load(path);
    assert_string_equal(json_string_value(json_object_get(m, "hostname")), "gh-01");
    assert_string_equal(json_string_value(json_object_get(m, "source")), "acpi");
    assert_string_equal(json_string_value(json_object_get(m, "driver")),
                        "Linux ACPI power_meter hwmon");
    assert_int_equal(json_integer_value(json_object_get(m, "schema_version")), 3);
    assert_true(json_real_value(json_object_get(m, "sample_interval_seconds")) == 0.1);
    assert_true(json_real_value(json_object_get(m, "started_at_unix")) == 1788308943.5);
    assert_null(json_object_get(m, "status"));
    assert_null(json_object_get(m, "ended_at_unix"));
    assert_int_equal(json_array_size(json_object_get(m, "available_power_domains")), 5);
    json_t *s0 = json_array_get(json_object_get(m, "sensors"), 0);
    assert_string_equal(json_string_value(json_object_get(s0, "name")), "CPU0:cpuSidePowerUsageW");
    assert_string_equal(json_string_value(json_object_get(s0, "label")), "Grace Power Socket 0");
    assert_string_equal(json_string_value(json_object_get(s0, "domain_kind")), "total");
    assert_int_equal(json_integer_value(json_object_get(s0, "socket_id")), 0);
    assert_true(json_real_value(json_object_get(s0, "average_interval_ms")) == 50.0);
    assert_string_equal(json_string_value(json_object_get(s0, "path")),
                        "/sys/class/hwmon/hwmon1/device/power1_average");
    json_decref(m);

    struct srt_host_value v[3] = {{.valid = true, .power_w = 150.5},
                                  {.valid = true, .power_w = 120},
                                  {.valid = true, .power_w = 7.5}};
    assert_int_equal(srt_host_cycle(w, T_NS, v, &e), 3);
    /* the steady state allocates nothing */
    if (ALLOC_COUNT_AVAILABLE)
        alloc_count_start();
    for (int i = 0; i < 100; i++)
        assert_int_equal(srt_host_cycle(w, T_NS + 1000000000LL, v, &e), 3);
    if (ALLOC_COUNT_AVAILABLE)
        assert_int_equal(alloc_count_stop(), 0);
    struct srt_host_value none[3] = {{0}};
    assert_int_equal(srt_host_cycle(w, T_NS, none, &e), 0);
    assert_int_equal(srt_host_failure_count(w), 1);
    assert_int_equal(srt_host_row_count(w), 303);
    assert_int_equal(srt_host_finish(w, &e), 0);

    snprintf(path, sizeof path, "%s/gh-01.csv", nodes);
    size_t len = tu_slurp(path, buf, sizeof buf);
    const char *want = "schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,"
                       "socket_id,power_w,total_power_w,cpu_util_total,cpu_util_user,"
                       "cpu_util_nice,cpu_util_sys,cpu_util_irq\r\n" PFX3
                       "gh-01,acpi,CPU0:cpuSidePowerUsageW,0,150.5,150.5,,,,,\r\n" PFX3
                       "gh-01,acpi,CPU10:cpuRailPowerUsageW,10,120.0,150.5,,,,,\r\n" PFX3
                       "gh-01,acpi,CPU2:dramPowerUsageW,2,7.5,150.5,,,,,\r\n"
                       "3,1788308944.627448,2026-09-02T00:29:04.627448+00:00,gh-01,acpi,"
                       "CPU0:cpuSidePowerUsageW,0,150.5,150.5,,,,,\r\n";
    assert_memory_equal(buf, want, strlen(want));
    assert_true(len > strlen(want));
    snprintf(path, sizeof path, "%s/gh-01.metadata.json", nodes);
    m = load(path);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "complete");
    assert_int_equal(json_integer_value(json_object_get(m, "sample_row_count")), 303);
    assert_int_equal(json_integer_value(json_object_get(m, "read_failure_count")), 1);
    assert_true(json_real_value(json_object_get(m, "ended_at_unix")) > 1.7e9);
    json_decref(m);
}

static void test_writer_failed(void **state)
{
    (void)state;
    grace_set();
    struct srt_host_sensor s[SRT_HOST_SENSORS_MAX];
    size_t n = srt_host_sensors(&set, SRT_HOST_DCGM, s, SRT_HOST_SENSORS_MAX);
    char nodes[4200], path[4300];
    snprintf(nodes, sizeof nodes, "%s/nodes", tu_dir);
    struct srt_host_opts o = {.nodes_dir = nodes,
                              .host = "gh-02",
                              .schema = 4,
                              .source = SRT_HOST_DCGM,
                              .requested_source = "dcgm",
                              .interval_ns = 250000000,
                              .started_ns = 1788308943000000000LL,
                              .set = &set,
                              .sensors = s,
                              .n = n};
    struct carma_err e = {0};
    struct srt_host *w = srt_host_open(&o, &e);
    assert_non_null(w);
    struct srt_host_value none[2] = {{0}};
    assert_int_equal(srt_host_cycle(w, T_NS, none, &e), 0);
    assert_int_equal(srt_host_finish(w, &e), 0);
    snprintf(path, sizeof path, "%s/gh-02.metadata.json", nodes);
    json_t *m = load(path);
    assert_string_equal(json_string_value(json_object_get(m, "status")), "failed");
    assert_string_equal(json_string_value(json_object_get(m, "source")), "dcgm");
    assert_string_equal(json_string_value(json_object_get(m, "requested_source")), "dcgm");
    assert_string_equal(json_string_value(json_object_get(m, "aggregate_scope")), "cpu_rail_only");
    assert_int_equal(json_integer_value(json_object_get(m, "field_id")), 1130);
    assert_int_equal(json_integer_value(json_object_get(m, "sample_row_count")), 0);
    assert_int_equal(json_integer_value(json_object_get(m, "read_failure_count")), 1);
    json_t *u = json_object_get(m, "utilization_fields");
    assert_int_equal(json_array_size(u), 5);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(u, 4), "field_id")), 1104);
    json_t *s1 = json_array_get(json_object_get(m, "sensors"), 1);
    assert_int_equal(json_integer_value(json_object_get(s1, "cpu_entity_id")), 1);
    json_decref(m);
    snprintf(path, sizeof path, "%s/gh-02.csv", nodes);
    char buf[1024];
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, srt_host_header(4));

    /* a bad schema or no sensor is refused */
    o.schema = 2;
    assert_null(srt_host_open(&o, &e));
    assert_int_equal(e.code, -EINVAL);
    o.schema = 3;
    o.n = 0;
    assert_null(srt_host_open(&o, &e));
}

static void test_markers(void **state)
{
    (void)state;
    char ready[4200], path[4300], buf[1024];
    snprintf(ready, sizeof ready, "%s/cpu_power/ready", tu_dir);
    struct carma_err e = {0};
    assert_int_equal(srt_host_ready(ready, "gh-01", "acpi", 1788308943250000000LL, &e), 0);
    snprintf(path, sizeof path, "%s/gh-01.ready.json", ready);
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "{\n  \"hostname\": \"gh-01\",\n  \"ready_at_unix\": 1788308943.25,\n"
                             "  \"source\": \"acpi\"\n}\n");
    assert_int_equal(srt_host_error(ready, "gh-02", "no \"ACPI\" total", &e), 0);
    snprintf(path, sizeof path, "%s/gh-02.error.json", ready);
    tu_slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "{\n  \"error\": \"no \\\"ACPI\\\" total\",\n  \"hostname\": "
                             "\"gh-02\"\n}\n");
    /* a file where the directory should be: the error names it */
    tu_put("cpu_power/file", "x");
    snprintf(ready, sizeof ready, "%s/cpu_power/file/ready", tu_dir);
    assert_true(srt_host_ready(ready, "gh-01", "acpi", 0, &e) < 0);
    assert_non_null(strstr(e.msg, "cpu_power/file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_time),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_rows_acpi_v3),
        cmocka_unit_test(test_rows_acpi_v4),
        cmocka_unit_test(test_rows_dcgm),
        cmocka_unit_test(test_sensors),
        cmocka_unit_test_setup_teardown(test_writer, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_writer_failed, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_markers, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_carma_files: CARMA's run-directory files (export/carma_files), byte for byte: the
 * nvidia-smi CSV from power/samples.csv (local time in ms, "W" and "%" units, "[N/A]"), the
 * wall meter's log from samples.csv (the first meter channel only, ticks without a reading
 * left out), perf stat's -x, -I -G lines from features.csv (interval deltas of cumulative
 * counts, the counters that were read, the metrics perf prints), a workload's power and carbon
 * CSV from event_summaries.jsonl (embodied accrued over its lifetime, a last line cut short
 * skipped, a bad line an error), and carma_files_write on a run directory (only the files
 * whose data is there).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/carma_files.h"
#include "testutil.h"

/* Runs conv on a writable copy of in; the output in *ret (caller frees). */
typedef int (*conv_fn)(char *text, size_t len, FILE *out, struct carma_err *e);

static double perf_t0 = 100.0;

static int nvsmi(char *t, size_t n, FILE *o, struct carma_err *e)
{
    return carma_nvsmi_write(t, n, "power/samples.csv", o, e);
}
static int wattsup(char *t, size_t n, FILE *o, struct carma_err *e)
{
    return carma_wattsup_write(t, n, "samples.csv", o, e);
}
static int perf(char *t, size_t n, FILE *o, struct carma_err *e)
{
    static const char *const names[] = {"b", "z"};
    static const double starts[] = {100.25, NAN};
    return carma_perf_write(t, n, "features.csv", perf_t0, names, starts, 2, o, e);
}

static int run_conv(conv_fn conv, const char *in, char **ret, struct carma_err *e)
{
    char *copy = strdup(in);
    assert_non_null(copy);
    size_t len = 0;
    FILE *out = open_memstream(ret, &len);
    assert_non_null(out);
    int r = conv(copy, strlen(copy), out, e);
    assert_int_equal(fclose(out), 0);
    free(copy);
    return r;
}

static void test_nvsmi(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    static const char in[] =
        "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w,"
        "gpu_util_pct,sm_active\r\n"
        "2,1796159422.156736,0,vm,0,GPU-0000,162.217417,20.0,\r\n"
        "2,1796159422.156736,0,vm,1,GPU-0001,,,\r\n"
        "2,1796159422.9996,1,vm,0,GPU-0000,71.234,45.4,\r\n";
    char *out = NULL;
    struct carma_err e = {0};
    assert_int_equal(run_conv(nvsmi, in, &out, &e), 3);
    assert_string_equal(out, "timestamp, index, power.draw [W], utilization.gpu [%]\n"
                             "2026/12/01 21:10:22.157, 0, 162.22 W, 20 %\n"
                             "2026/12/01 21:10:22.157, 1, [N/A], [N/A]\n"
                             "2026/12/01 21:10:23.000, 0, 71.23 W, 45 %\n");
    free(out);

    /* a header only: nothing at all; a missing column: an error naming it */
    assert_int_equal(run_conv(nvsmi, "timestamp_unix,gpu_index,power_w,gpu_util_pct\r\n", &out, &e),
                     0);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(run_conv(nvsmi, "timestamp_unix,gpu_index,power_w\r\n1,0,5\r\n", &out, &e),
                     -EINVAL);
    assert_string_equal(e.msg, "power/samples.csv:1: no column gpu_util_pct");
    free(out);
    assert_int_equal(
        run_conv(nvsmi, "timestamp_unix,gpu_index,power_w,gpu_util_pct\nx,0,5,5\n", &out, &e),
        -EINVAL);
    assert_string_equal(e.msg, "power/samples.csv:2: bad timestamp_unix or gpu_index");
    free(out);
}

static void test_wattsup(void **state)
{
    (void)state;
    static const char in[] =
        "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total\r\n"
        "1.5,x,rapl/package-0,rapl,cpu,package,measured,30,0\r\n"
        "1.5,x,meter/wattsup,meter,system,total,measured,,0\r\n"
        "2.0,x,meter/wattsup,meter,system,total,measured,42.5,21.25\r\n"
        "2.0,x,meter/cmd,meter,system,total,measured,99,0\r\n"
        "2.5,x,meter/wattsup,meter,system,total,measured,43.04,40\r\n";
    char *out = NULL;
    struct carma_err e = {0};
    assert_int_equal(run_conv(wattsup, in, &out, &e), 2);
    assert_string_equal(out, "timestamp_unix,watts,volts,amps\n"
                             "2.000000,42.5,,\n"
                             "2.500000,43.0,,\n");
    free(out);
    /* no meter: nothing */
    assert_int_equal(
        run_conv(wattsup, "timestamp_unix,channel,watts\r\n1,rapl/package-0,30\r\n", &out, &e), 0);
    assert_string_equal(out, "");
    free(out);
}

static void test_perf(void **state)
{
    (void)state;
    static const char in[] = "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,"
                             "cycles\r\n"
                             "100.5,a,0.1,500000000,1000,2000\r\n"
                             "100.5,b,0.0,0,,\r\n"
                             "101.5,a,0.9,1500000000,4000,3000\r\n"
                             "101.5,b,0.2,250000000,,\r\n";
    char *out = NULL;
    struct carma_err e = {0};
    assert_int_equal(run_conv(perf, in, &out, &e), 8);
    assert_string_equal(
        out, "0.500000000,500.00,msec,task-clock,a,500000000,100.00,1.000,CPUs utilized\n"
             "0.500000000,1000,,instructions,a,500000000,100.00,0.50,insn per cycle\n"
             "0.500000000,2000,,cycles,a,500000000,100.00,0.000,GHz\n"
             "0.500000000,0.00,msec,task-clock,b,250000000,100.00,0.000,CPUs utilized\n"
             "1.500000000,1000.00,msec,task-clock,a,1000000000,100.00,1.000,CPUs utilized\n"
             "1.500000000,3000,,instructions,a,1000000000,100.00,3.00,insn per cycle\n"
             "1.500000000,1000,,cycles,a,1000000000,100.00,0.000,GHz\n"
             "1.500000000,250.00,msec,task-clock,b,1000000000,100.00,0.250,CPUs utilized\n");
    free(out);
    /* no counter read (only CPU time): no line */
    assert_int_equal(run_conv(perf,
                              "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,"
                              "cycles\r\n100.5,a,0.1,,,\r\n",
                              &out, &e),
                     0);
    assert_string_equal(out, "");
    free(out);
}

static void test_job(void **state)
{
    (void)state;
    static const char in[] =
        "{\"timestamp_unix\":10.0,\"elapsed_s\":1.0,\"workloads\":[{\"name\":\"a\",\"power_w\":5.0,"
        "\"energy_j\":5.0,\"g_co2e\":0.001,\"method\":\"measured\"},{\"name\":\"b\",\"power_w\":1."
        "0,\"energy_j\":1.0,\"g_co2e\":0.0002,\"method\":\"estimated\"}],\"idle_j\":1}\n"
        "{\"timestamp_unix\":11.0,\"elapsed_s\":2.0,\"workloads\":[{\"name\":\"a\",\"power_w\":7.5,"
        "\"energy_j\":12.5,\"g_co2e\":0.0025,\"method\":\"measured\"}]}\n"
        "{\"timestamp_unix\":12.0,\"elapsed_s\":3.0,\"worklo";
    char *out = NULL;
    size_t len = 0;
    struct carma_err e = {0};
    FILE *f = open_memstream(&out, &len);
    assert_int_equal(carma_job_write(in, strlen(in), "ev", "a", 9.5, 11.5, 0.4, f, &e), 2);
    fclose(f);
    assert_string_equal(out, "timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                             "embodied_g_co2e,method\n"
                             "10.000000,1.000000,5.000000,5.000000,0.001000,0.100000,measured\n"
                             "11.000000,2.000000,7.500000,12.500000,0.002500,0.300000,measured\n");
    free(out);
    f = open_memstream(&out, &len);
    assert_int_equal(carma_job_write(in, strlen(in), "ev", "b", NAN, 11.5, 0.4, f, &e), 1);
    fclose(f);
    assert_string_equal(out, "timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                             "embodied_g_co2e,method\n"
                             "10.000000,1.000000,1.000000,1.000000,0.000200,,estimated\n");
    free(out);
    static const char bad[] = "{\"timestamp_unix\":10.0,\"workloads\":[]}\nnot json\n{}\n";
    f = open_memstream(&out, &len);
    assert_int_equal(carma_job_write(bad, strlen(bad), "ev", "a", 0, 1, 0, f, &e), -EINVAL);
    fclose(f);
    assert_string_equal(e.msg, "ev:2: not an event summary");
    free(out);
}

static void put_file(const char *rel, const char *text)
{
    char p[TU_DIR_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tu_dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static bool exists(const char *rel)
{
    char p[TU_DIR_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tu_dir, rel);
    return access(p, F_OK) == 0;
}

/* A run directory without GPU or meter: perf.log and the workload's CSV only; with
 * power/samples.csv, nvidia_smi_power.csv too. */
static void test_files_write(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    put_file("samples.csv", "timestamp_unix,timestamp_local,channel,source,kind,domain,method,"
                            "watts,joules_total\r\n"
                            "100.0,x,model/cpu0,model,cpu,package,estimated,,0\r\n"
                            "100.5,x,model/cpu0,model,cpu,package,estimated,50,25\r\n");
    put_file("features.csv", "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,"
                             "cycles\r\n"
                             "100.5,w,0.1,200000000,,\r\n");
    put_file("workloads.json", "{\"workloads\": [{\"name\": \"w\", \"type\": \"finetune\", "
                               "\"start_unix\": 100.1, \"end_unix\": 101.1}]}");
    put_file("report.json", "{\"workloads\": [{\"name\": \"w\", \"embodied_g_co2e\": 2.0}]}");
    put_file("event_summaries.jsonl",
             "{\"timestamp_unix\":100.5,\"elapsed_s\":0.5,\"workloads\":[{\"name\":\"w\","
             "\"power_w\":4,\"energy_j\":2,\"g_co2e\":0.0003,\"method\":\"estimated\"}]}\n");
    struct carma_err e = {0};
    assert_int_equal(carma_files_write(tu_dir, &e), 2);
    assert_false(exists("nvidia_smi_power.csv"));
    assert_false(exists("wattsup_log.csv"));
    char buf[4096];
    char p[TU_DIR_MAX + 64];
    snprintf(p, sizeof p, "%s/perf.log", tu_dir);
    tu_slurp(p, buf, sizeof buf);
    /* time 0 is samples.csv's first row */
    assert_string_equal(
        buf, "0.500000000,200.00,msec,task-clock,w,400000000,100.00,0.500,CPUs utilized\n");
    snprintf(p, sizeof p, "%s/w_power_carbon.csv", tu_dir);
    tu_slurp(p, buf, sizeof buf);
    assert_string_equal(buf, "timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                             "embodied_g_co2e,method\n"
                             "100.500000,0.500000,4.000000,2.000000,0.000300,0.800000,estimated\n");

    snprintf(p, sizeof p, "%s/power", tu_dir);
    assert_int_equal(mkdir(p, 0755), 0);
    put_file("power/samples.csv", "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,"
                                  "gpu_uuid,power_w,gpu_util_pct,sm_active\r\n"
                                  "2,100.25,0,vm,0,GPU-0,300,50.0,\r\n");
    assert_int_equal(carma_files_write(tu_dir, &e), 3);
    snprintf(p, sizeof p, "%s/nvidia_smi_power.csv", tu_dir);
    tu_slurp(p, buf, sizeof buf);
    assert_string_equal(buf, "timestamp, index, power.draw [W], utilization.gpu [%]\n"
                             "1970/01/01 00:01:40.250, 0, 300.00 W, 50 %\n");

    /* a bad file: the error names it, the others are still written */
    put_file("power/samples.csv", "timestamp_unix\r\n1\r\n");
    assert_int_equal(unlink(p), 0);
    assert_int_equal(carma_files_write(tu_dir, &e), -EINVAL);
    assert_string_equal(e.msg, "power/samples.csv:1: no column gpu_index");
    assert_true(exists("perf.log") && exists("w_power_carbon.csv"));
    assert_false(exists("nvidia_smi_power.csv"));
}

static void append_file(const char *rel, const char *text)
{
    char p[TU_DIR_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tu_dir, rel);
    FILE *f = fopen(p, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void slurp_rel(const char *rel, char *buf, size_t cap)
{
    char p[TU_DIR_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", tu_dir, rel);
    tu_slurp(p, buf, cap);
}

/* Following a run as it goes: complete lines only, the header once, state kept between
 * calls (the meter followed, perf's previous counts); at the end the same bytes as the whole
 * conversion, but for the embodied carbon that only the end knows. */
static void test_follow(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    struct carma_files *cf = carma_files_open(tu_dir);
    assert_non_null(cf);
    struct carma_err e = {0};
    assert_int_equal(carma_files_follow(cf, &e), 0); /* nothing there yet */
    assert_false(exists("wattsup_log.csv"));
    put_file("samples.csv", "timestamp_unix,timestamp_local,channel,source,kind,domain,method,"
                            "watts,joules_total\r\n"
                            "100.0,x,meter/wattsup,meter,system,total,measured,,0\r\n"
                            "100.5,x,meter/wattsup,meter,system,total,measured,42.5,21\r\n"
                            "100.5,x,meter/cmd,meter,system,total,measured,99,0\r\n"
                            "101.0,x,meter/wattsup,meter,sys");
    put_file("features.csv", "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,"
                             "cycles\r\n"
                             "100.5,w,0.1,200000000,,\r\n");
    put_file("event_summaries.jsonl",
             "{\"timestamp_unix\":100.5,\"elapsed_s\":0.5,\"workloads\":[{\"name\":\"w\","
             "\"power_w\":4,\"energy_j\":2,\"g_co2e\":0.0003,\"method\":\"estimated\"}]}\n");
    assert_int_equal(carma_files_follow(cf, &e), 0);
    char buf[4096];
    slurp_rel("wattsup_log.csv", buf, sizeof buf);
    assert_string_equal(buf, "timestamp_unix,watts,volts,amps\n100.500000,42.5,,\n");
    slurp_rel("perf.log", buf, sizeof buf);
    assert_string_equal(
        buf, "0.500000000,200.00,msec,task-clock,w,500000000,100.00,0.400,CPUs utilized\n");
    /* the rest of the cut line, and more */
    append_file("samples.csv", "tem,total,measured,43,42\r\n"
                               "101.0,x,meter/cmd,meter,system,total,measured,98,0\r\n");
    append_file("features.csv", "101.5,w,0.5,700000000,,\r\n");
    append_file("event_summaries.jsonl",
                "{\"timestamp_unix\":101.5,\"elapsed_s\":1.5,\"workloads\":[{\"name\":\"w\","
                "\"power_w\":6,\"energy_j\":8,\"g_co2e\":0.0012,\"method\":\"estimated\"}]}\n");
    assert_int_equal(carma_files_follow(cf, &e), 0);
    slurp_rel("wattsup_log.csv", buf, sizeof buf);
    assert_string_equal(buf,
                        "timestamp_unix,watts,volts,amps\n100.500000,42.5,,\n101.000000,43.0,,\n");
    slurp_rel("perf.log", buf, sizeof buf);
    assert_string_equal(
        buf, "0.500000000,200.00,msec,task-clock,w,500000000,100.00,0.400,CPUs utilized\n"
             "1.500000000,500.00,msec,task-clock,w,1000000000,100.00,0.500,CPUs utilized\n");
    slurp_rel("w_power_carbon.csv", buf, sizeof buf);
    assert_string_equal(buf, "timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                             "embodied_g_co2e,method\n"
                             "100.500000,0.500000,4.000000,2.000000,0.000300,,estimated\n"
                             "101.500000,1.500000,6.000000,8.000000,0.001200,,estimated\n");
    assert_false(exists("nvidia_smi_power.csv"));
    carma_files_free(cf);
    carma_files_free(NULL);

    /* the end: written whole, the embodied carbon from report.json */
    put_file("workloads.json", "{\"workloads\": [{\"name\": \"w\", \"start_unix\": 100.0, "
                               "\"end_unix\": 102.0}]}");
    put_file("report.json", "{\"workloads\": [{\"name\": \"w\", \"embodied_g_co2e\": 1.0}]}");
    assert_int_equal(carma_files_write(tu_dir, &e), 3);
    slurp_rel("w_power_carbon.csv", buf, sizeof buf);
    assert_string_equal(buf, "timestamp_unix,elapsed_s,power_w,energy_j,operational_g_co2e,"
                             "embodied_g_co2e,method\n"
                             "100.500000,0.500000,4.000000,2.000000,0.000300,0.250000,estimated\n"
                             "101.500000,1.500000,6.000000,8.000000,0.001200,0.750000,estimated\n");
    slurp_rel("wattsup_log.csv", buf, sizeof buf);
    assert_string_equal(buf,
                        "timestamp_unix,watts,volts,amps\n100.500000,42.5,,\n101.000000,43.0,,\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvsmi),
        cmocka_unit_test(test_wattsup),
        cmocka_unit_test(test_perf),
        cmocka_unit_test(test_job),
        cmocka_unit_test_setup_teardown(test_files_write, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_follow, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

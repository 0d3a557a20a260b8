/*
 * Tests for rundir/rows: every row formatter of the run-directory files carma run writes
 * (features.csv, node_util.csv, cpu_util.csv, utilization.csv, event_summaries.jsonl, pstree.log,
 * workloads.json, workload_pids.json) against hand-written bytes: columns, number formats,
 * blank cells, quoting, line ends; and the CSV rows read back by rundir.h's validators.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "rundir/rows.h"
#include "rundir/rundir.h"

/* What a memory stream holds once closed (caller frees). */
struct mem {
    FILE *f;
    char *text;
    size_t len;
};

static void mem_open(struct mem *m)
{
    m->text = NULL;
    m->len = 0;
    m->f = open_memstream(&m->text, &m->len);
    assert_non_null(m->f);
}

static void mem_close(struct mem *m)
{
    assert_int_equal(fclose(m->f), 0);
}

/* s, NUL-terminated, is exactly want (len bytes, so that a NUL would show). */
static void assert_bytes(const char *s, size_t len, const char *want)
{
    if (len != strlen(want) || memcmp(s, want, len) != 0)
        fail_msg("got [%.*s] (%zu bytes), want [%s] (%zu bytes)", (int)len, s, len, want,
                 strlen(want));
}

static void features(void **state)
{
    (void)state;
    assert_string_equal(RUNDIR_FEATURES_HEADER,
                        "timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,cycles\r\n");
    struct mem m;
    mem_open(&m);
    const uint64_t v[RUNDIR_FEATURES_COUNTERS] = {1500000000ULL, 18446744073709551615ULL, 7};
    rundir_rows_features(m.f, "1796032424.837549", "train", 1.5, v, 7);
    /* instructions unavailable (bit 1 clear): a blank cell */
    rundir_rows_features(m.f, "1796032425.837549", "serve", 0.0000004, v, 5);
    rundir_rows_features(m.f, "1796032426.000000", "idle", 2.0 / 3.0, v, 0);
    mem_close(&m);
    assert_bytes(m.text, m.len,
                 "1796032424.837549,train,1.500000,1500000000,18446744073709551615,7\r\n"
                 "1796032425.837549,serve,0.000000,1500000000,,7\r\n"
                 "1796032426.000000,idle,0.666667,,,\r\n");
    free(m.text);
}

static void node_util(void **state)
{
    (void)state;
    assert_string_equal(RUNDIR_NODE_UTIL_HEADER,
                        "timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util\r\n");
    char row[160];
    size_t n = rundir_rows_node_util(row, sizeof row, "1796032424.837549", 0, 0, NAN);
    assert_bytes(row, n, "1796032424.837549,0.000000,0.000000,\r\n"); /* blank cpu_util */
    n = rundir_rows_node_util(row, sizeof row, "1796032425.847549", 1.23, 8.01, 0.1535580524);
    assert_bytes(row, n, "1796032425.847549,1.230000,8.010000,0.153558\r\n");
    /* a row that does not fit (with its CRLF and room to spare) is none */
    char small[40];
    assert_int_equal(
        rundir_rows_node_util(small, sizeof small, "1796032425.847549", 1.23, 8.01, 0.1535580524),
        0);
    /* 38 bytes with its CRLF: 38 bytes leave no room to spare, 39 do */
    assert_int_equal(rundir_rows_node_util(small, 38, "1796032424.837549", 0, 0, NAN), 0);
    char just[39];
    n = rundir_rows_node_util(just, sizeof just, "1796032424.837549", 0, 0, NAN);
    assert_bytes(just, n, "1796032424.837549,0.000000,0.000000,\r\n");
}

/* node_util.csv's rows are what its reader accepts: written to a file, read back */
static void node_util_read_back(void **state)
{
    (void)state;
    char path[512], row[160];
    snprintf(path, sizeof path, "%s/node_util.csv", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(RUNDIR_NODE_UTIL_HEADER, f);
    size_t n = rundir_rows_node_util(row, sizeof row, "1796032424.837549", 0, 0, NAN);
    fwrite(row, 1, n, f);
    n = rundir_rows_node_util(row, sizeof row, "1796032425.837549", 0.5, 4, 0.125);
    fwrite(row, 1, n, f);
    assert_int_equal(fclose(f), 0);
    struct rundir_lines l = {0};
    struct rundir_util u;
    struct rundir_util_row r;
    struct carma_err e = {0};
    assert_int_equal(rundir_lines_open(&l, tu_dir, "node_util.csv", 0, 0, &e), 0);
    assert_int_equal(rundir_util_header(&u, &l, &e), 0);
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_util_row(&u, &l, &r, &e), 0);
    assert_true(isnan(r.util));
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_util_row(&u, &l, &r, &e), 0);
    tu_assert_near(r.busy_s, 0.5, 0);
    tu_assert_near(r.total_s, 4, 0);
    tu_assert_near(r.util, 0.125, 0);
    assert_int_equal(rundir_lines_next(&l, &e), 0);
    assert_int_equal(l.torn, 0);
    rundir_lines_close(&l);
}

static void cpu_util(void **state)
{
    (void)state;
    assert_string_equal(RUNDIR_CPU_UTIL_HEADER, "timestamp_unix,socket,source,util_total,"
                                                "util_user,util_nice,util_sys,util_irq\r\n");
    char row[160];
    const double full[RUNDIR_CPU_UTIL_FIGURES] = {0.5, 0.375, 0, 0.125, 1.0 / 3.0};
    size_t n = rundir_rows_cpu_util(row, sizeof row, "1796032424.837549", 0, "dcgm", full);
    assert_bytes(row, n, "1796032424.837549,0,dcgm,0.5,0.375,0,0.125,0.333333\r\n");
    assert_int_equal(row[n], '\0');
    /* a missing value is a blank cell, never 0; every value missing: five blank cells */
    const double some[RUNDIR_CPU_UTIL_FIGURES] = {0.25, NAN, 0, NAN, 1};
    n = rundir_rows_cpu_util(row, sizeof row, "1796032425.837549", 17, "dcgm", some);
    assert_bytes(row, n, "1796032425.837549,17,dcgm,0.25,,0,,1\r\n");
    const double none[RUNDIR_CPU_UTIL_FIGURES] = {NAN, NAN, NAN, NAN, NAN};
    n = rundir_rows_cpu_util(row, sizeof row, "1796032426.837549", 1, "dcgm", none);
    assert_bytes(row, n, "1796032426.837549,1,dcgm,,,,,\r\n");
    /* 31 bytes with its CRLF: 31 bytes leave no room to spare, 32 do */
    char small[32];
    assert_int_equal(rundir_rows_cpu_util(small, 31, "1796032426.837549", 1, "dcgm", none), 0);
    n = rundir_rows_cpu_util(small, sizeof small, "1796032426.837549", 1, "dcgm", none);
    assert_bytes(small, n, "1796032426.837549,1,dcgm,,,,,\r\n");
    assert_int_equal(rundir_rows_cpu_util(small, 20, "1796032424.837549", 0, "dcgm", full), 0);
    assert_int_equal(rundir_rows_cpu_util(small, 0, "1796032424.837549", 0, "dcgm", full), 0);
}

static void utilization(void **state)
{
    (void)state;
    assert_string_equal(RUNDIR_UTILIZATION_HEADER,
                        "timestamp_unix,gpu,gpu_uuid,pid,workload,gpu_util_pct,mem_util_pct,"
                        "sm_util_pct,used_mem_mib\r\n");
    struct csv_buf b = {0};
    const char *ts = "1796032424.837549";
    size_t tl = strlen(ts);
    assert_int_equal(rundir_rows_gpu_device(&b, ts, tl, 0, "GPU-1234", 87, 12.5), 0);
    assert_int_equal(
        rundir_rows_gpu_process(&b, ts, tl, 0, "GPU-1234", 4242, "train", 80, 1536.0 / 1024.0), 0);
    /* no utilization: blank cells; a uuid and a name that must be quoted */
    assert_int_equal(rundir_rows_gpu_device(&b, ts, tl, 12, "GPU,\"x\"", NAN, NAN), 0);
    assert_int_equal(rundir_rows_gpu_process(&b, ts, tl, 12, "", 7, "a,b", NAN, NAN), 0);
    assert_int_equal(rundir_rows_gpu_process(&b, ts, tl, 3, "", 4294967295u, "other", 0, 1.0 / 3.0),
                     0);
    assert_bytes(b.data, b.len,
                 "1796032424.837549,0,GPU-1234,,,87,12.5,,\r\n"
                 "1796032424.837549,0,GPU-1234,4242,train,,,80,1.5\r\n"
                 "1796032424.837549,12,\"GPU,\"\"x\"\"\",,,,,,\r\n"
                 "1796032424.837549,12,,7,\"a,b\",,,,\r\n"
                 "1796032424.837549,3,,4294967295,other,,,0,0.333333\r\n");
    /* and its reader takes them */
    char path[512];
    snprintf(path, sizeof path, "%s/utilization.csv", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(RUNDIR_UTILIZATION_HEADER, f);
    fwrite(b.data, 1, b.len, f);
    assert_int_equal(fclose(f), 0);
    struct rundir_lines l = {0};
    struct rundir_gpu g;
    struct rundir_gpu_row r;
    struct carma_err e = {0};
    assert_int_equal(rundir_lines_open(&l, tu_dir, "utilization.csv", 0, 0, &e), 0);
    assert_int_equal(rundir_gpu_header(&g, &l, &e), 0);
    int rows = 0;
    while (rundir_lines_next(&l, &e) == 1) {
        if (rundir_gpu_row(&g, &l, &r, &e) < 0)
            fail_msg("%s", e.msg);
        rows++;
    }
    assert_int_equal(rows, 5);
    assert_int_equal(r.gpu, 3);
    assert_int_equal(r.pid, 4294967295LL);
    assert_string_equal(r.workload, "other");
    assert_true(isnan(r.util_pct));
    tu_assert_near(r.sm_pct, 0, 0);
    rundir_lines_close(&l);
    csv_buf_free(&b);
}

static void event(void **state)
{
    (void)state;
    const struct rundir_event_workload w[2] = {
        {.name = "train", .power_w = 42.5, .energy_j = 1234.5, .g_co2e = 0.1, .method = "measured"},
        {.name = "se\"rve", .power_w = NAN, .energy_j = 0, .g_co2e = 0, .method = "estimated"},
    };
    struct rundir_event ev = {
        .timestamp_unix = 1796032424.837549,
        .elapsed_s = 1.0,
        .w = w,
        .n = 2,
        .idle_j = 10,
        .other_j = 0.25,
        .unattributed_j = 1.0 / 3.0,
    };
    size_t len = 0;
    char *text = rundir_rows_event(&ev, &len);
    assert_non_null(text);
    assert_bytes(text, len,
                 "{\"timestamp_unix\":1796032424.837549,\"elapsed_s\":1.0,\"workloads\":["
                 "{\"name\":\"train\",\"power_w\":42.5,\"energy_j\":1234.5,\"g_co2e\":0.1,"
                 "\"method\":\"measured\"},"
                 "{\"name\":\"se\\\"rve\",\"power_w\":null,\"energy_j\":0.0,\"g_co2e\":0.0,"
                 "\"method\":\"estimated\"}],"
                 "\"idle_j\":10.0,\"other_j\":0.25,\"unattributed_j\":0.3333333333333333}\n");
    free(text);
    /* no workload (all ended before the first summary is not a case, but an empty list is) */
    ev.n = 0;
    text = rundir_rows_event(&ev, &len);
    assert_non_null(text);
    assert_bytes(text, len,
                 "{\"timestamp_unix\":1796032424.837549,\"elapsed_s\":1.0,\"workloads\":[],"
                 "\"idle_j\":10.0,\"other_j\":0.25,\"unattributed_j\":0.3333333333333333}\n");
    free(text);
}

static void pstree(void **state)
{
    (void)state;
    struct mem m;
    mem_open(&m);
    rundir_rows_pstree_begin(m.f, 1796032424.8375491);
    rundir_rows_pstree_job(m.f, "train", 4242, "/sys/fs/cgroup/carma-1/train");
    rundir_rows_pstree_line(m.f, "4242\n");
    rundir_rows_pstree_line(m.f, "4250\n");
    rundir_rows_pstree_job(m.f, "serve", 4300, NULL);
    rundir_rows_pstree_pid(m.f, 4300);
    rundir_rows_pstree_pid(m.f, 4301);
    mem_close(&m);
    assert_bytes(m.text, m.len,
                 "# 1796032424.837549\n"
                 "train: pgid 4242 cgroup /sys/fs/cgroup/carma-1/train\n"
                 "  4242\n"
                 "  4250\n"
                 "serve: pgid 4300\n"
                 "  4300\n"
                 "  4301\n");
    free(m.text);
}

static void workloads(void **state)
{
    (void)state;
    const struct rundir_workload w[3] = {
        {.name = "train",
         .type = "training",
         .pid = 4242,
         .cgroup = "/sys/fs/cgroup/carma-1/train",
         .start_unix = 1796032424.5,
         .end_unix = 1796032430.25,
         .exit_status = 0,
         .signal = 0,
         .timed_out = false},
        {.name = "serve",
         .pid = 4300,
         .start_unix = 1796032425,
         .end_unix = NAN,
         .exit_status = 137,
         .signal = 9,
         .timed_out = true},
        /* never started */
        {.name = "late", .start_unix = NAN, .end_unix = NAN, .exit_status = -1},
    };
    json_t *wl = rundir_rows_workloads(w, 3);
    char *text = json_dumps(wl, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    assert_non_null(text);
    assert_string_equal(
        text, "{\"workloads\":["
              "{\"name\":\"train\",\"type\":\"training\",\"pids\":[4242],\"pgid\":4242,"
              "\"cgroup\":\"/sys/fs/cgroup/carma-1/train\",\"start_unix\":1796032424.5,"
              "\"end_unix\":1796032430.25,\"exit_status\":0,\"signal\":null,\"timed_out\":false},"
              "{\"name\":\"serve\",\"type\":null,\"pids\":[4300],\"pgid\":4300,\"cgroup\":null,"
              "\"start_unix\":1796032425.0,\"end_unix\":null,\"exit_status\":137,\"signal\":9,"
              "\"timed_out\":true},"
              "{\"name\":\"late\",\"type\":null,\"pids\":[],\"pgid\":null,\"cgroup\":null,"
              "\"start_unix\":null,\"end_unix\":null,\"exit_status\":-1,\"signal\":null,"
              "\"timed_out\":false}]}");
    free(text);
    json_decref(wl);
    json_t *pids = rundir_rows_workload_pids(w, 3);
    text = json_dumps(pids, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(text);
    assert_string_equal(text, "{\"train\":4242,\"serve\":4300}");
    free(text);
    json_decref(pids);
    /* no workload: empty documents */
    wl = rundir_rows_workloads(w, 0);
    text = json_dumps(wl, JSON_COMPACT);
    assert_string_equal(text, "{\"workloads\":[]}");
    free(text);
    json_decref(wl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(features),
        cmocka_unit_test(node_util),
        cmocka_unit_test_setup_teardown(node_util_read_back, tu_setup, tu_teardown),
        cmocka_unit_test(cpu_util),
        cmocka_unit_test_setup_teardown(utilization, tu_setup, tu_teardown),
        cmocka_unit_test(event),
        cmocka_unit_test(pstree),
        cmocka_unit_test(workloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Tests for rundir: the line reader (line ends, a torn last line skipped and said once, a file
 * still written to, NUL bytes and long lines refused) and the row rules of samples.csv,
 * attribution.csv, node_util.csv and utilization.csv, each rule once accepted at its bound and
 * refused beyond it, with the message every reader gives; the columns, cells and numbers of the
 * files read without a row validator (features.csv, nsys_gpu.csv).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rundir/rundir.h"
#include "sources/source.h"

#define SAMPLES_HEADER                                                                             \
    "timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total\r\n"

/* Reads every row of tu_dir/name; the number of rows, or the error (e set). */
static int read_rows(const char *name, struct rundir_lines *l, struct carma_err *e)
{
    int r = rundir_lines_open(l, tu_dir, name, 0, 0, e);
    if (r < 0)
        return r;
    int n = 0;
    while ((r = rundir_lines_next(l, e)) == 1)
        n++;
    return r < 0 ? r : n;
}

static void lines_ends(void **state)
{
    (void)state;
    struct rundir_lines l;
    struct carma_err e = {0};
    tu_put("a.csv", "h1,h2\r\na,\"b,\"\"c\"\"\"\n\r\nd,e\r\n");
    assert_int_equal(read_rows("a.csv", &l, &e), 3);
    assert_int_equal(l.torn, 0);
    assert_int_equal(l.line, 4);
    rundir_lines_close(&l);
    assert_int_equal(rundir_lines_open(&l, tu_dir, "a.csv", 0, 0, &e), 0);
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(l.nf, 2);
    assert_string_equal(l.fld[1], "b,\"c\"");
    rundir_lines_close(&l);
    rundir_lines_close(&l); /* twice is fine */
}

static void lines_torn(void **state)
{
    (void)state;
    struct rundir_lines l;
    struct carma_err e = {0};
    tu_put("t.csv", "h1,h2\r\n1,2\r\n3,");
    assert_int_equal(read_rows("t.csv", &l, &e), 2);
    assert_int_equal(l.torn, 3);
    char msg[4400];
    rundir_torn_warning(&l, msg, sizeof msg);
    char want[4400];
    snprintf(want, sizeof want,
             "%s/t.csv:3: the last line has no line end (cut short by a crash or a copy): it is "
             "skipped",
             tu_dir);
    assert_string_equal(msg, want);
    rundir_lines_close(&l);
    /* a CR without its LF is no line end either */
    tu_put("t.csv", "h1,h2\r\n1,2\r");
    assert_int_equal(read_rows("t.csv", &l, &e), 1);
    assert_int_equal(l.torn, 2);
    rundir_lines_close(&l);
    /* followed: the line is not yet whole, and is read once it is */
    tu_put("t.csv", "h1,h2\r\n1,2\r\n3,");
    assert_int_equal(rundir_lines_open(&l, tu_dir, "t.csv", 0, 0, &e), 0);
    l.follow = true;
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_next(&l, &e), 0);
    assert_int_equal(l.torn, 0);
    off_t off = l.off;
    size_t line = l.line;
    assert_int_equal(off, 12);
    rundir_lines_close(&l);
    tu_put("t.csv", "h1,h2\r\n1,2\r\n3,4\r\n");
    assert_int_equal(rundir_lines_open(&l, tu_dir, "t.csv", off, line, &e), 0);
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(l.line, 3);
    assert_string_equal(l.fld[1], "4");
    rundir_lines_close(&l);
}

static void lines_refused(void **state)
{
    (void)state;
    struct rundir_lines l;
    struct carma_err e = {0};
    char body[] = "h\r\na\0b\r\n";
    FILE *f = fopen(strcat(strcpy((char[4200]){0}, tu_dir), "/n.csv"), "wb");
    assert_non_null(f);
    fwrite(body, 1, sizeof body - 1, f);
    fclose(f);
    assert_int_equal(read_rows("n.csv", &l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "n.csv:2: a NUL byte"));
    rundir_lines_close(&l);
    size_t n = RUNDIR_LINE_MAX + 10;
    char *big = malloc(n + 3);
    assert_non_null(big);
    memset(big, 'x', n);
    memcpy(big + n, "\r\n", 3);
    tu_put("l.csv", big);
    free(big);
    assert_int_equal(read_rows("l.csv", &l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "l.csv:1: line longer than 65536 bytes"));
    rundir_lines_close(&l);
    tu_put("q.csv", "h\r\n\"open\r\n");
    assert_int_equal(read_rows("q.csv", &l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "q.csv:2: unterminated quoted field"));
    rundir_lines_close(&l);
    assert_int_equal(rundir_lines_open(&l, tu_dir, "absent.csv", 0, 0, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "absent.csv"));
    rundir_lines_close(&l);
}

/* The samples.csv rules on one data row after SAMPLES_HEADER and a first row at t = 100 s: the
 * error code (0: accepted), e holding the message. */
static int sample(const char *row, struct rundir_sample *ret, struct carma_err *e)
{
    char text[1024];
    snprintf(text, sizeof text, "%s100,,rapl/package-0,rapl,cpu,total,measured,,0\r\n%s\r\n",
             SAMPLES_HEADER, row);
    tu_put("samples.csv", text);
    struct rundir_lines l;
    struct rundir_samples s;
    int r = rundir_lines_open(&l, tu_dir, "samples.csv", 0, 0, e);
    assert_int_equal(r, 0);
    assert_int_equal(rundir_samples_header(&s, &l, e), 0);
    assert_int_equal(rundir_lines_next(&l, e), 1);
    struct rundir_sample first;
    assert_int_equal(rundir_samples_row(&s, &l, &first, e), 0);
    assert_int_equal(rundir_lines_next(&l, e), 1);
    r = rundir_samples_row(&s, &l, ret, e);
    rundir_lines_close(&l);
    return r;
}

static void refused_with(const char *row, int code, const char *msg)
{
    struct rundir_sample s;
    struct carma_err e = {0};
    assert_int_equal(sample(row, &s, &e), code);
    if (!strstr(e.msg, msg))
        fail_msg("'%s' not in '%s'", msg, e.msg);
}

static void samples_rules(void **state)
{
    (void)state;
    struct rundir_sample s;
    struct carma_err e = {0};
    /* at the bounds: 5 kW for a cpu, the energy of 5 kW over twice the file's 10 s plus 1 s */
    assert_int_equal(sample("110,,rapl/package-0,rapl,cpu,total,measured,5000,105000", &s, &e), 0);
    tu_assert_near(s.w, 5000, 0);
    tu_assert_near(s.j, 105000, 0);
    assert_true(s.total && !s.estimated);
    assert_int_equal(s.kind_id, KIND_CPU);
    assert_int_equal(sample("110,,rapl/package-0,rapl,cpu,total,measured,,", &s, &e), 0);
    assert_true(isnan(s.w) && isnan(s.j));
    /* a meter: 1 MW, told by its source (or, without the column, its name) */
    assert_int_equal(sample("110,,meter/cmd,meter,system,total,measured,900000,", &s, &e), 0);
    tu_assert_near(s.max_w, CHANNEL_METER_MAX_W, 0);
    refused_with("110,,meter/cmd,meter,system,total,measured,1000001,", -ERANGE,
                 "samples.csv:3: watts: 1e+06 W is no reading of a meter's system channel");
    refused_with("110,,hwmon/x,hwmon,system,total,measured,20001,", -ERANGE,
                 "samples.csv:3: watts: 20001 W is no reading of a system channel (from 0 to "
                 "20000 W, docs/sources.md)");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,1e308,", -ERANGE,
                 "samples.csv:3: watts: 1e+308 W is no reading of a cpu channel");
    refused_with("110,,rapl/package-0/dram,rapl,dram,total,measured,2000.5,", -ERANGE,
                 "watts: 2000.5 W is no reading of a dram channel");
    refused_with("110,,nvml/gpu0,nvml,gpu,total,measured,-0.5,", -ERANGE,
                 "samples.csv:3: watts: -0.5 W is no reading");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,nan,", -EINVAL,
                 "samples.csv:3: watts: 'nan' is not a finite number");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,inf,", -EINVAL,
                 "samples.csv:3: watts: 'inf' is not a finite number");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,30,105001", -ERANGE,
                 "samples.csv:3: joules_total: 105001 J is no energy of a cpu channel over the "
                 "file's 10 s (from 0 to 105000 J)");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,30,-1", -ERANGE,
                 "joules_total: -1 J is no energy");
    refused_with("99,,rapl/package-0,rapl,cpu,total,measured,30,1", -EINVAL,
                 "samples.csv:3: timestamp_unix goes back in time");
    refused_with("1e12,,rapl/package-0,rapl,cpu,total,measured,30,1", -ERANGE,
                 "samples.csv:3: timestamp_unix: 1e+12 is no Unix time");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,30", -EINVAL,
                 "samples.csv:3: 8 fields, the header has 9");
    refused_with("110,,rapl/package-0,rapl,cpu,total,measured,30,1,2", -EINVAL,
                 "samples.csv:3: 10 fields, the header has 9");
    refused_with("110,,rapl/\xff,rapl,cpu,total,measured,30,1", -EILSEQ,
                 "samples.csv:3: channel is not valid UTF-8 (byte 0xff at offset 5 of the cell)");
    refused_with("110,,,rapl,cpu,total,measured,30,1", -EINVAL, "samples.csv:3: channel: empty");
    refused_with("110,,rapl/package-0,rapl,tpu,total,measured,30,1", -EINVAL,
                 "samples.csv:3: kind: 'tpu' is not one of cpu, dram, soc, gpu, system, other");
    refused_with("110,,rapl/package-0,rapl,cpu,all,measured,30,1", -EINVAL,
                 "samples.csv:3: domain: 'all' is not total or component");
    refused_with("110,,rapl/package-0,rapl,cpu,total,guessed,30,1", -EINVAL,
                 "samples.csv:3: method: 'guessed' is not measured or estimated");
}

static void samples_header(void **state)
{
    (void)state;
    struct rundir_lines l;
    struct rundir_samples s;
    struct carma_err e = {0};
    tu_put("samples.csv", "timestamp_unix,channel,kind,domain,method,watts\r\n");
    assert_int_equal(rundir_lines_open(&l, tu_dir, "samples.csv", 0, 0, &e), 0);
    assert_int_equal(rundir_samples_header(&s, &l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "samples.csv:1: no column 'joules_total'"));
    rundir_lines_close(&l);
    tu_put("samples.csv", "");
    assert_int_equal(rundir_lines_open(&l, tu_dir, "samples.csv", 0, 0, &e), 0);
    assert_int_equal(rundir_samples_header(&s, &l, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "samples.csv: empty file (no header)"));
    rundir_lines_close(&l);
}

static void attr_rules(void **state)
{
    (void)state;
    struct rundir_attr a = {.col = {0, 1, 2, 3}, .nf = 4, .t0 = 100, .t_last = -INFINITY};
    struct rundir_attr_row row;
    struct carma_err e = {0};
    char *ok[] = {"110", "rapl/package-0", "train", "-0.000001"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 2, ok, 4, &row, &e), 0);
    tu_assert_near(row.j, -1e-6, 0);
    assert_string_equal(row.job, "train");
    /* at most 1 MW over twice the 10 s since samples.csv's first row, plus 1 s */
    char *top[] = {"110", "rapl/package-0", "idle", "21000000"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 3, top, 4, &row, &e), 0);
    char *over[] = {"110", "rapl/package-0", "idle", "2.1e7000"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 4, over, 4, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "attribution.csv:4: joules: '2.1e7000' is not a finite number"));
    char *big[] = {"110", "rapl/package-0", "idle", "21000001"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 5, big, 4, &row, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "attribution.csv:5: joules: 2.1e+07 J is no share"));
    char *nan[] = {"110", "rapl/package-0", "idle", "NaN"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 6, nan, 4, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "attribution.csv:6: joules: 'NaN' is not a finite number"));
    char *back[] = {"109", "rapl/package-0", "idle", "1"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 7, back, 4, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "attribution.csv:7: timestamp_unix goes back in time"));
    char *job[] = {"110", "rapl/package-0", "tr\xc3", "1"};
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 8, job, 4, &row, &e), -EILSEQ);
    assert_non_null(strstr(e.msg, "attribution.csv:8: job is not valid UTF-8"));
    assert_int_equal(rundir_attr_check(&a, "attribution.csv", 9, ok, 3, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "attribution.csv:9: 3 fields, the header has 4"));
}

static void util_rules(void **state)
{
    (void)state;
    struct rundir_util u = {.col = {0, 1, 2, 3}, .nf = 4, .t_last = -INFINITY};
    struct rundir_util_row row;
    struct carma_err e = {0};
    char *ok[] = {"110", "1.5", "4", ""};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 2, ok, 4, &row, &e), 0);
    assert_true(isnan(row.util));
    char *full[] = {"111", "4", "4", "1"};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 3, full, 4, &row, &e), 0);
    char *over[] = {"112", "5", "4", "0.5"};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 4, over, 4, &row, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "node_util.csv:4: busy_cpu_s 5 is more than total_cpu_s 4"));
    char *neg[] = {"112", "-1", "4", "0.5"};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 5, neg, 4, &row, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "node_util.csv:5: busy_cpu_s: -1 CPU-seconds is below 0"));
    char *frac[] = {"112", "1", "4", "1.5"};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 6, frac, 4, &row, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "node_util.csv:6: cpu_util 1.5 is not a fraction"));
    char *inf[] = {"112", "1", "inf", ""};
    assert_int_equal(rundir_util_check(&u, "node_util.csv", 7, inf, 4, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "node_util.csv:7: total_cpu_s: 'inf' is not a finite number"));
}

static void gpu_rules(void **state)
{
    (void)state;
    struct rundir_gpu g = {.col = {0, 1, 2, 3, 4, 5, 6}, .nf = 7};
    struct rundir_gpu_row row;
    struct carma_err e = {0};
    char *dev[] = {"110", "0", "", "", "100", "0", ""};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 2, dev, 7, &row, &e), 0);
    assert_int_equal(row.pid, 0);
    tu_assert_near(row.util_pct, 100, 0);
    assert_true(isnan(row.sm_pct));
    /* the GPUs of a poll in any order: an earlier time is no error here */
    char *proc[] = {"109", "255", "4242", "train", "", "", "20"};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 3, proc, 7, &row, &e), 0);
    assert_int_equal(row.gpu, 255);
    assert_int_equal(row.pid, 4242);
    assert_string_equal(row.workload, "train");
    char *gpu[] = {"110", "256", "", "", "1", "1", ""};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 4, gpu, 7, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "utilization.csv:4: gpu: '256' is not a GPU index (0 to 255)"));
    char *pid[] = {"110", "0", "-3", "train", "", "", "1"};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 5, pid, 7, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "utilization.csv:5: pid: '-3' is not a process id"));
    char *over[] = {"110", "0", "", "", "100.5", "1", ""};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 6, over, 7, &row, &e), -ERANGE);
    assert_non_null(
        strstr(e.msg, "utilization.csv:6: gpu_util_pct 100.5 is not a percentage from 0 to 100"));
    char *nan[] = {"110", "0", "7", "train", "", "", "nan"};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 7, nan, 7, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "utilization.csv:7: sm_util_pct: 'nan' is not a finite number"));
    char *noname[] = {"110", "0", "7", "", "", "", "1"};
    assert_int_equal(rundir_gpu_check(&g, "utilization.csv", 8, noname, 7, &row, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "utilization.csv:8: workload: empty"));
}

static void sum_check(void **state)
{
    (void)state;
    struct carma_err e = {0};
    assert_int_equal(rundir_sum_check(1e308, "x", &e), 0);
    assert_int_equal(rundir_sum_check(1e308 * 10, "run/samples.csv: rapl/package-0's energy", &e),
                     -ERANGE);
    assert_string_equal(e.msg, "run/samples.csv: rapl/package-0's energy: the sum overflows a "
                               "double (no power or energy is that large)");
    assert_int_equal(rundir_sum_check(NAN, "x", &e), -ERANGE);
}

/* The files read without a row validator: a column by name, a short row's cells blank, the
 * numbers with their PATH:LINE message, and an open's error worded as a whole-file read's. */
static void columns_and_cells(void **state)
{
    (void)state;
    struct rundir_lines l;
    struct carma_err e = {0};
    size_t nf = 0;
    tu_put("f.csv", "t,workload,busy_s,workload\r\n1.5,train,\r\n2,eval,x\r\n3\r\n"
                    "4,big,nan\r\n5,long,"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n");
    assert_int_equal(rundir_lines_start(&l, tu_dir, "f.csv", &e), 0);
    assert_int_equal(rundir_lines_header(&l, NULL, 0, 0, NULL, &nf, &e), 0);
    assert_int_equal(nf, 4);
    assert_int_equal(rundir_lines_column(&l, "t"), 0);
    assert_int_equal(rundir_lines_column(&l, "workload"), 1); /* the first of two alike */
    assert_int_equal(rundir_lines_column(&l, "busy_s"), 2);
    assert_int_equal(rundir_lines_column(&l, "busy"), -1);
    assert_int_equal(rundir_lines_column(&l, ""), -1);
    double v = 0;
    /* line 2: a blank cell, NAN when blank is allowed, else refused */
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_string_equal(rundir_lines_cell(&l, 1), "train");
    assert_int_equal(rundir_lines_num(&l, 0, "t", false, &v, &e), 0);
    tu_assert_near(v, 1.5, 0);
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", true, &v, &e), 0);
    assert_true(isnan(v));
    v = 0;
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", false, &v, &e), -EINVAL);
    assert_true(isnan(v));
    char want[4400];
    snprintf(want, sizeof want, "%s/f.csv:2: busy_s: '' is not a number", tu_dir);
    assert_string_equal(e.msg, want);
    /* an absent column (-1) reads as blank */
    assert_string_equal(rundir_lines_cell(&l, -1), "");
    assert_int_equal(rundir_lines_num(&l, -1, "cycles", true, &v, &e), 0);
    assert_true(isnan(v));
    /* line 3: text */
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", true, &v, &e), -EINVAL);
    snprintf(want, sizeof want, "%s/f.csv:3: busy_s: 'x' is not a number", tu_dir);
    assert_string_equal(e.msg, want);
    /* line 4: a short row's missing cells are blank */
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(l.nf, 1);
    assert_string_equal(rundir_lines_cell(&l, 0), "3");
    assert_string_equal(rundir_lines_cell(&l, 1), "");
    assert_string_equal(rundir_lines_cell(&l, 3), "");
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", true, &v, &e), 0);
    assert_true(isnan(v));
    assert_int_equal(rundir_lines_num(&l, 1, "workload", false, &v, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "f.csv:4: workload: '' is not a number"));
    /* line 5: not finite; line 6: the cell is said whole */
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", false, &v, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "f.csv:5: busy_s: 'nan' is not a number"));
    assert_int_equal(rundir_lines_next(&l, &e), 1);
    assert_int_equal(rundir_lines_num(&l, 2, "busy_s", false, &v, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "f.csv:6: busy_s: "
                                  "'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' is not"));
    assert_int_equal(rundir_lines_next(&l, &e), 0);
    rundir_lines_close(&l);
    /* the open's error as rundir_read_file words it */
    e = (struct carma_err){0};
    assert_int_equal(rundir_lines_start(&l, tu_dir, "absent.csv", &e), -ENOENT);
    snprintf(want, sizeof want, "%s/absent.csv: cannot read: %s", tu_dir, strerror(ENOENT));
    assert_string_equal(e.msg, want);
    rundir_lines_close(&l);
    char *text = NULL;
    size_t len = 0;
    struct carma_err we = {0};
    assert_int_equal(rundir_read_file(tu_dir, "absent.csv", &text, &len, &we), -ENOENT);
    assert_string_equal(we.msg, e.msg);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/d.csv", tu_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(rundir_lines_start(&l, tu_dir, "d.csv", &e), -EISDIR);
    snprintf(want, sizeof want, "%s/d.csv: cannot read: %s", tu_dir, strerror(EISDIR));
    assert_string_equal(e.msg, want);
    rundir_lines_close(&l);
    assert_int_equal(rundir_read_file(tu_dir, "d.csv", &text, &len, &we), -EISDIR);
    assert_string_equal(we.msg, e.msg);
    assert_int_equal(mkfifo(strcat(dir, "f"), 0600), 0); /* d.csvf: a FIFO, said as its kind */
    assert_int_equal(rundir_lines_start(&l, tu_dir, "d.csvf", &e), -ESPIPE);
    snprintf(want, sizeof want, "%s/d.csvf is not a regular file (a FIFO)", tu_dir);
    assert_string_equal(e.msg, want);
    rundir_lines_close(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lines_ends, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lines_torn, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(lines_refused, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(samples_rules, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(samples_header, tu_setup, tu_teardown),
        cmocka_unit_test(attr_rules),
        cmocka_unit_test(util_rules),
        cmocka_unit_test(gpu_rules),
        cmocka_unit_test(sum_check),
        cmocka_unit_test_setup_teardown(columns_and_cells, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

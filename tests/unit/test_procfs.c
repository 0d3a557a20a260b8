/*
 * Unit tests for sources/procfs: parsing proc/stat text, and node and per-socket CPU
 * utilization over proc/stat rewritten between samples with known deltas.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/fsroot.h"
#include "sources/procfs.h"
#include "testutil.h"

/* The root on tu_dir that a test opens once its tree is written; closed at teardown. */
static struct fsroot root;

static int setup(void **state)
{
    root.dirfd = -1;
    return tu_setup(state);
}

static int teardown(void **state)
{
    fsroot_close(&root);
    return tu_teardown(state);
}

static void assert_times(const struct cpu_times *t, uint64_t user, uint64_t nice, uint64_t system,
                         uint64_t idle, uint64_t iowait, uint64_t irq, uint64_t softirq,
                         uint64_t steal)
{
    assert_true(t->user == user);
    assert_true(t->nice == nice);
    assert_true(t->system == system);
    assert_true(t->idle == idle);
    assert_true(t->iowait == iowait);
    assert_true(t->irq == irq);
    assert_true(t->softirq == softirq);
    assert_true(t->steal == steal);
}

/* ---- procstat_parse ---- */

static void test_parse_modern(void **state)
{
    (void)state;
    /* Linux >= 2.6.33: ten columns, guest and guest_nice last (already inside user/nice) */
    static const char text[] = "cpu  10132153 290696 3084719 46828483 16683 0 25195 7 11 13\n"
                               "cpu0 1393280 32966 572056 13343292 6130 0 17875 1 5 6\n"
                               "cpu1 1335 8 12 99999999999 4 3 2 1 0 0\n"
                               "intr 1462898 0 0 0\n"
                               "ctxt 1990473\n"
                               "btime 1062191376\n";
    struct cpu_times node, cpu[4];
    memset(cpu, 0xaa, sizeof cpu);
    assert_int_equal(procstat_parse(text, &node, cpu, 4), 2);
    assert_times(&node, 10132153, 290696, 3084719, 46828483, 16683, 0, 25195, 7);
    assert_times(&cpu[0], 1393280, 32966, 572056, 13343292, 6130, 0, 17875, 1);
    assert_times(&cpu[1], 1335, 8, 12, 99999999999ULL, 4, 3, 2, 1);
    /* only the lines seen are written */
    struct cpu_times untouched;
    memset(&untouched, 0xaa, sizeof untouched);
    assert_memory_equal(&cpu[2], &untouched, sizeof untouched);

    /* cpu may be NULL: only the count */
    assert_int_equal(procstat_parse(text, &node, NULL, 0), 2);
    /* lines beyond ncpu are counted, not stored */
    memset(cpu, 0, sizeof cpu);
    assert_int_equal(procstat_parse(text, &node, cpu, 1), 2);
    assert_true(cpu[0].user == 1393280);
    assert_true(cpu[1].user == 0);
}

static void test_parse_old_formats(void **state)
{
    (void)state;
    /* 2.6.0 .. 2.6.10: seven columns, no steal */
    struct cpu_times node, cpu[2];
    assert_int_equal(
        procstat_parse("cpu  1 2 3 4 5 6 7\ncpu0 11 12 13 14 15 16 17\npage 5 6\n", &node, cpu, 2),
        1);
    assert_times(&node, 1, 2, 3, 4, 5, 6, 7, 0);
    assert_times(&cpu[0], 11, 12, 13, 14, 15, 16, 17, 0);
    /* 2.4: four columns */
    assert_int_equal(procstat_parse("cpu  100 2 30 400\ncpu0 100 2 30 400\n", &node, cpu, 2), 1);
    assert_times(&node, 100, 2, 30, 400, 0, 0, 0, 0);
    /* no per-cpu lines at all (a single-cpu kernel of old) */
    assert_int_equal(procstat_parse("cpu  1 2 3 4\nintr 0\n", &node, cpu, 2), 0);
    assert_int_equal(procstat_parse("cpu  1 2 3 4", &node, cpu, 2), 0);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    struct cpu_times node = {.user = 77}, cpu[2];
    static const char *const bad[] = {
        "",
        "garbage\n",
        "cpu 1 2 3\n",                  /* three fields */
        "cpu  1 2 3\ncpu0 1 2 3 4\n",   /* three fields on the node line */
        "cpu  abc def ghi jkl\n",       /* not numbers */
        "cpu0 1 2 3 4\ncpu  1 2 3 4\n", /* the node line must come first */
        "intr 5\ncpu  1 2 3 4\n",       /* idem */
        "cpu  1 2 3 4\ncpu0 1 2 3\n",   /* a short cpu line */
        "cpu  1 2 3 4\ncpu1 x y z w\n", /* garbage on a cpu line */
        "cpu  1 -2 3 4\n",              /* a sign */
        "cpu1 1 2 3 4 5 6 7 8\n",       /* no node line */
        "CPU  1 2 3 4\n",
        "cpu  18446744073709551616 2 3 4\n",               /* a tick count past 64 bits */
        "cpu  1 2 3 4\ncpu0 1 99999999999999999999 3 4\n", /* idem on a cpu line */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        if (procstat_parse(bad[k], &node, cpu, 2) != -EINVAL)
            fail_msg("accepted: \"%s\"", bad[k]);
    }
}

/* A cpu number from the file indexes nothing unless it lies inside the table: numbers past
 * 64 bits, or that wrap a long or an int negative, are ignored lines, never written outside. */
static void test_parse_bad_cpu_numbers(void **state)
{
    (void)state;
    static const char *const big[] = {
        "18446744073709551615", /* 2^64 - 1: wrapped to -1 in a long */
        "9223372036854775808",  /* 2^63: wrapped negative */
        "4294967295",
        "4294967296",
        "2147483648",
        "65536",
        "2",
        "99999999999999999999999999999999999999999999999999999",
    };
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++) {
        char text[256];
        snprintf(text, sizeof text,
                 "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 10 20 30 40\ncpu%s 1 2 3 4 5 6 7 8 0 0\n", big[k]);
        /* the table is the middle of a larger one: its neighbours must stay untouched */
        struct cpu_times guard[4], node;
        memset(guard, 0xaa, sizeof guard);
        struct cpu_times untouched;
        memset(&untouched, 0xaa, sizeof untouched);
        int r = procstat_parse(text, &node, &guard[1], 2);
        /* a number past the table's largest possible size is no cpu line at all */
        int want = strcmp(big[k], "2") == 0 ? 2 : 1;
        if (r != want)
            fail_msg("cpu%s: %d lines, want %d", big[k], r, want);
        assert_memory_equal(&guard[0], &untouched, sizeof untouched);
        assert_memory_equal(&guard[2], &untouched, sizeof untouched);
        assert_memory_equal(&guard[3], &untouched, sizeof untouched);
        assert_true(guard[1].user == 10);
    }
}

/* The same lines through procstat_open: the table is sized by the valid numbers only, and a
 * processor number in proc/cpuinfo that does not fit an int names no cpu. */
static void test_open_bad_numbers(void **state)
{
    (void)state;
    tu_put("proc/stat", "cpu  1 2 3 4 5 6 7 8 0 0\n"
                        "cpu0 1 2 3 4 5 6 7 8 0 0\n"
                        "cpu18446744073709551615 1 2 3 4 5 6 7 8 0 0\n"
                        "cpu4294967296 1 2 3 4 5 6 7 8 0 0\n");
    /* 4294967296 truncated to an int is cpu 0; 2^64 + 1 does not parse */
    tu_put("proc/cpuinfo", "processor\t: 0\nphysical id\t: 0\n\n"
                           "processor\t: 4294967296\nphysical id\t: 3\n\n"
                           "processor\t: 18446744073709551617\nphysical id\t: 2\n\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), 0);
    assert_int_equal(p.ncpu, 1);
    assert_int_equal(p.cpu_socket[0], 0);
    assert_int_equal(p.nsockets, 1);
    tu_put("proc/stat", "cpu  2 2 3 5 5 6 7 8 0 0\n"
                        "cpu0 2 2 3 5 5 6 7 8 0 0\n"
                        "cpu18446744073709551615 9 9 9 9 9 9 9 9 0 0\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.valid);
    assert_true(p.util_total == 0.5);
    procstat_close(&p);
}

/* ---- utilization ---- */

/* Four cpus, cpu0 and cpu1 on socket 0, cpu2 and cpu3 on socket 1. */
static void cpuinfo_2s(void)
{
    tu_put("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 1000\nphysical id\t: 0\n\n"
                           "processor\t: 1\nmodel name\t: Test CPU 1000\nphysical id\t: 0\n\n"
                           "processor\t: 2\nmodel name\t: Test CPU 1000\nphysical id\t: 1\n\n"
                           "processor\t: 3\nmodel name\t: Test CPU 1000\nphysical id\t: 1\n\n");
}

static void test_open_and_fractions(void **state)
{
    (void)state;
    cpuinfo_2s();
    tu_put("proc/stat", "cpu  4000 100 1000 20000 200 50 50 0 0 0\n"
                        "cpu0 1000 25 250 5000 50 10 15 0 0 0\n"
                        "cpu1 1000 25 250 5000 50 10 15 0 0 0\n"
                        "cpu2 1000 25 250 5000 50 15 10 0 0 0\n"
                        "cpu3 1000 25 250 5000 50 15 10 0 0 0\n"
                        "intr 1 2 3\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), 0);
    assert_int_equal(p.ncpu, 4);
    assert_int_equal(p.nsockets, 2);
    assert_int_equal(p.cpu_socket[0], 0);
    assert_int_equal(p.cpu_socket[1], 0);
    assert_int_equal(p.cpu_socket[2], 1);
    assert_int_equal(p.cpu_socket[3], 1);
    assert_string_equal(p.model_name, "Test CPU 1000");
    assert_true(p.have_prev);
    assert_false(p.primed);
    assert_true(p.valid);
    assert_true(p.busy_ticks == 4000 + 100 + 1000 + 50 + 50);
    assert_true(p.busy_ticks_delta == 0 && p.total_ticks_delta == 0);

    /* the node's figures are the sums of the per-cpu deltas: +60 user, +10 nice, +20 system,
     * +100 idle, +3 irq, +4 softirq: 197 ticks, 97 busy. socket 0: 60 of 95 ticks busy;
     * socket 1: 37 of 102. (The node's own line is not used for deltas.) */
    tu_put("proc/stat", "cpu  4060 110 1020 20100 200 53 54 0 0 0\n"
                        "cpu0 1030 30 255 5010 50 12 18 0 0 0\n" /* +30 +5 +5 +10 +2 +3: 45/55 */
                        "cpu1 1010 25 255 5025 50 10 15 0 0 0\n" /* +10 +5 +25: 15/40 */
                        "cpu2 1010 30 255 5040 50 16 11 0 0 0\n" /* +10 +5 +5 +40 +1 +1: 22/62 */
                        "cpu3 1010 25 255 5025 50 15 10 0 0 0\n" /* +10 +5 +25: 15/40 */);
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.primed);
    assert_true(p.total_ticks_delta == 197);
    assert_true(p.busy_ticks_delta == 97);
    assert_true(p.busy_ticks == 4060 + 110 + 1020 + 53 + 54);
    assert_true(p.util_total == 97.0 / 197.0);
    assert_true(p.util_user == 60.0 / 197.0);
    assert_true(p.util_nice == 10.0 / 197.0);
    assert_true(p.util_sys == 20.0 / 197.0);
    assert_true(p.util_irq == 7.0 / 197.0);
    assert_true(p.socket_util[0] == 60.0 / 95.0);
    assert_true(p.socket_util[1] == 37.0 / 102.0);

    /* second rewrite: iowait is not busy; steal is */
    tu_put("proc/stat", "cpu  4060 110 1020 20150 250 54 56 100 0 0\n"
                        "cpu0 1030 30 255 5010 100 12 18 0 0 0\n" /* +50 iowait: 0/50 */
                        "cpu1 1010 25 255 5025 50 10 15 50 0 0\n" /* +50 steal: 50/50 */
                        "cpu2 1010 30 255 5090 50 16 11 0 0 0\n"  /* +50 idle */
                        "cpu3 1010 25 255 5025 50 15 10 50 0 0\n" /* +50 steal */);
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.total_ticks_delta == 200);
    assert_true(p.busy_ticks_delta == 100);
    assert_true(p.util_total == 0.5);
    assert_true(p.util_user == 0.0);
    assert_true(p.util_nice == 0.0);
    assert_true(p.util_sys == 0.0);
    assert_true(p.util_irq == 0.0);
    assert_true(p.socket_util[0] == 0.5);
    assert_true(p.socket_util[1] == 0.5);

    /* nothing moved: the fractions stay */
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.total_ticks_delta == 0);
    assert_true(p.busy_ticks_delta == 0);
    assert_true(p.util_total == 0.5);
    assert_true(p.socket_util[0] == 0.5);

    /* a bad read: invalid, and the next good one is compared with the last good one */
    tu_put("proc/stat", "rubbish\n");
    assert_int_equal(procstat_sample(&p), -EINVAL);
    assert_false(p.valid);
    assert_int_equal(p.err, -EINVAL);
    tu_put("proc/stat", "cpu  4160 110 1020 20250 250 54 56 100 0 0\n"
                        "cpu0 1080 30 255 5010 100 12 18 0 0 0\n"
                        "cpu1 1060 25 255 5025 50 10 15 50 0 0\n"
                        "cpu2 1010 30 255 5140 50 16 11 0 0 0\n"
                        "cpu3 1010 25 255 5075 50 15 10 50 0 0\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.valid);
    assert_int_equal(p.err, 0);
    assert_true(p.total_ticks_delta == 200);
    assert_true(p.util_user == 0.5);
    assert_true(p.socket_util[0] == 1.0);
    assert_true(p.socket_util[1] == 0.0);
    procstat_close(&p);
    procstat_close(&p); /* twice is fine */
}

/* A counter that went backwards (a torn read, a cpu that went offline and back) counts as no
 * time, and its time is counted once it passes its old value again. */
static void test_counters_backwards(void **state)
{
    (void)state;
    tu_put("proc/stat", "cpu  100 0 0 100\ncpu0 100 0 0 100\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), 0);
    assert_int_equal(p.nsockets, 1); /* no proc/cpuinfo: one socket */
    assert_string_equal(p.model_name, "");
    tu_put("proc/stat", "cpu  50 0 0 250\ncpu0 50 0 0 250\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.busy_ticks_delta == 0);
    assert_true(p.total_ticks_delta == 150); /* idle moved on by 150, user's drop is ignored */
    assert_true(p.util_total == 0.0);
    assert_true(p.socket_util[0] == 0.0);
    /* user passes its old mark of 100 by 20: only those 20 ticks count */
    tu_put("proc/stat", "cpu  120 0 0 250\ncpu0 120 0 0 250\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.busy_ticks_delta == 20);
    assert_true(p.total_ticks_delta == 20);
    procstat_close(&p);
}

/* A counter that leaps by more than PROCSTAT_STEP_MAX ticks (a bogus or torn proc/stat) makes
 * that cpu's reading count for nothing, its marks untouched: the node's sums cannot wrap
 * around into fractions above 1 (found by fuzz/fuzz_procstat.c). */
static void test_counters_implausible_step(void **state)
{
    (void)state;
    tu_put("proc/stat", "cpu  200 0 0 200\ncpu0 100 0 0 100\ncpu1 100 0 0 100\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), 0);
    /* cpu0's user and idle leap by 2^63: their sum would wrap to 0 */
    tu_put("proc/stat", "cpu  200 0 0 200\n"
                        "cpu0 9223372036854775908 0 0 9223372036854775908\n"
                        "cpu1 110 0 0 110\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.busy_ticks_delta == 10); /* cpu1 alone */
    assert_true(p.total_ticks_delta == 20);
    tu_assert_near(p.util_total, 0.5, 1e-12);
    tu_assert_near(p.util_user, 0.5, 1e-12);
    assert_true(p.skipped_steps == 1);
    /* a step just within the bound counts */
    tu_put("proc/stat", "cpu  200 0 0 200\n"
                        "cpu0 1099511627876 0 0 100\n"
                        "cpu1 110 0 0 120\n");
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.busy_ticks_delta == PROCSTAT_STEP_MAX);
    assert_true(p.total_ticks_delta == PROCSTAT_STEP_MAX + 10);
    assert_true(p.skipped_steps == 1);
    procstat_close(&p);
}

/* With SMT off (or cpus taken offline) proc/stat lists cpu0, cpu2, ...: every listed cpu
 * still counts for its socket. */
static void test_offline_cpus(void **state)
{
    (void)state;
    cpuinfo_2s();
    /* cpu1 is offline: not in proc/stat (proc/cpuinfo lists online cpus too, but keeps the
     * numbers of the others) */
    tu_put("proc/cpuinfo", "processor\t: 0\nphysical id\t: 0\n\n"
                           "processor\t: 2\nphysical id\t: 1\n\n"
                           "processor\t: 3\nphysical id\t: 1\n\n");
    tu_put("proc/stat", "cpu  300 0 0 300\n"
                        "cpu0 100 0 0 100\n"
                        "cpu2 100 0 0 100\n"
                        "cpu3 100 0 0 100\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), 0);
    assert_int_equal(p.nsockets, 2);
    assert_true(p.ncpu >= 4);
    assert_int_equal(p.cpu_socket[3], 1);
    tu_put("proc/stat", "cpu  400 0 0 500\n"
                        "cpu0 100 0 0 200\n" /* idle */
                        "cpu2 100 0 0 200\n" /* idle */
                        "cpu3 200 0 0 100\n" /* busy */);
    assert_int_equal(procstat_sample(&p), 0);
    assert_true(p.socket_util[0] == 0.0);
    assert_true(p.socket_util[1] == 0.5);
    procstat_close(&p);
}

static void test_open_errors(void **state)
{
    (void)state;
    tu_put("proc/cpuinfo", "processor\t: 0\n");
    tu_open_root(&root, tu_dir);
    struct procstat p;
    struct carma_err e = {0};
    assert_int_equal(procstat_open(&p, &root, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "proc/stat"));
    assert_non_null(strstr(e.msg, tu_dir));
    procstat_close(&p);

    tu_put("proc/stat", "this is not proc/stat\n");
    memset(&e, 0, sizeof e);
    assert_int_equal(procstat_open(&p, &root, &e), -EINVAL);
    assert_int_equal(e.code, -EINVAL);
    assert_non_null(strstr(e.msg, "proc/stat"));
    procstat_close(&p);

    /* a zeroed struct can be closed */
    memset(&p, 0, sizeof p);
    procstat_close(&p);
}

/* The fixtures: socket layout and model names as the model source sees them. */
static void test_fixtures(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int ncpu, nsockets;
        const char *model;
    } fx[] = {
        {"intel-2s", 4, 2, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"},
        {"amd-server", 4, 2, "AMD EPYC 7763 64-Core Processor"},
        {"laptop", 4, 1, "13th Gen Intel(R) Core(TM) i7-1365U"},
        {"vm-empty", 2, 1, "AMD EPYC"},
    };
    for (size_t k = 0; k < sizeof fx / sizeof fx[0]; k++) {
        char path[512];
        tu_fixture_path(path, sizeof path, fx[k].name);
        struct fsroot r;
        struct carma_err e = {0};
        assert_int_equal(fsroot_open(&r, path, &e), 0);
        struct procstat p;
        assert_int_equal(procstat_open(&p, &r, &e), 0);
        assert_int_equal(p.ncpu, fx[k].ncpu);
        assert_int_equal(p.nsockets, fx[k].nsockets);
        assert_string_equal(p.model_name, fx[k].model);
        assert_true(p.valid);
        procstat_close(&p);
        fsroot_close(&r);
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_modern),
        cmocka_unit_test(test_parse_old_formats),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_bad_cpu_numbers),
        T(test_open_bad_numbers),
        T(test_open_and_fractions),
        T(test_counters_backwards),
        T(test_counters_implausible_step),
        T(test_offline_cpus),
        T(test_open_errors),
        cmocka_unit_test(test_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_series: windowed energy and power statistics (src/analysis/series.c).
 *
 * Golden cases are srt-slurm's own tests that concern the numbers (srt-slurm.md §8), every
 * error message word for word, and the malformed inputs (NaN, unsorted, duplicates, a window
 * with no samples). The randomized cases feed the same numbers (%.17g) to tests/unit/series_ref.py,
 * a numpy reference run with /usr/bin/python3, and compare to 1e-12 relative; they are skipped
 * when numpy cannot be imported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/series.h"
#include "testutil.h"

#define PYTHON "/usr/bin/python3"

static void mk(struct series *s, const double *t, const double *w, size_t n)
{
    series_init(s);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(series_append(s, t[i], w[i]), 0);
}

/* a snap window that must succeed */
static struct series_window snap_ok(const struct series *s, double start, double end)
{
    struct series_window o;
    struct carma_err e = {0};
    int rc = series_window_snap(s, start, end, "L", NULL, &o, &e);
    if (rc != 0)
        fail_msg("snap failed: %s", e.msg);
    return o;
}

static struct series_window interp_ok(const struct series *s, double start, double end)
{
    struct series_window o;
    struct carma_err e = {0};
    int rc = series_window_interpolate(s, start, end, NULL, "L", NULL, &o, &e);
    if (rc != 0)
        fail_msg("interpolate failed: %s", e.msg);
    return o;
}

static struct series_window counter_ok(const struct series *s, double start, double end)
{
    struct series_window o;
    struct carma_err e = {0};
    int rc = series_window_counter(s, start, end, NULL, "L", NULL, &o, &e);
    if (rc != 0)
        fail_msg("counter failed: %s", e.msg);
    return o;
}

enum mode { SNAP, INTERP, COUNTER };

/* a window that must fail with code and exactly msg */
static void expect_err(const struct series *s, enum mode m, double start, double end, int code,
                       const char *msg)
{
    struct series_window o;
    memset(&o, 0x5a, sizeof o);
    struct series_window before = o;
    struct carma_err e = {0};
    int rc = m == SNAP     ? series_window_snap(s, start, end, "L", NULL, &o, &e)
             : m == INTERP ? series_window_interpolate(s, start, end, NULL, "L", NULL, &o, &e)
                           : series_window_counter(s, start, end, NULL, "L", NULL, &o, &e);
    assert_int_equal(rc, code);
    assert_string_equal(e.msg, msg);
    assert_memory_equal(&o, &before, sizeof o); /* ret is written only on success */
}

/* ---- srt-slurm's golden cases (§8) ---- */

/* t=[0,1,2,3,4], w=[10,20,20,10,10], window [1,3] -> 35 J, avg 17.5 W */
static void test_golden_basic(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 1, 2, 3, 4}, (double[]){10, 20, 20, 10, 10}, 5);
    struct series_window o = snap_ok(&s, 1, 3);
    tu_assert_near(o.joules, 35.0, 0);
    tu_assert_near(o.avg_power_w, 17.5, 0);
    assert_int_equal(o.samples, 3);
    o = interp_ok(&s, 1, 3);
    tu_assert_near(o.joules, 35.0, 0);
    tu_assert_near(o.avg_power_w, 17.5, 0);
    series_done(&s);
}

/* t=[0,0.9,2.1,3.0], w=10, window [1,2] -> snaps 0.9..2.1, 12 J, avg 12 W, 2 samples */
static void test_golden_snap_edges(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 0.9, 2.1, 3.0}, (double[]){10, 10, 10, 10}, 4);
    struct series_window o = snap_ok(&s, 1, 2);
    tu_assert_near(o.joules, 12.0, 1e-12);
    tu_assert_near(o.avg_power_w, 12.0, 1e-12);
    assert_int_equal(o.samples, 2);
    tu_assert_near(o.sample_start_unix, 0.9, 0);
    tu_assert_near(o.sample_end_unix, 2.1, 0);
    /* interpolated: exactly the window, 10 J; no sample lies inside [1, 2] */
    o = interp_ok(&s, 1, 2);
    tu_assert_near(o.joules, 10.0, 1e-12);
    tu_assert_near(o.avg_power_w, 10.0, 1e-12);
    assert_int_equal(o.samples, 0);
    assert_int_equal(o.stat_n, 2);
    tu_assert_near(o.sample_start_unix, 0.9, 0);
    tu_assert_near(o.sample_end_unix, 2.1, 0);
    series_done(&s);
}

/* every error of snap, word for word */
static void test_golden_snap_errors(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){100, 101, 102}, (double[]){1, 1, 1}, 3);
    expect_err(&s, SNAP, 0, 101, -ENODATA,
               "L: nearest sample to window start is 100.000s away, no coverage");
    expect_err(&s, SNAP, 100, 500, -ENODATA,
               "L: nearest sample to window end is 398.000s away, no coverage");
    /* 3.0 s away is still covered, 3.1 s is not */
    struct series_window o = snap_ok(&s, 97, 102);
    assert_int_equal(o.samples, 3);
    expect_err(&s, SNAP, 96.9, 102, -ENODATA,
               "L: nearest sample to window start is 3.100s away, no coverage");
    series_done(&s);

    mk(&s, (double[]){0, 0.1, 0.2}, (double[]){1, 1, 1}, 3);
    expect_err(&s, SNAP, 0.04, 0.05, -ENODATA, "L: window narrower than the sample spacing");
    series_done(&s);

    series_init(&s);
    expect_err(&s, SNAP, 0, 1, -ENODATA, "L: no power samples available");
    expect_err(&s, INTERP, 0, 1, -ENODATA, "L: no power samples available");
    expect_err(&s, COUNTER, 0, 1, -ENODATA, "L: no energy samples available");
    series_done(&s);
}

/* w=[100,10,20,30,40,100] at t=0..5, window [1,4]: the statistics of §8 */
static void test_golden_stats(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 1, 2, 3, 4, 5}, (double[]){100, 10, 20, 30, 40, 100}, 6);
    struct series_window o = snap_ok(&s, 1, 4);
    assert_int_equal(o.samples, 4);
    tu_assert_near(o.min_w, 10, 0);
    tu_assert_near(o.max_w, 40, 0);
    tu_assert_near(o.mean_w, 25, 0);
    tu_assert_near(o.p5_w, 11.5, 1e-12);
    tu_assert_near(o.p50_w, 25, 1e-12);
    tu_assert_near(o.p95_w, 38.5, 1e-12);
    tu_assert_near(o.p99_w, 39.7, 1e-12);
    tu_assert_near(o.avg_power_w, 25, 1e-12);
    /* interpolated: the same samples, edges on samples, so the same figures */
    o = interp_ok(&s, 1, 4);
    assert_int_equal(o.samples, 4);
    assert_int_equal(o.stat_n, 4);
    tu_assert_near(o.p99_w, 39.7, 1e-12);
    tu_assert_near(o.joules, 75, 0);
    series_done(&s);
}

/* t=[0,1,2,10], w=[10,10,10,100], [0,10] -> 460 J, mean 32.5, avg 46; interpolate: gap error */
static void test_golden_long_gap(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 1, 2, 10}, (double[]){10, 10, 10, 100}, 4);
    struct series_window o = snap_ok(&s, 0, 10);
    tu_assert_near(o.joules, 460, 0);
    tu_assert_near(o.mean_w, 32.5, 0);
    tu_assert_near(o.avg_power_w, 46.0, 0);
    expect_err(&s, INTERP, 0, 10, -ENODATA,
               "L: 8.000s gap between samples at 2.000 and 10.000, over the 3.000s limit");
    /* a window that ends before the gap begins does not see it */
    o = interp_ok(&s, 0, 2);
    tu_assert_near(o.joules, 20, 0);
    /* one that reaches into it does, though no sample of it is inside */
    expect_err(&s, INTERP, 0, 2.5, -ENODATA,
               "L: 8.000s gap between samples at 2.000 and 10.000, over the 3.000s limit");
    /* with the limit lifted, the trapezoid is the same as snap's */
    struct series_opts op = series_opts_default();
    op.max_gap_s = INFINITY;
    struct carma_err e = {0};
    assert_int_equal(series_window_interpolate(&s, 0, 10, &op, "L", NULL, &o, &e), 0);
    tu_assert_near(o.joules, 460, 0);
    series_done(&s);
}

/* flat 400 W, window [100, 110] sampled every second: 4000 J, 11 samples, every stat 400 */
static void test_golden_flat(void **state)
{
    (void)state;
    struct series s;
    series_init(&s);
    for (int i = 0; i <= 10; i++)
        assert_int_equal(series_append(&s, 100 + i, 400), 0);
    struct series_window o = snap_ok(&s, 100, 110);
    tu_assert_near(o.joules, 4000, 0);
    tu_assert_near(o.avg_power_w, 400, 0);
    assert_int_equal(o.samples, 11);
    tu_assert_near(o.sample_start_unix, 100, 0);
    tu_assert_near(o.sample_end_unix, 110, 0);
    double *st[] = {&o.mean_w, &o.min_w, &o.p5_w, &o.p50_w, &o.p95_w, &o.p99_w, &o.max_w};
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        tu_assert_near(*st[i], 400, 0);
    o = interp_ok(&s, 100, 110);
    tu_assert_near(o.joules, 4000, 0);
    assert_int_equal(o.samples, 11);
    series_done(&s);
}

/* incremental report: samples at 999.5, 1002, 1005, 1008, 1010.5 of 100 W, window [1000,1010] */
static void test_golden_incremental(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){999.5, 1002, 1005, 1008, 1010.5}, (double[]){100, 100, 100, 100, 100}, 5);
    struct series_window o = snap_ok(&s, 1000, 1010);
    tu_assert_near(o.joules, 1100, 1e-9); /* the snapped span, 999.5..1010.5 */
    tu_assert_near(o.avg_power_w, 110, 1e-9);
    o = interp_ok(&s, 1000, 1010); /* 3.0 s gaps are within the limit */
    tu_assert_near(o.joules, 1000, 1e-9);
    tu_assert_near(o.avg_power_w, 100, 1e-12);
    series_done(&s);
    /* samples ending at 1004: withheld (no coverage at the end) */
    mk(&s, (double[]){999.5, 1002, 1004}, (double[]){100, 100, 100}, 3);
    expect_err(&s, SNAP, 1000, 1010, -ENODATA,
               "L: nearest sample to window end is 6.000s away, no coverage");
    expect_err(&s, INTERP, 1000, 1010, -ENODATA,
               "L: last sample is 6.000s before window end, no coverage");
    series_done(&s);
}

/* node series as srt-slurm builds them (§6.4, §8): GPU sums, CPU total last-wins */
static void test_golden_node_series(void **state)
{
    (void)state;
    struct series s;
    /* GPU roles: gpu0 100/110 W, gpu1 50/55 W at t = 10/11 -> node [150, 165] */
    mk(&s, (double[]){10, 10, 11, 11}, (double[]){100, 50, 110, 55}, 4);
    assert_int_equal(series_collapse(&s, SERIES_DUP_SUM), 2);
    assert_int_equal(s.n, 2);
    tu_assert_near(s.w[0], 150, 0);
    tu_assert_near(s.w[1], 165, 0);
    series_done(&s);
    /* CPU: two sensor rows per timestamp carrying the same total -> [90, 92], not summed */
    mk(&s, (double[]){10, 10, 11, 11}, (double[]){90, 90, 92, 92}, 4);
    assert_int_equal(series_collapse(&s, SERIES_DUP_LAST), 2);
    tu_assert_near(s.w[0], 90, 0);
    tu_assert_near(s.w[1], 92, 0);
    series_done(&s);
    /* anti-phase GPUs 100/300 alternating: the node is flat, min == max == 400 */
    series_init(&s);
    for (int i = 0; i <= 10; i++) {
        assert_int_equal(series_append(&s, 100 + i, i % 2 ? 300 : 100), 0);
        assert_int_equal(series_append(&s, 100 + i, i % 2 ? 100 : 300), 0);
    }
    assert_int_equal(series_collapse(&s, SERIES_DUP_SUM), 11);
    struct series_window o = snap_ok(&s, 100, 110);
    tu_assert_near(o.min_w, 400, 0);
    tu_assert_near(o.max_w, 400, 0);
    tu_assert_near(o.joules, 4000, 0);
    series_done(&s);
    /* collapsing needs time order */
    mk(&s, (double[]){2, 1}, (double[]){1, 1}, 2);
    assert_int_equal(series_collapse(&s, SERIES_DUP_SUM), -EINVAL);
    series_done(&s);
}

/* ---- carma's own rules ---- */

/* nearest-sample ties go to the earlier sample, at both edges */
static void test_snap_ties(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 2, 4}, (double[]){10, 20, 30}, 3);
    struct series_window o = snap_ok(&s, 1, 3); /* both edges halfway: 0 and 2 */
    tu_assert_near(o.sample_start_unix, 0, 0);
    tu_assert_near(o.sample_end_unix, 2, 0);
    tu_assert_near(o.joules, 30, 0);
    assert_int_equal(o.samples, 2);
    /* [0.5, 1]: end's tie goes back to 0 as well: no span left */
    expect_err(&s, SNAP, 0.5, 1, -ENODATA, "L: window narrower than the sample spacing");
    /* an edge beyond the samples snaps to the last one */
    o = snap_ok(&s, 1.01, 6.5);
    tu_assert_near(o.sample_start_unix, 2, 0);
    tu_assert_near(o.sample_end_unix, 4, 0);
    tu_assert_near(o.avg_power_w, 50.0 / 5.49, 1e-12);
    series_done(&s);
}

/* NaN and infinities are refused and leave the series as it was */
static void test_nonfinite(void **state)
{
    (void)state;
    struct series s;
    series_init(&s);
    assert_int_equal(series_append(&s, 1, 10), 0);
    assert_int_equal(series_append(&s, NAN, 10), -EINVAL);
    assert_int_equal(series_append(&s, 2, NAN), -EINVAL);
    assert_int_equal(series_append(&s, 2, INFINITY), -EINVAL);
    assert_int_equal(series_append(&s, -INFINITY, 1), -EINVAL);
    assert_int_equal(s.n, 1);
    assert_true(s.sorted);
    assert_int_equal(series_append(&s, 2, 10), 0);
    struct series_window o = snap_ok(&s, 1, 2);
    tu_assert_near(o.joules, 10, 0);
    /* a non-finite window edge, an empty or reversed window */
    expect_err(&s, SNAP, NAN, 2, -EINVAL, "L: window edge is not a finite number");
    expect_err(&s, INTERP, 1, INFINITY, -EINVAL, "L: window edge is not a finite number");
    expect_err(&s, INTERP, 2, 2, -EINVAL, "L: window end is not after its start");
    expect_err(&s, COUNTER, 2, 1, -EINVAL, "L: window end is not after its start");
    expect_err(&s, SNAP, 2, 1, -ENODATA, "L: window narrower than the sample spacing");
    series_done(&s);
}

/* unsorted input: refused until sorted; the sort is stable */
static void test_unsorted_stable(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){3, 1, 2, 1, 2}, (double[]){30, 10, 20, 11, 21}, 5);
    assert_false(s.sorted);
    expect_err(&s, SNAP, 1, 3, -EINVAL, "L: samples are not sorted by time");
    expect_err(&s, INTERP, 1, 3, -EINVAL, "L: samples are not sorted by time");
    series_sort(&s);
    assert_true(s.sorted);
    double et[] = {1, 1, 2, 2, 3}, ew[] = {10, 11, 20, 21, 30};
    for (int i = 0; i < 5; i++) {
        tu_assert_near(s.t[i], et[i], 0);
        tu_assert_near(s.w[i], ew[i], 0);
    }
    series_done(&s);
}

/* a big shuffle with many equal timestamps: sorted, and equal times keep append order */
static void test_sort_large(void **state)
{
    (void)state;
    tu_rng_seed(42);
    size_t sizes[] = {1000, 300000}; /* the second merges runs longer than the 1 MiB buffer */
    unsigned keys[] = {50, 1000000};
    for (size_t si = 0; si < 2; si++) {
        for (size_t ki = 0; ki < 2; ki++) {
            struct series s;
            series_init(&s);
            assert_int_equal(series_reserve(&s, sizes[si]), 0);
            for (size_t i = 0; i < sizes[si]; i++)
                assert_int_equal(series_append(&s, (double)(tu_rng_next() % keys[ki]), (double)i),
                                 0);
            series_sort(&s);
            for (size_t i = 1; i < s.n; i++) {
                assert_true(s.t[i - 1] <= s.t[i]);
                if (s.t[i - 1] == s.t[i])
                    assert_true(s.w[i - 1] < s.w[i]);
            }
            series_done(&s);
        }
    }
    /* nearly sorted (two interleaved hosts' rows): the common case */
    struct series s;
    series_init(&s);
    for (size_t i = 0; i < 100000; i++)
        assert_int_equal(series_append(&s, (double)(i / 2) + (i % 2 ? 0.0 : 0.5), (double)i), 0);
    series_sort(&s);
    for (size_t i = 1; i < s.n; i++)
        assert_true(s.t[i - 1] <= s.t[i]);
    series_shrink(&s);
    assert_int_equal(s.cap, s.n);
    series_done(&s);
}

/* duplicate timestamps: kept; the trapezoid adds 0 across them; adjacent windows add up */
static void test_duplicates(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 1, 1, 2}, (double[]){10, 10, 30, 30}, 4);
    struct series_window o = snap_ok(&s, 0, 2);
    tu_assert_near(o.joules, 40, 0);
    assert_int_equal(o.samples, 4);
    tu_assert_near(o.mean_w, 20, 0);
    struct series_window a = interp_ok(&s, 0, 1), b = interp_ok(&s, 1, 2);
    tu_assert_near(a.joules, 10, 0); /* the value just before 1 s: 10 W */
    tu_assert_near(b.joules, 30, 0); /* just after: 30 W */
    tu_assert_near(a.joules + b.joules, interp_ok(&s, 0, 2).joules, 0);
    assert_int_equal(a.samples, 3);
    tu_assert_near(a.max_w, 10, 0);
    tu_assert_near(b.min_w, 30, 0);
    series_done(&s);
}

/* interpolation at the edges, coverage and its tolerance, a window between two samples */
static void test_interp_edges(void **state)
{
    (void)state;
    struct series s;
    mk(&s, (double[]){0, 2}, (double[]){0, 20}, 2);
    struct series_window o = interp_ok(&s, 0.5, 1.5);
    tu_assert_near(o.joules, 10, 1e-12);
    tu_assert_near(o.avg_power_w, 10, 1e-12);
    assert_int_equal(o.samples, 0);
    assert_int_equal(o.stat_n, 2);
    tu_assert_near(o.min_w, 5, 1e-12);
    tu_assert_near(o.max_w, 15, 1e-12);
    tu_assert_near(o.mean_w, 10, 1e-12);
    series_done(&s);

    mk(&s, (double[]){10, 11, 12}, (double[]){100, 200, 100}, 3);
    expect_err(&s, INTERP, 8, 12, -ENODATA,
               "L: first sample is 2.000s after window start, no coverage");
    expect_err(&s, INTERP, 10, 14, -ENODATA,
               "L: last sample is 2.000s before window end, no coverage");
    /* 1 s uncovered at each end, within the 1.5 s default: held at the edge samples */
    o = interp_ok(&s, 9, 13);
    tu_assert_near(o.joules, 100 + 150 + 150 + 100, 1e-12);
    assert_int_equal(o.samples, 3);
    tu_assert_near(o.sample_start_unix, 10, 0);
    tu_assert_near(o.sample_end_unix, 12, 0);
    /* a window wholly before the first sample, within the tolerance */
    o = interp_ok(&s, 9, 9.5);
    tu_assert_near(o.joules, 50, 1e-12);
    /* a tighter tolerance */
    struct series_opts op = {.max_gap_s = 3, .edge_tol_s = 0.5};
    struct carma_err e = {0};
    assert_int_equal(series_window_interpolate(&s, 9, 13, &op, "L", NULL, &o, &e), -ENODATA);
    assert_string_equal(e.msg, "L: first sample is 1.000s after window start, no coverage");
    series_done(&s);
}

/* counters: rise over the window, interpolated, resets skipped */
static void test_counter(void **state)
{
    (void)state;
    struct series s;
    /* 100 W then 150 W: counter 0, 100, 250, 400 */
    mk(&s, (double[]){0, 1, 2, 3}, (double[]){0, 100, 250, 400}, 4);
    struct series_window o = counter_ok(&s, 0.5, 2.5);
    tu_assert_near(o.joules, 325 - 50, 1e-12); /* c(2.5) - c(0.5) */
    tu_assert_near(o.avg_power_w, 137.5, 1e-12);
    assert_int_equal(o.resets, 0);
    assert_int_equal(o.samples, 2);
    assert_int_equal(o.stat_n, 3);
    tu_assert_near(o.min_w, 100, 0);
    tu_assert_near(o.max_w, 150, 0);
    series_done(&s);

    /* a reset between 2 and 3 (200 -> 50): that step is skipped */
    mk(&s, (double[]){0, 1, 2, 3, 4}, (double[]){0, 100, 200, 50, 150}, 5);
    o = counter_ok(&s, 0, 4);
    tu_assert_near(o.joules, 300, 0);
    assert_int_equal(o.resets, 1);
    assert_int_equal(o.stat_n, 3);
    o = counter_ok(&s, 0.5, 3.5);
    tu_assert_near(o.joules, 200, 1e-12);
    expect_err(&s, COUNTER, 2.2, 2.8, -ENODATA, "L: no usable counter step inside the window");
    /* a reset before the window is not this window's */
    o = counter_ok(&s, 3, 4);
    assert_int_equal(o.resets, 0);
    tu_assert_near(o.joules, 100, 0);
    series_done(&s);

    /* held at the nearest step's power past the samples, within the tolerance */
    mk(&s, (double[]){10, 11, 12}, (double[]){1000, 1100, 1300}, 3);
    o = counter_ok(&s, 9, 13);
    tu_assert_near(o.joules, 100 + 100 + 200 + 200, 1e-12);
    expect_err(&s, COUNTER, 7, 12, -ENODATA,
               "L: first sample is 3.000s after window start, no coverage");
    series_done(&s);

    mk(&s, (double[]){0, 1, 5}, (double[]){0, 100, 500}, 3);
    expect_err(&s, COUNTER, 0, 5, -ENODATA,
               "L: 4.000s gap between samples at 1.000 and 5.000, over the 3.000s limit");
    series_done(&s);
}

/* the numpy percentile definition on a few hand-checked arrays */
static void test_percentile(void **state)
{
    (void)state;
    double one[] = {7};
    struct series_window o;
    series_stats(one, 1, &o);
    tu_assert_near(o.p5_w, 7, 0);
    tu_assert_near(o.p99_w, 7, 0);
    tu_assert_near(o.mean_w, 7, 0);
    double v[] = {4, 1, 3, 2}; /* sorted 1 2 3 4: p50 = 2.5, p5 = 1.15, p99 = 3.97 */
    series_stats(v, 4, &o);
    tu_assert_near(o.p50_w, 2.5, 0);
    tu_assert_near(o.p5_w, 1.15, 1e-15);
    tu_assert_near(o.p99_w, 3.97, 1e-15);
    double sorted[] = {1, 2, 3, 4};
    tu_assert_near(series_percentile_sorted(sorted, 4, 100), 4, 0);
    tu_assert_near(series_percentile_sorted(sorted, 4, 0), 1, 0);
    /* reusable scratch across windows */
    struct series s;
    mk(&s, (double[]){0, 1, 2, 3}, (double[]){1, 2, 3, 4}, 4);
    struct series_scratch sc = {0};
    struct carma_err e = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(series_window_snap(&s, 0, 3, "L", &sc, &o, &e), 0);
        tu_assert_near(o.p50_w, 2.5, 0);
    }
    assert_true(sc.cap >= 4);
    series_scratch_done(&sc);
    series_done(&s);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* percentiles by selection equal those of a full sort, on awkward distributions and sizes */
static void test_stats_vs_sort(void **state)
{
    (void)state;
    tu_rng_seed(99);
    size_t sizes[] = {1, 2, 3, 16, 17, 100, 4095, 4096, 4097, 50000, 300001};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        double *v = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
        assert_non_null(v);
        assert_non_null(c);
        for (int kind = 0; kind < 8; kind++) {
            for (size_t i = 0; i < n; i++) {
                double u = tu_rng_u();
                switch (kind) {
                case 0:
                    v[i] = 100 + 600 * u;
                    break; /* spread */
                case 1:
                    v[i] = 400;
                    break; /* constant */
                case 2:
                    v[i] = u < 0.5 ? 70 : 400;
                    break; /* two values */
                case 3:
                    v[i] = i == n / 3 ? 1e9 : 300 + u;
                    break; /* far outlier */
                case 4:
                    v[i] = 400 + (double)(tu_rng_next() % 4) * 0x1p-44;
                    break; /* last bits */
                case 5:
                    v[i] = -50 + 100 * u * u * u;
                    break; /* skewed, negative */
                case 6:
                    v[i] = (double)(n - i);
                    break; /* descending */
                default:
                    v[i] = floor(u * 7) * 1e-300;
                    break; /* tiny, with zeros */
                }
            }
            memcpy(c, v, n * sizeof(double));
            struct series_window o;
            series_stats(v, n, &o);
            double mean = series_sum(c, n) / (double)n;
            qsort(c, n, sizeof(double), cmp_d);
            if (o.mean_w != mean || o.min_w != c[0] || o.max_w != c[n - 1] ||
                o.p5_w != series_percentile_sorted(c, n, 5) ||
                o.p50_w != series_percentile_sorted(c, n, 50) ||
                o.p95_w != series_percentile_sorted(c, n, 95) ||
                o.p99_w != series_percentile_sorted(c, n, 99))
                fail_msg("n=%zu kind=%d: p5 %.17g p50 %.17g p95 %.17g p99 %.17g", n, kind, o.p5_w,
                         o.p50_w, o.p95_w, o.p99_w);
        }
        free(v);
        free(c);
    }
}

/* ---- randomized, against numpy ---- */

static bool have_numpy(void)
{
    return system(PYTHON " -c 'import numpy' >/dev/null 2>&1") == 0;
}

static void ref_script(char *buf, size_t cap)
{
    const char *fx = getenv("CARMA_FIXTURES");
    if (fx && *fx)
        snprintf(buf, cap, "%s/../unit/series_ref.py", fx);
    else
        snprintf(buf, cap, "tests/unit/series_ref.py");
}

#define NCASES_MAX 128

struct rcase {
    enum mode mode;
    struct series s;
    double start, end;
};

static struct rcase cases[NCASES_MAX];
static size_t ncases;

/* a random series: n samples from 1.7e9 s; kinds vary spacing, duplicates, value grids */
static void gen_series(struct series *s, size_t n, enum mode m, int flavour)
{
    series_init(s);
    assert_int_equal(series_reserve(s, n), 0);
    double t = 1.7e9 + tu_rng_u() * 1e6, c = tu_rng_u() * 1e6;
    for (size_t i = 0; i < n; i++) {
        double w = 50 + 650 * tu_rng_u();
        if (flavour == 1)
            w = floor(w / 25) * 25; /* a coarse grid: many equal values */
        if (m == COUNTER) {
            if (i > 0 && tu_rng_u() < 0.01)
                c = tu_rng_u() * 100; /* a reset */
            assert_int_equal(series_append(s, t, c), 0);
        } else {
            assert_int_equal(series_append(s, t, w), 0);
        }
        double dt = m == SNAP ? 0.05 + 1.9 * tu_rng_u() : 0.05 + 2.8 * tu_rng_u();
        if (flavour == 2 && tu_rng_u() < 0.1)
            dt = 0; /* duplicated timestamps */
        if (flavour == 3 && tu_rng_u() < 0.001)
            dt = 3.5; /* a gap over the limit */
        t += dt;
        if (m == COUNTER)
            c += w * dt;
    }
}

static void add_case(enum mode m, size_t n, int flavour)
{
    assert_true(ncases < NCASES_MAX);
    struct rcase *rc = &cases[ncases++];
    rc->mode = m;
    gen_series(&rc->s, n, m, flavour);
    double t0 = rc->s.t[0], t1 = rc->s.t[rc->s.n - 1], span = t1 - t0;
    double a = tu_rng_u(), b = tu_rng_u();
    if (a > b) {
        double x = a;
        a = b;
        b = x;
    }
    /* mostly inside; sometimes a few seconds past either end (coverage errors) */
    rc->start = t0 + a * span - (tu_rng_u() < 0.15 ? 4 * tu_rng_u() : 0);
    rc->end = t0 + b * span + (tu_rng_u() < 0.15 ? 4 * tu_rng_u() : 0);
    if (!(rc->end > rc->start))
        rc->end = rc->start + 1;
}

struct worst {
    double rel;
    size_t exact, total;
};

static double rel_err(double a, double b)
{
    if (a == b)
        return 0;
    double d = fabs(a - b), m = fabs(b) > fabs(a) ? fabs(b) : fabs(a);
    return d / m;
}

static void test_random_vs_numpy(void **state)
{
    (void)state;
    if (!have_numpy())
        skip();
    char script[512];
    ref_script(script, sizeof script);

    tu_rng_seed(20240611);
    ncases = 0;
    size_t sizes[] = {10, 37, 128, 129, 1000, 8193, 10000, 65537, 100000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int fl = 0; fl < 4; fl++) {
            add_case(SNAP, sizes[i], fl);
            add_case(INTERP, sizes[i], fl);
            if (sizes[i] <= 10000)
                add_case(COUNTER, sizes[i], fl);
        }
    /* windows of two or three samples */
    for (int k = 0; k < 6; k++)
        add_case(k % 2 ? INTERP : SNAP, 3, k % 4);

    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/cases.txt", tu_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    struct series_opts op = series_opts_default();
    static const char *names[] = {"snap", "interp", "counter"};
    for (size_t i = 0; i < ncases; i++) {
        struct rcase *rc = &cases[i];
        fprintf(f, "case %s %.17g %.17g %.17g %.17g %zu\n", names[rc->mode], rc->start, rc->end,
                op.max_gap_s, op.edge_tol_s, rc->s.n);
        for (size_t k = 0; k < rc->s.n; k++)
            fprintf(f, "%.17g %.17g\n", rc->s.t[k], rc->s.w[k]);
    }
    assert_int_equal(fclose(f), 0);

    char cmd[1200];
    snprintf(cmd, sizeof cmd, PYTHON " '%s' '%s'", script, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    struct worst worst[3] = {{0}};
    size_t nerr = 0, nerr_gap = 0, nok = 0;
    char *line = NULL;
    size_t cap = 0;
    struct series_scratch sc = {0};
    for (size_t i = 0; i < ncases; i++) {
        struct rcase *rc = &cases[i];
        ssize_t len = getline(&line, &cap, p);
        if (len <= 0)
            fail_msg("series_ref.py stopped after %zu of %zu cases", i, ncases);
        if (line[len - 1] == '\n')
            line[len - 1] = '\0';
        struct series_window o;
        struct carma_err e = {0};
        int r = rc->mode == SNAP ? series_window_snap(&rc->s, rc->start, rc->end, "L", &sc, &o, &e)
                : rc->mode == INTERP
                    ? series_window_interpolate(&rc->s, rc->start, rc->end, &op, "L", &sc, &o, &e)
                    : series_window_counter(&rc->s, rc->start, rc->end, &op, "L", &sc, &o, &e);
        if (strncmp(line, "err ", 4) == 0) {
            if (r == 0)
                fail_msg("case %zu (%s, n=%zu): numpy says \"%s\", carma succeeded", i,
                         names[rc->mode], rc->s.n, line + 4);
            assert_string_equal(e.msg, line + 4);
            nerr++;
            nerr_gap += strstr(e.msg, " gap between ") != NULL;
            continue;
        }
        if (r != 0)
            fail_msg("case %zu (%s, n=%zu): carma: %s", i, names[rc->mode], rc->s.n, e.msg);
        nok++;
        double ref[13];
        char *q = line + 3;
        for (int k = 0; k < 13; k++) {
            char *endp;
            ref[k] = strtod(q, &endp);
            assert_true(endp != q);
            q = endp;
        }
        double got[] = {o.joules, o.avg_power_w, o.mean_w, o.min_w, o.p5_w,
                        o.p50_w,  o.p95_w,       o.p99_w,  o.max_w};
        for (int k = 0; k < 9; k++) {
            double re = rel_err(got[k], ref[k]);
            struct worst *wo = &worst[rc->mode];
            wo->total++;
            wo->exact += got[k] == ref[k];
            if (re > wo->rel)
                wo->rel = re;
            if (!(re <= 1e-12))
                fail_msg("case %zu (%s, n=%zu) field %d: carma %.17g numpy %.17g (rel %.3g)", i,
                         names[rc->mode], rc->s.n, k, got[k], ref[k], re);
        }
        assert_int_equal(o.samples, (size_t)ref[9]);
        tu_assert_near(o.sample_start_unix, ref[10], 0);
        tu_assert_near(o.sample_end_unix, ref[11], 0);
        assert_int_equal(o.stat_n, (size_t)ref[12]);
    }
    free(line);
    series_scratch_done(&sc);
    assert_int_equal(pclose(p), 0);
    for (size_t i = 0; i < ncases; i++)
        series_done(&cases[i].s);
    for (int m = 0; m < 3; m++)
        print_message("%-8s max relative error %.3g, %zu of %zu numbers bit-identical\n", names[m],
                      worst[m].rel, worst[m].exact, worst[m].total);
    print_message("%zu windows compared, %zu errors (%zu of them gaps) matched word for word\n",
                  nok, nerr, nerr_gap);
    assert_true(nok > ncases / 2);
    assert_true(nerr > 0);
    /* srt-slurm's mode is meant to be the same numbers, not close ones */
    assert_int_equal(worst[SNAP].exact, worst[SNAP].total);
}

/* pairwise sums over numpy's 8192-element chunks, and the trapezoid, on one long array */
static void test_sum_vs_numpy(void **state)
{
    (void)state;
    if (!have_numpy())
        skip();
    tu_rng_seed(7);
    size_t n = 1000002;
    double *v = malloc(n * sizeof(double));
    assert_non_null(v);
    char path[TU_DIR_MAX + 32];
    snprintf(path, sizeof path, "%s/v.bin", tu_dir);
    for (size_t i = 0; i < n; i++)
        v[i] = 1000 * tu_rng_u() + tu_rng_u() * 1e-9;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(v, sizeof(double), n, f), n);
    assert_int_equal(fclose(f), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             PYTHON " -c 'import numpy as np,sys; v=np.fromfile(sys.argv[1]); "
                    "tz=getattr(np,\"trapezoid\",None) or np.trapz; "
                    "print(repr(float(np.sum(v))), repr(float(np.mean(v))), "
                    "repr(float(tz(v[1::2], v[0::2]))))' '%s'",
             path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    double sum, mean, trap;
    assert_int_equal(fscanf(p, "%lf %lf %lf", &sum, &mean, &trap), 3);
    assert_int_equal(pclose(p), 0);
    tu_assert_near(series_sum(v, n), sum, 0);
    tu_assert_near(series_sum(v, n) / (double)n, mean, 0);
    /* trapz(y = odd elements, x = even ones), with x not sorted: the formula does not care */
    size_t m = n / 2;
    double *x = malloc(m * sizeof(double)), *y = malloc(m * sizeof(double));
    assert_non_null(x);
    assert_non_null(y);
    for (size_t i = 0; i < m; i++) {
        x[i] = v[2 * i];
        y[i] = v[2 * i + 1];
    }
    tu_assert_near(series_trapz(x, y, m), trap, 0);
    free(x);
    free(y);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_basic),
        cmocka_unit_test(test_golden_snap_edges),
        cmocka_unit_test(test_golden_snap_errors),
        cmocka_unit_test(test_golden_stats),
        cmocka_unit_test(test_golden_long_gap),
        cmocka_unit_test(test_golden_flat),
        cmocka_unit_test(test_golden_incremental),
        cmocka_unit_test(test_golden_node_series),
        cmocka_unit_test(test_snap_ties),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_unsorted_stable),
        cmocka_unit_test(test_sort_large),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_interp_edges),
        cmocka_unit_test(test_counter),
        cmocka_unit_test(test_percentile),
        cmocka_unit_test(test_stats_vs_sort),
        cmocka_unit_test_setup_teardown(test_random_vs_numpy, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_sum_vs_numpy, tu_setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

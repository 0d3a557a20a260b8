/*
 * series: the numeric core of `carma report` — one channel's samples in time order, and the
 * energy and power statistics of a window [start, end] over them.
 *
 * A series holds (t, w) pairs as two parallel arrays of doubles: 16 bytes per sample held, no
 * more (series_reserve / series_shrink keep the slack at zero, and slack that was never written
 * is not resident either). Arrays of 4 MiB and more start on a 2 MiB boundary and the part
 * expected to be filled is marked for transparent huge pages, so that their first touch faults
 * once per 2 MiB; they are malloc'ed all the same (free() and realloc() apply). t is in seconds
 * (unix time in the report), w in watts, or cumulative joules for an energy counter.
 *
 * Three ways to take a window, one per `--edges` choice and channel kind:
 *   series_window_snap         srt-slurm's windowed_energy (docs: srt-slurm.md §6.5), number
 *                              for number: edges snapped to the nearest sample (ties to the
 *                              earlier one, at most 3.0 s away), trapezoid over the snapped
 *                              samples, no clipping, gaps inside the window not checked.
 *   series_window_interpolate  carma's default for power gauges: the power curve is the
 *                              piecewise-linear path through the samples, cut exactly at start
 *                              and end by linear interpolation; every gap between samples
 *                              that the window overlaps is checked against a limit.
 *   series_window_counter      for a cumulative energy counter: the energy is the counter's
 *                              rise over the window, interpolated at the edges; a step where
 *                              the counter goes down (a reset) is skipped and counted.
 *
 * Numbers follow numpy where srt-slurm uses it, bit for bit (checked against numpy 1.24 by
 * tests/unit/test_series.c): sums (trapezoid and mean) use numpy's pairwise summation as its
 * reductions run it (in 8192-element chunks added in order), percentiles numpy's default
 * 'linear' method with its _lerp formula, and no expression is fused into an FMA. Nothing here
 * prints or exits; errors are a negative errno with the human message in a struct carma_err:
 *   -ENODATA  no samples, or the samples do not cover the window (message says which edge)
 *   -EINVAL   a bad argument: an unsorted series, a non-finite sample or window edge, or
 *             end <= start (interpolate and counter; snap answers as srt-slurm does)
 *   -ENOMEM   out of memory
 */
#ifndef CARMA_ANALYSIS_SERIES_H
#define CARMA_ANALYSIS_SERIES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* How a window's edges are placed on a series (carma report --edges). */
enum series_edges {
    SERIES_EDGES_INTERPOLATE = 0, /* default: linear interpolation at the edges, gaps checked */
    SERIES_EDGES_SNAP,            /* srt-slurm's nearest-sample snapping, 3 s limit */
};

/* srt-slurm's MAX_SAMPLE_GAP_SECONDS: how far snap lets a window edge be from its sample. */
#define SERIES_SNAP_MAX_GAP_S 3.0
/* Defaults of struct series_opts (see there). */
#define SERIES_MAX_GAP_S  3.0
#define SERIES_EDGE_TOL_S 1.5

/* Read its fields freely; change them only through the functions below (sorted must stay true). */
struct series {
    double *t;   /* seconds, n of them */
    double *w;   /* watts (or cumulative joules for a counter), n of them */
    size_t n;    /* samples held */
    size_t cap;  /* room in t and w */
    bool sorted; /* t is non-decreasing (kept up to date by series_append) */
};

/* Makes s an empty, sorted series; nothing is allocated until the first append. */
void series_init(struct series *s);

/* Frees what s holds and leaves it empty (as series_init). NULL-safe. */
void series_done(struct series *s);

/*
 * Makes room for at least n samples in all. Returns 0 or -ENOMEM (s unchanged). Room never
 * written is not resident, so a generous estimate (file size / row size) costs next to nothing
 * (huge pages are asked for only up to 15/16 of n: an estimate more than ~6 % too high can
 * leave one mostly empty 2 MiB page resident per array), and it spares the growth by doubling,
 * which moves the arrays (a copy, or an mremap that some VMs charge a page-table refill for
 * every page moved: ~0.25 s per 160 MB here).
 */
int series_reserve(struct series *s, size_t n);

/* Gives back the room beyond s->n samples (never fails: a failed realloc keeps the room). */
void series_shrink(struct series *s);

/*
 * Appends one sample. Both numbers must be finite: a NaN or infinity is refused with -EINVAL
 * and the series is left as it was (the caller names the file and row in its error; carma
 * never integrates a NaN the way srt-slurm's float() would let through). Duplicate timestamps
 * are kept, as srt-slurm keeps them. Appending out of time order clears s->sorted.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int series_append(struct series *s, double t_s, double w);

/*
 * Sorts s by time with a stable sort (equal timestamps keep their append order, as srt-slurm's
 * sorted() does) and sets s->sorted. In place: no memory proportional to n beyond s itself
 * (a fixed 1 MiB merge buffer when it can be had). O(n) when s is already sorted.
 */
void series_sort(struct series *s);

enum series_dup {
    SERIES_DUP_LAST, /* keep the last sample of each timestamp (srt-slurm's CPU node dict) */
    SERIES_DUP_SUM,  /* one sample per timestamp, the sum in order from 0.0 (GPU node/role) */
};

/*
 * Collapses each run of samples with bit-identical timestamps into one, as srt-slurm builds
 * its node and role series (§6.4: no alignment across different timestamps). s must be sorted
 * (-EINVAL otherwise). Returns the number of samples removed.
 */
long series_collapse(struct series *s, enum series_dup how);

/* Options of series_window_interpolate and series_window_counter. */
struct series_opts {
    /*
     * The longest gap between two consecutive samples that the window overlaps (the gaps
     * that reach across start or end count whole). Longer -> -ENODATA. INFINITY: no check.
     */
    double max_gap_s;
    /*
     * How far the first sample may lie after start, or the last before end: the curve is held
     * at that sample's value (for a counter: at the power of the nearest step) over the part
     * not covered. The default is half the gap limit, so that every instant of the window is
     * within max_gap_s / 2 of a real sample, in the middle of a gap or at an edge alike.
     */
    double edge_tol_s;
};

/* The defaults: max_gap_s = 3.0 s (as snap), edge_tol_s = 1.5 s. */
struct series_opts series_opts_default(void);

/* One breakdown row's numbers (srt-slurm.md §6.7 B, less the label). */
struct series_window {
    double joules;
    double avg_power_w;       /* joules / (end - start); 0.0 when end - start <= 0 */
    double sample_start_unix; /* the first sample the energy used (may lie before start) */
    double sample_end_unix;   /* the last one (may lie after end) */
    size_t samples;           /* snap: ei - si + 1; others: samples with start <= t <= end */
    size_t stat_n;            /* how many values the statistics below are over */
    double mean_w, min_w, p5_w, p50_w, p95_w, p99_w, max_w;
    size_t resets; /* counter: steps skipped because the counter went down; else 0 */
};

/*
 * Scratch memory for the percentiles (one double per value), reusable across windows so that
 * a report allocates it once, at the size of its largest window. Zero-initialise it (or pass
 * NULL to the window functions, which then allocate and free one per call).
 */
struct series_scratch {
    double *v;
    size_t cap;
};

/* Frees sc's memory (NULL-safe) and leaves it empty. */
void series_scratch_done(struct series_scratch *sc);

/*
 * srt-slurm's windowed_energy(label, times, watts, start, end), exactly (§6.5):
 * si = nearest(start), ei = nearest(end) (searchsorted left; ties to the earlier sample);
 * errors, with label prefixed, as srt-slurm words them:
 *   "<label>: no power samples available"
 *   "<label>: nearest sample to window start is 3.500s away, no coverage" (and "window end")
 *   "<label>: window narrower than the sample spacing"                     (ei <= si)
 * joules = numpy's trapz over samples si..ei inclusive; avg_power_w = joules / (end - start);
 * stats over w[si..ei]. s must be sorted (-EINVAL). *ret is written only on success.
 */
int series_window_snap(const struct series *s, double start, double end, const char *label,
                       struct series_scratch *sc, struct series_window *ret, struct carma_err *err);

/*
 * The energy of a power gauge over exactly [start, end] (end > start): the trapezoid rule over
 * the path (start, w(start)), the samples with start < t < end, (end, w(end)), where w(x) is
 * linear interpolation between the samples around x (at a duplicated timestamp: the last
 * sample of it at start, the first at end, so that adjacent windows add up). Statistics are
 * over the same path's values: the samples strictly inside plus the two edge values (a window
 * between two samples still has two values). Errors (label prefixed):
 *   "<label>: no power samples available"
 *   "<label>: first sample is 2.000s after window start, no coverage"
 *   "<label>: last sample is 2.000s before window end, no coverage"
 *   "<label>: 8.000s gap between samples at 2.000 and 10.000, over the 3.000s limit"
 *   "<label>: window end is not after its start"  (-EINVAL; also for a non-finite edge)
 * opts NULL: the defaults. s must be sorted. *ret is written only on success.
 */
int series_window_interpolate(const struct series *s, double start, double end,
                              const struct series_opts *opts, const char *label,
                              struct series_scratch *sc, struct series_window *ret,
                              struct carma_err *err);

/*
 * The energy of a cumulative counter (w = joules so far) over [start, end] (end > start): each
 * step k -> k+1 between samples is taken as constant power (w[k+1]-w[k]) / (t[k+1]-t[k]) and
 * counted for the part of it inside the window — with no reset this is exactly counter(end) -
 * counter(start), interpolated linearly. A step where the counter goes down is a reset: its
 * energy is unknown, it is skipped (ret->resets counts it). A step at one timestamp (dt = 0)
 * that rises counts whole when start <= t < end. Statistics are over the step powers of the
 * steps the window overlaps (resets and dt = 0 steps left out); samples counts readings with
 * start <= t <= end. Coverage and gap checks and their messages are those of
 * series_window_interpolate ("no energy samples available" when empty), plus
 *   "<label>: no usable counter step inside the window" (every step overlapped is a reset).
 */
int series_window_counter(const struct series *s, double start, double end,
                          const struct series_opts *opts, const char *label,
                          struct series_scratch *sc, struct series_window *ret,
                          struct carma_err *err);

/*
 * Resizes the malloc'ed array *p, holding n doubles in room for old_cap, to room for cap
 * (cap >= n), about expect of them to be written (the series loaders use it for their own
 * arrays). A grown array of 4 MiB or more starts on a 2 MiB boundary (posix_memalign: still
 * free()d and realloc()ed as any malloc'ed array) and its whole 2 MiB pages below expect are
 * asked for transparent huge pages, so that its first touch faults once per 2 MiB instead of
 * 512 times. *p is unchanged when out of memory. Returns 0 or -ENOMEM.
 */
int series_array_resize(double **p, size_t n, size_t old_cap, size_t cap, size_t expect);

/*
 * A helper thread that faults in (MADV_POPULATE_WRITE) the not yet written part of arrays a
 * loader has reserved, 2 MiB at a time, taking the arrays in turn so that it stays ahead of
 * the loader in each: the kernel zeroes those pages on the other CPU while the loader parses.
 * Only page tables are touched, never the arrays' bytes, so nothing the loader writes is
 * raced; a range that is freed or moved meanwhile costs at most a futile call. Without
 * MADV_POPULATE_WRITE (a kernel before 5.14) the thread ends at its first call.
 */
struct series_prefault;

struct series_prefault_range {
    void *p;      /* the first byte not written yet */
    size_t bytes; /* how many of them are expected to be written */
};

/*
 * Starts the thread on a copy of ranges[0, n) (empty ranges are skipped). Returns the handle,
 * or NULL when nothing is to be done or no thread could be had (the loader then faults its own
 * pages, as without it).
 */
struct series_prefault *series_prefault_start(const struct series_prefault_range *ranges, size_t n);

/* Stops the thread (at its next 2 MiB), joins and frees it. NULL is a no-op. */
void series_prefault_stop(struct series_prefault *pf);

/* ---- the numeric pieces, for other callers (utilization means, tests) ---- */

/* numpy's pairwise sum of v[0..n) (np.add.reduce on a contiguous float64 array), bit for bit. */
double series_sum(const double *v, size_t n);

/* numpy's trapz(y, x) over n points (0.0 for n < 2), bit for bit. */
double series_trapz(const double *x, const double *y, size_t n);

/*
 * Statistics of v[0..n), n >= 1, as numpy computes them: mean (pairwise sum / n, over v in the
 * order given), min, max, and the 5/50/95/99th percentiles (np.percentile's default 'linear'
 * method, found by selection, not a full sort). v is scratch: its contents are overwritten.
 * Writes ret's mean_w..max_w and stat_n only.
 */
void series_stats(double *v, size_t n, struct series_window *ret);

/* np.percentile(v, p) of the n values already sorted in v (n >= 1, 0 <= p <= 100). */
double series_percentile_sorted(const double *v, size_t n, double p);

/* The first i with t[i] >= x in the n ascending times t (numpy's searchsorted, side='left'). */
static inline size_t series_lower_bound(const double *t, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first i with t[i] > x in the n ascending times t (side='right'). */
static inline size_t series_upper_bound(const double *t, size_t n, double x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif

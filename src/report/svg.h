/*
 * svg: the charts of the HTML report as inline SVG (no script, nothing fetched): lines over
 * time (a channel's power; measured solid, estimated dashed), stacked areas (power per job),
 * lines with markers over a log2 axis (perf per watt against concurrency), and timelines of
 * windows (the marks) over the time axis of the charts below them. Long series are
 * downsampled for display with largest-triangle-three-buckets (report/lttb); a missing value
 * (not finite) breaks the line. Each series is a <g class="series" data-label="..."> with a
 * <title>, so that a reader (or a test) finds it in the DOM.
 */
#ifndef CARMA_REPORT_SVG_H
#define CARMA_REPORT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct svg_series {
    const char *label;
    const double *x; /* time charts: Unix seconds (shown relative to svg_chart.x0) */
    const double *y;
    size_t n;
    bool dashed; /* an estimated series */
    int color;   /* index into the palette (wraps) */
};

/* A window over a time axis: a bar of a timeline (svg_timeline), a band shaded behind a chart's
 * series (svg_chart.bands). */
struct svg_band {
    const char *label; /* the bar's text, where it fits */
    const char *title; /* the tooltip (NULL: the label) */
    long long id;      /* data-id (a mark's id) */
    double x0, x1;     /* Unix s */
    bool flagged;      /* hatched, and said in its text: a window carma had to close */
    int color;         /* index into the palette (wraps) */
    const char *group; /* the timeline's rows are grouped by it (a workload); NULL: one group */
    size_t lane;       /* the timeline's row, from svg_lanes */
};

/* An instant on a timeline (an event): a tick; ticks closer than a pixel are drawn as one. */
struct svg_tick {
    const char *title;
    double x; /* Unix s */
};

struct svg_chart {
    const char *id;    /* the element id of the <svg> (letters, digits, -, _) */
    const char *title; /* shown above the plot */
    const char *x_label, *y_label;
    double x0;        /* subtracted from every x (a run's start); 0 for none */
    bool x_log2;      /* a log2 x axis (concurrency) */
    bool y_from_zero; /* the y axis starts at 0 (power, energy) */
    int width, height;
    size_t max_points; /* per series, after downsampling (0: 1000) */
    bool x_fixed;      /* a time axis over [x_min, x_max] (Unix s) instead of the data's */
    double x_min, x_max;
    const struct svg_band *bands; /* svg_lines: shaded behind the series, the plot's height */
    size_t nbands;
    const char *flag_note; /* svg_timeline: the legend's words for a hatched bar */
};

/* The palette's color i (wraps), as "#rrggbb". */
const char *svg_color(int i);

/* Writes s HTML/XML-escaped to f. */
void svg_escape(FILE *f, const char *s);

/*
 * One chart of lines: every series downsampled to c->max_points, a legend below. Series with
 * no finite point are listed in the legend as "(no data)". Returns 0, or -EINVAL when n == 0.
 */
int svg_lines(FILE *f, const struct svg_chart *c, const struct svg_series *s, size_t n,
              bool markers);

/*
 * One chart of stacked areas over a common x[0, nx): layer k's values are s[k].y (s[k].x and
 * s[k].n are ignored; a non-finite value counts as 0). The points kept are those that
 * largest-triangle-three-buckets keeps of the top line (the total), the same for every layer.
 * Returns 0, or -EINVAL when nx < 2 or n == 0.
 */
int svg_stacked(FILE *f, const struct svg_chart *c, const double *x, size_t nx,
                const struct svg_series *s, size_t n);

/*
 * Rows for overlapping windows, a block of rows per group (in the order the groups first
 * appear in b, at most SVG_GROUPS_MAX; later ones share the last): in order of x0 (the longer
 * first where two begin together), each window goes to the lowest row of its group whose
 * windows have all ended by its x0 (a window that ends where the next begins shares its row).
 * Sets every b[i].lane and *ret_lanes, the number of rows (0 when n == 0); rows beyond
 * SVG_LANES_MAX are folded into the last. Returns 0 or -ENOMEM.
 */
#define SVG_LANES_MAX  64
#define SVG_GROUPS_MAX 16
int svg_lanes(struct svg_band *b, size_t n, size_t *ret_lanes);

/*
 * A timeline on the time axis of the charts of the same svg_chart (x0, x_fixed, x_min, x_max,
 * width): one bar per window on its lane (svg_lanes), labelled where it fits, hatched when
 * flagged; the ticks in a strip above the lanes; the x axis below; a legend of the labels.
 * Each bar is a <g class="mark" data-id data-start data-end data-lane [data-flagged]> with a
 * <title>, each tick a <g class="tick" data-time data-count>. Returns 0, -EINVAL when n == 0
 * and nt == 0, or -ENOMEM.
 */
int svg_timeline(FILE *f, const struct svg_chart *c, const struct svg_band *b, size_t n,
                 const struct svg_tick *t, size_t nt);

/*
 * Tick marks for [lo, hi]: a step of 1, 2 or 5 times a power of ten giving at most max_ticks
 * ticks; *first is the first multiple of the step >= lo. Returns the step (lo < hi; else 1 and
 * *first = lo).
 */
double svg_nice_step(double lo, double hi, int max_ticks, double *first);

#endif

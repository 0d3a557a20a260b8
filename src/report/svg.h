/*
 * svg: the charts of the HTML report as inline SVG (no script, nothing fetched): lines over
 * time (a channel's power; measured solid, estimated dashed), stacked areas (power per job),
 * and lines with markers over a log2 axis (perf per watt against concurrency). Long series are
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

struct svg_chart {
    const char *id;    /* the element id of the <svg> (letters, digits, -, _) */
    const char *title; /* shown above the plot */
    const char *x_label, *y_label;
    double x0;        /* subtracted from every x (a run's start); 0 for none */
    bool x_log2;      /* a log2 x axis (concurrency) */
    bool y_from_zero; /* the y axis starts at 0 (power, energy) */
    int width, height;
    size_t max_points; /* per series, after downsampling (0: 1000) */
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
 * Tick marks for [lo, hi]: a step of 1, 2 or 5 times a power of ten giving at most max_ticks
 * ticks; *first is the first multiple of the step >= lo. Returns the step (lo < hi; else 1 and
 * *first = lo).
 */
double svg_nice_step(double lo, double hi, int max_ticks, double *first);

#endif

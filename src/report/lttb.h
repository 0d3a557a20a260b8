/*
 * lttb: largest-triangle-three-buckets downsampling (Steinarsson 2013) of a series for
 * display: keeps the first and last points and, from each of m - 2 equal buckets of the rest,
 * the point that makes the largest triangle with the point kept before it and the mean of the
 * next bucket, so that peaks and dips survive where an average would flatten them. Only for
 * pictures: the numbers of a report always come from the full data.
 */
#ifndef CARMA_REPORT_LTTB_H
#define CARMA_REPORT_LTTB_H

#include <stddef.h>

/*
 * Chooses at most m (>= 3; a smaller m is taken as 3) of the n points (x[i], y[i]) (x
 * non-decreasing, every value finite) and writes their indexes, increasing, to idx (room for
 * m). Returns how many: n when n <= m (every index), else m.
 */
size_t lttb(const double *x, const double *y, size_t n, size_t m, size_t *idx);

/*
 * lttb over a series with gaps: a y that is not finite (a missing reading) splits the series
 * into runs, each downsampled on its own to its share of m (at least its two ends, or its one
 * point), and the index of the first non-finite y of each gap is kept between two runs so
 * that a plot can break its line there. Writes at most lttb_gaps_room(y, n, m) indexes (m,
 * plus three for each non-finite value, plus 2). Returns how many.
 */
size_t lttb_gaps(const double *x, const double *y, size_t n, size_t m, size_t *idx);

/* The room idx needs for lttb_gaps(x, y, n, m, idx). */
size_t lttb_gaps_room(const double *y, size_t n, size_t m);

#endif
